//===- hostlink/Settings.cpp - fatlink's own settings inside host links --===//
//
// See Settings.h for the sources and their precedence.
//
//===----------------------------------------------------------------------===//

#include "hostlink/Settings.h"
#include "linker/Cache.h"
#include "linker/Options.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>

#include <unistd.h> // environ

using namespace llvm;

namespace fatlink {

namespace {

struct KeyInfo {
  const char *Key;
  bool IsFlag;
  const char *Default; ///< for --fatlink-help
  const char *Help;
  /// fatlink llbc's default where it differs (rustc's arguments stand in);
  /// "" where llbc does not read the key (a host link's own).
  const char *LlbcDefault = nullptr;
};

/// Every key; flags take no value on the command line. docs/cargo.md has the
/// same table.
constexpr KeyInfo Keys[] = {
    {"arch", false, "all-major",
     "targets, as device-link --arch: sm_XX, compute_XX, all-major, all",
     "rustc's -C target-cpu for a .ptx output, else all-major"},
    {"opt", false, "3", "device optimization level 0-3",
     "rustc's -C opt-level"},
    {"ptx-version", false, "per arch", "PTX ISA for every target (X.Y)"},
    {"compress", false, "zstd", "fatbin compression: none, zstd, zstd-N"},
    {"min-driver", false, "R550",
     "oldest NVIDIA driver to load on; before R550: no compression; its "
     "PTX ISA limit is checked"},
    {"jobs", false, "all cores", "targets and partitions compiled at once"},
    {"cuda-path", false, "$CUDA_PATH or /usr/local/cuda", "CUDA toolkit"},
    {"ptxas", false, "<cuda-path>/bin/ptxas", "ptxas"},
    {"linker", false, "cc", "the host linker: clang, ld.lld, a path", ""},
    {"verbose", true, "off", "print each device input, target and command"},
    {"quiet", true, "off",
     "no progress line (on a terminal, for a device link over 2 s)"},
    {"allow-no-kernels", true, "off",
     "link device code without kernels (else an error)", ""},
    {"allow-abi-mismatch", false, "none",
     "symbols (comma-separated) whose declarations may disagree with their "
     "definition"},
    {"log-file", false, "<output>.fatlink.log",
     "where the link's messages go, -v or not; off: none", ""},
    {"dry-run", true, "off", "print the plan; run nothing"},
    {"save-temps", true, "off",
     "keep the device object, PTX and cubins (beside the output, or =DIR)"},
    {"time-trace", false, "none", "write a Chrome trace of the link to FILE"},
    {"config", false, "none",
     "a file of key = value lines (argument or environment only)"},
    {"host-arch", false, "the link's --target, else this machine",
     "host object arch: x86_64, aarch64"},
    {"cache-dir", false, "$XDG_CACHE_HOME/fatlink/device-links",
     "where finished device links are reused; off disables"},
    {"partitions", false, "0 (one per 8 kernels up to 32, then by size)",
     "code generation partitions; 1: no split"},
    {"partition-first", false, "auto (from 4 MiB of device bitcode)",
     "link each partition from only its inputs: auto, always, never"},
    {"ptx-per-arch", true, "off", "generate each arch's PTX on its own"},
    {"ptxas-per-partition", true, "off",
     "run ptxas once per partition, never in shared runs"},
    {"warn-spills", true, "off",
     "warn about each kernel that spills registers, per target"},
    {"cache-policy", false,
     "prune_interval=20m:prune_after=168h:cache_size_bytes=2g",
     "the cache's limits, as lld's --thinlto-cache-policy"},
};

const KeyInfo *findKey(StringRef Key) {
  for (const KeyInfo &K : Keys)
    if (Key == K.Key)
      return &K;
  return nullptr;
}

/// "dry-run" -> "FATLINK_DRY_RUN".
std::string envName(StringRef Key) {
  std::string Name = "FATLINK_";
  for (char C : Key)
    Name += C == '-' ? '_' : toUpper(C);
  return Name;
}

Error unknownKey(StringRef Key, StringRef Where) {
  SmallVector<StringRef, 32> Names;
  for (const KeyInfo &K : Keys)
    Names.push_back(K.Key);
  std::string Best = nearestName(Key, Names);
  return createStringError("%s: unknown fatlink setting '%s'%s",
                           Where.str().c_str(), Key.str().c_str(),
                           Best.empty() ? ""
                                        : (": did you mean '" + Best + "'?")
                                              .c_str());
}

} // namespace

std::optional<StringRef> Settings::get(StringRef Key) const {
  auto It = Values.find(Key);
  if (It == Values.end())
    return std::nullopt;
  return StringRef(It->second);
}

bool Settings::flag(StringRef Key) const {
  std::optional<StringRef> V = get(Key);
  return V && *V != "0" && *V != "false" && *V != "no" && *V != "";
}

std::string Settings::nameOf(StringRef Key) const {
  auto It = Sources.find(Key);
  if (It == Sources.end())
    return envName(Key);
  StringRef Source = It->second;
  if (Source.starts_with("--fatlink-"))
    return ("--fatlink-" + Key).str();
  if (Source == envName(Key) || Source == "CUDA_PATH")
    return Source.str();
  return (Key + " at " + Source).str(); // a config file's "path:line"
}

/// FATLINK_* variables that are not settings but are read: fatlink's own
/// (FATLINK_CACHE_DIR is also a setting's), fatlink-build's, the examples'
/// and the build's, tests' and benchmarks'. The runtime's are all
/// FATLINK_RT_* (FATLINK_RT_LIBCUDA, FATLINK_RT_LOG, FATLINK_RT_LIB_DIR).
/// `git grep -ohE 'FATLINK_[A-Z0-9_]+'` finds them, among the C macros.
static constexpr const char *OtherVariables[] = {
    // fatlink
    "FATLINK_PROGRESS_AFTER",
    // cargo/fatlink-build (FATLINK itself lacks the underscore)
    "FATLINK_CLANG", "FATLINK_CUDA_COMPILER", "FATLINK_NVCC",
    "FATLINK_NVCC_LTO",
    // docs/runtime.md's build script
    "FATLINK_KERNELS_O",
    // the build (bazel/, rules/, scripts/), tests and benchmarks
    "FATLINK_LLVM_ROOT", "FATLINK_ZSTD_ROOT", "FATLINK_DEPS_DIR",
    "FATLINK_RUSTC", "FATLINK_HOST_CC", "FATLINK_TOOL_VERSIONS",
    "FATLINK_DEBIAN_MIRROR", "FATLINK_BUILDGRID_VENV", "FATLINK_BENCH_WORK",
    "FATLINK_TEST", "FATLINK_TEST_PARTITION_FIRST"};

std::vector<std::string>
unknownSettingVariables(ArrayRef<std::string> EnvNames) {
  std::vector<std::string> Warnings;
  for (const std::string &Name : EnvNames) {
    StringRef N(Name);
    if (!N.starts_with("FATLINK_") || N.starts_with("FATLINK_RT_") ||
        is_contained(OtherVariables, N))
      continue;
    std::string Key = N.drop_front(strlen("FATLINK_")).lower();
    std::replace(Key.begin(), Key.end(), '_', '-');
    if (findKey(Key))
      continue;
    Warnings.push_back(
        toString(unknownKey(Key, Name + " (in the environment; ignored)")));
  }
  llvm::sort(Warnings);
  return Warnings;
}

std::vector<std::string> environmentNames() {
  std::vector<std::string> Names;
  for (char **E = environ; E && *E; ++E)
    Names.push_back(StringRef(*E).split('=').first.str());
  return Names;
}

bool isFatlinkArg(StringRef Arg) { return Arg.starts_with("--fatlink-"); }

/// Reads `key = value` lines; later lines win. \p NamedBy is the setting
/// that named the file ("FATLINK_CONFIG", "--fatlink-config=f.conf").
static Error readConfigFile(StringRef Path, StringRef NamedBy, Settings &S) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(Path);
  if (!MB) {
    // A relative path is taken from the linker's directory, which under
    // cargo is the workspace's root, not the crate's: say which it was.
    std::string From;
    SmallString<256> Cwd;
    if (sys::path::is_relative(Path) && !sys::fs::current_path(Cwd))
      From =
          (", relative to " + Cwd + ", the directory the link runs in").str();
    return createStringError(
        MB.getError(), "cannot read fatlink config %s (named by %s%s): %s",
        Path.str().c_str(), NamedBy.str().c_str(), From.c_str(),
        MB.getError().message().c_str());
  }
  SmallVector<StringRef, 16> Lines;
  (*MB)->getBuffer().split(Lines, '\n');
  for (auto [I, Line] : enumerate(Lines)) {
    Line = Line.split('#').first.trim();
    if (Line.empty())
      continue;
    std::string Where = (Path + ":" + Twine(I + 1)).str();
    auto [Key, Value] = Line.split('=');
    Key = Key.trim();
    Value = Value.trim();
    if (!Line.contains('='))
      return createStringError(inconvertibleErrorCode(),
                               "%s: expected 'key = value', got '%s'",
                               Where.c_str(), Line.str().c_str());
    if (Key == "config")
      return createStringError(
          inconvertibleErrorCode(),
          "%s: a config file cannot name another (config files do not "
          "nest): name one file with --fatlink-config= or FATLINK_CONFIG",
          Where.c_str());
    if (!findKey(Key))
      return unknownKey(Key, Where);
    S.Values[Key] = Value.str();
    S.Sources[Key] = Where;
  }
  return Error::success();
}

