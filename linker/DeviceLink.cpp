//===- linker/DeviceLink.cpp - The `fatlink device-link` command ---------===//
//
// The driver of a device link: its options and its list of passes. Each
// pass is a small named function or one call into a stage's library:
//
//   parse options      -> Config (every bad option reported)
//   probe the tools    -> what LLVM and ptxas support (asked, not assumed)
//   plan targets       -> refuse anything the tools cannot serve, up front,
//                         and PTX the --min-driver driver cannot JIT
//   read inputs        -> every device image, with its origin (lto/)
//   check objects      -> relocatable cubins serve their own arch only
//   link and optimize  -> one optimized module per group of targets (lto/)
//   check libraries    -> the device runtime serves every target
//   compile targets    -> PTX and cubins per target, in parallel (codegen/)
//   package            -> fatbin, host object (packager/)
//   write outputs      -> all or nothing, each file renamed into place
//
// buildDevice runs the passes from the inputs to the packaged code (the
// host-link wrappers reuse it, behind the cache); runDeviceLink adds the
// reading and the writing. Output bytes do not depend on -j: each target is
// compiled independently into its own slot, and slots are written in target
// order.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "linker/Cache.h"
#include "linker/Context.h"
#include "linker/DeviceBuild.h"
#include "linker/Linker.h"
#include "linker/Options.h"
#include "linker/PtxIsa.h"
#include "linker/Targets.h"
#include "lto/LTO.h"
#include "packager/Packager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Option/Arg.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <map>

using namespace llvm;

