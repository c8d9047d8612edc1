//===- fuzz/options_fuzzer.cpp - Fuzz command-line and @file parsing -----===//
//
// fatlink::parseArgs (response-file expansion with GNU quoting, then an
// OptTable parse with "did you mean" errors) over the option tables of
// `llbc`, `device-link`, `embed` and `inspect`, built here from the same
// generated .inc files and linker/CommandOptTable.inc as the commands.
//
// Input layout: byte 0 picks the table; the rest, up to the first NUL, is
// the argument list, one argument per line; what follows the NUL is the
// content of the response file `r.rsp` (in the working directory, the
// scratch directory), which the arguments, or the file itself, may name as
// `@r.rsp`. Inputs with a '/' are skipped: they could name /dev/zero or any
// other file, and file-system behavior is not what is fuzzed here.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "linker/Options.h"

#include "llvm/Option/Arg.h"
#include "llvm/Option/Option.h"

#include <unistd.h>

using namespace llvm;

// One namespace per table, each built as the command's .cpp builds it.
namespace llbc {
#define FATLINK_OPTIONS_INC "hostlink/LlbcOptions.inc"
#include "linker/CommandOptTable.inc"
} // namespace llbc

namespace devlink {
#define FATLINK_OPTIONS_INC "linker/DeviceLinkOptions.inc"
#include "linker/CommandOptTable.inc"
} // namespace devlink

namespace embed {
#define FATLINK_OPTIONS_INC "linker/EmbedOptions.inc"
#include "linker/CommandOptTable.inc"
} // namespace embed

namespace inspect {
#define FATLINK_OPTIONS_INC "linker/InspectOptions.inc"
#include "linker/CommandOptTable.inc"
} // namespace inspect

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // `@r.rsp` resolves against the working directory.
  if (chdir(fatlink::fuzz::scratchDir().c_str()) != 0)
    std::abort();
  return 0;
}

template <typename TableT>
static void parse(ArrayRef<const char *> Argv, unsigned UnknownID) {
  static const TableT Table;
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  Expected<opt::InputArgList> List =
      fatlink::parseArgs(Table, Argv, Saver, UnknownID);
  if (!List) {
    consumeError(List.takeError());
    return;
  }
  for (const opt::Arg *A : *List)
    (void)A->getAsString(*List);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  StringRef In(reinterpret_cast<const char *>(Data), Size);
  if (In.empty() || In.contains('/'))
    return 0;
  unsigned Which = uint8_t(In[0]) % 4;
  auto [ArgText, Rsp] = In.drop_front().split('\0');
  fatlink::fuzz::writeScratch("r.rsp", Rsp);

  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  SmallVector<const char *, 32> Argv;
  if (!ArgText.empty())
    for (StringRef A : fatlink::fuzz::split(ArgText, '\n'))
      Argv.push_back(Saver.save(A).data());

  switch (Which) {
  case 0:
    parse<llbc::CommandOptTable>(Argv, llbc::OPT_UNKNOWN);
    break;
  case 1:
    parse<devlink::CommandOptTable>(Argv, devlink::OPT_UNKNOWN);
    break;
  case 2:
    parse<embed::CommandOptTable>(Argv, embed::OPT_UNKNOWN);
    break;
  case 3:
    parse<inspect::CommandOptTable>(Argv, inspect::OPT_UNKNOWN);
    break;
  }
  return 0;
}
