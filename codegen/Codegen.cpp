//===- codegen/Codegen.cpp - Targets compiled in parallel ---------------===//
//
// Each target's code, from its optimized module to what the driver writes:
//
//   whole targets      generatePTX (shared between arches where the oldest
//                      and newest agree, as for partitions), then ptxas (a
//                      cubin for sm_XX, a check for compute_XX); nvlink
//                      when relocatable cubins or device libraries join
//                      in; a PTX target with nvcc units links their PTX
//                      into its own (linkPTX) and checks the result with
//                      whole-program ptxas
//   partitioned ones   per (partition, target): the cache, else PTX (shared
//                      between arches where the oldest and newest agree),
//                      then ptxas -c (PartitionPtxas.cpp: alone, or small
//                      partitions in shared runs); the job finishing a
//                      target's last partition links them with nvlink
//   packaged outputs   the job that finishes a target encodes its fatbin
//                      entry
//
// Every ptxas that makes a cubin runs with --warn-on-spills: the spill
// figures it prints are kept with the cubins (TargetOutput::Spills,
// PartitionCode): no cubin has them. (ptxas -v prints the same figures for
// every function, but makes a relocatable ptxas -c take more CPU the more
// functions the module has: 12% more at 256 kernels, 2.6 times as much at
// 1,024. A whole-program ptxas -v costs nothing extra.)
//
// All jobs run on one thread pool, the most urgent first (JobQueue), each
// holding a slot of the build's jobserver when fatlink joined one. Output
// bytes do not depend on -j: each target is compiled into its own slot, and
// each partition's result (or error) into its own.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "codegen/PartitionPtxas.h"
#include "lto/Libraries.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/ExponentialBackoff.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Jobserver.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/TimeProfiler.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

using namespace llvm;

namespace fatlink::codegen {

std::vector<FunctionSpills> parsePtxasSpills(StringRef Log) {
  // ptxas warning : Registers are spilled to local memory in function
  //     'NAME', N bytes spill stores, N bytes spill loads   (one line)
  static constexpr StringLiteral Lead =
      "Registers are spilled to local memory in function '";
  std::vector<FunctionSpills> Out;
  while (!Log.empty()) {
    StringRef Line;
    std::tie(Line, Log) = Log.split('\n');
    size_t At = Line.find(Lead);
    if (!Line.starts_with("ptxas warning") || At == StringRef::npos)
      continue;
    auto [Name, Rest] = Line.drop_front(At + Lead.size()).split("',");
    if (Name.empty() || Rest.empty())
      continue;
    FunctionSpills F;
    F.Name = Name.str();
    bool HasStores = false, HasLoads = false;
    SmallVector<StringRef, 4> Parts;
    Rest.split(Parts, ',');
    for (StringRef P : Parts) {
      P = P.trim();
      uint64_t N;
      StringRef Num = P.take_while([](char C) { return isDigit(C); });
      if (Num.empty() || Num.getAsInteger(10, N))
        continue;
      if (P.ends_with("bytes spill stores"))
        F.Stores = N, HasStores = true;
      else if (P.ends_with("bytes spill loads"))
        F.Loads = N, HasLoads = true;
    }
    if (HasStores && HasLoads)
      Out.push_back(std::move(F));
  }
  return Out;
}

static StringRef nameOf(const std::string &Kernel) { return Kernel; }
static StringRef nameOf(const lto::KernelInfo &K) { return K.Name; }

/// The spills of a ptxas run (its output Log) that compiled Kernels and
/// what they call: the functions it said spill, and every kernel it did
/// not name with none.
template <typename KernelRange>
static std::vector<FunctionSpills> spillsOf(StringRef Log,
                                            const KernelRange &Kernels) {
  std::vector<FunctionSpills> Out = parsePtxasSpills(Log);
  StringSet<> Named;
  for (const FunctionSpills &F : Out)
    Named.insert(F.Name);
  for (const auto &K : Kernels) {
    StringRef Name = nameOf(K);
    if (!Named.contains(Name))
      Out.push_back({Name.str(), 0, 0});
  }
  return Out;
}

std::vector<FunctionSpills> spillsOfKernels(StringRef Log,
                                            ArrayRef<std::string> Kernels) {
  return spillsOf(Log, Kernels);
}

/// Sorts Spills by name (the order of partitions and ptxas runs is not the
/// output's).
static void sortSpills(std::vector<FunctionSpills> &Spills) {
  llvm::stable_sort(Spills, [](const FunctionSpills &A,
                               const FunctionSpills &B) {
    return A.Name < B.Name;
  });
}

/// The file a tool wrote at Path, mapped; an error naming the tool (What)
/// where it wrote none. fatlink creates each output file before the tool
/// runs, so a tool that fails quietly leaves it empty.
Expected<std::shared_ptr<const MappedFile>> toolOutput(StringRef Path,
                                                       StringRef What) {
  Expected<std::shared_ptr<const MappedFile>> File = MappedFile::open(Path);
  if (!File)
    return createStringError(inconvertibleErrorCode(), "%s wrote no output: %s",
                             What.str().c_str(),
                             toString(File.takeError()).c_str());
  if ((*File)->bytes().empty())
    return createStringError(inconvertibleErrorCode(),
                             "%s wrote no output: %s is empty",
                             What.str().c_str(), Path.str().c_str());
  return File;
}

/// The name of the kernel in keepFunctionsLTOIR's unit; dropped from the
/// linked PTX.
static constexpr StringLiteral KeepEntry = "__fatlink_keep_functions";

/// The most threads zstd compresses one fatbin entry with: each holds
/// about 85 MB at level 19 (its tables).
static constexpr unsigned MaxZstdWorkers = 4;

/// nvcc LTO-IR for arch \p Sm of a unit whose one kernel takes the address
/// of each of \p Names: with it among nvJitLink's inputs, its whole-program
/// PTX keeps those device functions (internal; linkPTX exports them), which
/// otherwise only the kernels of fatlink's side call. Compiled by the
/// toolkit's nvcc; the functions are declared `void()`: only their
/// addresses are taken, and the symbol names the function.
static Expected<std::string> keepFunctionsLTOIR(Context &Ctx,
                                                const CodegenOptions &Opts,
                                                unsigned Sm,
                                                ArrayRef<std::string> Names) {
  std::string Source =
      "// fatlink: keeps, in nvJitLink's whole-program PTX, the device\n"
      "// functions that the code fatlink links calls.\n";
  for (const std::string &N : Names)
    Source += "extern \"C\" __device__ void " + N + "();\n";
  Source +=
      "extern \"C\" __global__ void " + KeepEntry.str() + "(void **p) {\n";
  for (auto [I, N] : enumerate(Names))
    Source += "  p[" + std::to_string(I) + "] = (void *)&" + N + ";\n";
  Source += "}\n";
  std::string Stem = "keep-functions-sm_" + std::to_string(Sm);
  Expected<std::string> Cu = Ctx.Temps.write(Stem + ".cu", Source);
  if (!Cu)
    return Cu.takeError();
  Expected<std::string> Obj = Ctx.Temps.create(Stem + ".ltoir");
  if (!Obj)
    return Obj.takeError();
  SmallString<256> Nvcc(Opts.Paths.CudaPath);
  sys::path::append(Nvcc, "bin", "nvcc");
  // Device code only (no host compiler run): 1.4 s, against 3 s for -dc.
  std::string Arch = "-arch=lto_" + std::to_string(Sm);
  Expected<std::string> Out =
      runProgram(Ctx, Nvcc, {"nvcc", "-ltoir", "-dlto", Arch, *Cu, "-o", *Obj},
                 /*TimeoutSeconds=*/300,
                 "nvcc for the LTO-IR keeping " + join(Names, ", "));
  if (!Out)
    return Out.takeError();
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(*Obj);
  if (!MB)
    return createStringError(MB.getError(), "cannot read %s: %s", Obj->c_str(),
                             MB.getError().message().c_str());
  return (*MB)->getBuffer().str();
}

/// Whether \p Name can be declared in CUDA C++ as it is.
static bool isCIdentifier(StringRef Name) {
  return !Name.empty() && !isDigit(Name.front()) &&
         all_of(Name, [](char C) { return isAlnum(C) || C == '_'; });
}

/// The PTX ISA's system calls, which the driver provides.
static bool isPtxSystemCall(StringRef Name) {
  static const char *const SystemCalls[] = {"vprintf", "malloc", "free",
                                            "__assertfail"};
  return is_contained(SystemCalls, Name);
}

/// nvJitLink's whole-program PTX of the LTO-IR units \p LtoIR (named
/// \p Names) for target T, kept in \p Text, as a module for linkPTX. It
/// keeps only what the units' own kernels reach, so each of \p Keep, a
/// device function that code outside the units calls, is kept by one more
/// LTO-IR unit (keepFunctionsLTOIR) and exported by the PTX link, which
/// drops that unit's kernel.
static Expected<PtxModule>
ltoIrModule(Context &Ctx, const CodegenOptions &Opts, const lto::Target &T,
            std::vector<NvJitLinkInput> LtoIR, ArrayRef<std::string> Names,
            std::vector<std::string> Keep, std::string &Text) {
  std::string Keeper;
  if (!Keep.empty()) {
    Ctx.verbose("nvcc LTO-IR for " + T.Name + " keeping " + join(Keep, ", ") +
                " in nvJitLink's PTX");
    Expected<std::string> K = keepFunctionsLTOIR(Ctx, Opts, T.Sm, Keep);
    if (!K)
      return K.takeError();
    Keeper = std::move(*K);
    LtoIR.push_back(
        {NvJitLinkInput::LtoIR, "fatlink's keep-functions unit", Keeper, {}});
  }
  Ctx.verbose("nvJitLink -arch=" + T.Cpu +
              " -lto -ptx: " + Twine(LtoIR.size()) + " inputs, for " + T.Name);
  Expected<std::string> PTX =
      runNvJitLink(Opts.Paths.CudaPath, T.Cpu, /*EmitPtx=*/true, LtoIR,
                   "nvJitLink for " + T.Name);
  if (!PTX)
    return PTX.takeError();
  Text = std::move(*PTX);
  PtxModule M{"nvJitLink's PTX of " + join(Names, ", "), Text};
  if (!Keep.empty()) {
    M.Export = std::move(Keep);
    M.Drop = {KeepEntry.str()};
  }
  return M;
}

/// The device functions the relocatable cubins \p Cubins (files) call and
/// none of them defines, but for the PTX ISA's system calls and the device
/// runtime's (a library's): those an LTO-IR unit must define and keep.
static Expected<std::vector<std::string>>
functionsCalledFromCubins(ArrayRef<std::string> Cubins) {
  StringSet<> Defined;
  std::set<std::string> Called; // ordered: the same keeper for any order
  for (const std::string &Path : Cubins) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(
        Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!MB)
      return createStringError(MB.getError(), "cannot read %s: %s",
                               Path.c_str(), MB.getError().message().c_str());
    Expected<packager::ModuleSymbols> Syms =
        packager::readCubinSymbols((*MB)->getBuffer());
    if (!Syms)
      return createStringError("%s: %s", Path.c_str(),
                               toString(Syms.takeError()).c_str());
    Defined.insert_range(Syms->Defined);
    Called.insert(Syms->UndefinedFunctions.begin(),
                  Syms->UndefinedFunctions.end());
  }
  std::vector<std::string> Keep;
  for (const std::string &Name : Called)
    if (!Defined.contains(Name) && !isPtxSystemCall(Name) &&
        !lto::isDeviceRuntimeSymbol(Name) && isCIdentifier(Name))
      Keep.push_back(Name);
  return Keep;
}

