//===- codegen/Codegen.h - Code generation: modules in, PTX and cubins out ===//
//
// The code generation stage of a device link. It takes what lto/ gives
// (the linked program: one optimized module per group of targets, or its
// partitions) and the targets, and gives each target's code: PTX from the
// NVPTX backend (generatePTX), a cubin from ptxas, linked by nvlink
// with relocatable inputs and device libraries where there are any, and,
// for packaged outputs, the target's fatbin entry; a PTX target's PTX has
// nvcc's relocatable code linked in (linkPTX). Targets (and partitions
// of targets) are compiled in parallel, each into its own slot, so the
// result does not depend on -j.
//
// It also owns the CUDA toolkit: it finds ptxas, nvlink and libdevice, asks
// ptxas once which arches and PTX versions it accepts, and runs external
// programs with their output captured, a time limit, and errors that say
// what happened (not found, not executable, crashed, timed out, failed).
//
// Like lto/ and packager/, it returns llvm::Error values and prints nothing
// but -v lines; the run state (temporary files, verbosity) is the driver's
// Context. What it caches is the driver's choice, through CodegenCache.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_CODEGEN_CODEGEN_H
#define FATLINK_CODEGEN_CODEGEN_H

#include "linker/Context.h"
#include "lto/LTO.h"
#include "packager/Packager.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fatlink::codegen {

//===----------------------------------------------------------------------===//
// The CUDA toolkit
//===----------------------------------------------------------------------===//

/// What a message about a missing CUDA tool tells the user to do, after
/// "install the CUDA toolkit, or ": device-link's options.
constexpr const char *DefaultToolkitHint =
    "pass --cuda-path or set CUDA_PATH to one";

struct ToolkitPaths {
  std::string CudaPath;  ///< --cuda-path, else $CUDA_PATH, else /usr/local/cuda
  std::string Ptxas;     ///< --ptxas, else <CudaPath>/bin/ptxas
  std::string Libdevice; ///< --libdevice, else <CudaPath>/nvvm/libdevice/...
  std::string Nvlink;    ///< <CudaPath>/bin/nvlink (relocatable cubins only)
  /// <CudaPath>/lib64/libcudadevrt.a, CUDA's device runtime (read only for
  /// kernels that launch kernels; may not exist).
  std::string DeviceRuntime;
  /// How the user picks the toolkit, for messages: DefaultToolkitHint, or
  /// the wrappers' setting ("set FATLINK_CUDA_PATH to one").
  std::string Hint = DefaultToolkitHint;
};

/// What the installed ptxas accepts.
struct PtxasInfo {
  std::string Path;
  std::string Release;             ///< "13.0", from `ptxas --version`
  unsigned MaxPtxVersion = 0;      ///< x10: 90 for PTX ISA 9.0
  std::vector<std::string> Arches; ///< "sm_75", "compute_120f", ...
};

/// One input of an nvJitLink link: bytes in memory (Data, named Name in
/// messages) or a file (Path).
struct NvJitLinkInput {
  enum KindType { Cubin, Ptx, LtoIR, Object, Library } Kind = Cubin;
  std::string Name;
  llvm::StringRef Data;
  std::string Path;
};

/// Links \p Inputs with nvJitLink (<CudaPath>/lib64/libnvJitLink.so, loaded
/// on first use) for \p Arch ("sm_90") with -lto: a cubin, or PTX if
/// \p EmitPtx (which nvJitLink makes only from LTO-IR). \p What names the
/// link in messages. A missing library, or one older than the LTO-IR,
/// is an error that says what to do.
llvm::Expected<std::string> runNvJitLink(llvm::StringRef CudaPath,
                                         llvm::StringRef Arch, bool EmitPtx,
                                         llvm::ArrayRef<NvJitLinkInput> Inputs,
                                         llvm::StringRef What);

/// "13.0 (/usr/local/cuda/lib64/libnvJitLink.so.13)", or why there is none.
llvm::Expected<std::string> nvJitLinkVersion(llvm::StringRef CudaPath);