Expected<Settings>
collectSettings(ArrayRef<std::string> Args,
                std::function<std::optional<std::string>(StringRef)> GetEnv) {
  // Command line first: it also decides which config file to read.
  Settings FromArgs;
  for (const std::string &Arg : Args) {
    StringRef Rest = StringRef(Arg).drop_front(strlen("--fatlink-"));
    auto [Key, Value] = Rest.split('=');
    const KeyInfo *K = findKey(Key);
    if (!K)
      return unknownKey(Key, Arg);
    bool HasValue = Rest.contains('=');
    if (!K->IsFlag && !HasValue)
      return createStringError(inconvertibleErrorCode(),
                               "%s needs a value: --fatlink-%s=<value>",
                               Arg.c_str(), K->Key);
    FromArgs.Values[Key] = HasValue ? Value.str() : "1";
    FromArgs.Sources[Key] = Arg;
  }

  Settings S;
  std::optional<std::string> ConfigPath;
  std::string ConfigNamedBy = "FATLINK_CONFIG";
  if (std::optional<StringRef> C = FromArgs.get("config")) {
    ConfigPath = C->str();
    ConfigNamedBy = FromArgs.Sources["config"];
  } else if (std::optional<std::string> Env = GetEnv("FATLINK_CONFIG")) {
    ConfigPath = *Env;
  }
  if (ConfigPath && !ConfigPath->empty())
    if (Error E = readConfigFile(*ConfigPath, ConfigNamedBy, S))
      return std::move(E);

  for (const KeyInfo &K : Keys) {
    std::string Env = envName(K.Key);
    if (std::optional<std::string> V = GetEnv(Env)) {
      S.Values[K.Key] = *V;
      S.Sources[K.Key] = Env;
    }
  }
  // CUDA_PATH is the toolkit's own variable.
  if (!S.get("cuda-path"))
    if (std::optional<std::string> V = GetEnv("CUDA_PATH")) {
      S.Values["cuda-path"] = *V;
      S.Sources["cuda-path"] = "CUDA_PATH";
    }
  for (const auto &E : FromArgs.Values) {
    S.Values[E.getKey()] = E.getValue();
    S.Sources[E.getKey()] = FromArgs.Sources[E.getKey()];
  }
  return S;
}

