//===- lto/LTO.h - Whole-program device link: the public interface -------===//
//
// The device LTO engine. It takes every piece of GPU bitcode of a program
// (rustc's nvptx objects and rlibs, clang's CUDA bitcode, bitcode carried in
// host objects as LLVM OffloadBinaries), links it into one module, keeps
// only what the outside world can reach (kernels, exported symbols,
// host-visible device globals) and optimizes it as a whole: inputs in,
// optimized modules out. Code generation from those modules is codegen/'s.
//
// The stages, each a function from one plain value to the next:
//
//   readInputs       files -> InputSet (every device image, with its origin)
//   planTargets      arch names + tool limits -> Targets (done by the driver)
//   linkAndOptimize  InputSet + Targets -> LinkedProgram (one optimized
//                    module per group of targets that can share it)
//
// The NVPTX backend's pieces that code generation shares (the target
// machine, target attributes, the diagnostic collector, crash recovery) are
// declared at the end, for codegen/.
//
// Nothing here prints, exits or runs external programs: PTX, ptxas and
// nvlink are codegen/'s; writing files and packaging the driver's (linker/).
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_LTO_H
#define FATLINK_LTO_LTO_H

#include "packager/Packager.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class DiagnosticInfo;
class LLVMContext;
class Module;
class TargetMachine;
class Twine;
} // namespace llvm

namespace fatlink::lto {

/// Makes LLVM's crashes (signals) and fatal errors in fatlink's work on
/// untrusted input recoverable: they become Errors that name the input or
/// the stage, instead of ending the process. For executables, once, at
/// start-up; fuzzers and tests leave it off to see crashes.
void enableCrashRecovery();

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

/// One code generation target: `sm_90a` (a cubin, through ptxas) or
/// `compute_120` (PTX kept for the driver to JIT on newer GPUs).
struct Target {
  std::string Name;     ///< As the user wrote it: "sm_90a", "compute_120".
  std::string Cpu;      ///< The LLVM/ptxas processor name: "sm_90a".
  unsigned Sm = 0;      ///< 90 for sm_90a.
  bool IsPTX = false;   ///< compute_XX: keep PTX, do not assemble.
  unsigned PtxVersion = 0; ///< PTX ISA version times ten: 78 for 7.8.