/// Checks, before any link, that the nvJitLink of \p CudaPath reads nvcc
/// LTO-IR of code version \p Major.\p Minor (the "code version" of its
/// fatbin entry header, which mirrors the LTO-IR container's own version;
/// nvJitLink refuses a newer container as "outdated library"). An error
/// names \p Origin, both versions, the toolkit that wrote it where known,
/// and what to do. The limits come from a table of measured toolkits; an
/// nvJitLink newer than all of them is left to refuse by itself.
llvm::Error checkLtoIrVersion(llvm::StringRef CudaPath, unsigned Major,
                              unsigned Minor, llvm::StringRef Origin);

/// Fills in the defaults of Paths from the environment.
ToolkitPaths resolveToolkitPaths(llvm::StringRef CudaPath,
                                 llvm::StringRef Ptxas,
                                 llvm::StringRef Libdevice);

/// Runs `ptxas --version` and `ptxas --help` and reads the answers; Hint
/// is ToolkitPaths::Hint.
llvm::Expected<PtxasInfo> probePtxas(Context &Ctx, llvm::StringRef Ptxas,
                                     llvm::StringRef Hint = DefaultToolkitHint);

/// Parses the two outputs of probePtxas (split out for unit tests).
llvm::Expected<PtxasInfo> parsePtxasInfo(llvm::StringRef Path,
                                         llvm::StringRef VersionOutput,
                                         llvm::StringRef HelpOutput);

/// The newest PTX ISA version (x10) a CUDA release's ptxas accepts, from
/// NVIDIA's PTX ISA release notes. Releases newer than the table are assumed
/// to accept the newest version it knows.
unsigned maxPtxVersionForCudaRelease(unsigned Major, unsigned Minor);

/// Runs Program with Args (Args[0] is replaced by Program), stdout and
/// stderr captured together. Fails if it cannot start, crashes, runs past
/// TimeoutSeconds (0: no limit) or exits non-zero; What names it in the
/// message ("ptxas for sm_80"), and a missing Program's message ends with
/// Hint (ToolkitPaths::Hint).
llvm::Expected<std::string>
runProgram(Context &Ctx, llvm::StringRef Program,
           llvm::ArrayRef<llvm::StringRef> Args, unsigned TimeoutSeconds,
           llvm::StringRef What, llvm::StringRef Hint = DefaultToolkitHint);

/// Checks the PTX in file \p PTXPath by assembling it with ptxas for \p
/// Arch ("sm_80") into a throwaway cubin named after \p Stem in the run's
/// temporary files, with \p Flags ("-O0"); ptxas's errors are the check's,
/// named by \p What. Linked PTX is checked this way as the driver will
/// compile it, whole program for a real arch (a virtual one only parses).
llvm::Error checkPTXFile(Context &Ctx, const ToolkitPaths &Paths,
                         unsigned TimeoutSeconds, llvm::StringRef PTXPath,
                         llvm::StringRef Arch, llvm::StringRef Stem,
                         llvm::ArrayRef<llvm::StringRef> Flags,
                         llvm::StringRef What);

/// Waits until child \p Pid exits (leaving it to be reaped) or \p
/// Deadline passes; returns whether it exited, or is not this process's
/// child to wait for (the reaper says which). runProgram's time limit:
/// LLVM's relies on SIGALRM, which in a multi-threaded process may reach
/// another thread. On a pidfd (Linux 5.3 and later) it wakes the moment
/// the child ends; without one, or with \p UsePidfd false, it polls the
/// child with pauses doubling to 20 ms.
bool waitForExit(int Pid, std::chrono::steady_clock::time_point Deadline,
                 bool UsePidfd = true);

//===----------------------------------------------------------------------===//
// PTX (the NVPTX backend; value to value)
//===----------------------------------------------------------------------===//