namespace fatlink {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

namespace {

#define FATLINK_OPTIONS_INC "linker/DeviceLinkOptions.inc"
#include "linker/CommandOptTable.inc"

using Config = DeviceLinkConfig;

} // namespace

const char *versionString() {
  return "fatlink 0.1.0 (LLVM " LLVM_VERSION_STRING ")";
}

Expected<packager::FatbinOptions> parseCompression(StringRef Name,
                                                   StringRef Value) {
  packager::FatbinOptions F;
  StringRef V = Value;
  unsigned Level = 19;
  if (V == "none")
    F.Compress = packager::Compression::None;
  else if (V == "zstd" ||
           (V.consume_front("zstd-") && !V.getAsInteger(10, Level) &&
            Level >= 1 && Level <= 22))
    F.ZstdLevel = int(Level);
  else
    return createStringError(inconvertibleErrorCode(),
                             "invalid value for %s: '%s' (expected none, "
                             "zstd or zstd-1 to zstd-22)",
                             Name.str().c_str(), Value.str().c_str());
  return F;
}

Expected<packager::FatbinOptions>
chooseCompression(const std::optional<NamedValue> &Compress,
                  const std::optional<NamedValue> &MinDriver) {
  // "535", "R535", "550.54.15": the branch (Targets.h).
  std::optional<unsigned> Driver;
  if (MinDriver) {
    if (std::optional<DriverVersion> D = parseDriverVersion(MinDriver->Value))
      Driver = D->Fields[0];
    else
      return createStringError(
          inconvertibleErrorCode(),
          "invalid value for %s: '%s' (expected an NVIDIA driver version "
          "such as 535 or 550.54.15, the oldest the program must load on; "
          "not a CUDA version)",
          MinDriver->Name.c_str(), MinDriver->Value.c_str());
  }
  bool OldDriver = Driver && *Driver < MinZstdDriver;
  if (!Compress) {
    packager::FatbinOptions F;
    if (OldDriver)
      F.Compress = packager::Compression::None;
    return F;
  }
  Expected<packager::FatbinOptions> F =
      parseCompression(Compress->Name, Compress->Value);
  // "--compress=zstd" on the command line; a setting's source already says
  // where it came from ("--fatlink-compress=zstd", "FATLINK_COMPRESS").
  auto Where = [](const NamedValue &N) {
    StringRef Name = N.Name;
    return Name.starts_with("--") && !Name.contains('=')
               ? N.Name + "=" + N.Value
               : N.Name;
  };
  if (F && OldDriver && F->Compress == packager::Compression::Zstd)
    return createStringError(
        inconvertibleErrorCode(),
        "%s needs an R%u or newer driver, but %s names R%u: drivers before "
        "R%u read only uncompressed entries from fatlink (drop one of the "
        "two, or ask for none)",
        Where(*Compress).c_str(), MinZstdDriver, Where(*MinDriver).c_str(),
        *Driver, MinZstdDriver);
  return F;
}

std::string hostTriple(StringRef Arch) {
  if (Arch.empty())
    return sys::getDefaultTargetTriple();
  return (Arch + "-unknown-linux-gnu").str();
}

/// The configuration Args describe; every bad option is reported to Ctx.
static Config parseConfig(Context &Ctx, const opt::InputArgList &Args) {
  Config C;
  auto Fail = [&](Error E) { Ctx.error(std::move(E)); };

  for (const opt::Arg *A : Args.filtered(OPT_INPUT))
    C.Inputs.push_back(A->getValue());
  C.Output = Args.getLastArgValue(OPT_output).str();
  C.ArchLists = Args.getAllArgValues(OPT_arch_EQ);
  C.Link.ExportSymbols = Args.getAllArgValues(OPT_export_symbol_EQ);
  for (StringRef V : Args.getAllArgValues(OPT_allow_abi_mismatch_EQ)) {
    SmallVector<StringRef, 4> Names;
    V.split(Names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef N : Names)
      C.Link.AllowAbiMismatch.push_back(N.trim().str());
  }
  C.EmitPTX = Args.hasArg(OPT_emit_ptx);
  C.ListTargets = Args.hasArg(OPT_list_targets);
  C.JsonPath = Args.getLastArgValue(OPT_json_EQ).str();
  C.TimeTracePath = Args.getLastArgValue(OPT_time_trace_EQ).str();
  C.Link.FlushDenormals = Args.hasFlag(OPT_ftz, OPT_no_ftz, false);
  C.Link.PreciseSqrt = Args.hasFlag(OPT_prec_sqrt, OPT_no_prec_sqrt, true);
  C.Link.PreciseDiv = Args.hasFlag(OPT_prec_div, OPT_no_prec_div, true);
  Ctx.Verbose = Args.hasArg(OPT_verbose);

  if (const opt::Arg *A = Args.getLastArg(OPT_opt_level)) {
    Expected<unsigned> L = parseUnsigned("-O", A->getValue(), 3);
    if (L)
      C.Link.OptLevel = *L;
    else
      Fail(L.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_partitions_EQ)) {
    if (Expected<unsigned> N = parseUnsigned("--partitions", A->getValue(), 256))
      C.Partitions = *N;
    else
      Fail(N.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_partition_first_EQ)) {
    if (Expected<lto::PartitionFirstMode> M =
            parsePartitionFirst("--partition-first", A->getValue()))
      C.Link.PartitionFirst = *M;
    else
      Fail(M.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_split_EQ)) {
    Expected<unsigned> N = parseUnsigned("--split", A->getValue(), 256);
    if (N && *N == 0)
      Fail(createStringError(inconvertibleErrorCode(),
                             "invalid value for --split: '0' (expected 1 to "
                             "256 partitions)"));
    else if (N)
      C.Split = *N;
    else
      Fail(N.takeError());
  }
  for (const opt::Arg *A : Args.filtered(OPT_join_EQ))
    C.Join.push_back(A->getValue());
  if (const opt::Arg *A = Args.getLastArg(OPT_jobs)) {
    Expected<unsigned> J = parseUnsigned("-j", A->getValue(), 1024);
    if (J && *J == 0)
      Fail(createStringError(inconvertibleErrorCode(),
                             "invalid value for -j: '0' (expected 1 or more)"));
    else if (J)
      C.Jobs = *J;
    else
      Fail(J.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_ptxas_timeout_EQ)) {
    Expected<unsigned> T =
        parseUnsigned("--ptxas-timeout", A->getValue(), 86400);
    if (T)
      C.PtxasTimeout = *T;
    else
      Fail(T.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_time_trace_granularity_EQ)) {
    Expected<unsigned> G =
        parseUnsigned("--time-trace-granularity", A->getValue(), 10000000);
    if (G)
      C.TimeTraceGranularity = *G;
    else
      Fail(G.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_error_limit_EQ)) {
    if (Expected<unsigned> N =
            parseUnsigned("--error-limit", A->getValue(), 1u << 30))
      C.Link.ErrorLimit = *N;
    else
      Fail(N.takeError());
  }
  if (const opt::Arg *A = Args.getLastArg(OPT_ptx_version_EQ)) {
    C.PtxVersion = parsePtxVersion(A->getValue());
    if (!C.PtxVersion)
      Fail(createStringError(inconvertibleErrorCode(),
                             "invalid value for --ptx-version: '%s' (expected "
                             "a PTX ISA version such as 7.8)",
                             A->getValue()));
  }
  C.Paths =
      codegen::resolveToolkitPaths(Args.getLastArgValue(OPT_cuda_path_EQ),
                                   Args.getLastArgValue(OPT_ptxas_EQ),
                                   Args.getLastArgValue(OPT_libdevice_EQ));
  C.Link.LibdevicePath = C.Paths.Libdevice;
  C.Link.DeviceRuntimePath = C.Paths.DeviceRuntime;

  if (!C.ListTargets) {
    if (C.Output.empty())
      Fail(createStringError(inconvertibleErrorCode(),
                             "no output: pass -o <file.o|file.fatbin|file.cubin|"
                             "file.ptx|file.bc|dir>"));
    // "-" is no directory to create: --json=- is stdout, but the outputs
    // are binary, and one or many files.
    if (C.Output == "-")
      Fail(createStringError(inconvertibleErrorCode(),
                             "-o -: fatlink does not write its outputs to "
                             "standard output: name a file (.cubin, .ptx, "
                             ".fatbin, .o, .bc) or a directory"));
    StringRef Ext = sys::path::extension(C.Output);
    if (Ext == ".cubin" || Ext == ".ptx")
      C.OutKind = OutputKind::File;
    else if (Ext == ".fatbin")
      C.OutKind = OutputKind::Fatbin;
    else if (Ext == ".o")
      C.OutKind = OutputKind::HostObject;
    else if (Ext == ".bc")
      C.OutKind = OutputKind::Bitcode;
  }
  C.Link.CodegenOnly = Args.hasArg(OPT_codegen_only) || !C.Join.empty();
  C.SharePTX = !Args.hasArg(OPT_ptx_per_arch);
  C.BatchPtxas = !Args.hasArg(OPT_ptxas_per_partition);
  C.WarnSpills = Args.hasArg(OPT_warn_spills);
  C.CacheDir = Args.getLastArgValue(OPT_cache_dir_EQ).str();
  if (const opt::Arg *A = Args.getLastArg(OPT_cache_policy_EQ)) {
    C.CachePolicy = A->getValue();
    if (Error E = checkCachePolicy("--cache-policy", C.CachePolicy))
      Fail(std::move(E));
  }

  {
    auto Named = [&](unsigned Id, StringRef Name) -> std::optional<NamedValue> {
      if (const opt::Arg *A = Args.getLastArg(Id))
        return NamedValue{Name.str(), A->getValue()};
      return std::nullopt;
    };
    Expected<packager::FatbinOptions> F =
        chooseCompression(Named(OPT_compress_EQ, "--compress"),
                          Named(OPT_min_driver_EQ, "--min-driver"));
    if (F)
      C.Fatbin = *F;
    else
      Fail(F.takeError());
    if (const opt::Arg *A = Args.getLastArg(OPT_zstd_threads_above_EQ)) {
      if (StringRef(A->getValue()).getAsInteger(10, C.Fatbin.ZstdThreadsAbove))
        Fail(createStringError(inconvertibleErrorCode(),
                               "invalid value for --zstd-threads-above: '%s' "
                               "(expected a number of bytes)",
                               A->getValue()));
    }
    // Checked by chooseCompression; the PTX targets are checked against
    // it once planned (checkMinDriver).
    if (const opt::Arg *A = Args.getLastArg(OPT_min_driver_EQ))
      C.MinDriver = parseDriverVersion(A->getValue());
  }
  if (Expected<packager::HostArch> H = packager::parseHostArch(
          hostTriple(Args.getLastArgValue(OPT_host_arch_EQ))))
    C.HostArch = *H;
  else
    Fail(H.takeError());

  // --save-temps keeps intermediates beside the output (or in the given
  // directory), named after the output (TempFiles::saveFor).
  if (const opt::Arg *A = Args.getLastArg(OPT_save_temps, OPT_save_temps_EQ)) {
    StringRef Dir;
    if (A->getOption().matches(OPT_save_temps_EQ))
      Dir = A->getValue();
    if (Error E = Ctx.Temps.saveFor(C.Output,
                                    C.OutKind == OutputKind::Directory, Dir))
      Fail(std::move(E));
  }
  return C;
}

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

static Expected<ToolFacts> probeToolsUncached(Context &Ctx, const Config &C) {
  ToolFacts F;
  F.LLVMMajor = LLVM_VERSION_MAJOR;
  Expected<std::vector<lto::ArchInfo>> Arches = lto::getLLVMArches();
  if (!Arches)
    return Arches.takeError();
  F.LLVMArches = std::move(*Arches); // their PTX ISA: fillPtxVersions
  Expected<unsigned> MaxPtx = lto::getLLVMMaxPtxVersion();
  if (!MaxPtx)
    return MaxPtx.takeError();
  F.LLVMMaxPtx = *MaxPtx;

  // PTX-only links (rustc's llbc interface) run no ptxas: every arch LLVM
  // knows is allowed, up to the PTX ISA LLVM can emit.
  if (!C.RunPtxas) {
    for (const lto::ArchInfo &A : F.LLVMArches) {
      F.PtxasArches.push_back(A.Cpu);
      F.PtxasArches.push_back("compute_" + A.Cpu.substr(3));
    }
    F.PtxasMaxPtx = F.LLVMMaxPtx;
    F.PtxasRelease = "(not used)";
    return F;
  }

  Expected<codegen::PtxasInfo> Ptxas =
      codegen::probePtxas(Ctx, C.Paths.Ptxas, C.Paths.Hint);
  if (!Ptxas)
    return Ptxas.takeError();
  F.PtxasRelease = Ptxas->Release;
  F.PtxasArches = std::move(Ptxas->Arches);
  F.PtxasMaxPtx = Ptxas->MaxPtxVersion;
  return F;
}

/// Fills in the PTX ISA version of each of \p Cpus (every arch, if none)
/// where the facts lack it. Each is a code generation of an empty module
/// (lto::fillMinPtxVersion), about half a millisecond: for all 40 arches
/// most of what probing LLVM costs, while a link names one or a few.
/// Returns whether it filled any.
static Expected<bool>
fillPtxVersions(ToolFacts &F,
                const std::optional<std::vector<std::string>> &Cpus) {
  bool Filled = false;
  for (lto::ArchInfo &A : F.LLVMArches) {
    if (A.MinPtxVersion || (Cpus && !is_contained(*Cpus, A.Cpu)))
      continue;
    if (Error E = lto::fillMinPtxVersion(A))
      return std::move(E);
    Filled = true;
  }
  return Filled;
}

/// The tools' facts, from <cache>/tools when an earlier link with the same
/// tools stored them there (Cache.h, toolFactsKey), with the PTX ISA
/// version of the arches planning C's targets reads (namedCpus; every
/// arch for --list-targets); what was filled in is stored back.
Expected<ToolFacts> probeTools(Context &Ctx, const Config &C) {
  TimeTraceScope Scope("Probe tools");
  SmallString<256> Dir;
  std::string Key;
  std::optional<ToolFacts> F;
  if (!C.CacheDir.empty()) {
    Dir = C.CacheDir;
    sys::path::append(Dir, "tools");
    Key = toolFactsKey(C);
    if (std::optional<std::string> P =
            cacheLookupBlob(Ctx, Dir, Key, /*Report=*/false))
      F = decodeToolFacts(*P);
  }
  bool Store = false;
  if (!F) {
    Expected<ToolFacts> Probed = probeToolsUncached(Ctx, C);
    if (!Probed)
      return Probed.takeError();
    F = std::move(*Probed);
    Store = true;
  }
  Expected<bool> Filled = fillPtxVersions(
      *F, C.ListTargets ? std::nullopt : namedCpus(C.ArchLists, *F));
  if (!Filled)
    return Filled.takeError();
  if (!C.CacheDir.empty() && (Store || *Filled))
    cacheStoreBlob(Ctx, Dir, Key, encodeToolFacts(*F), /*Report=*/false);
  return std::move(*F);
}

static void printTargets(Context &Ctx, const ToolFacts &Facts) {
  Ctx.Out << "# targets that LLVM " << Facts.LLVMMajor << " and ptxas (CUDA "
          << Facts.PtxasRelease << ") both support\n";
  Ctx.Out << "# target        output  PTX ISA\n";
  for (const lto::Target &T : allTargets(Facts))
    Ctx.Out << left_justify(T.Name, 15) << " "
            << left_justify(T.IsPTX ? "ptx" : "cubin", 7) << " "
            << T.ptxVersionString() << "\n";
  for (StringRef Preset : {"all-major", "all"})
    if (std::optional<std::vector<std::string>> Names =
            expandPreset(Preset, Facts))
      Ctx.Out << "# --arch=" << Preset << ": " << join(*Names, ",") << "\n";
}

/// Relocatable device code is machine code for one arch: every target
/// needs an object of its own arch from each translation unit (a container
/// merged by `ld -r` holds several), or, from nvcc, PTX that ptxas can
/// assemble for it; PTX targets take nvcc's PTX or LTO-IR (linked into
/// their one PTX module), never a cubin. Checked before any work.
static Error checkObjects(const lto::InputSet &Inputs,
                          ArrayRef<lto::Target> Targets) {
  // Unit by unit (in input order), target by target.
  std::vector<std::pair<const lto::DeviceObject *, const lto::Target *>> Gaps;
  for (const lto::Target &T : Targets) {
    std::vector<const lto::DeviceObject *> Missing;
    lto::objectsForTarget(Inputs, T, &Missing);
    for (const lto::DeviceObject *O : Missing)
      Gaps.push_back({O, &T});
  }
  llvm::stable_sort(Gaps, [](const auto &A, const auto &B) {
    return A.first < B.first; // objects are in one vector, in input order
  });
  Error Errors = Error::success();
  for (auto [O, TP] : Gaps) {
    const lto::Target &T = *TP;
    std::vector<std::string> Arches;
    for (const lto::DeviceObject &Other : Inputs.Objects)
      if (Other.Source == O->Source)
        Arches.push_back(Other.Arch);
    std::string Msg;
    if (!O->FromNvcc)
      Msg = formatv("{0}: holds relocatable device code (cubins) for {1} "
                    "only, which cannot serve target {2}: compile it with "
                    "-foffload-lto (device bitcode serves every target){3}",
                    O->Container, join(Arches, ", "), T.Name,
                    T.IsPTX ? "" : " or add --offload-arch=" + T.Cpu);
    else if (T.IsPTX)
      Msg = formatv("{0}: nvcc relocatable device code for {1} only, which "
                    "cannot serve PTX target {2}: a PTX target's code is one "
                    "PTX module, which takes nvcc's PTX or LTO-IR of an arch "
                    "no newer than the target's, never a cubin; compile it "
                    "with "
                    "-gencode arch=compute_{3},code=compute_{3} (or "
                    "code=lto_{3}), or drop {2}",
                    O->Container, join(Arches, ", "), T.Name, T.Sm);
    else if (all_of(Arches, [](StringRef A) { return A.starts_with("lto_"); }))
      Msg = formatv("{0}: nvcc LTO-IR for {1} only, which cannot serve "
                    "target {2} (LTO-IR serves its arch and newer ones): "
                    "compile it with -gencode arch=compute_{3},code=lto_{3}",
                    O->Container, join(Arches, ", "), T.Name, T.Sm);
    else
      Msg = formatv("{0}: nvcc device code for {1} only, which cannot serve "
                    "target {2} (no cubin for {2} or an older sm_{4}x, no "
                    "PTX for it or an older arch): compile it with "
                    "-gencode arch=compute_{3},"
                    "code={2}, or keep PTX for ptxas with "
                    "-gencode arch=compute_{3},code=compute_{3}",
                    O->Container, join(Arches, ", "), T.Name, T.Sm, T.Sm / 10);
    Errors = joinErrors(std::move(Errors), createStringError(Msg));
  }
  return Errors;
}

/// A program that uses a device library (CUDA's device runtime, for
/// kernels that launch kernels) needs, for every target, a cubin of the
/// library for the target's SM (nvlink takes sm_90's for sm_90a, and
/// nothing else: measured with CUDA 13.0), and PTX targets cannot have it
/// linked in at all. Checked after the link, before code generation.
static Error checkLibraries(const lto::LinkedProgram &Program,
                            ArrayRef<lto::Target> Targets) {
  if (Program.Libraries.empty())
    return Error::success();
  // Name the launch when there is one: it says what the program does.
  auto Launch = find_if(Program.LibrarySymbols, [](const std::string &S) {
    return StringRef(S).contains("LaunchDevice");
  });
  std::string Uses = Launch != Program.LibrarySymbols.end()
                         ? *Launch
                         : Program.LibrarySymbols.front();
  if (Program.LibrarySymbols.size() > 1)
    Uses +=
        " and " + std::to_string(Program.LibrarySymbols.size() - 1) + " more";
  Error Errors = Error::success();
  for (const lto::DeviceLibrary &L : Program.Libraries)
    for (const lto::Target &T : Targets) {
      std::string Sm = "sm_" + std::to_string(T.Sm);
      if (T.IsPTX)
        Errors = joinErrors(
            std::move(Errors),
            createStringError(
                inconvertibleErrorCode(),
                "%s: the program launches kernels from the device (it "
                "calls %s, from %s), and the device runtime is relocatable "
                "machine code that cannot be linked into PTX: build a cubin "
                "target instead (sm_%u)",
                T.Name.c_str(), Uses.c_str(), L.Path.c_str(), T.Sm));
      else if (!is_contained(L.Arches, Sm))
        Errors = joinErrors(
            std::move(Errors),
            createStringError(
                inconvertibleErrorCode(),
                "%s: %s has no cubin for %s (it has %s), and the program "
                "needs it (it calls %s): drop target %s or use a CUDA "
                "toolkit whose device runtime supports it",
                T.Name.c_str(), L.Path.c_str(), Sm.c_str(),
                join(L.Arches, ", ").c_str(), Uses.c_str(), T.Name.c_str()));
    }
  return Errors;
}

/// The partitions to optimize and compile in (lto::LinkOptions::Partitions:
/// 0 = by the number of kernels, 1 = none): C.Partitions, or 1 when some
/// output needs a target's whole PTX. Never depends on -j.
static unsigned partitionSetting(const Config &C) {
  bool NeedsWholePTX =
      C.EmitPTX || !C.RunPtxas || C.OutKind == OutputKind::Bitcode ||
      (C.OutKind == OutputKind::File &&
       sys::path::extension(C.Output) != ".cubin");
  return NeedsWholePTX ? 1 : C.Partitions;
}

namespace {

/// One file to write: its path and bytes.
struct OutputFile {
  std::string Path;
  StringRef Data;
  /// The target output whose mapped cubin Data is, if any: its pages are
  /// handed back once written.
  const TargetOutput *Mapped = nullptr;
};

} // namespace

/// Packs every target's code into one fatbin, and that into a host object
/// when asked for a .o.
static Error package(const Config &C, ArrayRef<lto::Target> Targets,
                     ArrayRef<TargetOutput> Outputs,
                     const lto::LinkedProgram &Program, DeviceBuild &Out) {
  TimeTraceScope Scope("Package");
  std::vector<packager::FatbinImage> Images;
  for (auto [T, O] : zip(Targets, Outputs)) {
    if (!O.Image.Entry.empty()) {
      Images.push_back(O.Image);
      continue;
    }
    Expected<packager::FatbinImage> Image =
        codegen::encodeImage(T, O, C.Fatbin);
    if (!Image)
      return Image.takeError();
    Images.push_back(std::move(*Image));
  }
  Expected<std::string> Fatbin = packager::writeFatbin(Images, C.Fatbin);
  if (!Fatbin)
    return Fatbin.takeError();
  Out.Fatbin = std::move(*Fatbin);
  if (C.OutKind != OutputKind::HostObject)
    return Error::success();

  Expected<std::string> Object =
      packager::writeHostObject(Out.Fatbin, Program.Kernels, C.HostArch);
  if (!Object)
    return Object.takeError();
  Out.Object = std::move(*Object);
  return Error::success();
}

/// Whether A and B name one file: the same path once made absolute and
/// without "." and "..", or, where both exist, the same file.
static bool samePath(StringRef A, StringRef B) {
  SmallString<256> X(A), Y(B);
  sys::fs::make_absolute(X);
  sys::fs::make_absolute(Y);
  sys::path::remove_dots(X, /*remove_dot_dot=*/true);
  sys::path::remove_dots(Y, /*remove_dot_dot=*/true);
  if (X == Y)
    return true;
  sys::fs::file_status SA, SB;
  return !sys::fs::status(A, SA) && !sys::fs::status(B, SB) &&
         sys::fs::equivalent(SA, SB);
}

/// The files this run writes besides -o, by option: --json (unless
/// stdout) and --time-trace.
static std::vector<NamedValue> sideOutputs(const Config &C) {
  std::vector<NamedValue> Out;
  if (!C.JsonPath.empty() && C.JsonPath != "-")
    Out.push_back({"--json", C.JsonPath});
  if (!C.TimeTracePath.empty())
    Out.push_back({"--time-trace", C.TimeTracePath});
  return Out;
}

/// Checks, before any work, that no output is an input (writing it would
/// destroy the input, and a failed run's trace is still written) and that
/// -o, --json and --time-trace name different files: otherwise the last
/// written replaces the others, and the run exits 0. In an output
/// directory, where fatlink writes <target>.cubin and <target>.ptx, the
/// others may not be .cubin or .ptx files (the targets are not planned
/// yet, and a failed run's trace would still be written).
static Error checkOutputPaths(const Config &C) {
  if (Error E = checkOutputsAreNotInputs(
          {C.Output, C.JsonPath, C.TimeTracePath}, C.Inputs))
    return E;
  std::vector<NamedValue> Side = sideOutputs(C);
  for (size_t I = 0; I < Side.size(); ++I) {
    if (!C.Output.empty() && samePath(Side[I].Value, C.Output))
      return createStringError(inconvertibleErrorCode(),
                               "%s=%s is also the -o output: name another "
                               "file for %s",
                               Side[I].Name.c_str(), Side[I].Value.c_str(),
                               Side[I].Name.c_str());
    StringRef Parent = sys::path::parent_path(Side[I].Value);
    StringRef Ext = sys::path::extension(Side[I].Value);
    if (C.OutKind == OutputKind::Directory && !C.Split && !C.Output.empty() &&
        (Ext == ".cubin" || Ext == ".ptx") &&
        samePath(Parent.empty() ? "." : Parent, C.Output))
      return createStringError(
          inconvertibleErrorCode(),
          "%s=%s is in the output directory -o %s, where fatlink writes "
          "<target>.cubin and <target>.ptx: name another file for %s",
          Side[I].Name.c_str(), Side[I].Value.c_str(), C.Output.c_str(),
          Side[I].Name.c_str());
    for (size_t J = I + 1; J < Side.size(); ++J)
      if (samePath(Side[I].Value, Side[J].Value))
        return createStringError(
            inconvertibleErrorCode(),
            "%s=%s and %s=%s name the same file: name two files",
            Side[I].Name.c_str(), Side[I].Value.c_str(), Side[J].Name.c_str(),
            Side[J].Value.c_str());
  }
  return Error::success();
}

/// Checks -o against the planned targets, right after planning them and
/// before any work: one .cubin or .ptx file serves one target, a .cubin no
/// PTX-only one.
static Error checkOutputKind(const Config &C, ArrayRef<lto::Target> Targets) {
  if (C.OutKind == OutputKind::File) {
    if (Targets.size() != 1 && !C.OutputChosenBy.empty()) {
      std::string Names;
      for (const lto::Target &T : Targets)
        Names += (Names.empty() ? "" : ", ") + T.Name;
      StringRef Stem = sys::path::stem(C.Output);
      return createStringError(
          inconvertibleErrorCode(),
          "%s is one file (%s), but %s names %zu targets (%s): name one "
          "target there for that file; for all of them, have rustc write "
          "%s.fatbin, %s.o or a directory (-o); under cargo, which names "
          "the file, link the crate into the host program with fatlink-cc "
          "instead, which packs every target (docs/cargo.md)",
          C.OutputChosenBy.c_str(), C.Output.c_str(),
          C.Names.Arch.empty() ? "--arch" : C.Names.Arch.c_str(),
          Targets.size(), Names.c_str(), Stem.str().c_str(),
          Stem.str().c_str());
    }
    if (Targets.size() != 1)
      return createStringError(
          inconvertibleErrorCode(),
          "-o %s names one file, but there are %zu targets: give a directory "
          "(-o %s) to get one file per target",
          C.Output.c_str(), Targets.size(),
          sys::path::parent_path(C.Output).empty()
              ? "out/"
              : (sys::path::parent_path(C.Output) + "/").str().c_str());
    if (sys::path::extension(C.Output) == ".cubin" && Targets[0].IsPTX)
      return createStringError(inconvertibleErrorCode(),
                               "-o %s asks for a cubin, but %s is a PTX-only "
                               "target: use sm_%s or write a .ptx file",
                               C.Output.c_str(), Targets[0].Name.c_str(),
                               Targets[0].Cpu.substr(3).c_str());
  }
  return Error::success();
}

static Expected<std::vector<OutputFile>>
planOutputs(const Config &C, ArrayRef<lto::Target> Targets,
            ArrayRef<TargetOutput> Outputs, const DeviceBuild &Pack) {
  std::vector<OutputFile> Files;
  if (C.OutKind == OutputKind::Bitcode) {
    if (Pack.Program.Modules.size() != 1) {
      std::string Groups;
      for (const lto::OptimizedModule &M : Pack.Program.Modules) {
        Groups += Groups.empty() ? "" : "; ";
        for (auto [N, I] : enumerate(M.TargetIndices))
          Groups += (N ? "," : "") + Targets[I].Name;
      }
      return createStringError(
          inconvertibleErrorCode(),
          "-o %s: the targets need %zu differently optimized modules (the "
          "program asks for __CUDA_ARCH, or links per-arch images): write one "
          ".bc per group (%s)",
          C.Output.c_str(), Pack.Program.Modules.size(), Groups.c_str());
    }
    return std::vector<OutputFile>{{C.Output, Pack.Program.Modules[0].Bitcode}};
  }
  if (C.OutKind == OutputKind::Fatbin)
    return std::vector<OutputFile>{{C.Output, Pack.Fatbin}};
  if (C.OutKind == OutputKind::HostObject)
    return std::vector<OutputFile>{{C.Output, Pack.Object}};
  if (C.OutKind == OutputKind::File) {
    if (Error E = checkOutputKind(C, Targets))
      return std::move(E);
    bool WantCubin = sys::path::extension(C.Output) == ".cubin";
    if (WantCubin)
      Files.push_back({C.Output, Outputs[0].cubin(), &Outputs[0]});
    else
      Files.push_back({C.Output, Outputs[0].PTX});
    return Files;
  }
  for (auto [T, Out] : zip(Targets, Outputs)) {
    SmallString<256> Path(C.Output);
    if (T.IsPTX || C.EmitPTX) {
      sys::path::append(Path, T.Name + ".ptx");
      Files.push_back({std::string(Path), Out.PTX});
      Path = C.Output;
    }
    if (!T.IsPTX) {
      sys::path::append(Path, T.Name + ".cubin");
      Files.push_back({std::string(Path), Out.cubin(), &Out});
    }
  }
  return Files;
}

/// Writes every file to a temporary beside its destination, into Staged;
/// they are renamed into place only when all (the --json summary and the
/// time trace too) were written.
static Error writeOutputs(const Config &C, ArrayRef<OutputFile> Files,
                          std::vector<StagedFile> &Staged) {
  TimeTraceScope Scope("Write outputs");
  if (C.OutKind == OutputKind::Directory) {
    if (sys::fs::exists(C.Output) && !sys::fs::is_directory(C.Output))
      return createStringError(inconvertibleErrorCode(),
                               "-o %s: exists and is not a directory; name a "
                               ".cubin or .ptx file for one target, or a "
                               "directory for several",
                               C.Output.c_str());
    if (std::error_code EC = sys::fs::create_directories(C.Output))
      return createStringError(EC, "cannot create output directory %s: %s",
                               C.Output.c_str(), EC.message().c_str());
  } else if (sys::fs::is_directory(C.Output)) {
    return createStringError(inconvertibleErrorCode(),
                             "-o %s is a directory, not a file",
                             C.Output.c_str());
  }

  for (const OutputFile &F : Files) {
    Expected<StagedFile> S = StagedFile::create(F.Path, F.Data);
    if (F.Mapped)
      F.Mapped->releaseCubin(F.Data);
    if (!S)
      return S.takeError();
    Staged.push_back(std::move(*S));
  }
  return Error::success();
}

/// Renames every staged file into place.
static Error commitOutputs(std::vector<StagedFile> &Staged) {
  for (StagedFile &S : Staged)
    if (Error E = S.commit())
      return E;
  return Error::success();
}

namespace {
/// One kernel of one cubin target: what its cubin says it uses, what ptxas
/// said it spilled (none: the cubin came from elsewhere), and the input
/// that defined it ("" where unknown).
struct KernelRow {
  const lto::Target *Target;
  packager::KernelInfo Kernel;
  std::optional<codegen::FunctionSpills> Spills;
  std::string Origin;
};
} // namespace

/// Every cubin target's kernels, in target order, each target's by name.
static std::vector<KernelRow> kernelRows(ArrayRef<lto::Target> Targets,
                                         ArrayRef<TargetOutput> Outputs,
                                         const lto::LinkedProgram &Program) {
  std::vector<KernelRow> Rows;
  for (auto [T, Out] : zip(Targets, Outputs)) {
    if (T.IsPTX)
      continue;
    Expected<packager::ModuleSymbols> S =
        packager::readCubinSymbols(Out.cubin());
    Out.releaseCubin(Out.cubin()); // its headers, symbols and .nv.info
    if (!S) {
      consumeError(S.takeError());
      continue;
    }
    for (packager::KernelInfo &K : S->Kernels) {
      if (!K.Resources)
        continue;
      KernelRow R{&T, std::move(K), std::nullopt, ""};
      auto Sp = llvm::lower_bound(
          Out.Spills, R.Kernel.Name,
          [](const codegen::FunctionSpills &F, StringRef N) {
            return F.Name < N;
          });
      if (Sp != Out.Spills.end() && Sp->Name == R.Kernel.Name)
        R.Spills = *Sp;
      auto Def = llvm::lower_bound(
          Program.Kernels, R.Kernel.Name,
          [](const lto::KernelInfo &I, StringRef N) { return I.Name < N; });
      if (Def != Program.Kernels.end() && Def->Name == R.Kernel.Name)
        R.Origin = Def->Origin;
      Rows.push_back(std::move(R));
    }
  }
  return Rows;
}

static Error writeJSON(Context &Ctx, const Config &C,
                       ArrayRef<lto::Target> Targets,
                       ArrayRef<TargetOutput> Outputs,
                       ArrayRef<OutputFile> Files,
                       const lto::LinkedProgram &Program,
                       std::vector<StagedFile> &Staged) {
  std::string Text;
  raw_string_ostream OS(Text);
  json::OStream J(OS, 2);
  J.object([&] {
    J.attributeArray("targets", [&] {
      for (auto [T, Out] : zip(Targets, Outputs))
        J.object([&] {
          J.attribute("target", T.Name);
          J.attribute("kind", T.IsPTX ? "ptx" : "cubin");
          J.attribute("ptx_version", T.ptxVersionString());
          if (!Out.PTX.empty()) // none when compiled in partitions
            J.attribute("ptx_size", int64_t(Out.PTX.size()));
          if (!T.IsPTX)
            J.attribute("cubin_size", int64_t(Out.cubin().size()));
        });
    });
    J.attributeArray("files", [&] {
      for (const OutputFile &F : Files)
        J.object([&] {
          J.attribute("path", F.Path);
          J.attribute("size", int64_t(F.Data.size()));
        });
    });
    J.attributeArray("kernels", [&] {
      for (const lto::KernelInfo &K : Program.Kernels)
        J.object([&] {
          J.attribute("name", K.Name);
          J.attributeArray("param_sizes", [&] {
            for (unsigned S : K.ParamSizes)
              J.value(int64_t(S));
          });
        });
    });
    // What the link knew of each kernel (docs/abi.md): the manifest the
    // host object carries.
    J.attributeArray("kernel_manifest", [&] {
      for (const lto::KernelInfo &K : Program.Kernels) {
        const packager::KernelManifest &M = K.Manifest;
        if (!K.hasManifest())
          continue;
        J.object([&] {
          J.attribute("kernel", K.Name);
          J.attribute("language", packager::languageName(M.Language));
          J.attribute("origin", K.Origin);
          packager::writeManifestJson(J, M, /*ParamsKnown=*/true);
        });
      }
    });
    // Each cubin target's kernels and their resources, as `fatlink inspect
    // --resources` reads them from the cubin, with the spills ptxas
    // reported (null for a cubin fatlink's ptxas did not compile).
    J.attributeArray("kernel_resources", [&] {
      for (const KernelRow &Row : kernelRows(Targets, Outputs, Program)) {
        const packager::KernelResources &R = *Row.Kernel.Resources;
        auto Spill = [&](uint64_t codegen::FunctionSpills::*Field) {
          return Row.Spills ? json::Value(int64_t((*Row.Spills).*Field))
                            : json::Value(nullptr);
        };
        J.object([&] {
          J.attribute("target", Row.Target->Name);
          J.attribute("kernel", Row.Kernel.Name);
          J.attribute("origin", Row.Origin.empty() ? json::Value(nullptr)
                                                   : json::Value(Row.Origin));
          J.attribute("registers", int64_t(R.Registers));
          J.attribute("stack", R.Stack ? json::Value(int64_t(*R.Stack))
                                       : json::Value(nullptr));
          J.attribute("spill_stores", Spill(&codegen::FunctionSpills::Stores));
          J.attribute("spill_loads", Spill(&codegen::FunctionSpills::Loads));
          J.attribute("shared", int64_t(R.Shared));
          J.attribute("shared_reserved", int64_t(R.SharedReserved));
          J.attribute("local", int64_t(R.Local));
          J.attribute("constant0", int64_t(R.Constant0));
          J.attribute("code_size", int64_t(R.CodeSize));
        });
      }
    });
    J.attributeArray("inputs", [&] {
      for (const lto::InputUse &U : Program.Inputs)
        J.object([&] {
          J.attribute("origin", U.Origin);
          J.attribute("compiled_for", U.CompiledFor);
          J.attributeArray("targets", [&] {
            for (const std::string &T : U.Targets)
              J.value(T);
          });
        });
    });
    J.attributeArray("warnings", [&] {
      for (const std::string &W : Program.Warnings)
        J.value(W);
    });
    J.attributeArray("globals", [&] {
      for (const std::string &G : Program.Globals)
        J.value(G);
    });
    J.attributeArray("libdevice", [&] {
      for (const std::string &F : Program.LibdeviceFunctions)
        J.value(F);
    });
  });
  OS << "\n";

  if (C.JsonPath == "-") {
    Ctx.Out << Text;
    return Error::success();
  }
  Expected<StagedFile> S = StagedFile::create(C.JsonPath, Text);
  if (!S)
    return S.takeError();
  Staged.push_back(std::move(*S));
  return Error::success();
}

//===----------------------------------------------------------------------===//
// The command
//===----------------------------------------------------------------------===//

/// -v: the targets, and every input as read.
static void reportInputs(Context &Ctx, ArrayRef<lto::Target> Targets,
                         const lto::InputSet &Inputs) {
  for (const lto::Target &T : Targets)
    Ctx.verbose("target " + T.Name + ": " + (T.IsPTX ? "PTX" : "cubin") +
                ", PTX ISA " + T.ptxVersionString());
  for (const lto::DeviceImage &Image : Inputs.Images)
    Ctx.verbose("input " + Image.Origin +
                (Image.Arch.empty() ? "" : " [" + Image.Arch + "]"));
  for (const lto::DeviceObject &O : Inputs.Objects)
    Ctx.verbose("input " + O.Origin + " [" + O.Arch +
                (O.IsLTOIR    ? ", nvcc LTO-IR]"
                 : O.IsPTX    ? ", nvcc PTX]"
                 : O.FromNvcc ? ", nvcc relocatable cubin]"
                              : ", relocatable cubin]"));
  for (const lto::DeviceLibrary &L : Inputs.Libraries)
    Ctx.verbose("input " + L.Path +
                " [device library: " + join(L.Arches, ", ") + "]");
  for (const std::string &Note : Inputs.Skipped)
    Ctx.verbose("skipped " + Note);
}

/// What lto memoizes (image digests, partitions' O3 results) goes under
/// <cache>/memo, in a file named by a hash of fatlink's version and the
/// key, so another fatlink never reads what this one wrote.
static void setMemoHooks(Context &Ctx, const Config &C,
                         lto::LinkOptions &Link) {
  std::string Dir = C.CacheDir + "/memo";
  Context *Quiet = &Ctx;
  auto File = [](StringRef Key) {
    BLAKE3 H;
    H.update(versionString());
    H.update(StringRef("\0", 1));
    H.update(Key);
    BLAKE3Result<32> R = H.final();
    return toHex(ArrayRef<uint8_t>(R), /*LowerCase=*/true);
  };
  Link.MemoLookup = [Dir, Quiet, File](StringRef Key) {
    return cacheLookupBlob(*Quiet, Dir, File(Key), /*Report=*/false);
  };
  Link.MemoStore = [Dir, Quiet, File](StringRef Key, StringRef Value) {
    cacheStoreBlob(*Quiet, Dir, File(Key), Value, /*Report=*/false);
  };
}

/// The user's link options, with the limits the tools set.
static lto::LinkOptions linkOptions(Context &Ctx, const Config &C,
                                    const ToolFacts &Facts,
                                    ArrayRef<lto::Target> Targets) {
  lto::LinkOptions Link = C.Link;
  // Kept intermediates include the linked and optimized bitcode.
  Link.SaveTempsPrefix = Ctx.Temps.savePrefix();
  Link.Jobs = C.Jobs;
  Link.UseJobserver = C.Jobs == 0 && joinJobserver(Ctx);
  // Inputs compiled for a newer PTX ISA raise their targets' (up to what
  // both LLVM and ptxas take), unless --ptx-version chose it.
  Link.KeepPtxVersion = C.PtxVersion.has_value();
  Link.MaxPtxVersion = std::min(Facts.PtxasMaxPtx, Facts.LLVMMaxPtx);
  Link.MaxPtxVersionBy =
      Facts.PtxasMaxPtx <= Facts.LLVMMaxPtx
          ? (C.RunPtxas ? "ptxas from CUDA " + Facts.PtxasRelease : "LLVM")
          : "LLVM " + std::to_string(Facts.LLVMMajor);
  Link.TimeTraceGranularity = C.TimeTraceGranularity;
  Link.Partitions = partitionSetting(C);
  Link.Verbose = [&Ctx](const std::string &Msg) { Ctx.verbose(Msg); };
  // Partitions' bitcode waits for O3 and for code generation in the run's
  // temporary files, not in memory (docs/lto.md, "What a partition-first
  // link holds").
  Link.Spill = [&Ctx](StringRef Name, StringRef Bytes) {
    return Ctx.Temps.write(Name, Bytes);
  };
  Link.NeedWholeModule =
      C.OutKind == OutputKind::Bitcode ||
      any_of(Targets, [](const lto::Target &T) { return T.IsPTX; });
  if (!C.CacheDir.empty())
    setMemoHooks(Ctx, C, Link);
  return Link;
}

/// -v: what the linked program holds and how it was optimized.
static void reportProgram(Context &Ctx, const DeviceBuild &B) {
  for (const lto::KernelInfo &K : B.Program.Kernels)
    Ctx.verbose("kernel " + K.Name);
  if (!B.Program.LibdeviceFunctions.empty())
    Ctx.verbose("libdevice: " + join(B.Program.LibdeviceFunctions, " "));
  for (const lto::DeviceLibrary &L : B.Program.Libraries)
    Ctx.verbose("device library " + L.Path + ", linked by nvlink for " +
                join(B.Program.LibrarySymbols, " "));
  for (const lto::OptimizedModule &M : B.Program.Modules) {
    std::vector<std::string> Names;
    for (size_t I : M.TargetIndices)
      Names.push_back(B.Targets[I].Name);
    Ctx.verbose("optimized module for " + join(Names, ", ") + ": " +
                (M.Parts.empty()
                     ? Twine(M.Bitcode.size()) + " bytes of bitcode"
                     : Twine(M.Parts.size()) + " partitions"));
  }
}

/// The code generation options of this run; each partition's cubin is
/// cached under <cache>/codegen.
static codegen::CodegenOptions codegenOptions(Context &Ctx, const Config &C) {
  codegen::CodegenOptions O;
  O.OptLevel = C.Link.OptLevel;
  O.Jobs = C.Jobs;
  O.UseJobserver = C.Jobs == 0 && joinJobserver(Ctx);
  O.RunPtxas = C.RunPtxas;
  O.SharePTX = C.SharePTX;
  O.BatchPtxas = C.BatchPtxas;
  O.Paths = C.Paths;
  O.PtxasTimeout = C.PtxasTimeout;
  O.TimeTraceGranularity = C.TimeTraceGranularity;
  if (C.OutKind == OutputKind::Fatbin || C.OutKind == OutputKind::HostObject)
    O.Package = C.Fatbin;
  if (!C.CacheDir.empty()) {
    std::string Dir = C.CacheDir + "/codegen";
    O.Cache.Key = [&C](const lto::Target &T, ArrayRef<uint8_t> BitcodeHash,
                       StringRef PTXSource) {
      return codegenKey(C, T, BitcodeHash, PTXSource);
    };
    O.Cache.Lookup =
        [&Ctx, Dir](StringRef Key) -> std::optional<codegen::PartitionCode> {
      std::optional<std::string> Blob = cacheLookupBlob(Ctx, Dir, Key);
      if (!Blob)
        return std::nullopt;
      std::optional<codegen::PartitionCode> Code = decodePartitionCode(*Blob);
      if (!Code)
        Ctx.verbose("cache: malformed codegen entry " + Key + ", rebuilt");
      return Code;
    };
    O.Cache.Store = [&Ctx, Dir](StringRef Key,
                                const codegen::PartitionCode &Code) {
      cacheStoreBlob(Ctx, Dir, Key, encodePartitionCode(Code));
    };
  }
  return O;
}

// The device link's passes. Each returns on the first error; the command
// reports it.
Expected<DeviceBuild> buildDevice(Context &Ctx, const Config &C,
                                  const ToolFacts &Facts,
                                  std::vector<lto::Target> Targets,
                                  const lto::InputSet &Inputs) {
  DeviceBuild B;
  B.Targets = std::move(Targets);
  reportInputs(Ctx, B.Targets, Inputs);
  if (C.Piece || !C.Join.empty())
    if (Error E = checkSplitTarget(
            C, B.Targets,
            C.Piece ? "partition " + std::to_string(C.Piece->Index) + " of " +
                          std::to_string(C.Piece->Count) + " (" +
                          C.Inputs[0] + ")"
                    : std::string("--join")))
      return std::move(E);
  if (C.Piece && C.Piece->Empty) {
    // A partition nothing hashed to: its cubin is the empty file.
    B.Outputs.resize(B.Targets.size());
    return std::move(B);
  }

  // Relocatable cubins serve their own arch only: refuse any other target
  // before the work starts.
  if (Error E = checkObjects(Inputs, B.Targets))
    return std::move(E);
  // nvcc's PTX comes with its own PTX ISA: the oldest driver named must
  // JIT-compile the PTX targets that take it.
  if (Error E = checkNvccPtxDriver(C, Inputs, B.Targets, Facts))
    return std::move(E);
  // From here on, the set of device images is fixed.

  // One LLVM module per group of targets: resolve, internalize, libdevice,
  // O3 (lto/).
  Ctx.progressStage("link and optimize");
  Expected<lto::LinkedProgram> Program = lto::linkAndOptimize(
      Inputs, B.Targets, linkOptions(Ctx, C, Facts, B.Targets));
  if (!Program)
    return Program.takeError();
  B.Program = std::move(*Program);
  std::vector<unsigned> Planned = ptxVersions(B.Targets);
  raisePtxVersions(Ctx, B);
  // A PTX target raised to its inputs' PTX ISA must still be one the
  // oldest driver named JIT-compiles.
  if (Error E = checkRaisedDriverTargets(C, Planned, B.Targets, Facts,
                                         PtxIsaSource::Inputs))
    return std::move(E);
  reportProgram(Ctx, B);
  // From here on, the targets and their PTX ISA versions are fixed.

  if (C.OutKind == OutputKind::Bitcode) {
    // No code generation. The module carries the kernel table, so that
    // what is made of it later describes the kernels as this link would.
    if (B.Program.Modules.size() == 1) {
      Expected<std::string> Bitcode = lto::attachKernelTable(
          B.Program.Modules[0].Bitcode, B.Program.Kernels);
      if (!Bitcode)
        return Bitcode.takeError();
      B.Program.Modules[0].Bitcode = std::move(*Bitcode);
    }
    return std::move(B);
  }

  // The device libraries the program calls must serve every target.
  if (Error E = checkLibraries(B.Program, B.Targets))
    return std::move(E);

  // A split link's partition (compiled relocatable, as a partitioned link
  // compiles it) or its join (nvlink).
  if (!C.Join.empty() || (C.Piece && !C.Piece->Whole)) {
    if (Error E = compileSplitLink(Ctx, C, codegenOptions(Ctx, C), B, Inputs))
      return std::move(E);
    return std::move(B);
  }

  // The partitions each optimized module is compiled in (cached per
  // partition).
  Expected<std::vector<std::vector<lto::CodegenPartition>>> Parts =
      codegen::planPartitions(Ctx, B.Program, partitionSetting(C));
  if (!Parts)
    return Parts.takeError();
  // Linking and O3 freed most of what they allocated, but glibc keeps it:
  // give it back before two zstd-19 encoders (about 40 MB each) may run.
  lto::releaseFreedMemory();

  // PTX and cubins for every target, in parallel (codegen/).
  Ctx.progressStage("compile",
                    codegen::countUnits(B.Program, B.Targets, *Parts));
  Expected<std::vector<codegen::TargetOutput>> Outputs =
      codegen::compileTargets(Ctx, codegenOptions(Ctx, C), B.Program, Inputs,
                              B.Targets, *Parts);
  if (!Outputs)
    return Outputs.takeError();
  B.Outputs = std::move(*Outputs);
  std::vector<unsigned> Generated = ptxVersions(B.Targets);
  reportLinkedPtxVersions(Ctx, B);
  // The nvcc code linked into a PTX target (nvJitLink's PTX of LTO-IR
  // too) may have raised its PTX ISA: refused before anything is packaged
  // or written when the oldest driver named cannot JIT-compile it.
  if (Error E = checkRaisedDriverTargets(C, Generated, B.Targets, Facts,
                                         PtxIsaSource::Nvcc))
    return std::move(E);

  // Every target's code in one fatbin, and that in a host object.
  Ctx.progressStage("package");
  if (C.OutKind == OutputKind::Fatbin || C.OutKind == OutputKind::HostObject)
    if (Error E = package(C, B.Targets, B.Outputs, B.Program, B))
      return std::move(E);
  return std::move(B);
}

/// The symbols of each nvcc LTO-IR unit, which only nvJitLink can read:
/// from the PTX it makes of the unit alone, for the unit's arch. First,
/// every LTO-IR newer than this nvJitLink reads is reported, all at once.
static Error readLtoIrSymbols(Context &Ctx, const Config &C,
                              lto::InputSet &Inputs) {
  Error Newer = Error::success();
  for (const lto::DeviceObject &O : Inputs.Objects)
    if (O.IsLTOIR)
      if (Error E = codegen::checkLtoIrVersion(
              C.Paths.CudaPath, O.LtoIrMajor, O.LtoIrMinor, O.Origin))
        Newer = joinErrors(std::move(Newer), std::move(E));
  if (Newer)
    return Newer;
  std::map<unsigned, const lto::DeviceObject *> Done; // by unit
  for (lto::DeviceObject &O : Inputs.Objects) {
    if (!O.IsLTOIR)
      continue;
    if (const lto::DeviceObject *Same = Done[O.Source]) {
      O.Defined = Same->Defined;
      O.Undefined = Same->Undefined;
      O.Kernels = Same->Kernels;
      continue;
    }
    std::string Arch = "sm_" + StringRef(O.Arch).drop_front(4).str();
    Ctx.verbose("nvJitLink " + O.Origin + " alone for " + Arch +
                ", to read its symbols");
    codegen::NvJitLinkInput In;
    In.Kind = codegen::NvJitLinkInput::Object;
    In.Name = O.Container;
    In.Data = O.Data.getBuffer();
    Expected<std::string> Ptx = codegen::runNvJitLink(
        C.Paths.CudaPath, Arch, /*EmitPtx=*/true, In, O.Container);
    if (!Ptx)
      return Ptx.takeError();
    lto::readPtxSymbols(*Ptx, O);
    Done[O.Source] = &O;
  }
  return Error::success();
}

/// A program without kernels launches nothing: a warning, reused links
/// too, unless the caller makes it an error (RequireKernels).
static void warnNoKernels(Context &Ctx, const Config &C, const DeviceBuild &B) {
  if (B.Program.Kernels.empty() && !C.RequireKernels && !C.Piece)
    Ctx.warn("the linked program has no kernels: nothing can be launched");
}

/// --warn-spills: a warning for each kernel and target that ptxas said
/// spills registers, naming the input that defined the kernel. From the
/// cache too: the figures are kept with the cubins.
static void warnSpills(Context &Ctx, const Config &C, const DeviceBuild &B) {
  if (!C.WarnSpills)
    return;
  for (const KernelRow &Row : kernelRows(B.Targets, B.Outputs, B.Program)) {
    if (!Row.Spills || (!Row.Spills->Stores && !Row.Spills->Loads))
      continue;
    std::string Msg = "kernel " + Row.Kernel.Name + " spills " +
                      std::to_string(Row.Spills->Stores) +
                      " bytes (stores) / " +
                      std::to_string(Row.Spills->Loads) + " bytes (loads) on " +
                      Row.Target->Name;
    if (!Row.Origin.empty())
      Msg += "; defined in " + Row.Origin;
    Ctx.warn(Msg);
  }
}

namespace {
/// What the tools support, and the targets planned from it.
struct PlannedTargets {
  ToolFacts Facts;
  std::vector<lto::Target> Targets;
};
} // namespace

static Expected<PlannedTargets> probeAndPlan(const Config &C, ProbeFn Probe) {
  Expected<ToolFacts> Facts = Probe();
  if (!Facts)
    return Facts.takeError();
  Expected<std::vector<lto::Target>> Targets =
      planTargets(C.ArchLists, *Facts, C.PtxVersion, C.Names);
  if (!Targets)
    return Targets.takeError();
  return PlannedTargets{std::move(*Facts), std::move(*Targets)};
}

/// The PTX of a PTX-only link (rustc's llbc request, which asks for no
/// ptxas), assembled by ptxas where one is installed: PTX the driver's JIT
/// would refuse at load time on a user's GPU (an instruction the PTX's
/// `.target` lacks, as `atom.relaxed` below sm_70 or a cluster scope below
/// sm_90) fails the link instead. ptxas checks an instruction against the
/// PTX's `.target`, so a target older than any ptxas knows (rustc's
/// default sm_30; CUDA 13 starts at sm_75) is checked on the oldest it
/// knows. Without ptxas, or where it cannot read the PTX ISA, -v says
/// what was not checked. At -O0: only the check is wanted.
static Error checkPtxOnly(Context &Ctx, const Config &C, const DeviceBuild &B) {
  // What ptxas supports, from the tool facts (cached), as a link that runs
  // ptxas asks for them.
  Config WithPtxas = C;
  WithPtxas.RunPtxas = true;
  Expected<ToolFacts> Ptxas = probeTools(Ctx, WithPtxas);
  if (!Ptxas) {
    Ctx.verbose("fatlink: the PTX is not checked: " +
                toString(Ptxas.takeError()));
    return Error::success();
  }
  // The real arches ptxas knows, by SM: "sm_75" -> 75.
  std::vector<std::pair<unsigned, std::string>> Known;
  for (const std::string &A : Ptxas->PtxasArches) {
    unsigned Sm;
    StringRef Digits = StringRef(A).drop_front(3);
    if (StringRef(A).starts_with("sm_") && !Digits.getAsInteger(10, Sm))
      Known.emplace_back(Sm, A);
  }
  llvm::sort(Known);
  for (auto [T, O] : zip(B.Targets, B.Outputs)) {
    auto It = llvm::find_if(Known, [&](const auto &K) {
      return K.first >= T.Sm && (K.first != T.Sm || K.second == T.Cpu);
    });
    if (It == Known.end() || T.PtxVersion > Ptxas->PtxasMaxPtx) {
      Ctx.verbose("fatlink: the PTX for " + T.Name + " is not checked: " +
                  "ptxas from CUDA " + Ptxas->PtxasRelease + " knows no " +
                  (It == Known.end() ? T.Cpu + " or newer arch"
                                     : "PTX ISA " + T.ptxVersionString()));
      continue;
    }
    Expected<std::string> PTXPath =
        Ctx.Temps.write(T.Name + ".check.ptx", O.PTX);
    if (!PTXPath)
      return PTXPath.takeError();
    if (Error E = codegen::checkPTXFile(
            Ctx, C.Paths, C.PtxasTimeout, *PTXPath, It->second, T.Name, {"-O0"},
            "ptxas, checking the PTX for " + T.Name +
                (It->second == T.Cpu ? "" : " on " + It->second))) {
      std::string Msg = toString(std::move(E));
      if (!C.Names.Arch.empty())
        Msg += "\n>>> " + T.Name + " is " + C.Names.Arch +
               ": name the oldest GPU the code must run on there (rustc's "
               "default, sm_30, lacks much of what kernels use)";
      return createStringError(inconvertibleErrorCode(), Msg);
    }
  }
  return Error::success();
}

Expected<DeviceBuild> buildDeviceCached(Context &Ctx, const Config &Given,
                                        lto::InputSet &Inputs, ProbeFn Probe,
                                        CheckTargetsFn CheckTargets) {
  // Kept intermediates come from a link that runs: a cached link, or
  // partition, makes none.
  Config C = Given;
  if (Ctx.Temps.saving() && !C.CacheDir.empty()) {
    Ctx.verbose("fatlink: cache " + C.CacheDir +
                " not used: the intermediates are being kept (save-temps)");
    C.CacheDir.clear();
  }
  // Bitcode outputs feed build systems, which cache them themselves.
  bool UseCache = !C.CacheDir.empty() && C.OutKind != OutputKind::Bitcode &&
                  !C.Piece && C.Join.empty();
  std::string Key;
  if (UseCache) {
    Key = deviceLinkKey(C, Inputs);
    if (std::optional<DeviceBuild> B = cacheLookup(Ctx, C.CacheDir, Key)) {
      if (CheckTargets)
        if (Error E = CheckTargets(B->Targets))
          return std::move(E);
      // The PTX ISA versions the build ended with; no tools were asked.
      if (Error E = checkDriverTargets(C, B->Targets, nullptr))
        return std::move(E);
      for (const std::string &W : B->Program.Warnings)
        Ctx.warn(W);
      warnNoKernels(Ctx, C, *B);
      warnSpills(Ctx, C, *B);
      return std::move(*B);
    }
  }
  Expected<PlannedTargets> Plan = probeAndPlan(C, Probe);
  if (!Plan)
    return Plan.takeError();
  ToolFacts &Facts = Plan->Facts;
  std::vector<lto::Target> &Targets = Plan->Targets;
  // A wrong -o for these targets is reported now, not after the link (and
  // then not stored in the cache).
  if (CheckTargets)
    if (Error E = CheckTargets(Targets))
      return std::move(E);
  // A PTX target the oldest driver named (--min-driver) cannot JIT-compile
  // is refused before any work, every one of them.
  if (Error E = checkDriverTargets(C, Targets, &Facts))
    return std::move(E);
  if (Error E = readLtoIrSymbols(Ctx, C, Inputs))
    return std::move(E);
  Expected<DeviceBuild> B =
      buildDevice(Ctx, C, Facts, std::move(Targets), Inputs);
  // Checked before it is stored: a cached PTX-only link was checked.
  if (B && !C.RunPtxas && C.OutKind != OutputKind::Bitcode)
    if (Error E = checkPtxOnly(Ctx, C, *B))
      return std::move(E);
  if (B) {
    for (const std::string &W : B->Program.Warnings)
      Ctx.warn(W);
    warnNoKernels(Ctx, C, *B);
    warnSpills(Ctx, C, *B);
  }
  // Only a store makes the cache grow: then keep it within its limits (on
  // a full disk, nothing is stored and nothing is written).
  if (B && UseCache && cacheStore(Ctx, C.CacheDir, Key, *B))
    cachePrune(Ctx, C.CacheDir, C.CachePolicy);
  return B;
}

/// Renames the staged outputs into place, or, when a caller commits
/// several links' outputs together (Pending), hands them over.
static Error commitOrHandOver(std::vector<StagedFile> &Staged,
                              std::vector<StagedFile> *Pending) {
  if (!Pending)
    return commitOutputs(Staged);
  for (StagedFile &S : Staged)
    Pending->push_back(std::move(S));
  return Error::success();
}

Error runDeviceLink(Context &Ctx, const Config &Given, ProbeFn Probe,
                    std::vector<StagedFile> *Pending) {
  // Writing over an input would destroy it (the output is renamed into
  // place only at the end, but then the input is gone), and two outputs
  // of one name would leave only the last.
  if (Error E = checkOutputPaths(Given))
    return E;
  if (Given.Split) {
    Expected<std::vector<std::pair<std::string, std::string>>> Parts =
        splitModule(Given);
    if (!Parts)
      return Parts.takeError();
    std::vector<OutputFile> Files;
    for (const auto &[Path, Data] : *Parts)
      Files.push_back({Path, Data});
    std::vector<StagedFile> Staged;
    if (Error E = writeOutputs(Given, Files, Staged))
      return E;
    return commitOrHandOver(Staged, Pending);
  }
  // One partition of a split link is compiled as --partitions=Count
  // compiles it: relocatable, or whole where it holds the whole program.
  Config C = Given;
  C.Piece = pieceTag(C);
  if (C.Piece && !C.Link.CodegenOnly)
    return createStringError(
        inconvertibleErrorCode(),
        "%s is partition %u of %u of a split link: compile it with "
        "--codegen-only --arch=sm_XX -o FILE.cubin",
        C.Inputs[0].c_str(), C.Piece->Index, C.Piece->Count);
  if (C.Piece && !C.Join.empty())
    return createStringError(
        inconvertibleErrorCode(),
        "--join takes the whole program's .bc, not partition %u of %u (%s)",
        C.Piece->Index, C.Piece->Count, C.Inputs[0].c_str());
  if (C.Piece)
    C.Partitions = 1;
  Expected<lto::InputSet> Inputs =
      lto::readInputs(C.Inputs, lto::InputMode::Device, C.Link.ErrorLimit);
  if (!Inputs)
    return Inputs.takeError();
  Expected<DeviceBuild> B =
      buildDeviceCached(Ctx, C, *Inputs, Probe, [&](ArrayRef<lto::Target> T) {
        return checkOutputKind(C, T);
      });
  if (!B)
    return B.takeError();

  Expected<std::vector<OutputFile>> Files =
      planOutputs(C, B->Targets, B->Outputs, *B);
  if (!Files)
    return Files.takeError();
  // Every output or none: a --json that cannot be written leaves the
  // previous output in place.
  std::vector<StagedFile> Staged;
  if (Error E = writeOutputs(C, *Files, Staged))
    return E;
  if (!C.JsonPath.empty())
    if (Error E = writeJSON(Ctx, C, B->Targets, B->Outputs, *Files,
                            B->Program, Staged))
      return E;
  return commitOrHandOver(Staged, Pending);
}

Error printDevicePlan(Context &Ctx, const Config &C,
                      const lto::InputSet &Inputs) {
  Expected<PlannedTargets> Plan =
      probeAndPlan(C, [&] { return probeTools(Ctx, C); });
  if (!Plan)
    return Plan.takeError();
  ToolFacts &Facts = Plan->Facts;
  std::vector<lto::Target> &Targets = Plan->Targets;
  if (Error E = checkDriverTargets(C, Targets, &Facts))
    return E;

  raw_ostream &OS = Ctx.Out;
  OS << "fatlink: device inputs:\n";
  for (const lto::DeviceImage &Image : Inputs.Images)
    OS << "  " << Image.Origin
       << (Image.Arch.empty() ? "" : " [" + Image.Arch + "]") << "\n";
  for (const lto::DeviceObject &O : Inputs.Objects)
    OS << "  " << O.Origin << " [" << O.Arch << ", relocatable cubin]\n";
  OS << "fatlink: targets:";
  for (const lto::Target &T : Targets)
    OS << " " << T.Name << " (" << (T.IsPTX || !C.RunPtxas ? "ptx" : "cubin")
       << ", PTX ISA " << T.ptxVersionString() << ")";
  OS << "\nfatlink: would run:\n  link and optimize (O" << C.Link.OptLevel
     << ")\n";
  if (C.RunPtxas)
    for (const lto::Target &T : Targets) {
      OS << "  " << C.Paths.Ptxas << " -arch=" << (T.IsPTX ? T.Name : T.Cpu);
      if (!T.IsPTX)
        OS << " -O" << C.Link.OptLevel;
      OS << " <" << T.Name << ".ptx>";
      if (!T.IsPTX)
        OS << " -o <" << T.Name << ".cubin>";
      OS << "\n";
    }
  else
    OS << "  generate PTX (no ptxas)\n";
  std::string Fatbin = "fatbin (" +
                       (C.Fatbin.Compress == packager::Compression::None
                            ? std::string("uncompressed")
                            : "zstd-" + std::to_string(C.Fatbin.ZstdLevel)) +
                       ")";
  switch (C.OutKind) {
  case OutputKind::HostObject:
    OS << "  package: " << Fatbin << " in a host object ("
       << (C.HostArch == packager::HostArch::AArch64 ? "aarch64" : "x86_64")
       << ")";
    break;
  case OutputKind::Fatbin:
    OS << "  package: " << Fatbin;
    break;
  case OutputKind::File:
  case OutputKind::Directory:
  case OutputKind::Bitcode:
    OS << "  write the target's code";
    break;
  }
  if (!C.Output.empty())
    OS << " as " << C.Output;
  OS << "\n";
  if (!C.CacheDir.empty())
    OS << "  cache: " << C.CacheDir << "/" << deviceLinkKey(C, Inputs) << "\n";
  return Error::success();
}

static Error deviceLink(Context &Ctx, const Config &C,
                        std::vector<StagedFile> &Pending) {
  if (C.ListTargets) {
    Expected<ToolFacts> Facts = probeTools(Ctx, C);
    if (!Facts)
      return Facts.takeError();
    printTargets(Ctx, *Facts);
    return Error::success();
  }
  return runDeviceLink(Ctx, C, [&] { return probeTools(Ctx, C); }, &Pending);
}

/// The Chrome trace of this run, written beside its destination but not
/// committed. The file is opened by fatlink rather than by
/// timeTraceProfilerWrite, whose message ("Could not open") named neither
/// the reason nor, in every version, the file.
static Expected<StagedFile> stageTimeTrace(StringRef Path) {
  SmallString<0> Text;
  raw_svector_ostream OS(Text);
  timeTraceProfilerWrite(OS);
  return StagedFile::create(Path, Text);
}

void runTracedAndCommit(Context &Ctx, const Config &C,
                        function_ref<Error(std::vector<StagedFile> &)> Link) {
  // Before the trace starts: a run refused for an output that is an input
  // (or another output) writes no trace over it.
  if (!C.ListTargets)
    if (Error E = checkOutputPaths(C))
      return Ctx.error(std::move(E));
  if (!C.TimeTracePath.empty())
    timeTraceProfilerInitialize(C.TimeTraceGranularity, "fatlink");
  // The outputs (and --json) are staged; the time trace joins them, and
  // they are committed together: a trace that cannot be written leaves the
  // previous output in place.
  std::vector<StagedFile> Pending;
  {
    TimeTraceScope Scope("device-link");
    if (Error E = Link(Pending))
      Ctx.error(std::move(E));
  }
  if (timeTraceProfilerEnabled()) {
    Expected<StagedFile> Trace = stageTimeTrace(C.TimeTracePath);
    timeTraceProfilerCleanup();
    if (!Trace)
      Ctx.error(Trace.takeError());
    else if (Ctx.errorCount()) { // a failed run's trace is still worth having
      // (unless it would replace an input that appeared since the check)
      if (Error E = checkOutputsAreNotInputs({C.TimeTracePath}, C.Inputs))
        consumeError(std::move(E));
      else
        Ctx.error(Trace->commit());
    } else
      Pending.push_back(std::move(*Trace));
  }
  if (Ctx.errorCount())
    return;
  if (Error E = commitOutputs(Pending))
    Ctx.error(std::move(E));
}

/// `fatlink device-link`, once its arguments are parsed.
static void deviceLinkCommand(Context &Ctx, opt::InputArgList &Args) {
  Config C = parseConfig(Ctx, Args);
  if (Ctx.errorCount())
    return;
  // The stage and partitions done, on a terminal, for a long link.
  if (progressWanted(Ctx.Err, Args.hasArg(OPT_quiet)))
    Ctx.startProgress(progressDelay());
  runTracedAndCommit(Ctx, C, [&](std::vector<StagedFile> &Pending) {
    return deviceLink(Ctx, C, Pending);
  });
  Ctx.stopProgress();
}

int deviceLinkMain(ArrayRef<const char *> Args, raw_ostream &Out,
                   raw_ostream &Err) {
  return runCommand(Args, Out, Err, CommandOptTable(),
                    {"fatlink device-link [options] <inputs...>",
                     "fatlink device-link: whole-program link of GPU bitcode "
                     "(Rust and CUDA C++) into cubins and PTX",
                     OPT_UNKNOWN, OPT_help, OPT_version},
                    deviceLinkCommand);
}

} // namespace fatlink