/// Links relocatable cubins of target T (assembled with ptxas -c), the
/// inputs' relocatable cubins for its arch and the device libraries the
/// program uses (given to nvlink as archives: it picks the arch's cubin)
/// into one cubin with nvlink, left in nvlink's output file and mapped
/// (Out.CubinFile), or with nvJitLink where there is nvcc LTO-IR
/// (Out.Cubin). The spills ptxas reports for nvcc's PTX are added to
/// Out.Spills.
static Error linkCubins(Context &Ctx, const CodegenOptions &Opts,
                        const lto::Target &T, std::vector<std::string> Cubins,
                        ArrayRef<const lto::DeviceObject *> Objs,
                        ArrayRef<lto::DeviceLibrary> Libs, TargetOutput &Out) {
  std::vector<FunctionSpills> &Spills = Out.Spills;
  TimeTraceScope Scope("nvlink", T.Name);
  for (auto [N, O] : enumerate(Objs)) {
    if (O->IsLTOIR)
      continue; // nvJitLink's, below
    std::string Name = T.Name + "-object" + std::to_string(N);
    Expected<std::string> Path = Ctx.Temps.write(
        Name + (O->IsPTX ? ".ptx" : ".cubin"), O->Data.getBuffer());
    if (!Path)
      return Path.takeError();
    if (O->IsPTX) {
      // nvcc's PTX of an older arch: assembled relocatable for this one.
      Expected<std::string> CubinPath = Ctx.Temps.create(Name + ".cubin");
      if (!CubinPath)
        return CubinPath.takeError();
      std::string Arch = "-arch=" + T.Cpu;
      std::string What = "ptxas for " + T.Name + " (" + O->Origin + ")";
      Expected<std::string> R = runProgram(
          Ctx, Opts.Paths.Ptxas,
          {"ptxas", Arch, "-c", *Path, "-o", *CubinPath, PtxasSpillFlag},
          Opts.PtxasTimeout, What, Opts.Paths.Hint);
      if (!R)
        return R.takeError();
      append_range(
          Spills,
          spillsOf(*R, packager::readPtxSymbols(O->Data.getBuffer()).Kernels));
      Path = std::move(CubinPath);
    }
    Cubins.push_back(*Path);
  }
  // nvcc LTO-IR: nvJitLink links everything, optimizing across the
  // LTO-IR inputs, instead of nvlink. But nvJitLink -lto keeps of the
  // LTO-IR only what its own kernels reach, and that internal: a device
  // function that the other cubins call would be undefined. Then the
  // LTO-IR units become a relocatable cubin of their own, from
  // nvJitLink's PTX of them with those functions kept and exported (as for
  // PTX targets), and nvlink links it with the rest.
  std::vector<NvJitLinkInput> LtoIR;
  std::vector<std::string> LtoNames;
  for (const lto::DeviceObject *O : Objs)
    if (O->IsLTOIR) {
      LtoIR.push_back(
          {NvJitLinkInput::Object, O->Container, O->Data.getBuffer(), {}});
      LtoNames.push_back(O->Container);
    }
  Expected<std::vector<std::string>> Keep =
      LtoIR.empty() ? std::vector<std::string>{}
                    : functionsCalledFromCubins(Cubins);
  if (!Keep)
    return Keep.takeError();
  if (!Keep->empty()) {
    std::string Text;
    Expected<PtxModule> M =
        ltoIrModule(Ctx, Opts, T, std::move(LtoIR), LtoNames, *Keep, Text);
    if (!M)
      return M.takeError();
    Expected<PtxLinkResult> Linked = linkPTX({*M}, T.Cpu);
    if (!Linked)
      return createStringError("nvJitLink's PTX of %s for %s: %s",
                               join(LtoNames, ", ").c_str(), T.Name.c_str(),
                               toString(Linked.takeError()).c_str());
    std::string Name = T.Name + "-lto-ir";
    Expected<std::string> PtxPath = Ctx.Temps.write(Name + ".ptx", Linked->PTX);
    if (!PtxPath)
      return PtxPath.takeError();
    Expected<std::string> CubinPath = Ctx.Temps.create(Name + ".cubin");
    if (!CubinPath)
      return CubinPath.takeError();
    std::string Arch = "-arch=" + T.Cpu;
    Expected<std::string> R = runProgram(
        Ctx, Opts.Paths.Ptxas,
        {"ptxas", Arch, "-c", *PtxPath, "-o", *CubinPath, PtxasSpillFlag},
        Opts.PtxasTimeout,
        "ptxas for " + T.Name + " (nvJitLink's PTX of " + join(LtoNames, ", ") +
            ")");
    if (!R)
      return R.takeError();
    append_range(Spills,
                 spillsOf(*R, packager::readPtxSymbols(Linked->PTX).Kernels));
    Cubins.push_back(*CubinPath);
  } else if (!LtoIR.empty()) {
    std::vector<NvJitLinkInput> In;
    for (const std::string &Path : Cubins)
      In.push_back({NvJitLinkInput::Cubin, Path, {}, Path});
    for (const lto::DeviceObject *O : Objs)
      if (O->IsLTOIR)
        In.push_back(
            {NvJitLinkInput::Object, O->Container, O->Data.getBuffer(), {}});
    for (const lto::DeviceLibrary &L : Libs)
      In.push_back({NvJitLinkInput::Library, L.Path, {}, L.Path});
    Ctx.verbose("nvJitLink -arch=" + T.Cpu + " -lto: " + Twine(In.size()) +
                " inputs");
    Expected<std::string> Cubin = runNvJitLink(
        Opts.Paths.CudaPath, T.Cpu, /*EmitPtx=*/false, In,
        "nvJitLink for " + T.Name);
    if (!Cubin)
      return Cubin.takeError();
    Out.Cubin = std::move(*Cubin);
    return Error::success();
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
          runProgram(Ctx, Opts.Paths.Nvlink, Argv, Opts.PtxasTimeout, What,
                     Opts.Paths.Hint);
      !R)
    return R.takeError();
  Expected<std::shared_ptr<const MappedFile>> File = toolOutput(*Linked, What);
  if (!File)
    return File.takeError();
  Out.CubinFile = std::move(*File);
  return Error::success();
}