/// Generates PTX for Targets[Index] from its optimized module, at the PTX
/// ISA version the link chose for it (LinkedProgram::PtxVersions).
/// Thread-safe: each call works in its own LLVMContext.
llvm::Expected<std::string> generatePTX(const lto::LinkedProgram &Program,
                                        llvm::ArrayRef<lto::Target> Targets,
                                        size_t Index, unsigned OptLevel);

/// Generates PTX for \p T from the bitcode of an optimized module or of a
/// partition of one. Thread-safe.
llvm::Expected<std::string>
generatePTX(llvm::StringRef Bitcode, const lto::Target &T, unsigned OptLevel);

/// The PTX that generatePTX wrote for \p From, rewritten as if for \p To:
/// its `.version` and `.target` directives become To's, nothing else
/// changes. None when the header is not the one generatePTX writes for From.
/// compileTargets uses it where generatePTX gave the same code for the
/// oldest and the newest arch of a set (docs/lto.md, "Shared PTX").
std::optional<std::string> retargetPTX(llvm::StringRef PTX,
                                       const lto::Target &From,
                                       const lto::Target &To);

//===----------------------------------------------------------------------===//
// Linking PTX (text to text)
//===----------------------------------------------------------------------===//

/// One PTX module to link: its text and its name in messages
/// ("nv_math.o(__nv_relfatbin[3])").
struct PtxModule {
  std::string Name;
  llvm::StringRef Text;
  /// Internal functions linked as if .visible: what a whole-program
  /// module (nvJitLink's PTX of LTO-IR) defines for the other modules.
  std::vector<std::string> Export = {};
  /// Module-scope statements (definitions and declarations) left out, by
  /// name: the entry that made nvJitLink keep the exported functions.
  std::vector<std::string> Drop = {};
};

struct PtxLinkResult {
  std::string PTX;
  /// What was changed beyond the merge, for -v: internal symbols renamed,
  /// DWARF sections dropped.
  std::vector<std::string> Notes;
  /// Functions and variables still .extern: declared, defined by no module
  /// (dynamic shared memory, declared by nature, is not listed).
  std::vector<std::string> Unresolved;
  /// The functions among them.
  std::vector<std::string> UnresolvedFunctions;
};

/// Links PTX modules into one, for \p TargetCpu ("sm_120"): the newest
/// .version of the inputs, `.target TargetCpu`, external symbols resolved
/// across modules (two strong definitions of one symbol are an error naming
/// both inputs; .weak gives way), colliding internal symbols renamed, every
/// use after a declaration. What it cannot handle faithfully (.alias, DWARF
/// it would have to merge, preprocessor lines) is an error or a note, never
/// a silent change. docs/codegen.md, "Linking PTX".
llvm::Expected<PtxLinkResult> linkPTX(llvm::ArrayRef<PtxModule> Modules,
                                      llvm::StringRef TargetCpu);

//===----------------------------------------------------------------------===//
// Code generation
//===----------------------------------------------------------------------===//

/// What ptxas says of one function it compiled: the bytes of registers it
/// spilled to local memory and loaded back (the cubin does not record
/// them).
struct FunctionSpills {
  std::string Name;
  uint64_t Stores = 0;
  uint64_t Loads = 0;
};

/// The option every ptxas fatlink runs for a cubin gets: a warning for
/// each function that spills, with its bytes (parsePtxasSpills). Part of
/// the cache keys: the cubin's notes record ptxas's options.
inline constexpr llvm::StringLiteral PtxasSpillFlag = "--warn-on-spills";

/// The functions ptxas --warn-on-spills output \p Log says spill, from its
/// "Registers are spilled to local memory in function 'NAME', N bytes
/// spill stores, N bytes spill loads" warnings, in the order ptxas printed
/// them. A function not named spilled nothing.
std::vector<FunctionSpills> parsePtxasSpills(llvm::StringRef Log);

/// One partition's code for one target: its relocatable cubin and what
/// ptxas said it spilled.
struct PartitionCode {
  std::string Cubin;
  std::vector<FunctionSpills> Spills;
};

