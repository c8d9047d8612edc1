//===- linker/DeviceLink.cpp - The `fatlink device-link` command ---------===//
//
// The driver of a device link. It reads as its list of passes:
//
//   parse options      -> Config
//   probe the tools    -> what LLVM and ptxas support (asked, not assumed)
//   plan targets       -> refuse anything the tools cannot serve, up front
//   read inputs        -> every device image, with its origin
//   link and optimize  -> one optimized module per group of targets
//   compile targets    -> per target, or per partition and target, in
//                         parallel: PTX (shared between arches where the
//                         oldest and newest agree), then ptxas
//   write outputs      -> all or nothing, each file renamed into place
//
// Output bytes do not depend on -j: each target is compiled independently
// into its own slot, and slots are written in target order.
//
//===----------------------------------------------------------------------===//

#include "linker/Cache.h"
#include "linker/Context.h"
#include "linker/DeviceBuild.h"
#include "linker/Linker.h"
#include "linker/Options.h"
#include "linker/Targets.h"
#include "linker/Toolkit.h"
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
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

std::string hostTriple(StringRef Arch) {
  if (Arch.empty())
    return sys::getDefaultTargetTriple();
  return (Arch + "-unknown-linux-gnu").str();
}

static Expected<Config> parseConfig(Context &Ctx,
                                    const opt::InputArgList &Args) {
  Config C;
  Error Errors = Error::success();
  auto Fail = [&](Error E) {
    Errors = joinErrors(std::move(Errors), std::move(E));
  };

  for (const opt::Arg *A : Args.filtered(OPT_INPUT))
    C.Inputs.push_back(A->getValue());
  C.Output = Args.getLastArgValue(OPT_output).str();
  C.ArchLists = Args.getAllArgValues(OPT_arch_EQ);
  C.Link.ExportSymbols = Args.getAllArgValues(OPT_export_symbol_EQ);
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
  C.Paths = resolveToolkitPaths(Args.getLastArgValue(OPT_cuda_path_EQ),
                                Args.getLastArgValue(OPT_ptxas_EQ),
                                Args.getLastArgValue(OPT_libdevice_EQ));
  C.Link.LibdevicePath = C.Paths.Libdevice;
  C.Link.DeviceRuntimePath = C.Paths.DeviceRuntime;

  if (!C.ListTargets) {
    if (C.Output.empty())
      Fail(createStringError(inconvertibleErrorCode(),
                             "no output: pass -o <file.cubin|file.ptx|dir>"));
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
  C.Link.CodegenOnly = Args.hasArg(OPT_codegen_only);
  C.SharePTX = !Args.hasArg(OPT_ptx_per_arch);
  C.CacheDir = Args.getLastArgValue(OPT_cache_dir_EQ).str();
  if (const opt::Arg *A = Args.getLastArg(OPT_cache_policy_EQ)) {
    C.CachePolicy = A->getValue();
    if (Error E = checkCachePolicy("--cache-policy", C.CachePolicy))
      Fail(std::move(E));
  }

  if (const opt::Arg *A = Args.getLastArg(OPT_compress_EQ)) {
    Expected<packager::FatbinOptions> F =
        parseCompression("--compress", A->getValue());
    if (F)
      C.Fatbin = *F;
    else
      Fail(F.takeError());
  }
  if (Expected<packager::HostArch> H =
          parseHostArch(hostTriple(Args.getLastArgValue(OPT_host_arch_EQ))))
    C.HostArch = *H;
  else
    Fail(H.takeError());

  // --save-temps keeps intermediates beside the output (or in the given
  // directory), named after the output: out.o -> out.linked.bc,
  // out.sm_80.ptx (a directory output kdir: kdir/kdir.sm_80.ptx). Names
  // derived from the output are fatlink's; no fixed name (sm_80.cubin,
  // ptxas.log) that a user's file or another link's temporaries could have.
  if (const opt::Arg *A = Args.getLastArg(OPT_save_temps, OPT_save_temps_EQ)) {
    std::string Dir;
    if (A->getOption().matches(OPT_save_temps_EQ))
      Dir = A->getValue();
    else if (C.OutKind == OutputKind::Directory)
      Dir = C.Output;
    else
      Dir = sys::path::parent_path(C.Output).str();
    if (Dir.empty())
      Dir = ".";
    StringRef Stem = C.OutKind == OutputKind::Directory
                         ? sys::path::filename(
                               sys::path::remove_leading_dotslash(C.Output))
                         : sys::path::stem(C.Output);
    if (Stem.empty() || Stem == "." || Stem == "..")
      Stem = "fatlink";
    if (Error E = Ctx.Temps.saveIn(Dir, Stem))
      Fail(std::move(E));
    SmallString<256> Prefix(Ctx.Temps.saveDir());
    sys::path::append(Prefix, Stem);
    C.Link.SaveTempsPrefix = std::string(Prefix);
  }

  if (Errors)
    return std::move(Errors);
  return C;
}

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

Expected<ToolFacts> probeTools(Context &Ctx, const Config &C) {
  TimeTraceScope Scope("Probe tools");
  ToolFacts F;
  F.LLVMMajor = LLVM_VERSION_MAJOR;
  Expected<std::vector<lto::ArchInfo>> Arches = lto::getLLVMArches();
  if (!Arches)
    return Arches.takeError();
  F.LLVMArches = std::move(*Arches);
  for (lto::ArchInfo &A : F.LLVMArches)
    if (Error E = lto::fillMinPtxVersion(A))
      return std::move(E);
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

  Expected<PtxasInfo> Ptxas = probePtxas(Ctx, C.Paths.Ptxas);
  if (!Ptxas)
    return Ptxas.takeError();
  F.PtxasRelease = Ptxas->Release;
  F.PtxasArches = std::move(Ptxas->Arches);
  F.PtxasMaxPtx = Ptxas->MaxPtxVersion;
  return F;
}

static void printTargets(Context &Ctx, const ToolFacts &Facts) {
  Ctx.Out << "# targets that LLVM " << Facts.LLVMMajor << " and ptxas (CUDA "
          << Facts.PtxasRelease << ") both support\n";
  Ctx.Out << "# target        output  PTX ISA\n";
  for (const lto::Target &T : allTargets(Facts))
    Ctx.Out << left_justify(T.Name, 15) << " "
            << left_justify(T.IsPTX ? "ptx" : "cubin", 7) << " "
            << T.ptxVersionString() << "\n";
}

static Expected<std::string> readBack(StringRef Path, StringRef What) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(Path);
  if (!MB)
    return createStringError(MB.getError(), "%s wrote no output to %s",
                             What.str().c_str(), Path.str().c_str());
  return (*MB)->getBuffer().str();
}