/// The name of the function a PTX line declares or defines (`.entry k(`,
/// `.func (.param .b32 r) f(`), or none.
std::optional<StringRef> ptxFunctionName(StringRef Line) {
  size_t At = Line.find(".entry ");
  size_t Skip = 7;
  if (At == StringRef::npos) {
    At = Line.find(".func ");
    Skip = 6;
  }
  if (At == StringRef::npos || Line.take_front(At).contains("//"))
    return std::nullopt;
  StringRef Rest = Line.drop_front(At + Skip).ltrim();
  if (Rest.consume_front("(")) // a return parameter
    Rest =
        Rest.drop_until([](char C) { return C == ')'; }).drop_front().ltrim();
  StringRef Name = Rest.take_while(
      [](char C) { return isAlnum(C) || C == '_' || C == '$' || C == '.'; });
  if (Name.empty())
    return std::nullopt;
  return Name;
}

/// A failed ptxas run's message names lines of a PTX file (`<file>, line
/// N;`), a temporary that is gone when the user reads it. This adds, for
/// each such line, the function it is in and,
/// for a kernel, the input that defined it (\p Kernels), and how to keep
/// the PTX. \p Msg is returned as it is when it names no such file.
static std::string explainPtxasFailure(Context &Ctx, std::string Msg,
                                       ArrayRef<lto::KernelInfo> Kernels) {
  std::map<std::string, std::set<unsigned>> Lines; // by file
  StringRef Text = Msg;
  for (size_t At = Text.find(".ptx, line "); At != StringRef::npos;
       At = Text.find(".ptx, line ", At + 1)) {
    size_t Begin = Text.take_front(At).find_last_of(" \n\t") + 1;
    StringRef Path = Text.slice(Begin, At + 4);
    unsigned Line = 0;
    if (!Text.drop_front(At + 11).consumeInteger(10, Line))
      Lines[Path.str()].insert(Line);
  }
  if (Lines.empty())
    return Msg;
  std::vector<std::string> Notes;
  for (const auto &[Path, Numbers] : Lines) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(Path);
    if (!MB)
      continue;
    StringRef Function;
    unsigned Number = 0;
    for (StringRef Line : split((*MB)->getBuffer(), '\n')) {
      if (++Number > *Numbers.rbegin())
        break;
      if (std::optional<StringRef> Name = ptxFunctionName(Line))
        Function = *Name;
      if (!Numbers.count(Number) || Function.empty())
        continue;
      std::string Note =
          ">>> line " + std::to_string(Number) + " is in " + Function.str();
      auto K = find_if(Kernels, [&](const lto::KernelInfo &K) {
        return K.Name == Function;
      });
      if (K != Kernels.end())
        Note += K->Origin.empty() ? ", a kernel"
                                  : ", a kernel defined in " + K->Origin;
      if (!is_contained(Notes, Note))
        Notes.push_back(std::move(Note));
    }
  }
  for (const std::string &N : Notes)
    Msg += "\n" + N;
  Msg += Ctx.Temps.saving()
             ? "\n>>> the PTX is kept in " + Ctx.Temps.saveDir().str()
             : "\n>>> to keep the PTX, link again with "
               "--save-temps";
  return Msg;
}

namespace {

/// Runs jobs on a thread pool, the most urgent first: each posted job adds
/// one pool task, and a task runs whichever waiting job has the smallest
/// priority when a thread picks it up (equal priorities in posting order).
/// Jobs may post more jobs; the pool's wait() waits for those too.
///
/// With a jobserver, a task first takes a job slot (waiting for one) and
/// gives it back when its job is done: the jobs running at once, and the
/// ptxas and nvlink processes they run, never outnumber the build's slots,
/// and as other jobs of the build return tokens, more of fatlink's run (up
/// to the pool's threads). LLVM's own jobserver pool instead sizes itself
/// to the slots free when it starts, and its threads keep their slots while
/// idle.
class JobQueue {
public:
  JobQueue(ThreadPoolInterface &Pool, const CodegenOptions &Opts,
           JobserverClient *Jobserver)
      : Pool(Pool), Opts(Opts), Jobserver(Jobserver),
        Tracing(timeTraceProfilerEnabled()) {}

  void post(uint64_t Priority, std::function<void()> Job) {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      Jobs.emplace(Priority, std::move(Job));
      ++Outstanding;
    }
    Pool.async([this] {
      JobSlot Slot = acquireSlot();
      scope_exit Release([&] {
        if (Jobserver)
          Jobserver->release(std::move(Slot));
        std::lock_guard<std::mutex> Lock(Mu);
        --Outstanding;
      });
      std::function<void()> Next;
      {
        std::lock_guard<std::mutex> Lock(Mu);
        auto It = Jobs.begin();
        Next = std::move(It->second);
        Jobs.erase(It);
      }
      if (Tracing)
        timeTraceProfilerInitialize(Opts.TimeTraceGranularity, "fatlink");
      Next();
      if (Tracing)
        timeTraceProfilerFinishThread();
    });
  }

  /// Threads a running job may use beside its own (zstd's workers) while
  /// no other job runs or waits for them: up to Max of the pool's, each
  /// with a jobserver slot where there is a jobserver. They stay counted
  /// as busy until the Borrowed is destroyed. A job posted meanwhile still
  /// runs at once on an idle pool thread: the borrowed threads then run
  /// beside the pool's for the rest of that job's compression.
  class Borrowed {
  public:
    Borrowed(JobQueue &Q, unsigned Max) : Q(Q) { N = Q.lend(Max, Slots); }
    Borrowed(const Borrowed &) = delete;
    Borrowed &operator=(const Borrowed &) = delete;
    ~Borrowed() { Q.giveBack(N, Slots); }
    unsigned count() const { return N; }

  private:
    JobQueue &Q;
    unsigned N = 0;
    std::vector<JobSlot> Slots;
  };