/// The code of one target.
struct TargetOutput {
  std::string PTX;
  /// Empty for compute_XX targets, and where CubinFile holds the cubin.
  std::string Cubin;
  /// A target compiled in partitions: its cubin, left in the file nvlink
  /// wrote (one of the link's temporaries) and mapped, not read into
  /// memory: a large program's is its largest allocation (103 MB at 22,400
  /// kernels). Whatever reads all of it hands its pages back
  /// (releaseCubin) as it goes.
  std::shared_ptr<const MappedFile> CubinFile;
  llvm::StringRef cubin() const {
    return CubinFile ? CubinFile->bytes() : llvm::StringRef(Cubin);
  }
  /// Once Range (a part of cubin()) has been read: its pages back to the
  /// system, where the cubin is mapped.
  void releaseCubin(llvm::StringRef Range) const {
    if (CubinFile)
      CubinFile->release(Range);
  }
  /// The spills of the functions fatlink's ptxas compiled for this target,
  /// sorted by name; a kernel not listed (from a cubin nvcc compiled, or
  /// linked by nvJitLink) has unknown spills.
  std::vector<FunctionSpills> Spills;
  /// For fatbin and host-object outputs: the image the fatbin holds for
  /// this target, its entry already encoded (compressed) by the task that
  /// compiled it, in parallel with the other targets. Its Data is empty
  /// (the bytes are PTX's or Cubin's).
  packager::FatbinImage Image;
};

/// Where each partition's cubin for each target is kept between links
/// (the driver's cache); all empty: nothing is kept.
struct CodegenCache {
  /// The key of one partition's code for target T: BitcodeHash is the
  /// BLAKE3 hash of the partition's bitcode, PTXSource where the target's
  /// PTX comes from ("" when generated for it).
  std::function<std::string(const lto::Target &T,
                            llvm::ArrayRef<uint8_t> BitcodeHash,
                            llvm::StringRef PTXSource)>
      Key;
  std::function<std::optional<PartitionCode>(llvm::StringRef Key)> Lookup;
  std::function<void(llvm::StringRef Key, const PartitionCode &Code)> Store;
};

struct CodegenOptions {
  unsigned OptLevel = 3;
  unsigned Jobs = 0; ///< 0: all cores
  /// With Jobs 0: the driver joined the build's jobserver; each job (and
  /// so each ptxas and nvlink it runs) holds one of its slots while it runs.
  bool UseJobserver = false;
  /// false: PTX only, ptxas is neither run nor needed.
  bool RunPtxas = true;
  /// Partitioned code generation: when the oldest and the newest plain
  /// sm_XX target of a group get the same PTX (apart from the header), the
  /// targets between them reuse it instead of generating their own.
  bool SharePTX = true;
  /// Partitioned code generation: a target older than sm_90 compiles its
  /// small partitions in shared ptxas runs of up to 8 (one start-up instead
  /// of 8) and cuts each run's cubin back into the partitions'
  /// (splitBatchCubin). Such a target's partition cubins are
  /// canonicalCubin's whether they shared a run or not (and with this
  /// false), so neither the output nor the cache depends on it. sm_90 and
  /// newer cubins carry a module-wide .nv.compat section a run's cubin
  /// cannot divide.
  bool BatchPtxas = true;
  ToolkitPaths Paths;
  unsigned PtxasTimeout = 0; ///< seconds per ptxas or nvlink; 0: no limit
  unsigned TimeTraceGranularity = 500;
  /// Set for fatbin and host-object outputs: each target's fatbin entry is
  /// encoded with these options by the job that finishes the target.
  std::optional<packager::FatbinOptions> Package;
  CodegenCache Cache;
};

/// The partitions each of Program's optimized modules is compiled in, one
/// list per module: those it was optimized in (moved out of Program), else,
/// for an optimized module given back with --codegen-only, a split of it
/// into at most MaxPartitions (0: lto::defaultPartitions; 1: none).
llvm::Expected<std::vector<std::vector<lto::CodegenPartition>>>
planPartitions(Context &Ctx, lto::LinkedProgram &Program,
               unsigned MaxPartitions);