  std::string ptxVersionString() const;
};

/// "7.8" for 78: a PTX ISA version (times ten) as PTX and messages write it.
std::string ptxVersionString(unsigned PtxVersion);

/// What the linked LLVM's NVPTX backend knows about one processor.
struct ArchInfo {
  std::string Cpu;         ///< "sm_90a"
  unsigned Sm = 0;         ///< 90
  unsigned MinPtxVersion = 0; ///< the PTX ISA the processor requires, x10
};

/// Every sm_XX processor the NVPTX backend of this LLVM supports, oldest
/// first, read from the backend's own tables, so a newer LLVM brings its new
/// arches along. MinPtxVersion is left 0: fillMinPtxVersion computes it.
llvm::Expected<std::vector<ArchInfo>> getLLVMArches();

/// Sets Arch.MinPtxVersion to the PTX ISA version the backend requires for
/// it (about a millisecond: it asks the backend).
llvm::Error fillMinPtxVersion(ArchInfo &Arch);

/// The highest PTX ISA version (x10) this LLVM can emit.
llvm::Expected<unsigned> getLLVMMaxPtxVersion();

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

/// One unit of device bitcode, and where it came from.
struct DeviceImage {
  /// For diagnostics: "a.bc", "libfoo.rlib(foo.rcgu.o)",
  /// "kern.o(.llvm.offloading[1])".
  std::string Origin;
  /// The bitcode bytes; owned by the InputSet.
  llvm::MemoryBufferRef Bitcode;
  /// The arch an OffloadBinary says the image was compiled for ("sm_80"),
  /// empty for plain bitcode files, which are arch-neutral.
  std::string Arch;
  /// Images of the same translation unit compiled for several arches (clang
  /// `--offload-arch=sm_80,sm_90`) share a Source and are alternatives: each
  /// target links the one that fits it best. An object merged by `ld -r` or
  /// `fatlink embed` holds several units, each with a Source of its own.
  unsigned Source = 0;
};

/// A kernel that survived the link, as the runtime sees it: its name and
/// the size in bytes of each parameter, in order (pointers are 8).
using KernelInfo = packager::KernelInfo;

/// Relocatable device code that nvlink links after the LTO part is
/// compiled: a relocatable cubin (clang `--offload-new-driver -fgpu-rdc`
/// without -foffload-lto; nvcc `-dc`, from its `__nv_relfatbin` fatbin), or
/// the PTX nvcc `-dc` stores beside its cubins for `code=compute_XX`, which
/// ptxas assembles relocatable for a target no cubin of its unit fits. Its
/// symbols bound the LTO part: what it defines is not undefined there, what
/// it references must stay visible.
struct DeviceObject {
  std::string Origin;
  /// The object or archive member it came from, for messages: "a.o",
  /// "libfoo.a(bar.o)".
  std::string Container;
  llvm::MemoryBufferRef Data; ///< owned by the InputSet
  /// "sm_80" for a cubin; "compute_80" for PTX (Data is its text);
  /// "lto_80" for nvcc LTO-IR (Data is the whole object, for nvJitLink:
  /// only it can read the entry).
  std::string Arch;
  bool IsPTX = false;
  /// nvcc LTO-IR: linked by nvJitLink, never by nvlink. Its Defined,
  /// Undefined and Kernels are what nvJitLink's PTX of it alone shows
  /// (readLtoIrSymbols): the device functions it defines but does not use
  /// itself are not among them.
  bool IsLTOIR = false;
  /// LTO-IR only: the code version of its fatbin entry header (nvcc 13.0
  /// writes 1.65), which bounds the nvJitLink that can read it.
  unsigned LtoIrMajor = 0, LtoIrMinor = 0;
  bool FromNvcc = false; ///< nvcc -dc code (else clang's)
  /// The translation unit: the cubins of one unit (one per arch) share it,
  /// as DeviceImage::Source; every unit needs a cubin of each target's arch
  /// (or, from nvcc, PTX of an arch no newer than the target's).
  unsigned Source = 0;
  std::vector<std::string> Defined;
  std::vector<std::string> Undefined;
  /// References that may stay undefined: weak ones and `extern __shared__`
  /// arrays (packager::ModuleSymbols::OptionalUndefined). Kept from
  /// internalization where the bitcode defines them, never reported.
  std::vector<std::string> OptionalUndefined;
  /// The weak ones among Defined (C++ templates and inline functions).
  std::vector<std::string> Weak;
  /// Kernels it defines (entry functions, local ones included) and their
  /// parameters, by name.
  std::vector<KernelInfo> Kernels;
};

/// A static library of nvcc relocatable device code that nvlink links as it
/// is: CUDA's device runtime, libcudadevrt.a (relocatable cubins for several
/// arches in each member's `__nv_relfatbin` fatbin), which defines what
/// kernels that launch kernels call (`__cudaCDP2LaunchDevice`, ...). Its
/// definitions satisfy the LTO part's references; the driver gives the
/// archive to nvlink with every cubin that uses it.
struct DeviceLibrary {
  std::string Path;                 ///< the archive, as nvlink is to read it
  std::vector<std::string> Arches;  ///< its cubins' arches: "sm_75", ...
  std::vector<std::string> Defined; ///< global symbols its cubins define
};

/// Reads a device library (see DeviceLibrary) from \p Path: the arches of its
/// relocatable cubins and the symbols they define.
llvm::Expected<DeviceLibrary> readDeviceLibrary(llvm::StringRef Path);

/// An object with nvcc device code that fatlink skipped (see
/// InputSet::NvccObjects).
struct NvccObject {
  std::string Origin;         ///< "libfoo.a(bar.o)"
  llvm::MemoryBufferRef Data; ///< the whole object; owned by the InputSet
};

/// Everything read from the command line's inputs. Owns the file contents.
class InputSet {
public:
  std::vector<DeviceImage> Images;
  std::vector<DeviceObject> Objects;
  /// Device libraries named as inputs (libcudadevrt.a).
  std::vector<DeviceLibrary> Libraries;
  /// Objects and archive members with nvcc device code (`__nv_relfatbin`,
  /// `.nv_fatbin`), which fatlink does not read: an undefined symbol that
  /// one of them defines is reported as such.
  std::vector<NvccObject> NvccObjects;
  /// Paths of the files read, in command-line order (for the cache key and
  /// for `-v`).
  std::vector<std::string> Files;
  /// Notes about inputs that were skipped (non-bitcode archive members,
  /// objects without device code), one line each, for `-v`.
  std::vector<std::string> Skipped;