  /// Priority of class Class (smaller first), then A, then B.
  static uint64_t priority(unsigned Class, size_t A, size_t B) {
    return (uint64_t(Class) << 48) | (uint64_t(A & 0xffffff) << 24) |
           uint64_t(B & 0xffffff);
  }

private:
  /// A job slot of the jobserver, when there is one (invalid otherwise):
  /// polled, as the protocol has no wait; the first is the implicit slot.
  JobSlot acquireSlot() {
    if (!Jobserver)
      return JobSlot();
    ExponentialBackoff Backoff(std::chrono::hours(24),
                               std::chrono::milliseconds(1),
                               std::chrono::milliseconds(50));
    do {
      JobSlot Slot = Jobserver->tryAcquire();
      if (Slot.isValid())
        return Slot;
    } while (Backoff.waitForNextAttempt());
    return JobSlot(); // a day without a slot: run anyway
  }

  /// Borrowed's: up to Max idle threads (with their slots in Slots).
  unsigned lend(unsigned Max, std::vector<JobSlot> &Slots) {
    std::lock_guard<std::mutex> Lock(Mu);
    unsigned Threads = Pool.getMaxConcurrency();
    unsigned Busy = Outstanding + Lent;
    unsigned N = std::min(Max, Threads > Busy ? Threads - Busy : 0u);
    if (Jobserver) {
      while (Slots.size() < N) {
        JobSlot Slot = Jobserver->tryAcquire();
        if (!Slot.isValid())
          break;
        Slots.push_back(std::move(Slot));
      }
      N = Slots.size();
    }
    Lent += N;
    return N;
  }

  void giveBack(unsigned N, std::vector<JobSlot> &Slots) {
    for (JobSlot &Slot : Slots)
      Jobserver->release(std::move(Slot));
    std::lock_guard<std::mutex> Lock(Mu);
    Lent -= N;
  }

  ThreadPoolInterface &Pool;
  const CodegenOptions &Opts;
  JobserverClient *Jobserver;
  bool Tracing;
  std::mutex Mu;
  std::multimap<uint64_t, std::function<void()>> Jobs;
  unsigned Outstanding = 0; ///< jobs posted and not finished
  unsigned Lent = 0;        ///< threads lent to Borrowed
};

/// Targets compiled from the same partitions (one optimized module).
struct PartitionGroup {
  std::vector<lto::CodegenPartition> *Parts = nullptr;
  std::vector<size_t> Members; ///< target indices, in target order
  /// The plain sm_XX members, oldest first, when they may share PTX (three
  /// or more); else empty.
  std::vector<size_t> Sharing;
};

} // namespace

/// Of \p Members (target indices), the plain sm_XX targets, oldest first,
/// when they may share PTX: three or more, their SM and PTX ISA versions
/// growing together; else none.
static std::vector<size_t> sharingTargets(ArrayRef<lto::Target> Targets,
                                          ArrayRef<size_t> Members) {
  // Plain processors only: an sm_90a or sm_100f target has instructions of
  // its own that neither neighbour has.
  std::vector<size_t> Plain;
  for (size_t I : Members)
    if (!Targets[I].IsPTX &&
        Targets[I].Cpu == "sm_" + std::to_string(Targets[I].Sm))
      Plain.push_back(I);
  llvm::stable_sort(
      Plain, [&](size_t A, size_t B) { return Targets[A].Sm < Targets[B].Sm; });
  // The backend's choices switch on at an SM or PTX ISA version; both must
  // grow from the oldest to the newest for the two ends to bound the
  // arches between.
  for (size_t K = 1; K < Plain.size(); ++K)
    if (Targets[Plain[K - 1]].Sm >= Targets[Plain[K]].Sm ||
        Targets[Plain[K - 1]].PtxVersion > Targets[Plain[K]].PtxVersion)
      return {};
  if (Plain.size() < 3)
    return {};
  return Plain;
}

/// Whether the targets between \p Lo and \p Hi may take Lo's PTX: Hi's
/// PTX, given Lo's header, is byte-identical to Lo's.
static bool agreeApartFromHeader(StringRef LoText, StringRef HiText,
                                 const lto::Target &Lo, const lto::Target &Hi) {
  TimeTraceScope Scope("Compare PTX");
  std::optional<std::string> HiAsLo = retargetPTX(HiText, Hi, Lo);
  return HiAsLo && *HiAsLo == LoText;
}

/// Groups the partitioned targets by the partitions they compile, and picks
/// the targets that may share PTX. PTXSource[I] names where target I's PTX
/// may come from (part of its cache key): "" for its own code generation.
static std::vector<PartitionGroup> planPartitionGroups(
    const CodegenOptions &Opts, ArrayRef<lto::Target> Targets,
    ArrayRef<std::vector<lto::CodegenPartition> *> PartsOf,
    std::vector<std::string> &PTXSource) {
  std::vector<PartitionGroup> Groups;
  for (size_t I = 0; I < Targets.size(); ++I) {
    if (!PartsOf[I])
      continue;
    auto It = find_if(
        Groups, [&](const PartitionGroup &G) { return G.Parts == PartsOf[I]; });
    if (It == Groups.end()) {
      Groups.push_back({PartsOf[I], {}, {}});
      It = std::prev(Groups.end());
    }
    It->Members.push_back(I);
  }
  PTXSource.assign(Targets.size(), "");
  if (!Opts.SharePTX)
    return Groups;
  for (PartitionGroup &G : Groups) {
    G.Sharing = sharingTargets(Targets, G.Members);
    if (G.Sharing.empty())
      continue;
    const lto::Target &Lo = Targets[G.Sharing.front()];
    const lto::Target &Hi = Targets[G.Sharing.back()];
    std::string Source = "shared:" + Lo.Cpu + "/" + Lo.ptxVersionString() +
                         ":" + Hi.Cpu + "/" + Hi.ptxVersionString();
    for (size_t K = 1; K + 1 < G.Sharing.size(); ++K)
      PTXSource[G.Sharing[K]] = Source;
  }
  return Groups;
}

namespace {

/// The partitioned targets' jobs: one per partition of each group, which
/// takes the targets' cubins from the cache or generates PTX for those that
/// miss (shared between arches where the two ends agree), posts one ptxas
/// job per missing target and frees the partition's bitcode. Done(target,
/// partition, cubin) receives every result, cached or compiled.
class PartitionJobs {
public:
  using DoneFn =
      function_ref<void(size_t Target, size_t Part, Expected<PartitionCode>)>;

  PartitionJobs(Context &Ctx, const CodegenOptions &Opts,
                ArrayRef<lto::Target> Targets,
                ArrayRef<std::vector<lto::CodegenPartition> *> PartsOf,
                JobQueue &Queue, DoneFn Done)
      : Ctx(Ctx), Opts(Opts), Targets(Targets), Queue(Queue), Done(Done),
        Groups(planPartitionGroups(Opts, Targets, PartsOf, PTXSource)),
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
    // A batching target's partitions share ptxas runs by fixed groups of
    // partition numbers; the run starts once every partition of its
    // group is settled (compiled, cached or failed).
    Batches.resize(Targets.size());
    for (size_t I = 0; I < Targets.size(); ++I)
      if (PartsOf[I] && PartsOf[I]->size() > 1 &&
          batchesPtxas(Opts, Targets[I]))
        Batches[I].Slots.resize(divideCeil(PartsOf[I]->size(), PtxasBatchSize));
    for (size_t I = 0; I < Targets.size(); ++I)
      Batches[I].Parts = PartsOf[I] ? PartsOf[I]->size() : 0;
  }

  /// Posts every partition's job (after whole targets, before any ptxas).
  void post() {
    for (size_t GI = 0; GI < Groups.size(); ++GI)
      for (size_t P = 0; P < Groups[GI].Parts->size(); ++P)
        Queue.post(JobQueue::priority(1, P, GI), [this, GI, P] { run(GI, P); });
  }