Expected<DeviceLinkConfig> deviceConfigFromSettings(const Settings &S,
                                                    StringRef DefaultArch) {
  DeviceLinkConfig C;
  C.OutKind = OutputKind::HostObject;
  Error Errors = Error::success();
  auto Fail = [&](Error E) {
    Errors = joinErrors(std::move(Errors), std::move(E));
  };
  // Names the setting and its source in value errors.
  auto Source = [&](StringRef Key) { return S.Sources.lookup(Key); };

  C.ArchLists.push_back(S.get("arch").value_or(DefaultArch).str());
  // Messages about the targets and the toolkit name these settings as the
  // user set them, as the value errors below do.
  C.Names.Arch = S.nameOf("arch");
  C.Names.PtxVersion = S.nameOf("ptx-version");
  C.Names.CudaPath = S.nameOf("cuda-path");
  C.Names.MinDriver = S.nameOf("min-driver");
  if (std::optional<StringRef> V = S.get("opt")) {
    V->consume_front("-O");
    V->consume_front("O");
    if (Expected<unsigned> L = parseUnsigned(Source("opt"), *V, 3))
      C.Link.OptLevel = *L;
    else
      Fail(L.takeError());
  }
  if (std::optional<StringRef> V = S.get("jobs")) {
    Expected<unsigned> J = parseUnsigned(Source("jobs"), *V, 1024);
    if (J && *J != 0)
      C.Jobs = *J;
    else if (J)
      Fail(createStringError(inconvertibleErrorCode(),
                             "invalid value for %s: '0' (expected 1 or more)",
                             Source("jobs").c_str()));
    else
      Fail(J.takeError());
  }
  if (std::optional<StringRef> V = S.get("partitions")) {
    if (Expected<unsigned> N = parseUnsigned(Source("partitions"), *V, 256))
      C.Partitions = *N;
    else
      Fail(N.takeError());
  }
  if (std::optional<StringRef> V = S.get("partition-first")) {
    if (Expected<lto::PartitionFirstMode> M =
            parsePartitionFirst(Source("partition-first"), *V))
      C.Link.PartitionFirst = *M;
    else
      Fail(M.takeError());
  }
  C.SharePTX = !S.flag("ptx-per-arch");
  C.BatchPtxas = !S.flag("ptxas-per-partition");
  C.WarnSpills = S.flag("warn-spills");
  if (std::optional<StringRef> V = S.get("ptx-version")) {
    C.PtxVersion = parsePtxVersion(*V);
    if (!C.PtxVersion)
      Fail(createStringError(inconvertibleErrorCode(),
                             "invalid value for %s: '%s' (expected a PTX ISA "
                             "version such as 7.8)",
                             Source("ptx-version").c_str(), V->str().c_str()));
  }
  {
    auto Named = [&](StringRef Key) -> std::optional<NamedValue> {
      if (std::optional<StringRef> V = S.get(Key))
        return NamedValue{Source(Key), V->str()};
      return std::nullopt;
    };
    Expected<packager::FatbinOptions> F =
        chooseCompression(Named("compress"), Named("min-driver"));
    if (F)
      C.Fatbin = *F;
    else
      Fail(F.takeError());
    // Checked by chooseCompression; the PTX targets are checked against
    // it once planned (checkMinDriver).
    if (std::optional<StringRef> V = S.get("min-driver"))
      C.MinDriver = parseDriverVersion(*V);
  }
  if (std::optional<StringRef> V = S.get("host-arch")) {
    if (Expected<packager::HostArch> H = packager::parseHostArch(*V)) {
      C.HostArch = *H;
    } else {
      consumeError(H.takeError()); // it names device-link's option
      Fail(createStringError(inconvertibleErrorCode(),
                             "invalid value for %s: '%s' (expected x86_64 "
                             "or aarch64)",
                             S.nameOf("host-arch").c_str(), V->str().c_str()));
    }
  } else if (Expected<packager::HostArch> H =
                 packager::parseHostArch(sys::getDefaultTargetTriple())) {
    C.HostArch = *H;
  } else {
    consumeError(H.takeError()); // another machine: x86_64 as before
  }
  C.Paths = codegen::resolveToolkitPaths(S.get("cuda-path").value_or(""),
                                S.get("ptxas").value_or(""), "");
  if (S.get("ptxas"))
    C.Paths.Hint = "set " + S.nameOf("ptxas") + " to ptxas, or " +
                   S.nameOf("cuda-path") + " to the toolkit";
  else if (S.get("cuda-path"))
    C.Paths.Hint = "set " + S.nameOf("cuda-path") + " to one";
  else
    C.Paths.Hint = "set FATLINK_CUDA_PATH or CUDA_PATH to one";
  C.Link.LibdevicePath = C.Paths.Libdevice;
  C.Link.DeviceRuntimePath = C.Paths.DeviceRuntime;
  C.TimeTracePath = S.get("time-trace").value_or("").str();
  if (std::optional<StringRef> V = S.get("allow-abi-mismatch")) {
    SmallVector<StringRef, 4> Names;
    V->split(Names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef N : Names)
      C.Link.AllowAbiMismatch.push_back(N.trim().str());
  }
  // The wrappers cache by default: a host-only change skips the device link.
  std::string Cache = S.get("cache-dir").value_or(defaultCacheDir()).str();
  C.CacheDir = Cache == "off" || Cache == "0" ? "" : Cache;
  if (std::optional<StringRef> V = S.get("cache-policy")) {
    C.CachePolicy = V->str();
    if (Error E = checkCachePolicy(Source("cache-policy"), *V))
      Fail(std::move(E));
  }
  if (Errors)
    return std::move(Errors);
  return C;
}

