//===- fuzz/settings_fuzzer.cpp - Fuzz fatlink's own settings ------------===//
//
// `fatlink cc` and `fatlink llbc` take settings from `--fatlink-<key>=...`
// arguments, FATLINK_* variables and a `key = value` config file
// (hostlink/Settings.h); fatlink::collectSettings merges them and
// deviceConfigFromSettings turns them into a device-link configuration.
//
// Input layout, three parts separated by NUL bytes: the arguments, one per
// line (only `--fatlink-` ones are kept, as the commands filter them); the
// environment, `NAME=VALUE` lines; the content of the config file `f.conf`
// in the working directory (the scratch directory), read when an argument
// or FATLINK_CONFIG names it. Inputs with a '/' are skipped, so that no
// setting names a real file or device (file reading is not what is fuzzed).
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "hostlink/Settings.h"

#include "llvm/ADT/StringMap.h"

#include <unistd.h>

using namespace llvm;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (chdir(fatlink::fuzz::scratchDir().c_str()) != 0)
    std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  StringRef In(reinterpret_cast<const char *>(Data), Size);
  if (In.contains('/'))
    return 0;
  auto [ArgText, Rest] = In.split('\0');
  auto [EnvText, Config] = Rest.split('\0');
  fatlink::fuzz::writeScratch("f.conf", Config);

  std::vector<std::string> Args;
  for (StringRef A : fatlink::fuzz::split(ArgText, '\n'))
    if (fatlink::isFatlinkArg(A))
      Args.push_back(A.str());
  StringMap<std::string> Env;
  for (StringRef Line : fatlink::fuzz::split(EnvText, '\n'))
    if (Line.contains('='))
      Env[Line.split('=').first] = Line.split('=').second.str();

  Expected<fatlink::Settings> S = fatlink::collectSettings(
      Args, [&](StringRef Name) -> std::optional<std::string> {
        auto It = Env.find(Name);
        if (It == Env.end())
          return std::nullopt;
        return It->second;
      });
  if (!S) {
    consumeError(S.takeError());
    return 0;
  }
  (void)S->flag("verbose");
  fatlink::fuzz::consume(fatlink::deviceConfigFromSettings(*S, "all-major"));
  return 0;
}