  std::atomic<unsigned> Generated{0}; ///< code generations run
  std::atomic<unsigned> Reused{0};    ///< PTX taken from the oldest arch
  std::atomic<unsigned> Batched{0};   ///< shared ptxas runs cut apart

private:
  uint64_t ptxasPriority(size_t I, size_t P) const {
    size_t R = RankOf[I];
    if (R >= LastTwo)
      return JobQueue::priority(2, LastTwo, P * 2 + (R - LastTwo));
    return JobQueue::priority(2, R, P);
  }

  /// Target I's ptxas run for the batch of partition P: M where P's PTX
  /// waits to share it, none where P is settled otherwise (cached, failed,
  /// or compiled alone). Posts the run when P's group is complete.
  void settle(size_t I, size_t P, std::optional<BatchMember> M) {
    if (Batches[I].Slots.empty())
      return;
    std::vector<BatchMember> Ready;
    {
      std::lock_guard<std::mutex> Lock(BatchMutex);
      size_t G = P / PtxasBatchSize;
      BatchSlot &S = Batches[I].Slots[G];
      if (M)
        S.Members.push_back(std::move(*M));
      size_t Size =
          std::min(PtxasBatchSize, Batches[I].Parts - G * PtxasBatchSize);
      if (++S.Settled != Size)
        return;
      Ready = std::move(S.Members);
    }
    if (Ready.empty())
      return;
    llvm::sort(Ready, [](const BatchMember &A, const BatchMember &B) {
      return A.Part < B.Part;
    });
    size_t First = Ready.front().Part;
    Queue.post(ptxasPriority(I, First),
               [this, I, Ready = std::move(Ready)] { runBatch(I, Ready); });
  }

  void runBatch(size_t I, ArrayRef<BatchMember> Members) {
    const lto::Target &T = Targets[I];
    if (Members.size() > 1) {
      Expected<std::vector<PartitionCode>> Codes =
          assembleBatch(Ctx, Opts, T, Members);
      if (Codes) {
        ++Batched;
        for (auto [M, Code] : zip(Members, *Codes))
          Done(I, M.Part, std::move(Code));
        return;
      }
      Ctx.verbose(toString(Codes.takeError()) + "; compiled one by one");
    }
    for (const BatchMember &M : Members)
      Done(I, M.Part,
           assemblePartition(Ctx, Opts, T, M.PTXPath, M.Part, *M.Kernels,
                             M.Key));
  }

  Expected<std::string> generate(StringRef Bitcode, size_t I) {
    ++Generated;
    return generatePTX(Bitcode, Targets[I], Opts.OptLevel);
  }