void printSettingsHelp(raw_ostream &OS, SettingsTool Tool) {
  bool Llbc = Tool == SettingsTool::Llbc;
  OS << "OVERVIEW: " << (Llbc ? "fatlink llbc" : "fatlink cc")
     << ": fatlink's settings; every other argument "
     << (Llbc ? "is rustc's" : "goes to the host linker") << "\n\n"
     << "Each key is set, in order of precedence, by "
        "--fatlink-<key>[=<value>],\n"
        "by the environment variable FATLINK_<KEY>, or by a `key = value` "
        "line\n"
        "of the file --fatlink-config= or FATLINK_CONFIG names.\n\nSETTINGS:\n";
  for (const KeyInfo &K : Keys) {
    StringRef Default = K.Default;
    if (Llbc && K.LlbcDefault) {
      if (!*K.LlbcDefault)
        continue;
      Default = K.LlbcDefault;
    }
    std::string Arg = std::string("--fatlink-") + K.Key + (K.IsFlag ? "" : "=");
    OS << "  " << left_justify(Arg, 31) << left_justify(envName(K.Key), 28)
       << K.Help << " (default: " << Default << ")\n";
  }
  OS << "\n--fatlink-help prints this; --help "
     << (Llbc ? "lists the rustc arguments fatlink llbc reads"
              : "is the host linker's")
     << ".\n";
}

Error saveTempsFromSettings(Context &Ctx, const Settings &S, StringRef Output) {
  std::optional<StringRef> Dir = S.get("save-temps");
  if (!Dir)
    return Error::success();
  return Ctx.Temps.saveFor(Output, /*OutputIsDirectory=*/false,
                           *Dir == "1" ? StringRef() : *Dir);
}

std::optional<std::string> dryRunUnderCargo(const Settings &S,
                                            StringRef Output) {
  if (!S.flag("dry-run") || !sys::Process::GetEnv("CARGO_CRATE_NAME"))
    return std::nullopt;
  return "dry run (" + S.nameOf("dry-run") + "): nothing was linked and " +
         Output.str() +
         " was not written (the plan is on standard output); under cargo "
         "that is an error, so that no earlier output passes for this "
         "build's: unset " +
         S.nameOf("dry-run") + " to link";
}

} // namespace fatlink