  void addBuffer(std::unique_ptr<llvm::MemoryBuffer> MB);

  /// Hands the pages of the input files it maps back to the system: they
  /// are clean, and a later read faults them in from the file again. A
  /// large link calls it once its partitions are linked, so that the files'
  /// bytes (as large as the program's device code, and more with host code)
  /// are not held through optimization (intake::releasePages). The set's
  /// contents are unchanged.
  void releaseMappedPages() const;
  /// The same for the one file \p Within (an image's bytes) lies in, if
  /// the set maps it; nothing otherwise (a heap copy's pages hold the only
  /// copy). The whole file: reading an image faults in pages around it
  /// too (the file's other sections, its neighbours' ends). A
  /// partition-first link hands each image's file back as soon as the
  /// image is summarized, and again once a partition has linked what it
  /// takes from it, so that the files' bytes are never all resident.
  void releaseMappedPages(llvm::StringRef Within) const;

private:
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> Buffers;
  /// The mapped buffers by address (begin -> whole buffer), to find the
  /// file a range lies in.
  std::map<const char *, llvm::StringRef> Mapped;
};

/// The number of errors one phase reports before it stops listing them
/// (lld's default); `--error-limit` changes it, 0 lists all.
constexpr unsigned DefaultErrorLimit = 20;

enum class InputMode {
  /// A device link: every input must carry device code.
  Device,
  /// The inputs of a host link: files without device code (host objects,
  /// shared libraries, linker scripts, host bitcode, missing files, which
  /// the host linker reports) are skipped, not errors.
  HostLink,
};

/// Reads device code from files: bitcode (.bc, rustc's .rcgu.o), ar archives
/// (rlibs, static libraries: every bitcode member; `lib.rmeta` and other
/// non-bitcode members skipped) and ELF objects carrying LLVM OffloadBinary
/// images (`.llvm.offloading`). Every image is checked before LLVM parses it:
/// it must be bitcode of an LLVM no newer than this one, for an nvptx64
/// triple. Reports every bad input, not just the first.
llvm::Expected<InputSet> readInputs(llvm::ArrayRef<std::string> Paths,
                                    InputMode Mode = InputMode::Device,
                                    unsigned ErrorLimit = DefaultErrorLimit);

/// A digest of a bitcode image that leaves out the function attributes
/// naming its arch ("target-cpu", "target-features"), which the link
/// overwrites anyway: clang's per-arch images of one translation unit with
/// equal digests are the same program for every target, and the link
/// takes one of them for all (docs/lto.md, "Per-arch images"). Read record
/// by record with LLVM's bitstream reader, never parsed into IR
/// (lto/ArchDigest.cpp). None for bitcode the walk cannot vouch for
/// (malformed, or holding an encoding or offset it does not know), whose
/// image is then compared with nothing.
std::optional<llvm::BLAKE3Result<32>>
archNeutralDigest(llvm::MemoryBufferRef Bitcode);

/// Fills \p O's Defined, Undefined and Kernels from the PTX of its code
/// (nvcc's PTX directives: `.visible .entry`, `.extern .func`, ...).
void readPtxSymbols(llvm::StringRef Ptx, DeviceObject &O);

/// The relocatable device code target \p T links, one object per
/// translation unit: the unit's cubin of T's exact arch, else (nvcc only)
/// its PTX of the newest arch no newer than T's, which ptxas assembles for
/// T (nvcc LTO-IR of such an arch before both). Units with neither are left
/// out: \p Missing (if given) gets one of their objects each. A PTX target
/// (compute_XX) takes no cubin, only nvcc's PTX or LTO-IR: codegen links
/// their PTX into its one module.
std::vector<const DeviceObject *>
objectsForTarget(const InputSet &Inputs, const Target &T,
                 std::vector<const DeviceObject *> *Missing = nullptr);


//===----------------------------------------------------------------------===//
// Link and optimize
//===----------------------------------------------------------------------===//

/// How a link with partitions gets its partitions' IR (docs/lto.md,
/// "Memory"): cut from the whole program's linked module, or linked
/// partition by partition from the inputs, each read alone first and
/// summarized, so that no step holds the whole program's IR.
enum class PartitionFirstMode {
  Auto,   ///< by the inputs' size: from PartitionFirstFromBytes of bitcode
  Always, ///< wherever the link has partitions and the inputs allow it
  Never,
};

/// Auto links in partitions from this much device bitcode in the inputs.
inline constexpr uint64_t PartitionFirstFromBytes = 4ull << 20;

/// The most instructions (before O3) a default partition holds once the
/// program has 32 partitions: a larger program gets one partition per this
/// many (about 1.5 times a partition of the 22,400-kernel benchmark).
constexpr size_t PartitionInstructions = 1 << 17;

struct LinkOptions {
  unsigned OptLevel = 3; ///< 0..3
  /// The inputs are already linked and optimized (a `-o prog.bc` output of
  /// an earlier run): skip the IR pipeline, keep OptLevel for codegen. This
  /// is how a build system splits the device link into one optimization
  /// action and one code generation action per target.
  bool CodegenOnly = false;
  /// Symbols that must stay visible, besides kernels and host-visible
  /// globals (rustc's `--export-symbol`).
  std::vector<std::string> ExportSymbols;
  /// Symbols whose declarations may disagree with their definition (the
  /// escape hatch of the signature check: `--allow-abi-mismatch`,
  /// docs/abi.md), by their link (mangled) name.
  std::vector<std::string> AllowAbiMismatch;
  /// The highest PTX ISA version (x10) the tools after code generation
  /// accept (ptxas), and who says so, for messages ("ptxas from CUDA
  /// 13.0"). 0: no limit. An input compiled for a newer PTX ISA than this
  /// is an error before any work is done.
  unsigned MaxPtxVersion = 0;
  std::string MaxPtxVersionBy;
  /// The targets' PTX ISA versions were chosen by the user (--ptx-version):
  /// keep them even where an input was compiled for a newer one.
  bool KeepPtxVersion = false;
  /// Errors listed per phase before the rest are only counted (0: all).
  unsigned ErrorLimit = DefaultErrorLimit;
  /// libdevice.10.bc; linked lazily when the program calls `__nv_*`.
  std::string LibdevicePath;
  /// CUDA's device runtime (<cuda>/lib64/libcudadevrt.a), read only when
  /// the program references symbols that no input defines and no device
  /// library was named as an input. May name a missing file: references
  /// then stay undefined, with a note on the device runtime.
  std::string DeviceRuntimePath;
  /// Answers to `__nvvm_reflect` queries besides `__CUDA_ARCH`.
  bool FlushDenormals = false; ///< __CUDA_FTZ
  bool PreciseSqrt = true;     ///< __CUDA_PREC_SQRT
  bool PreciseDiv = true;      ///< __CUDA_PREC_DIV
  /// When set, intermediate modules are written here as `<stage>.bc`.
  std::string SaveTempsPrefix;
  /// Threads for work that splits by image or partition (0: one per
  /// core). The result does not depend on it.
  unsigned Jobs = 0;
  /// With Jobs 0: the driver joined the build's jobserver, and each task
  /// runs holding one of its job slots (threadStrategy).
  bool UseJobserver = false;
  /// With the time profiler on: what its worker threads leave out, in
  /// microseconds (as the driver's --time-trace-granularity).
  unsigned TimeTraceGranularity = 500;
  /// Optimize (and then compile) in partitions: 1 = no, N = up to N, 0 =
  /// defaultPartitions(kernels). Before O3 the module is split so that no
  /// partition references another's definitions (local functions are
  /// copied where needed); each partition runs O3 on its own, in parallel,
  /// and its result is memoized (MemoLookup) by its IR.
  unsigned Partitions = 1;
  /// With Partitions 0: the program's instructions (before O3) per
  /// partition beyond 32 partitions (defaultPartitions).
  size_t PartitionInstructions = lto::PartitionInstructions;
  /// With partitions: how their IR is made. The result's bytes differ
  /// between the two ways (names and order within a partition), not its
  /// behaviour; both are deterministic.
  PartitionFirstMode PartitionFirst = PartitionFirstMode::Auto;
  /// Told why a link that could go in partitions went whole (-v).
  std::function<void(const std::string &)> Verbose;
  /// With partitions: also link the optimized partitions back into one
  /// module (OptimizedModule::Bitcode), for PTX targets and -o prog.bc.
  bool NeedWholeModule = true;
  /// An optional memo for facts computed from one image alone (the digest
  /// that tells whether per-arch images are the same program), so that a
  /// re-link does not recompute them for images that did not change. Keys
  /// name the fact, LLVM's version and a hash of the image. Called from
  /// several threads.
  std::function<std::optional<std::string>(llvm::StringRef Key)> MemoLookup;
  std::function<void(llvm::StringRef Key, llvm::StringRef Value)> MemoStore;
  /// Optional: writes Bytes to a new temporary file (named after Name) and
  /// returns its path. With it, a partition-first link keeps each
  /// partition's bitcode in such a file, not in memory, while it waits:
  /// from its link to its O3, and from its O3 to its code generation
  /// (CodegenPartition::File). Called from several threads.
  std::function<llvm::Expected<std::string>(llvm::StringRef Name,
                                            llvm::StringRef Bytes)>
      Spill;
};

/// One optimized module shared by a group of targets. Held as bitcode so that
/// every code generation thread can load a private copy into its own
/// LLVMContext.
/// A piece of an optimized module that compiles on its own: a set of
/// connected components of its reference graph (see Split.cpp).
struct CodegenPartition {
  /// Empty while the bitcode waits in File.
  std::string Bitcode;
  /// Where the bitcode waits between stages (LinkOptions::Spill); empty:
  /// in Bitcode.
  std::string File;
  std::vector<std::string> Kernels; ///< in module order
  size_t Instructions = 0;
};

/// P's bitcode: Bitcode itself, or File read back (mapped where large, so
/// its pages go when the buffer does).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
loadBitcode(const CodegenPartition &P);

struct OptimizedModule {
  std::vector<size_t> TargetIndices; ///< Indices into the target list.
  /// The whole module; empty when it was optimized in partitions and
  /// LinkOptions::NeedWholeModule was off.
  std::string Bitcode;
  /// When optimized in partitions (LinkOptions::Partitions): each one,
  /// optimized, ready for code generation.
  std::vector<CodegenPartition> Parts;
};

/// What one input contributed: the arch it was compiled for and the
/// targets that linked it (for `-v` and `--json`).
struct InputUse {
  std::string Origin;
  /// "sm_75": the arch of an OffloadBinary image, else the newest
  /// `target-cpu` of its functions; empty if none says. For a translation
  /// unit compiled for several arches, all of them ("sm_75, sm_90"), since
  /// one image may serve the targets of another that is equal to it.
  std::string CompiledFor;
  std::vector<std::string> Targets; ///< target names, in target order
};

struct LinkedProgram {
  std::vector<OptimizedModule> Modules;
  /// Each input image that some target linked, in input order.
  std::vector<InputUse> Inputs;
  /// Findings that do not stop the link, for the driver to print.
  std::vector<std::string> Warnings;
  /// The PTX ISA version (x10) each target is compiled for, by target
  /// index: its own (Target::PtxVersion) or, when higher, the newest any of
  /// its inputs was compiled for (their `+ptxNN` feature), so that inline
  /// PTX written for that ISA assembles. The driver copies them into its
  /// targets before code generation.
  std::vector<unsigned> PtxVersions;
  /// Kernels of the program, sorted by name.
  std::vector<KernelInfo> Kernels;
  /// Host-visible device globals, sorted by name.
  std::vector<std::string> Globals;
  /// Libdevice functions that were linked in, sorted (for `-v`).
  std::vector<std::string> LibdeviceFunctions;
  /// Device libraries the program uses (CUDA's device runtime): nvlink links
  /// each into every cubin. Empty for most programs.
  std::vector<DeviceLibrary> Libraries;
  /// The symbols the program takes from them, sorted.
  std::vector<std::string> LibrarySymbols;
};

/// The thread pool strategy for \p Jobs threads (0: one per core), or,
/// with Jobs 0 and \p UseJobserver, as many as the jobserver grants.
llvm::ThreadPoolStrategy threadStrategy(unsigned Jobs, bool UseJobserver);

/// Gives the memory freed so far back to the system. glibc keeps a freed
/// heap for the thread that allocated it, so without this the linked
/// module's pages stay resident while the partitions' threads, each in its
/// arena, allocate their own. A no-op where the C library is not glibc.
void releaseFreedMemory();

/// A partition of at least this much bitcode gives back what its O3 or its
/// code generation freed as soon as it is done (releaseFreedMemory): else
/// each thread's arena keeps the peak of the largest partition it ran, and
/// the threads' peaks add up beside the rest of the link. Smaller ones do
/// not: the call costs more than they would hold.
constexpr size_t ReleaseAfterBytes = 256 << 10;

/// Links every image, resolves symbols as a linker would (strong, weak,
/// linkonce and comdat definitions; duplicates and undefined references
/// reported with the inputs that define or use them; weak references and
/// `extern __shared__` declarations may stay undefined), links libdevice
/// lazily, internalizes all but the program's interface and optimizes.
/// Targets that can share one optimized module (same inputs, same answers to
/// `__nvvm_reflect`) share it.
llvm::Expected<LinkedProgram> linkAndOptimize(const InputSet &Inputs,
                                              llvm::ArrayRef<Target> Targets,
                                              const LinkOptions &Opts);

/// The kernels of an optimized module (a `-o prog.bc` output), sorted by
/// name, for packaging its code separately.
llvm::Expected<std::vector<KernelInfo>> readKernels(llvm::MemoryBufferRef Bitcode);

/// Bitcode with the link's kernel table (origins and manifests) attached
/// as named metadata, so that readKernels, `fatlink package --kernels-from`
/// and a --codegen-only link of it describe the kernels as the one-step
/// link does (`-o prog.bc`).
llvm::Expected<std::string> attachKernelTable(llvm::StringRef Bitcode,
                                              llvm::ArrayRef<KernelInfo> Kernels);

/// The partition count for a program of \p Kernels kernels and \p
/// Instructions instructions before O3: one per 8 kernels, at most 32 (one,
/// no split, below 16 kernels), and beyond that one per
/// PartitionInstructions, so that a partition's IR, and the memory its
/// optimization, code generation and ptxas take, stops growing with the
/// program.
unsigned defaultPartitions(size_t Kernels, size_t Instructions = 0,
                           size_t PerPartition = PartitionInstructions);

/// Splits an optimized module into at most \p MaxPartitions partitions that
/// share no definition and reference nothing across (so their relocatable
/// cubins link into the same program). Which partition a component lands in
/// depends only on its own names, so editing one unit changes only the
/// partitions its code reaches. With one partition, its bitcode is the
/// input's.
llvm::Expected<std::vector<CodegenPartition>>
splitForCodegen(llvm::StringRef Bitcode, unsigned MaxPartitions);

/// What a partition file of a split link (`--split=N`) says of itself:
/// named metadata `fatlink.partition` = !{i32 Index, i32 Count, i1 Whole}.
struct PartitionTag {
  unsigned Index = 0;
  unsigned Count = 0;
  /// At most one of the Count partitions has anything in it, and this
  /// file holds the whole module: it is compiled whole, as a link with
  /// --partitions=Count compiles it.
  bool Whole = false;
  /// No definitions: nothing to compile (a bucket no component hashed to).
  bool Empty = false;
};

/// The split of splitForCodegen for a build system that runs each piece as
/// an action of its own: exactly \p Count modules, one per bucket, in
/// bucket order, each tagged (PartitionTag); a bucket nothing hashed to is
/// a module without definitions. Where splitForCodegen would not split
/// (Count 1, or every component in one bucket), the non-empty bucket holds
/// the whole module. The kernel table (`fatlink.kernels`) is left out of
/// the pieces, so that an edit that changes one kernel's entry changes no
/// other piece.
llvm::Expected<std::vector<std::string>>
splitForBuild(llvm::StringRef Bitcode, unsigned Count);

/// The tag of a module written by splitForBuild; none for other modules.
std::optional<PartitionTag> readPartitionTag(const llvm::Module &M);

/// The same, read from a bitcode file: none for other modules, and for
/// bitcode that does not read (the link reads it again, and says why).
std::optional<PartitionTag> readPartitionTag(llvm::MemoryBufferRef Bitcode);

/// What each of the \p Count buckets of splitForBuild holds: its kernels
/// (sorted), or none and Empty. For checking the pieces a join is given.
struct BucketContents {
  std::vector<std::string> Kernels;
  bool Empty = true;
};
llvm::Expected<std::vector<BucketContents>>
bucketContents(llvm::StringRef Bitcode, unsigned Count);

//===----------------------------------------------------------------------===//
// The NVPTX backend, shared with code generation (codegen/)
//===----------------------------------------------------------------------===//

/// An NVPTX TargetMachine for T (processor T.Cpu, PTX ISA T.PtxVersion).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const Target &T, unsigned OptLevel);

/// Sets every defined function's target-cpu and target-features to T's.
void setTargetAttributes(llvm::Module &M, const Target &T);

/// Records LLVM's error diagnostics for one LLVMContext, instead of letting
/// LLVM print them.
class DiagnosticCollector {
public:
  void install(llvm::LLVMContext &Ctx);
  /// The collected errors, prefixed with Context; success if none.
  llvm::Error takeError(const llvm::Twine &Context);

private:
  void handle(const llvm::DiagnosticInfo &DI);
  std::vector<std::string> Errors;
};

/// Runs Fn under LLVM's crash recovery (when enableCrashRecovery armed it):
/// a crash or a fatal LLVM error inside becomes an Error, "LLVM crashed
/// <What> (Segmentation fault)" or "LLVM failed <What>: <reason>"; What is
/// a phrase such as "reading it" or "optimizing for sm_80". For work on
/// the linked program (every input read and verified), OnProgram adds what
/// the user can do: find the input by halves, report it.
llvm::Error runRecoverably(llvm::function_ref<llvm::Error()> Fn,
                           const llvm::Twine &What, bool OnProgram = false);

/// Parses bitcode this link wrote itself (What: "the optimized module for
/// sm_80"). LLVM refusing it means its writer wrote, from an input its
/// reader took without an error, what its reader refuses: the error says
/// so, where LLVM's alone names a record and no file.
llvm::Expected<std::unique_ptr<llvm::Module>>
readOwnBitcode(llvm::MemoryBufferRef MB, llvm::LLVMContext &Ctx,
               const llvm::Twine &What);

} // namespace fatlink::lto

#endif // FATLINK_LTO_LTO_H