  /// Partition P of group GI.
  void run(size_t GI, size_t P) {
    const PartitionGroup &G = Groups[GI];
    lto::CodegenPartition &Part = (*G.Parts)[P];
    TimeTraceScope Scope("Codegen partition", "part" + std::to_string(P));
    // In memory, or read back from the file it waited in since its O3.
    Expected<std::unique_ptr<MemoryBuffer>> Loaded = lto::loadBitcode(Part);
    if (!Loaded) {
      std::string Msg = toString(Loaded.takeError());
      for (size_t I : G.Members) {
        Done(I, P, createStringError(inconvertibleErrorCode(), Msg));
        settle(I, P, std::nullopt);
      }
      return;
    }
    StringRef Bitcode = (*Loaded)->getBuffer();
    std::vector<std::string> Keys(Targets.size());
    std::vector<std::pair<size_t, PartitionCode>> Hits;
    std::vector<size_t> Missing;
    BLAKE3Result<32> BitcodeHash;
    bool Caching = bool(Opts.Cache.Key);
    if (Caching)
      BitcodeHash = BLAKE3::hash(arrayRefFromStringRef(Bitcode));
    for (size_t I : G.Members) {
      if (Caching) {
        Keys[I] = Opts.Cache.Key(Targets[I], BitcodeHash, PTXSource[I]);
        if (std::optional<PartitionCode> Code = Opts.Cache.Lookup(Keys[I])) {
          Hits.emplace_back(I, std::move(*Code));
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
        Expected<std::string> E = generate(Bitcode, End);
        if (E) {
          *Text = std::move(*E);
        } else if (is_contained(Missing, End)) {
          Done(End, P, E.takeError());
          Settled.push_back(End);
        } else {
          consumeError(E.takeError());
        }
      }
      Shared = LoText && HiText &&
               agreeApartFromHeader(*LoText, *HiText, Targets[Lo], Targets[Hi]);
    }

    // Each batching target's share of this partition: its PTX to share a
    // ptxas run, or nothing (settled when this job ends).
    std::vector<std::optional<BatchMember>> ToBatch(Targets.size());
    for (size_t I : Missing) {
      if (is_contained(Settled, I))
        continue;
      std::optional<std::string> Text;
      if (I == Lo) {
        Text = Shared ? *LoText : std::move(*LoText); // the middle needs it
      } else if (I == Hi) {
        Text = std::move(*HiText);
      } else if (Shared && !PTXSource[I].empty()) {
        Text = retargetPTX(*LoText, Targets[Lo], Targets[I]);
        if (Text)
          ++Reused;
      }
      if (!Text) {
        Expected<std::string> E = generate(Bitcode, I);
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
      bool Batching = !Batches[I].Slots.empty();
      if (Batching)
        if (std::optional<std::vector<std::string>> Functions =
                sharedRunFunctions(*Text)) {
          ToBatch[I] = BatchMember{P, std::move(*Path), Keys[I], &Part.Kernels,
                                   std::move(*Functions)};
          continue;
        }
      Queue.post(ptxasPriority(I, P), [this, I, P, Key = Keys[I],
                                       Path = std::move(*Path),
                                       Kernels = &Part.Kernels] {
        Done(I, P,
             assemblePartition(Ctx, Opts, Targets[I], Path, P, *Kernels, Key));
      });
    }
    // Every target has its PTX: the partition's IR is not read again.
    // Freed now, the partitions' bitcode (tens of MB in a large program)
    // does not wait for the last ptxas and nvlink, where the peak is; and
    // what code generation freed goes back to the system.
    bool Large = Bitcode.size() >= lto::ReleaseAfterBytes;
    Loaded->reset();
    std::string().swap(Part.Bitcode);
    if (Large)
      lto::releaseFreedMemory();
    for (auto &[I, Code] : Hits)
      Done(I, P, std::move(Code));
    for (size_t I : G.Members)
      settle(I, P, std::move(ToBatch[I]));
  }

  Context &Ctx;
  const CodegenOptions &Opts;
  ArrayRef<lto::Target> Targets;
  JobQueue &Queue;
  DoneFn Done;
  std::vector<std::string> PTXSource; // before Groups: filled by its planner
  std::vector<PartitionGroup> Groups;
  std::vector<size_t> RankOf;
  size_t LastTwo = 0;
  struct BatchSlot {
    size_t Settled = 0;
    std::vector<BatchMember> Members;
  };
  struct TargetBatches {
    size_t Parts = 0;             ///< the target's partitions
    std::vector<BatchSlot> Slots; ///< by partition / PtxasBatchSize
  };
  std::mutex BatchMutex;
  std::vector<TargetBatches> Batches;
};

} // namespace

/// The PTX of PTX target T with nvcc's relocatable code in it: fatlink's
/// own PTX (OwnPTX, empty when there is no bitcode) linked with each unit's
/// PTX (Objs, from lto::objectsForTarget): nvcc's PTX entries as they are,
/// and the LTO-IR units' PTX, which nvJitLink makes from all of them
/// together (it makes PTX only when every input is LTO-IR, so fatlink's
/// PTX cannot join that link). nvJitLink links them as a whole program,
/// keeping only what their own kernels reach, so the functions the other
/// modules call are kept by one more LTO-IR unit (keepFunctionsLTOIR) and
/// exported in the PTX link. docs/nvcc.md, "PTX targets".
static Expected<std::string>
linkNvccPTX(Context &Ctx, const CodegenOptions &Opts, const lto::Target &T,
            StringRef OwnPTX, ArrayRef<const lto::DeviceObject *> Objs) {
  TimeTraceScope Scope("Link nvcc PTX", T.Name);
  // The modules in input order: fatlink's PTX, then each PTX entry; the
  // LTO-IR units' PTX goes where the first of them is (LtoPos).
  std::string LtoPTXText; // Modules refer to it
  std::vector<PtxModule> Modules;
  if (!OwnPTX.empty())
    Modules.push_back({"fatlink's PTX for " + T.Name, OwnPTX});
  std::vector<NvJitLinkInput> LtoIR;
  std::vector<std::string> LtoNames;
  size_t LtoPos = 0;
  for (const lto::DeviceObject *O : Objs) {
    if (O->IsPTX) {
      Modules.push_back(
          {O->Origin + " (" + O->Arch + ")", O->Data.getBuffer()});
    } else if (O->IsLTOIR) {
      if (LtoIR.empty())
        LtoPos = Modules.size();
      LtoIR.push_back(
          {NvJitLinkInput::Object, O->Container, O->Data.getBuffer(), {}});
      LtoNames.push_back(O->Container);
    }
  }
  if (!LtoIR.empty()) {
    // The functions the other modules use and do not define: the LTO-IR
    // units must keep them (a name no unit defines fails in nvJitLink).
    // Linking the other modules alone is what tells them.
    Expected<PtxLinkResult> Others = linkPTX(Modules, T.Cpu);
    if (!Others)
      return createStringError(
          inconvertibleErrorCode(), "cannot link nvcc's PTX into %s: %s",
          T.Name.c_str(), toString(Others.takeError()).c_str());
    std::vector<std::string> Keep;
    for (const std::string &Name : Others->UnresolvedFunctions)
      if (!isPtxSystemCall(Name) && isCIdentifier(Name))
        Keep.push_back(Name);
    Expected<PtxModule> M = ltoIrModule(Ctx, Opts, T, std::move(LtoIR),
                                        LtoNames, std::move(Keep), LtoPTXText);
    if (!M)
      return M.takeError();
    Modules.insert(Modules.begin() + LtoPos, std::move(*M));
  }
  Ctx.verbose("PTX link for " + T.Name + ": " + Twine(Modules.size()) +
              " modules");
  Expected<PtxLinkResult> Linked = linkPTX(Modules, T.Cpu);
  if (!Linked)
    return createStringError(
        inconvertibleErrorCode(), "cannot link nvcc's PTX into %s: %s",
        T.Name.c_str(), toString(Linked.takeError()).c_str());
  for (const std::string &N : Linked->Notes)
    Ctx.verbose("PTX link for " + T.Name + ": " + N);
  // (ptxas would take an undefined variable for a definition, with a
  // warning, so nothing may stay undefined.)
  std::vector<std::string> Missing;
  for (const std::string &Name : Linked->Unresolved)
    if (!isPtxSystemCall(Name))
      Missing.push_back(Name);
  if (!Missing.empty())
    return createStringError(inconvertibleErrorCode(),
                             "PTX target %s: %s used but defined by no PTX "
                             "module",
                             T.Name.c_str(), join(Missing, ", ").c_str());
  return std::move(Linked->PTX);
}

/// Generates PTX for one target (or takes \p Given, its PTX shared from
/// another arch) and assembles it (sm_XX) or checks it (compute_XX) with
/// ptxas. With relocatable cubins of the target's arch in the inputs, the
/// PTX is assembled relocatable (ptxas -c) and nvlink links it with them.
static Expected<TargetOutput>
compileTarget(Context &Ctx, const CodegenOptions &Opts,
              const lto::LinkedProgram &Program, const lto::InputSet &Inputs,
              ArrayRef<lto::Target> Targets, size_t I,
              std::optional<std::string> Given) {
  const lto::Target &T = Targets[I];
  TargetOutput Out;
  bool HasBitcode = !Program.Modules.empty();
  if (Given) {
    Out.PTX = std::move(*Given);
  } else if (HasBitcode) {
    Expected<std::string> PTX = generatePTX(Program, Targets, I, Opts.OptLevel);
    if (!PTX)
      return PTX.takeError();
    Out.PTX = std::move(*PTX);
  }
  std::vector<const lto::DeviceObject *> Objs =
      lto::objectsForTarget(Inputs, T);
  // A PTX target is one module: nvcc's code joins it as PTX.
  bool LinkedPTX = T.IsPTX && !Objs.empty();
  if (LinkedPTX) {
    Expected<std::string> PTX = linkNvccPTX(Ctx, Opts, T, Out.PTX, Objs);
    if (!PTX)
      return PTX.takeError();
    Out.PTX = std::move(*PTX);
    HasBitcode = true; // from here on, Out.PTX is the target's whole code
  }
  if (!Opts.RunPtxas)
    return Out;

  TimeTraceScope Scope("ptxas", T.Name);
  // Relocatable code to link with nvlink: objects or device libraries.
  bool Relocatable = !Objs.empty() || !Program.Libraries.empty();
  std::string OptFlag = "-O" + std::to_string(Opts.OptLevel);
  std::string What = "ptxas for " + T.Name;
  std::vector<std::string> Cubins; // to give nvlink
  if (HasBitcode) {
    Expected<std::string> PTXPath = Ctx.Temps.write(T.Name + ".ptx", Out.PTX);
    if (!PTXPath)
      return PTXPath.takeError();
    if (LinkedPTX) {
      // A reference no module defines fails here, not on the user's GPU.
      if (Error E =
              checkPTXFile(Ctx, Opts.Paths, Opts.PtxasTimeout, *PTXPath, T.Cpu,
                           T.Name, {}, What + " (nvcc's code linked in)"))
        return std::move(E);
      return Out;
    }
    if (T.IsPTX) {
      // A virtual arch makes ptxas parse and check the PTX without
      // generating code: the driver will compile it on the user's GPU.
      std::string Arch = "-arch=" + T.Name;
      Expected<std::string> R =
          runProgram(Ctx, Opts.Paths.Ptxas, {"ptxas", Arch, *PTXPath},
                     Opts.PtxasTimeout, What, Opts.Paths.Hint);
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
    append_range(
        Argv, ArrayRef<StringRef>{*PTXPath, "-o", *CubinPath, PtxasSpillFlag});
    Expected<std::string> R = runProgram(
        Ctx, Opts.Paths.Ptxas, Argv, Opts.PtxasTimeout, What, Opts.Paths.Hint);
    if (!R)
      return R.takeError();
    Out.Spills = spillsOf(*R, Program.Kernels);
    if (!Relocatable) {
      // Left in ptxas's file, as a partitioned target's is in nvlink's.
      Expected<std::shared_ptr<const MappedFile>> File =
          toolOutput(*CubinPath, What);
      if (!File)
        return File.takeError();
      Out.CubinFile = std::move(*File);
      sortSpills(Out.Spills);
      return Out;
    }
    Cubins.push_back(*CubinPath);
  }

  if (Error E = linkCubins(Ctx, Opts, T, Cubins, Objs, Program.Libraries, Out))
    return std::move(E);
  sortSpills(Out.Spills);
  return Out;
}

namespace {

/// The whole targets' jobs (targets compiled unpartitioned): one per
/// target, which generates its PTX and assembles it (compileTarget) and
/// hands the result to Done. Three or more plain sm_XX targets of one
/// optimized module share PTX as partitions do (PartitionJobs): the
/// oldest's and the newest's code is generated side by side, and the job
/// that finishes second compares the two and posts the targets between,
/// which take the oldest's PTX with their own header where the two agree,
/// and generate their own where not.
class WholeTargetJobs {
public:
  using DoneFn = function_ref<void(size_t Target, Expected<TargetOutput>)>;

  WholeTargetJobs(Context &Ctx, const CodegenOptions &Opts,
                  const lto::LinkedProgram &Program,
                  const lto::InputSet &Inputs, ArrayRef<lto::Target> Targets,
                  std::vector<size_t> Whole, JobQueue &Queue, DoneFn Done)
      : Ctx(Ctx), Opts(Opts), Program(Program), Inputs(Inputs),
        Targets(Targets), Whole(std::move(Whole)), Queue(Queue), Done(Done) {
    if (!Opts.SharePTX || Program.Modules.empty())
      return;
    for (const lto::OptimizedModule &M : Program.Modules) {
      std::vector<size_t> Members;
      for (size_t I : M.TargetIndices)
        if (is_contained(this->Whole, I))
          Members.push_back(I);
      std::vector<size_t> Sharing = sharingTargets(Targets, Members);
      if (!Sharing.empty()) {
        Groups.push_back(std::make_unique<Group>());
        Groups.back()->Members = std::move(Sharing);
      }
    }
  }

  /// Posts every whole target's job, or its group's two ends.
  void post() {
    for (size_t I : Whole) {
      Group *G = groupOf(I);
      if (!G)
        Queue.post(JobQueue::priority(0, I, 0), [this, I] { run(I, {}); });
      else if (I == G->Members.front() || I == G->Members.back())
        Queue.post(JobQueue::priority(0, I, 0), [this, G, I] { end(*G, I); });
    }
  }

  /// Whether any targets may share PTX.
  bool sharing() const { return !Groups.empty(); }

  std::atomic<unsigned> Generated{0}; ///< code generations run
  std::atomic<unsigned> Reused{0};    ///< PTX taken from the oldest arch

private:
  struct Group {
    std::vector<size_t> Members; ///< oldest first
    /// The two ends' PTX (none where its generation failed), until shared.
    std::optional<std::string> LoText, HiText;
    bool Shared = false;
    std::atomic<unsigned> EndsPending{2};
    std::atomic<unsigned> MiddlesPending{0};
  };

  Group *groupOf(size_t I) const {
    for (const std::unique_ptr<Group> &G : Groups)
      if (is_contained(G->Members, I))
        return G.get();
    return nullptr;
  }

  void run(size_t I, std::optional<std::string> PTX) {
    if (!PTX && !Program.Modules.empty())
      ++Generated;
    Done(I,
         compileTarget(Ctx, Opts, Program, Inputs, Targets, I, std::move(PTX)));
  }

  /// The oldest or newest target of group G: its PTX for the comparison,
  /// then its own cubin.
  void end(Group &G, size_t I) {
    bool IsLo = I == G.Members.front();
    ++Generated;
    Expected<std::string> PTX = generatePTX(Program, Targets, I, Opts.OptLevel);
    std::optional<std::string> Own;
    if (PTX) {
      Own = *PTX; // the group's copy is the other jobs'
      (IsLo ? G.LoText : G.HiText) = std::move(*PTX);
    }
    if (--G.EndsPending == 0)
      settle(G);
    if (!PTX)
      return Done(I, PTX.takeError());
    Done(I,
         compileTarget(Ctx, Opts, Program, Inputs, Targets, I, std::move(Own)));
  }

  /// Both ends have their PTX (or failed): shared if the newest's, given
  /// the oldest's header, is the oldest's; the targets between go to work.
  void settle(Group &G) {
    size_t Lo = G.Members.front(), Hi = G.Members.back();
    G.Shared =
        G.LoText && G.HiText &&
        agreeApartFromHeader(*G.LoText, *G.HiText, Targets[Lo], Targets[Hi]);
    G.HiText.reset();
    if (!G.Shared)
      G.LoText.reset();
    G.MiddlesPending = G.Members.size() - 2;
    for (size_t K = 1; K + 1 < G.Members.size(); ++K) {
      size_t M = G.Members[K];
      Queue.post(JobQueue::priority(0, M, 0), [this, &G, Lo, M] {
        std::optional<std::string> PTX;
        if (G.Shared) {
          PTX = retargetPTX(*G.LoText, Targets[Lo], Targets[M]);
          if (PTX)
            ++Reused;
        }
        if (--G.MiddlesPending == 0)
          G.LoText.reset();
        run(M, std::move(PTX));
      });
    }
  }

  Context &Ctx;
  const CodegenOptions &Opts;
  const lto::LinkedProgram &Program;
  const lto::InputSet &Inputs;
  ArrayRef<lto::Target> Targets;
  std::vector<size_t> Whole; ///< the targets compiled whole
  JobQueue &Queue;
  DoneFn Done;
  std::vector<std::unique_ptr<Group>> Groups;
};

} // namespace

/// What target T's fatbin entry holds: its PTX or its cubin.
static StringRef imageBytes(const lto::Target &T, const TargetOutput &O) {
  return T.IsPTX ? StringRef(O.PTX) : O.cubin();
}

Expected<packager::FatbinImage> encodeImage(const lto::Target &T,
                                            const TargetOutput &O,
                                            const packager::FatbinOptions &F) {
  TimeTraceScope Scope("Encode fatbin entry", T.Name);
  StringRef Bytes = imageBytes(T, O);
  Expected<packager::FatbinImage> Image = packager::identifyImage(Bytes);
  if (!Image)
    return createStringError(inconvertibleErrorCode(),
                             "cannot package the %s image: %s", T.Name.c_str(),
                             toString(Image.takeError()).c_str());
  // A mapped cubin's pages go back as zstd is done with them.
  Expected<std::string> Entry = packager::encodeFatbinEntry(
      *Image, Bytes, F, [&](StringRef Read) { O.releaseCubin(Read); });
  if (!Entry)
    return Entry.takeError();
  Image->Entry = std::move(*Entry);
  return Image;
}

// For packaged outputs the job that finishes a target also encodes its
// fatbin entry. A target whose module was split (Parts[module] has several
// partitions) is compiled partition by partition (PartitionJobs); the job
// that finishes a target's last partition links them with nvlink and
// encodes the entry.
/// The partitions each target is compiled in; null: compiled whole.
template <typename PartsRef>
static std::vector<decltype(&std::declval<PartsRef>()[0])>
partitionsOf(const lto::LinkedProgram &Program, ArrayRef<lto::Target> Targets,
             PartsRef Parts) {
  std::vector<decltype(&Parts[0])> PartsOf(Targets.size(), nullptr);
  for (auto [MI, M] : enumerate(Program.Modules))
    if (MI < Parts.size() && Parts[MI].size() > 1)
      for (size_t I : M.TargetIndices)
        if (!Targets[I].IsPTX)
          PartsOf[I] = &Parts[MI];
  return PartsOf;
}

size_t countUnits(const lto::LinkedProgram &Program,
                  ArrayRef<lto::Target> Targets,
                  ArrayRef<std::vector<lto::CodegenPartition>> Parts) {
  size_t N = 0;
  for (const std::vector<lto::CodegenPartition> *P :
       partitionsOf(Program, Targets, Parts))
    N += P ? P->size() : 1;
  return N;
}

Expected<std::vector<TargetOutput>>
compileTargets(Context &Ctx, const CodegenOptions &Opts,
               const lto::LinkedProgram &Program, const lto::InputSet &Inputs,
               ArrayRef<lto::Target> Targets,
               MutableArrayRef<std::vector<lto::CodegenPartition>> Parts) {
  TimeTraceScope Scope("Compile targets");
  size_t NT = Targets.size();
  std::vector<TargetOutput> Outputs(NT);
  std::vector<std::string> Errors(NT);
  std::mutex ErrorsMu;
  auto Fail = [&](size_t I, Error E) {
    std::lock_guard<std::mutex> Lock(ErrorsMu);
    if (Errors[I].empty())
      Errors[I] =
          explainPtxasFailure(Ctx, toString(std::move(E)), Program.Kernels);
    else
      consumeError(std::move(E));
  };
  // With a jobserver: a thread per core, or per slot free at the start
  // where the build allows more; each job runs holding a slot.
  JobserverClient *Jobserver = Opts.UseJobserver && Opts.Jobs == 0
                                   ? JobserverClient::getInstance()
                                   : nullptr;
  unsigned Threads = Opts.Jobs;
  if (Jobserver)
    Threads = std::max(hardware_concurrency().compute_thread_count(),
                       Jobserver->getNumJobs());
  DefaultThreadPool Pool(hardware_concurrency(Threads));
  JobQueue Queue(Pool, Opts, Jobserver);

  bool Packaged = Opts.RunPtxas && Opts.Package.has_value();
  auto Encode = [&](size_t I) {
    if (!Packaged)
      return;
    // A large image is compressed by zstd's threads: this job's, and those
    // of the pool idle now (at the end of a large link, all of them), up to
    // MaxZstdWorkers. The entry is the same for any number.
    packager::FatbinOptions F = *Opts.Package;
    std::optional<JobQueue::Borrowed> Idle;
    if (imageBytes(Targets[I], Outputs[I]).size() > F.ZstdThreadsAbove) {
      Idle.emplace(Queue, MaxZstdWorkers - 1);
      F.ZstdWorkers = 1 + Idle->count();
      Ctx.verbose("zstd: " + Targets[I].Name + "'s entry on " +
                  Twine(F.ZstdWorkers) +
                  (F.ZstdWorkers == 1 ? " thread" : " threads"));
    }
    if (Expected<packager::FatbinImage> Image =
            encodeImage(Targets[I], Outputs[I], F))
      Outputs[I].Image = std::move(*Image);
    else
      Fail(I, Image.takeError());
  };

  // Which partitions each target compiles (none: compiled whole).
  std::vector<std::vector<lto::CodegenPartition> *> PartsOf =
      partitionsOf(Program, Targets, Parts);
  // Each partition's cubin goes to the file nvlink reads as soon as it is
  // ready, and only its path and spills are kept: a large program's 32
  // cubins are not all in memory at once, beside the linked one.
  struct PartFile {
    std::string Path;
    std::vector<FunctionSpills> Spills;
  };
  std::vector<std::vector<PartFile>> PartFiles(NT);
  // Each partition's error, in its own slot: the partitions finish in
  // whatever order the threads run them, so the one reported is chosen by
  // partition number, not by which failed first.
  std::vector<std::vector<std::string>> PartErrors(NT);
  std::unique_ptr<std::atomic<size_t>[]> Remaining(new std::atomic<size_t>[NT]);
  for (size_t I = 0; I < NT; ++I) {
    Remaining[I] = PartsOf[I] ? PartsOf[I]->size() : 0;
    if (PartsOf[I]) {
      PartFiles[I].resize(PartsOf[I]->size());
      PartErrors[I].resize(PartsOf[I]->size());
    }
  }

  // A target's partition is done (its cubin, or why not); the last one to
  // finish links the target's partitions and encodes its entry, or reports
  // the error of the first partition that failed.
  auto PartDone = [&](size_t I, size_t P, Expected<PartitionCode> Code) {
    Ctx.progressDone(Targets[I].Name);
    if (Code) {
      Expected<std::string> Path = Ctx.Temps.write(
          partitionFileName(Targets[I], P, ".o.cubin"), Code->Cubin);
      if (Path)
        PartFiles[I][P] = {std::move(*Path), std::move(Code->Spills)};
      else
        PartErrors[I][P] = toString(Path.takeError());
    } else {
      PartErrors[I][P] = toString(Code.takeError());
    }
    if (--Remaining[I] != 0)
      return;
    for (const std::string &E : PartErrors[I])
      if (!E.empty())
        return Fail(I, createStringError(inconvertibleErrorCode(), E));
    std::vector<std::string> Paths;
    std::vector<FunctionSpills> &Spills = Outputs[I].Spills;
    for (PartFile &F : PartFiles[I]) {
      Paths.push_back(std::move(F.Path));
      append_range(Spills, F.Spills);
    }
    PartFiles[I].clear();
    // The code generators' and optimizers' freed memory back to the system
    // before zstd's tables (81 MB at level 19) are allocated; nvlink's
    // cubin is compressed from its mapped file, a few MB resident at once.
    lto::releaseFreedMemory();
    if (Error E = linkCubins(Ctx, Opts, Targets[I], Paths,
                             lto::objectsForTarget(Inputs, Targets[I]),
                             Program.Libraries, Outputs[I]))
      return Fail(I, std::move(E));
    sortSpills(Spills);
    Encode(I);
  };

  {
    // Whole targets first: they are the longest tasks.
    std::vector<size_t> Whole;
    for (size_t I = 0; I < NT; ++I)
      if (!PartsOf[I])
        Whole.push_back(I);
    auto WholeDone = [&](size_t I, Expected<TargetOutput> Out) {
      Ctx.progressDone(Targets[I].Name);
      if (!Out)
        return Fail(I, Out.takeError());
      Outputs[I] = std::move(*Out);
      Encode(I);
    };
    WholeTargetJobs WholeJobs(Ctx, Opts, Program, Inputs, Targets,
                              std::move(Whole), Queue, WholeDone);
    WholeJobs.post();
    PartitionJobs Jobs(Ctx, Opts, Targets, PartsOf, Queue, PartDone);
    Jobs.post();
    Pool.wait();
    unsigned Generated = WholeJobs.Generated + Jobs.Generated;
    unsigned Reused = WholeJobs.Reused + Jobs.Reused;
    if (Jobs.Generated || Reused || WholeJobs.sharing())
      Ctx.verbose("PTX: " + Twine(Generated) + " generated, " + Twine(Reused) +
                  " reused (the oldest arch's, where the newest arch's "
                  "agreed)");
    if (Jobs.Batched)
      Ctx.verbose("ptxas: " + Twine(Jobs.Batched) +
                  " runs shared by partitions, cut apart");
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

Expected<PartitionCode> compilePartition(Context &Ctx,
                                         const CodegenOptions &Opts,
                                         const lto::LinkedProgram &Program,
                                         ArrayRef<lto::Target> Targets,
                                         size_t I, unsigned PartIndex) {
  const lto::Target &T = Targets[I];
  Expected<std::string> PTX = generatePTX(Program, Targets, I, Opts.OptLevel);
  if (!PTX)
    return PTX.takeError();
  Expected<std::string> Path =
      Ctx.Temps.write(partitionFileName(T, PartIndex, ".ptx"), *PTX);
  if (!Path)
    return Path.takeError();
  std::vector<std::string> Kernels;
  for (packager::KernelInfo &K : packager::readPtxSymbols(*PTX).Kernels)
    Kernels.push_back(std::move(K.Name));
  Expected<PartitionCode> Code =
      assemblePartition(Ctx, Opts, T, *Path, PartIndex, Kernels, /*Key=*/"");
  if (Code)
    sortSpills(Code->Spills);
  return Code;
}

Expected<std::string> joinPartitions(Context &Ctx, const CodegenOptions &Opts,
                                     const lto::LinkedProgram &Program,
                                     const lto::InputSet &Inputs,
                                     const lto::Target &T,
                                     std::vector<std::string> Cubins) {
  TargetOutput Out; // its spills: ptxas ran in the pieces' actions
  if (Error E = linkCubins(Ctx, Opts, T, std::move(Cubins),
                           lto::objectsForTarget(Inputs, T), Program.Libraries,
                           Out))
    return std::move(E);
  return Out.CubinFile ? Out.cubin().str() : std::move(Out.Cubin);
}

Expected<std::vector<std::vector<lto::CodegenPartition>>>
planPartitions(Context &Ctx, lto::LinkedProgram &Program,
               unsigned MaxPartitions) {
  std::vector<std::vector<lto::CodegenPartition>> Parts;
  unsigned N = MaxPartitions;
  if (N == 0)
    N = lto::defaultPartitions(Program.Kernels.size());
  for (lto::OptimizedModule &M : Program.Modules) {
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
  return Parts;
}

} // namespace fatlink::codegen