/// The relocatable cubins of target T (exact arch; checkObjects made sure
/// every object container has one).
static std::vector<const lto::DeviceObject *>
objectsFor(const lto::InputSet &Inputs, const lto::Target &T) {
  std::vector<const lto::DeviceObject *> Objs;
  for (const lto::DeviceObject &O : Inputs.Objects)
    if (O.Arch == T.Cpu)
      Objs.push_back(&O);
  return Objs;
}

/// Relocatable cubins are machine code for one arch: every target needs an
/// object of its own arch from each translation unit (a container merged by
/// `ld -r` holds several), and PTX targets cannot use them at all. Checked
/// before any work.
static Error checkObjects(const lto::InputSet &Inputs,
                          ArrayRef<lto::Target> Targets) {
  std::map<std::pair<std::string, unsigned>, std::vector<std::string>>
      ArchesByUnit;
  for (const lto::DeviceObject &O : Inputs.Objects)
    ArchesByUnit[{O.Origin.substr(0, O.Origin.rfind("(.llvm.offloading")),
                  O.Source}]
        .push_back(O.Arch);
  Error Errors = Error::success();
  for (const auto &[Unit, Arches] : ArchesByUnit)
    for (const lto::Target &T : Targets) {
      if (!T.IsPTX && is_contained(Arches, T.Cpu))
        continue;
      Errors = joinErrors(
          std::move(Errors),
          createStringError(
              inconvertibleErrorCode(),
              "%s: holds relocatable device code (cubins) for %s only, which "
              "cannot serve target %s: compile it with -foffload-lto (device "
              "bitcode serves every target)%s",
              Unit.first.c_str(), join(Arches, ", ").c_str(), T.Name.c_str(),
              T.IsPTX ? "" : (" or add --offload-arch=" + T.Cpu).c_str()));
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

/// Links relocatable cubins of target T (assembled with ptxas -c), the
/// inputs' relocatable cubins for its arch and the device libraries the
/// program uses (given to nvlink as archives: it picks the arch's cubin)
/// into one cubin with nvlink.
static Expected<std::string>
linkCubins(Context &Ctx, const Config &C, const lto::Target &T,
           std::vector<std::string> Cubins,
           ArrayRef<const lto::DeviceObject *> Objs,
           ArrayRef<lto::DeviceLibrary> Libs) {
  TimeTraceScope Scope("nvlink", T.Name);
  for (auto [N, O] : enumerate(Objs)) {
    Expected<std::string> Path = Ctx.Temps.write(
        T.Name + "-object" + std::to_string(N) + ".cubin", O->Data.getBuffer());
    if (!Path)
      return Path.takeError();
    Cubins.push_back(*Path);
  }
  Expected<std::string> Linked = Ctx.Temps.create(T.Name + ".linked.cubin");
  if (!Linked)
    return Linked.takeError();
  std::string Arch = "-arch=" + T.Cpu;
  std::vector<StringRef> Argv = {"nvlink", Arch};
  append_range(Argv, Cubins);
  for (const lto::DeviceLibrary &L : Libs)
    Argv.push_back(L.Path);
  append_range(Argv, ArrayRef<StringRef>{"-o", *Linked});
  std::string What = "nvlink for " + T.Name;
  if (Expected<std::string> R =
          runProgram(Ctx, C.Paths.Nvlink, Argv, C.PtxasTimeout, What);
      !R)
    return R.takeError();
  return readBack(*Linked, What);
}

/// The temporary file name of one partition's code for target T.
static std::string partitionFileName(const lto::Target &T, size_t PartIndex,
                                     StringRef Ext) {
  return T.Name + ".part" + std::to_string(PartIndex) + Ext.str();
}

/// Assembles one partition's PTX file for target T with ptxas -c into a
/// relocatable cubin, and stores it in the cache under Key (if not empty).
static Expected<std::string>
assemblePartition(Context &Ctx, const Config &C, const lto::Target &T,
                  StringRef PTXPath, size_t PartIndex, StringRef Key) {
  TimeTraceScope Scope("ptxas", partitionFileName(T, PartIndex, ""));
  Expected<std::string> CubinPath =
      Ctx.Temps.create(partitionFileName(T, PartIndex, ".cubin"));
  if (!CubinPath)
    return CubinPath.takeError();
  std::string Arch = "-arch=" + T.Cpu;
  std::string OptFlag = "-O" + std::to_string(C.Link.OptLevel);
  std::string What = "ptxas for " + T.Name + " (partition " +
                     std::to_string(PartIndex) + ")";
  if (Expected<std::string> R = runProgram(
          Ctx, C.Paths.Ptxas,
          {"ptxas", Arch, OptFlag, "-c", PTXPath, "-o", *CubinPath},
          C.PtxasTimeout, What);
      !R)
    return R.takeError();
  Expected<std::string> Cubin = readBack(*CubinPath, What);
  if (!Cubin)
    return Cubin.takeError();
  if (!Key.empty())
    cacheStoreBlob(Ctx, C.CacheDir + "/codegen", Key, *Cubin);
  return Cubin;
}

namespace {

/// Runs jobs on a thread pool, the most urgent first: each posted job adds
/// one pool task, and a task runs whichever waiting job has the smallest
/// priority when a thread picks it up (equal priorities in posting order).
/// Jobs may post more jobs; the pool's wait() waits for those too.
class JobQueue {
public:
  JobQueue(ThreadPoolInterface &Pool, const Config &C)
      : Pool(Pool), C(C), Tracing(timeTraceProfilerEnabled()) {}

  void post(uint64_t Priority, std::function<void()> Job) {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      Jobs.emplace(Priority, std::move(Job));
    }
    Pool.async([this] {
      std::function<void()> Next;
      {
        std::lock_guard<std::mutex> Lock(Mu);
        auto It = Jobs.begin();
        Next = std::move(It->second);
        Jobs.erase(It);
      }
      if (Tracing)
        timeTraceProfilerInitialize(C.TimeTraceGranularity, "fatlink");
      Next();
      if (Tracing)
        timeTraceProfilerFinishThread();
    });
  }

  /// Priority of class Class (smaller first), then A, then B.
  static uint64_t priority(unsigned Class, size_t A, size_t B) {
    return (uint64_t(Class) << 48) | (uint64_t(A & 0xffffff) << 24) |
           uint64_t(B & 0xffffff);
  }

private:
  ThreadPoolInterface &Pool;
  const Config &C;
  bool Tracing;
  std::mutex Mu;
  std::multimap<uint64_t, std::function<void()>> Jobs;
};

/// Targets compiled from the same partitions (one optimized module).
struct PartitionGroup {
  const std::vector<lto::CodegenPartition> *Parts = nullptr;
  std::vector<size_t> Members; ///< target indices, in target order
  /// The plain sm_XX members, oldest first, when they may share PTX (three
  /// or more); else empty.
  std::vector<size_t> Sharing;
};

} // namespace

/// Groups the partitioned targets by the partitions they compile, and picks
/// the targets that may share PTX. PTXSource[I] names where target I's PTX
/// may come from (part of its cache key): "" for its own code generation.
static std::vector<PartitionGroup>
planPartitionGroups(const Config &C, ArrayRef<lto::Target> Targets,
                    ArrayRef<const std::vector<lto::CodegenPartition> *> PartsOf,
                    std::vector<std::string> &PTXSource) {
  std::vector<PartitionGroup> Groups;
  for (size_t I = 0; I < Targets.size(); ++I) {
    if (!PartsOf[I])
      continue;
    auto It = find_if(Groups, [&](const PartitionGroup &G) {
      return G.Parts == PartsOf[I];
    });
    if (It == Groups.end()) {
      Groups.push_back({PartsOf[I], {}, {}});
      It = std::prev(Groups.end());
    }
    It->Members.push_back(I);
  }
  PTXSource.assign(Targets.size(), "");
  if (!C.SharePTX)
    return Groups;
  for (PartitionGroup &G : Groups) {
    // Plain processors only: an sm_90a or sm_100f target has instructions
    // of its own that neither neighbour has.
    std::vector<size_t> Plain;
    for (size_t I : G.Members)
      if (Targets[I].Cpu == "sm_" + std::to_string(Targets[I].Sm))
        Plain.push_back(I);
    llvm::stable_sort(Plain, [&](size_t A, size_t B) {
      return Targets[A].Sm < Targets[B].Sm;
    });
    // The backend's choices switch on at an SM or PTX ISA version; both
    // must grow from the oldest to the newest for the two ends to bound
    // the arches between.
    bool Ordered = true;
    for (size_t K = 1; K < Plain.size(); ++K)
      Ordered &= Targets[Plain[K - 1]].Sm < Targets[Plain[K]].Sm &&
                 Targets[Plain[K - 1]].PtxVersion <= Targets[Plain[K]].PtxVersion;
    if (Plain.size() < 3 || !Ordered)
      continue;
    G.Sharing = Plain;
    const lto::Target &Lo = Targets[Plain.front()];
    const lto::Target &Hi = Targets[Plain.back()];
    std::string Source = "shared:" + Lo.Cpu + "/" + Lo.ptxVersionString() +
                         ":" + Hi.Cpu + "/" + Hi.ptxVersionString();
    for (size_t K = 1; K + 1 < Plain.size(); ++K)
      PTXSource[Plain[K]] = Source;
  }
  return Groups;
}

namespace {

/// The partitioned targets' jobs: one per partition of each group, which
/// takes the targets' cubins from the cache or generates PTX for those that
/// miss (shared between arches where the two ends agree) and posts one
/// ptxas job per missing target. Done(target, partition, cubin) receives
/// every result, cached or compiled.
class PartitionJobs {
public:
  using DoneFn =
      function_ref<void(size_t Target, size_t Part, Expected<std::string>)>;

  PartitionJobs(
      Context &Ctx, const Config &C, ArrayRef<lto::Target> Targets,
      ArrayRef<const std::vector<lto::CodegenPartition> *> PartsOf,
      JobQueue &Queue, DoneFn Done)
      : Ctx(Ctx), C(C), Targets(Targets), Queue(Queue), Done(Done),
        Groups(planPartitionGroups(C, Targets, PartsOf, PTXSource)),
        RankOf(Targets.size(), 0) {
    // The order ptxas runs in (work order only; the output does not
    // change): newest arch first, as its cubin is the largest, so its
    // nvlink and zstd run while the other targets still compile; the last
    // two targets alternate, so that their links end the build side by
    // side instead of one after the other on one thread.
    std::vector<size_t> Order;
    for (size_t I = 0; I < Targets.size(); ++I)
      if (PartsOf[I])
        Order.push_back(I);
    llvm::stable_sort(Order, [&](size_t A, size_t B) {
      return Targets[A].Sm > Targets[B].Sm;
    });
    for (auto [R, I] : enumerate(Order))
      RankOf[I] = R;
    LastTwo = Order.size() >= 2 ? Order.size() - 2 : 0;
  }

  /// Posts every partition's job (after whole targets, before any ptxas).
  void post() {
    for (size_t GI = 0; GI < Groups.size(); ++GI)
      for (size_t P = 0; P < Groups[GI].Parts->size(); ++P)
        Queue.post(JobQueue::priority(1, P, GI), [this, GI, P] { run(GI, P); });
  }

  std::atomic<unsigned> Generated{0}; ///< code generations run
  std::atomic<unsigned> Reused{0};    ///< PTX taken from the oldest arch

private:
  uint64_t ptxasPriority(size_t I, size_t P) const {
    size_t R = RankOf[I];
    if (R >= LastTwo)
      return JobQueue::priority(2, LastTwo, P * 2 + (R - LastTwo));
    return JobQueue::priority(2, R, P);
  }

  Expected<std::string> generate(const lto::CodegenPartition &Part,
                                 size_t I) {
    ++Generated;
    return lto::generatePTX(Part.Bitcode, Targets[I], C.Link.OptLevel);
  }

  /// Partition P of group GI.
  void run(size_t GI, size_t P) {
    const PartitionGroup &G = Groups[GI];
    const lto::CodegenPartition &Part = (*G.Parts)[P];
    TimeTraceScope Scope("Codegen partition", "part" + std::to_string(P));
    std::vector<std::string> Keys(Targets.size());
    std::vector<std::pair<size_t, std::string>> Hits;
    std::vector<size_t> Missing;
    BLAKE3Result<32> BitcodeHash;
    if (!C.CacheDir.empty())
      BitcodeHash = BLAKE3::hash(arrayRefFromStringRef(Part.Bitcode));
    for (size_t I : G.Members) {
      if (!C.CacheDir.empty()) {
        Keys[I] = codegenKey(C, Targets[I], BitcodeHash, PTXSource[I]);
        if (std::optional<std::string> Cubin =
                cacheLookupBlob(Ctx, C.CacheDir + "/codegen", Keys[I])) {
          Hits.emplace_back(I, std::move(*Cubin));
          continue;
        }
      }
      Missing.push_back(I);
    }

    // Shared PTX: generate the oldest and the newest plain target's code;
    // if they agree apart from the header, the targets between them take
    // it. Decided the same way whatever the cache holds.
    bool NeedShared =
        any_of(Missing, [&](size_t I) { return !PTXSource[I].empty(); });
    size_t Lo = NeedShared ? G.Sharing.front() : Targets.size();
    size_t Hi = NeedShared ? G.Sharing.back() : Targets.size();
    std::optional<std::string> LoText, HiText;
    std::vector<size_t> Settled; // missing targets that already failed
    bool Shared = false;
    if (NeedShared) {
      for (auto [End, Text] :
           {std::pair(Lo, &LoText), std::pair(Hi, &HiText)}) {
        Expected<std::string> E = generate(Part, End);
        if (E) {
          *Text = std::move(*E);
        } else if (is_contained(Missing, End)) {
          Done(End, P, E.takeError());
          Settled.push_back(End);
        } else {
          consumeError(E.takeError());
        }
      }
      if (LoText && HiText) {
        TimeTraceScope CompareScope("Compare PTX");
        std::optional<std::string> HiAsLo =
            lto::retargetPTX(*HiText, Targets[Hi], Targets[Lo]);
        Shared = HiAsLo && *HiAsLo == *LoText;
      }
    }

    for (size_t I : Missing) {
      if (is_contained(Settled, I))
        continue;
      std::optional<std::string> Text;
      if (I == Lo) {
        Text = Shared ? *LoText : std::move(*LoText); // the middle needs it
      } else if (I == Hi) {
        Text = std::move(*HiText);
      } else if (Shared && !PTXSource[I].empty()) {
        Text = lto::retargetPTX(*LoText, Targets[Lo], Targets[I]);
        if (Text)
          ++Reused;
      }
      if (!Text) {
        Expected<std::string> E = generate(Part, I);
        if (!E) {
          Done(I, P, E.takeError());
          continue;
        }
        Text = std::move(*E);
      }
      // To a file now: the texts of all partitions would otherwise wait in
      // memory for their ptxas jobs.
      Expected<std::string> Path =
          Ctx.Temps.write(partitionFileName(Targets[I], P, ".ptx"), *Text);
      if (!Path) {
        Done(I, P, Path.takeError());
        continue;
      }
      Queue.post(ptxasPriority(I, P),
                 [this, I, P, Key = Keys[I], Path = std::move(*Path)] {
                   Done(I, P,
                        assemblePartition(Ctx, C, Targets[I], Path, P, Key));
                 });
    }
    for (auto &[I, Cubin] : Hits)
      Done(I, P, std::move(Cubin));
  }

  Context &Ctx;
  const Config &C;
  ArrayRef<lto::Target> Targets;
  JobQueue &Queue;
  DoneFn Done;
  std::vector<std::string> PTXSource; // before Groups: filled by its planner
  std::vector<PartitionGroup> Groups;
  std::vector<size_t> RankOf;
  size_t LastTwo = 0;
};

} // namespace

/// Generates PTX for one target and assembles it (sm_XX) or checks it
/// (compute_XX) with ptxas. With relocatable cubins of the target's arch in
/// the inputs, the PTX is assembled relocatable (ptxas -c) and nvlink links
/// it with them.
static Expected<TargetOutput> compileTarget(Context &Ctx, const Config &C,
                                            const lto::LinkedProgram &Program,
                                            const lto::InputSet &Inputs,
                                            ArrayRef<lto::Target> Targets,
                                            size_t I) {
  const lto::Target &T = Targets[I];
  TargetOutput Out;
  bool HasBitcode = !Program.Modules.empty();
  if (HasBitcode) {
    Expected<std::string> PTX =
        lto::generatePTX(Program, Targets, I, C.Link.OptLevel);
    if (!PTX)
      return PTX.takeError();
    Out.PTX = std::move(*PTX);
  }
  if (!C.RunPtxas)
    return Out;

  TimeTraceScope Scope("ptxas", T.Name);
  std::vector<const lto::DeviceObject *> Objs = objectsFor(Inputs, T);
  // Relocatable code to link with nvlink: objects or device libraries.
  bool Relocatable = !Objs.empty() || !Program.Libraries.empty();
  std::string OptFlag = "-O" + std::to_string(C.Link.OptLevel);
  std::string What = "ptxas for " + T.Name;
  std::vector<std::string> Cubins; // to give nvlink
  if (HasBitcode) {
    Expected<std::string> PTXPath = Ctx.Temps.write(T.Name + ".ptx", Out.PTX);
    if (!PTXPath)
      return PTXPath.takeError();
    if (T.IsPTX) {
      // A virtual arch makes ptxas parse and check the PTX without
      // generating code: the driver will compile it on the user's GPU.
      std::string Arch = "-arch=" + T.Name;
      Expected<std::string> R = runProgram(
          Ctx, C.Paths.Ptxas, {"ptxas", Arch, *PTXPath}, C.PtxasTimeout, What);
      if (!R)
        return R.takeError();
      return Out;
    }
    Expected<std::string> CubinPath = Ctx.Temps.create(T.Name + ".cubin");
    if (!CubinPath)
      return CubinPath.takeError();
    std::string Arch = "-arch=" + T.Cpu;
    std::vector<StringRef> Argv = {"ptxas", Arch, OptFlag};
    if (Relocatable)
      Argv.push_back("-c"); // relocatable, for nvlink
    append_range(Argv, ArrayRef<StringRef>{*PTXPath, "-o", *CubinPath});
    if (Expected<std::string> R =
            runProgram(Ctx, C.Paths.Ptxas, Argv, C.PtxasTimeout, What);
        !R)
      return R.takeError();
    if (!Relocatable) {
      Expected<std::string> Cubin = readBack(*CubinPath, What);
      if (!Cubin)
        return Cubin.takeError();
      Out.Cubin = std::move(*Cubin);
      return Out;
    }
    Cubins.push_back(*CubinPath);
  }

  Expected<std::string> Cubin =
      linkCubins(Ctx, C, T, Cubins, Objs, Program.Libraries);
  if (!Cubin)
    return Cubin.takeError();
  Out.Cubin = std::move(*Cubin);
  return Out;
}

/// The fatbin image of a compiled target, its entry encoded.
static Expected<packager::FatbinImage>
encodeImage(const Config &C, const lto::Target &T, const TargetOutput &O) {
  TimeTraceScope Scope("Encode fatbin entry", T.Name);
  Expected<packager::FatbinImage> Image =
      packager::describeImage(T.IsPTX ? O.PTX : O.Cubin);
  if (!Image)
    return createStringError(
        inconvertibleErrorCode(), "cannot package the %s image: %s",
        T.Name.c_str(), toString(Image.takeError()).c_str());
  Expected<std::string> Entry = packager::encodeFatbinEntry(*Image, C.Fatbin);
  if (!Entry)
    return Entry.takeError();
  Image->Entry = std::move(*Entry);
  return Image;
}

/// Compiles every target, in parallel, into its own slot; for packaged
/// outputs the job that finishes a target also encodes its fatbin entry. A
/// target whose module was split (Parts[module] has several partitions) is
/// compiled partition by partition (PartitionJobs); the job that finishes a
/// target's last partition links them with nvlink and encodes the entry.
static Expected<std::vector<TargetOutput>>
compileTargets(Context &Ctx, const Config &C, const lto::LinkedProgram &Program,
               const lto::InputSet &Inputs, ArrayRef<lto::Target> Targets,
               ArrayRef<std::vector<lto::CodegenPartition>> Parts) {
  TimeTraceScope Scope("Compile targets");
  size_t NT = Targets.size();
  std::vector<TargetOutput> Outputs(NT);
  std::vector<std::string> Errors(NT);
  std::mutex ErrorsMu;
  auto Fail = [&](size_t I, Error E) {
    std::lock_guard<std::mutex> Lock(ErrorsMu);
    if (Errors[I].empty())
      Errors[I] = toString(std::move(E));
    else
      consumeError(std::move(E));
  };
  bool Packaged = C.RunPtxas && (C.OutKind == OutputKind::Fatbin ||
                                 C.OutKind == OutputKind::HostObject);
  auto Encode = [&](size_t I) {
    if (!Packaged)
      return;
    if (Expected<packager::FatbinImage> Image =
            encodeImage(C, Targets[I], Outputs[I]))
      Outputs[I].Image = std::move(*Image);
    else
      Fail(I, Image.takeError());
  };

  // Which partitions each target compiles (none: compiled whole).
  std::vector<const std::vector<lto::CodegenPartition> *> PartsOf(NT, nullptr);
  for (auto [MI, M] : enumerate(Program.Modules))
    if (MI < Parts.size() && Parts[MI].size() > 1)
      for (size_t I : M.TargetIndices)
        if (!Targets[I].IsPTX)
          PartsOf[I] = &Parts[MI];
  std::vector<std::vector<std::string>> PartCubins(NT);
  // Each partition's error, in its own slot: the partitions finish in
  // whatever order the threads run them, so the one reported is chosen by
  // partition number, not by which failed first.
  std::vector<std::vector<std::string>> PartErrors(NT);
  std::unique_ptr<std::atomic<size_t>[]> Remaining(new std::atomic<size_t>[NT]);
  for (size_t I = 0; I < NT; ++I) {
    Remaining[I] = PartsOf[I] ? PartsOf[I]->size() : 0;
    if (PartsOf[I]) {
      PartCubins[I].resize(PartsOf[I]->size());
      PartErrors[I].resize(PartsOf[I]->size());
    }
  }

  // A target's partition is done (its cubin, or why not); the last one to
  // finish links the target's partitions and encodes its entry, or reports
  // the error of the first partition that failed.
  auto PartDone = [&](size_t I, size_t P, Expected<std::string> Cubin) {
    if (Cubin)
      PartCubins[I][P] = std::move(*Cubin);
    else
      PartErrors[I][P] = toString(Cubin.takeError());
    if (--Remaining[I] != 0)
      return;
    for (const std::string &E : PartErrors[I])
      if (!E.empty())
        return Fail(I, createStringError(inconvertibleErrorCode(), E));
    std::vector<std::string> Paths;
    for (auto [N, Data] : enumerate(PartCubins[I])) {
      Expected<std::string> Path =
          Ctx.Temps.write(partitionFileName(Targets[I], N, ".o.cubin"), Data);
      if (!Path)
        return Fail(I, Path.takeError());
      Paths.push_back(*Path);
    }
    PartCubins[I].clear();
    Expected<std::string> Linked =
        linkCubins(Ctx, C, Targets[I], Paths, objectsFor(Inputs, Targets[I]),
                   Program.Libraries);
    if (!Linked)
      return Fail(I, Linked.takeError());
    Outputs[I].Cubin = std::move(*Linked);
    Encode(I);
  };

  {
    DefaultThreadPool Pool(hardware_concurrency(C.Jobs));
    JobQueue Queue(Pool, C);
    // Whole targets first: they are the longest tasks.
    for (size_t I = 0; I < NT; ++I)
      if (!PartsOf[I])
        Queue.post(JobQueue::priority(0, I, 0), [&, I] {
          Expected<TargetOutput> Out =
              compileTarget(Ctx, C, Program, Inputs, Targets, I);
          if (!Out)
            return Fail(I, Out.takeError());
          Outputs[I] = std::move(*Out);
          Encode(I);
        });
    PartitionJobs Jobs(Ctx, C, Targets, PartsOf, Queue, PartDone);
    Jobs.post();
    Pool.wait();
    if (Jobs.Generated || Jobs.Reused)
      Ctx.verbose("PTX: " + Twine(Jobs.Generated.load()) + " generated, " +
                  Twine(Jobs.Reused.load()) +
                  " reused (the oldest arch's, where the newest arch's "
                  "agreed)");
  }
  Error All = Error::success();
  for (const std::string &E : Errors)
    if (!E.empty())
      All = joinErrors(std::move(All),
                       createStringError(inconvertibleErrorCode(), E));
  if (All)
    return std::move(All);
  return Outputs;
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
    Expected<packager::FatbinImage> Image = encodeImage(C, T, O);
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

  std::vector<packager::KernelInfo> Kernels;
  for (const lto::KernelInfo &K : Program.Kernels)
    Kernels.push_back({K.Name, std::vector<uint32_t>(K.ParamSizes.begin(),
                                                     K.ParamSizes.end())});
  Expected<std::string> Object =
      packager::writeHostObject(Out.Fatbin, Kernels, C.HostArch);
  if (!Object)
    return Object.takeError();
  Out.Object = std::move(*Object);
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
    if (Targets.size() != 1)
      return createStringError(
          inconvertibleErrorCode(),
          "-o %s names one file, but there are %zu targets: give a directory "
          "(-o %s) to get one file per target",
          C.Output.c_str(), Targets.size(),
          sys::path::parent_path(C.Output).empty()
              ? "out/"
              : (sys::path::parent_path(C.Output) + "/").str().c_str());
    bool WantCubin = sys::path::extension(C.Output) == ".cubin";
    if (WantCubin && Targets[0].IsPTX)
      return createStringError(inconvertibleErrorCode(),
                               "-o %s asks for a cubin, but %s is a PTX-only "
                               "target: use sm_%s or write a .ptx file",
                               C.Output.c_str(), Targets[0].Name.c_str(),
                               Targets[0].Cpu.substr(3).c_str());
    Files.push_back({C.Output, WantCubin ? StringRef(Outputs[0].Cubin)
                                         : StringRef(Outputs[0].PTX)});
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
      Files.push_back({std::string(Path), Out.Cubin});
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
            J.attribute("cubin_size", int64_t(Out.Cubin.size()));
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

Expected<DeviceBuild> buildDevice(Context &Ctx, const Config &C,
                                  const ToolFacts &Facts,
                                  std::vector<lto::Target> Targets,
                                  const lto::InputSet &Inputs) {
  DeviceBuild B;
  B.Targets = std::move(Targets);
  for (const lto::Target &T : B.Targets)
    Ctx.verbose("target " + T.Name + ": " + (T.IsPTX ? "PTX" : "cubin") +
                ", PTX ISA " + T.ptxVersionString());
  for (const lto::DeviceImage &Image : Inputs.Images)
    Ctx.verbose("input " + Image.Origin +
                (Image.Arch.empty() ? "" : " [" + Image.Arch + "]"));
  for (const lto::DeviceObject &O : Inputs.Objects)
    Ctx.verbose("input " + O.Origin + " [" + O.Arch + ", relocatable cubin]");
  for (const lto::DeviceLibrary &L : Inputs.Libraries)
    Ctx.verbose("input " + L.Path +
                " [device library: " + join(L.Arches, ", ") + "]");
  for (const std::string &Note : Inputs.Skipped)
    Ctx.verbose("skipped " + Note);
  if (Error E = checkObjects(Inputs, B.Targets))
    return std::move(E);

  // From here on, the set of device images is fixed.
  lto::LinkOptions Link = C.Link;
  Link.Jobs = C.Jobs;
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
  Link.NeedWholeModule =
      C.OutKind == OutputKind::Bitcode ||
      any_of(B.Targets, [](const lto::Target &T) { return T.IsPTX; });
  if (!C.CacheDir.empty()) {
    // What lto memoizes (image digests, partitions' O3 results) goes under
    // <cache>/memo, in a file named by a hash of fatlink's version and the
    // key, so another fatlink never reads what this one wrote.
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
  Expected<lto::LinkedProgram> Program =
      lto::linkAndOptimize(Inputs, B.Targets, Link);
  if (!Program)
    return Program.takeError();
  B.Program = std::move(*Program);
  // Which arch each input was compiled for and which targets it serves:
  // an input compiled for sm_75 serving sm_90 lacks its sm_90-only code.
  for (const lto::InputUse &U : B.Program.Inputs)
    Ctx.verbose("input " + U.Origin + ": compiled for " +
                (U.CompiledFor.empty() ? "(no arch)" : U.CompiledFor) +
                ", serves " + join(U.Targets, ", "));
  for (auto [T, V] : zip(B.Targets, B.Program.PtxVersions))
    if (T.PtxVersion != V) {
      T.PtxVersion = V;
      Ctx.verbose("target " + T.Name + ": PTX ISA raised to " +
                  T.ptxVersionString() +
                  ", the newest its inputs were compiled for");
    }
  if (B.Program.Kernels.empty())
    Ctx.warn("the linked program has no kernels: nothing can be launched");
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

  if (C.OutKind == OutputKind::Bitcode)
    return std::move(B); // no code generation
  if (Error E = checkLibraries(B.Program, B.Targets))
    return std::move(E);

  // The partitions each optimized module is compiled in (cached per
  // partition): those it was optimized in, else (an optimized module given
  // back with --codegen-only) a split of it.
  std::vector<std::vector<lto::CodegenPartition>> Parts;
  unsigned N = partitionSetting(C);
  if (N == 0)
    N = lto::defaultPartitions(B.Program.Kernels.size());
  for (lto::OptimizedModule &M : B.Program.Modules) {
    std::vector<lto::CodegenPartition> P = std::move(M.Parts);
    if (P.empty() && N > 1) {
      Expected<std::vector<lto::CodegenPartition>> Split =
          lto::splitForCodegen(M.Bitcode, N);
      if (!Split)
        return Split.takeError();
      P = std::move(*Split);
    }
    for (auto [I, Part] : enumerate(P))
      Ctx.verbose("partition " + Twine(I) + ": " + Twine(Part.Kernels.size()) +
                  " kernels, " + Twine(Part.Instructions) + " instructions");
    Parts.push_back(std::move(P));
  }
#if defined(__GLIBC__)
  // Linking and O3 freed most of what they allocated, but glibc keeps it;
  // give it back before two zstd-19 encoders (about 40 MB each) may run.
  malloc_trim(0);
#endif
  Expected<std::vector<TargetOutput>> Outputs =
      compileTargets(Ctx, C, B.Program, Inputs, B.Targets, Parts);
  if (!Outputs)
    return Outputs.takeError();
  B.Outputs = std::move(*Outputs);

  if (C.OutKind == OutputKind::Fatbin || C.OutKind == OutputKind::HostObject)
    if (Error E = package(C, B.Targets, B.Outputs, B.Program, B))
      return std::move(E);
  return std::move(B);
}

Expected<DeviceBuild> buildDeviceCached(Context &Ctx, const Config &C,
                                        const lto::InputSet &Inputs,
                                        ProbeFn Probe) {
  // Bitcode outputs feed build systems, which cache them themselves.
  bool UseCache = !C.CacheDir.empty() && C.OutKind != OutputKind::Bitcode;
  std::string Key;
  if (UseCache) {
    Key = deviceLinkKey(C, Inputs);
    if (std::optional<DeviceBuild> B = cacheLookup(Ctx, C.CacheDir, Key)) {
      for (const std::string &W : B->Program.Warnings)
        Ctx.warn(W);
      return std::move(*B);
    }
  }
  Expected<ToolFacts> Facts = Probe();
  if (!Facts)
    return Facts.takeError();
  Expected<std::vector<lto::Target>> Targets =
      planTargets(C.ArchLists, *Facts, C.PtxVersion);
  if (!Targets)
    return Targets.takeError();
  Expected<DeviceBuild> B =
      buildDevice(Ctx, C, *Facts, std::move(*Targets), Inputs);
  if (B)
    for (const std::string &W : B->Program.Warnings)
      Ctx.warn(W);
  // Only a store makes the cache grow: then keep it within its limits (on
  // a full disk, nothing is stored and nothing is written).
  if (B && UseCache && cacheStore(Ctx, C.CacheDir, Key, *B))
    cachePrune(Ctx, C.CacheDir, C.CachePolicy);
  return B;
}

Error runDeviceLink(Context &Ctx, const Config &C, ProbeFn Probe,
                    std::vector<StagedFile> *Pending) {
  // Writing over an input would destroy it (the output is renamed into
  // place only at the end, but then the input is gone).
  if (Error E = checkOutputsAreNotInputs(
          {C.Output, C.JsonPath, C.TimeTracePath}, C.Inputs))
    return E;
  Expected<lto::InputSet> Inputs =
      lto::readInputs(C.Inputs, lto::InputMode::Device, C.Link.ErrorLimit);
  if (!Inputs)
    return Inputs.takeError();
  Expected<DeviceBuild> B = buildDeviceCached(Ctx, C, *Inputs, Probe);
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
  if (Pending) {
    for (StagedFile &S : Staged)
      Pending->push_back(std::move(S));
    return Error::success();
  }
  return commitOutputs(Staged);
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

int deviceLinkMain(ArrayRef<const char *> Args, raw_ostream &Out,
                   raw_ostream &Err) {
  Context Ctx(Out, Err);
  CommandOptTable Table;
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  int ExitCode = 0;
  std::optional<opt::InputArgList> ArgsOrErr = parseCommandLine(
      Ctx, Table, Args, Saver,
      {"fatlink device-link [options] <inputs...>",
       "fatlink device-link: whole-program link of GPU bitcode "
       "(Rust and CUDA C++) into cubins and PTX",
       OPT_UNKNOWN, OPT_help, OPT_version},
      ExitCode);
  if (!ArgsOrErr)
    return ExitCode;

  Expected<Config> C = parseConfig(Ctx, *ArgsOrErr);
  if (!C) {
    Ctx.error(C.takeError());
    return 1;
  }
  if (!C->TimeTracePath.empty())
    timeTraceProfilerInitialize(C->TimeTraceGranularity, "fatlink");

  // The outputs (and --json) are staged; the time trace joins them, and
  // they are committed together: a trace that cannot be written leaves the
  // previous output in place.
  std::vector<StagedFile> Pending;
  Error E = [&] {
    TimeTraceScope Scope("device-link");
    return deviceLink(Ctx, *C, Pending);
  }();

  if (timeTraceProfilerEnabled()) {
    Expected<StagedFile> Trace = stageTimeTrace(C->TimeTracePath);
    timeTraceProfilerCleanup();
    if (!Trace)
      E = joinErrors(std::move(E), Trace.takeError());
    else if (E) // a failed run's trace is still worth having
      E = joinErrors(std::move(E), Trace->commit());
    else
      Pending.push_back(std::move(*Trace));
  }
  if (!E)
    E = commitOutputs(Pending);
  if (E)
    Ctx.error(std::move(E));
  return Ctx.exitCode();
}

} // namespace fatlink