/// The units compileTargets compiles: each target's partitions, or 1 for
/// a target compiled whole (the progress line's total).
size_t countUnits(const lto::LinkedProgram &Program,
                  llvm::ArrayRef<lto::Target> Targets,
                  llvm::ArrayRef<std::vector<lto::CodegenPartition>> Parts);

/// Compiles every target, in parallel, into its own slot: a target whose
/// module has several partitions (Parts, from planPartitions) is compiled
/// partition by partition and linked with nvlink; the others whole.
/// Relocatable cubins of a target's arch in Inputs, and Program's device
/// libraries, are linked in by nvlink. Every target's error is reported,
/// in target order. Each partition's bitcode is freed (left empty) once
/// every target has its PTX.
llvm::Expected<std::vector<TargetOutput>>
compileTargets(Context &Ctx, const CodegenOptions &Opts,
               const lto::LinkedProgram &Program, const lto::InputSet &Inputs,
               llvm::ArrayRef<lto::Target> Targets,
               llvm::MutableArrayRef<std::vector<lto::CodegenPartition>> Parts);

/// A split link's piece (lto::splitForBuild) for Targets[I], as a
/// partitioned link compiles it: PTX from Program's one module, then
/// `ptxas -c`, giving a relocatable cubin for joinPartitions.
llvm::Expected<PartitionCode>
compilePartition(Context &Ctx, const CodegenOptions &Opts,
                 const lto::LinkedProgram &Program,
                 llvm::ArrayRef<lto::Target> Targets, size_t I,
                 unsigned PartIndex);

/// Links the relocatable cubins of a split link's pieces (paths, in
/// partition order, pieces without code left out) into target T's cubin
/// with nvlink, with the relocatable inputs of T's arch in Inputs and
/// Program's device libraries: the cubin compileTargets links.
llvm::Expected<std::string>
joinPartitions(Context &Ctx, const CodegenOptions &Opts,
               const lto::LinkedProgram &Program, const lto::InputSet &Inputs,
               const lto::Target &T, std::vector<std::string> Cubins);

/// The relocatable cubins a `ptxas -c` run over several PTX inputs (a
/// batch, \p Cubin) holds, one per input: Inputs[I] names the functions
/// (.entry and .func) input I defines. Each piece is what ptxas gives for
/// that input alone, passed through canonicalCubin. An error where the
/// batch holds something the cut does not know how to divide (module-scope
/// variables, symbols defined outside the inputs, attributes it does not
/// know): the inputs must then be compiled one by one.
llvm::Expected<std::vector<std::string>>
splitBatchCubin(llvm::StringRef Cubin,
                llvm::ArrayRef<std::vector<std::string>> Inputs);

/// The functions PTX defines (and declares), the names splitBatchCubin
/// takes, when the module may share a ptxas run: at most 512 KiB, with a
/// kernel, and nothing at module scope but functions and their tuning
/// directives. A module-scope variable or an external declaration is one
/// symbol for all of a run's inputs, which the cut does not divide; a
/// module without kernels gets a mark of its own from ptxas. Else none.
std::optional<std::vector<std::string>> sharedRunFunctions(llvm::StringRef PTX);

/// A relocatable cubin from ptxas with its string tables laid out the one
/// way splitBatchCubin lays them out (names in the order of the sections
/// and symbols that use them), so that a cubin compiled alone and one cut
/// from a batch are the same bytes. An error as splitBatchCubin's.
llvm::Expected<std::string> canonicalCubin(llvm::StringRef Cubin);

/// The fatbin image of a compiled target, its entry encoded with F. The
/// image's Data is empty: its bytes stay O's (a large cubin is not copied).
llvm::Expected<packager::FatbinImage>
encodeImage(const lto::Target &T, const TargetOutput &O,
            const packager::FatbinOptions &F);

} // namespace fatlink::codegen

#endif // FATLINK_CODEGEN_CODEGEN_H
