//===- linker/DeviceBuild.h - The device link as a reusable step ---------===//
//
// Internal to the drivers (linker/, hostlink/). The part of `fatlink
// device-link` that the host-link wrappers (`fatlink cc`, `fatlink llbc`)
// reuse: from device images and a configuration to per-target code, a
// fatbin and a host object, in memory. Writing files is left to each
// command.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_DEVICEBUILD_H
#define FATLINK_LINKER_DEVICEBUILD_H

#include "codegen/Codegen.h"
#include "linker/Context.h"
#include "linker/Targets.h"
#include "lto/LTO.h"
#include "packager/Packager.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace fatlink {

enum class OutputKind {
  File,       ///< one .cubin or .ptx
  Directory,  ///< <target>.cubin / <target>.ptx
  Fatbin,     ///< every target in one fatbin
  HostObject, ///< the fatbin in a host ELF object
  Bitcode,    ///< the optimized module, for a later --codegen-only run
};

/// The cache's default limits: a scan at most every 20 minutes removes
/// entries unused for a week and the least recently used beyond 2 GiB (and
/// beyond 75 % of the free space, LLVM's default).
constexpr const char *DefaultCachePolicy =
    "prune_interval=20m:prune_after=168h:cache_size_bytes=2g";

struct DeviceLinkConfig {
  std::vector<std::string> Inputs;
  std::string Output;
  OutputKind OutKind = OutputKind::Directory;
  std::vector<std::string> ArchLists;
  std::optional<unsigned> PtxVersion;
  /// How messages name the settings behind ArchLists, PtxVersion,
  /// MinDriver and Paths.CudaPath: empty for device-link's options
  /// (Targets.h).
  TargetSettingNames Names;
  /// The oldest NVIDIA driver the program must load on (--min-driver,
  /// named by Names.MinDriver): besides the compression it picks (Fatbin),
  /// every PTX target's PTX ISA must be one it JIT-compiles
  /// (checkMinDriver, before any work and again wherever the link raises a
  /// target's PTX ISA).
  std::optional<DriverVersion> MinDriver;
  lto::LinkOptions Link;
  unsigned Jobs = 0; // 0: all cores
  bool EmitPTX = false;
  bool ListTargets = false;
  std::string JsonPath;
  std::string TimeTracePath;
  unsigned TimeTraceGranularity = 500;
  packager::FatbinOptions Fatbin;
  packager::HostArch HostArch = packager::HostArch::X86_64;
  codegen::ToolkitPaths Paths;
  unsigned PtxasTimeout = 0;
  /// false: PTX only, ptxas is neither run nor needed (rustc's llbc
  /// interface asks for one PTX file, as llvm-bitcode-linker writes it).
  bool RunPtxas = true;
  /// Whoever chose -o, when it is not the user (rustc's llbc line: "rustc's
  /// -o"): a one-file output with several targets then gets advice that
  /// does not ask for another -o alone.
  std::string OutputChosenBy;
  /// Where finished device links, and each partition's code, are kept and
  /// reused (linker/Cache.h); empty: no cache.
  std::string CacheDir;
  /// Its size and age limits, in llvm::parseCachePruningPolicy's syntax
  /// (checked when the options are read).
  std::string CachePolicy = DefaultCachePolicy;
  /// Code generation partitions per optimized module (0:
  /// lto::defaultPartitions, by kernels and size; 1: no split).
  unsigned Partitions = 0;
  /// Partitioned code generation: when the oldest and the newest plain
  /// sm_XX target of a group get the same PTX (apart from the header), the
  /// targets between them reuse it instead of generating their own.
  bool SharePTX = true;
  /// Partitioned code generation: small partitions of a target that
  /// batches (codegen::CodegenOptions::BatchPtxas) share ptxas runs.
  bool BatchPtxas = true;
  /// A linked program without kernels is the caller's error (fatlink cc),
  /// not a warning (device-link).
  bool RequireKernels = false;
  /// Warn about each kernel that spills registers, per target (from ptxas
  /// -v; the output does not change, so neither does the cache key).
  bool WarnSpills = false;
  /// --split=N: write the input module as N partition files (0: no).
  unsigned Split = 0;
  /// --join: the partitions' cubins, in partition order.
  std::vector<std::string> Join;
  /// Set when the input is one partition file of a split (found by
  /// runDeviceLink): it is compiled as --partitions=Count would.
  std::optional<lto::PartitionTag> Piece;
};

/// The code of one target (codegen/).
using codegen::TargetOutput;

/// Everything one device link produced.
struct DeviceBuild {
  std::vector<lto::Target> Targets;
  lto::LinkedProgram Program;
  std::vector<TargetOutput> Outputs; ///< one per target
  std::string Fatbin; ///< for Fatbin and HostObject outputs
  std::string Object; ///< for HostObject outputs
};

/// What LLVM and the installed ptxas support (LLVM alone when C.RunPtxas is
/// off: then no ptxas is needed), with the PTX ISA version of every arch
/// planning C's targets reads (namedCpus; all of them for --list-targets).
llvm::Expected<ToolFacts> probeTools(Context &Ctx, const DeviceLinkConfig &C);

/// Links and optimizes the images for Targets (from planTargets with
/// Facts), compiles every target (in parallel) and, for Fatbin and
/// HostObject outputs, packages them. A target's PTX ISA version may rise
/// to what its inputs were compiled for (DeviceBuild::Targets has the
/// final ones).
llvm::Expected<DeviceBuild> buildDevice(Context &Ctx,
                                        const DeviceLinkConfig &C,
                                        const ToolFacts &Facts,
                                        std::vector<lto::Target> Targets,
                                        const lto::InputSet &Inputs);

/// Asks the tools what they support; called only when a link must be built.
using ProbeFn = llvm::function_ref<llvm::Expected<ToolFacts>()>;

/// Checks the caller's outputs against the planned targets (a .cubin for
/// one sm_XX target, ...).
using CheckTargetsFn =
    llvm::function_ref<llvm::Error(llvm::ArrayRef<lto::Target>)>;

/// buildDevice behind the cache (when C.CacheDir is set): on a hit nothing
/// runs, not even the tool probe; on a miss the result is stored. A miss
/// completes Inputs: nvcc LTO-IR objects get their symbols (from
/// nvJitLink), which only a build needs. CheckTargets, if given, runs
/// right after the targets are planned (or read from the cache), before
/// any work: its error ends the link, and nothing is stored. While the
/// intermediates are kept (Ctx.Temps saving), the cache is left alone:
/// the link runs whole and makes them all.
llvm::Expected<DeviceBuild> buildDeviceCached(Context &Ctx,
                                              const DeviceLinkConfig &C,
                                              lto::InputSet &Inputs,
                                              ProbeFn Probe,
                                              CheckTargetsFn CheckTargets = {});

/// The whole device link: reads C.Inputs, builds (through the cache), and
/// writes C.Output (and the --json summary): every file or none. With
/// Pending, the files are written but left there uncommitted, for the
/// caller to add its own (the time trace) and commit them all.
llvm::Error runDeviceLink(Context &Ctx, const DeviceLinkConfig &C,
                          ProbeFn Probe,
                          std::vector<StagedFile> *Pending = nullptr);

/// Runs Link, which stages the outputs in Pending, then commits them
/// together with C.TimeTracePath's Chrome trace of it (when set): every
/// file or none. A failed link commits nothing but its trace; a link whose
/// outputs name an input, or each other, is refused before it starts, and
/// writes no trace.
void runTracedAndCommit(
    Context &Ctx, const DeviceLinkConfig &C,
    llvm::function_ref<llvm::Error(std::vector<StagedFile> &)> Link);

/// A dry run (the wrappers' dry-run setting): prints on Ctx.Out what a
/// link of Inputs under C would do (the device inputs, the planned targets,
/// the ptxas commands, the packaging and the cache entry), after the checks
/// a link makes before any work (the targets, --min-driver), and does none
/// of it.
llvm::Error printDevicePlan(Context &Ctx, const DeviceLinkConfig &C,
                            const lto::InputSet &Inputs);

/// A split link (linker/SplitLink.cpp; docs/lto.md, "Partitions as build
/// actions"). splitModule: --split=N, the files to write (<dir>/part-K.bc
/// and their bytes). pieceTag: the tag of the input when it is one piece of
/// a split (none for any other input). checkSplitTarget: a piece or a join
/// is for one sm_XX target and a .cubin (What names it). compileSplitLink:
/// after the link steps, a piece's relocatable cubin or the join's cubin,
/// into B.Outputs.
llvm::Expected<std::vector<std::pair<std::string, std::string>>>
splitModule(const DeviceLinkConfig &C);
std::optional<lto::PartitionTag> pieceTag(const DeviceLinkConfig &C);
llvm::Error checkSplitTarget(const DeviceLinkConfig &C,
                             llvm::ArrayRef<lto::Target> Targets,
                             llvm::StringRef What);
llvm::Error compileSplitLink(Context &Ctx, const DeviceLinkConfig &C,
                             const codegen::CodegenOptions &Opts,
                             DeviceBuild &B, const lto::InputSet &Inputs);

/// Parses a compression setting: none, zstd, zstd-N. Name is the option or
/// setting, for the message.
llvm::Expected<packager::FatbinOptions>
parseCompression(llvm::StringRef Name, llvm::StringRef Value);

/// The oldest NVIDIA driver that reads zstd-compressed fatbin entries.
constexpr unsigned MinZstdDriver = 550;

/// An option or setting as given: its name (for messages) and value.
struct NamedValue {
  std::string Name;
  std::string Value;
};

/// The fatbin options for --compress and --min-driver (either may be
/// absent): the best compression the oldest driver named reads. zstd
/// (the default) needs R550; before that, entries are stored uncompressed
/// (fatlink writes no LZ4). A compression the driver cannot read is an
/// error naming both.
llvm::Expected<packager::FatbinOptions>
chooseCompression(const std::optional<NamedValue> &Compress,
                  const std::optional<NamedValue> &MinDriver);

/// Joins the GNU make jobserver that MAKEFLAGS or CARGO_MAKEFLAGS offers
/// (--jobserver-auth=fifo:PATH or R,W), once per process; whether one was
/// joined. Says with -v what it found. The thread pools then take their
/// -j from it (lto::LinkOptions::UseJobserver,
/// codegen::CodegenOptions::UseJobserver). docs/lto.md, "Jobserver".
bool joinJobserver(Context &Ctx);

/// The host triple for an arch name ("aarch64"), or this machine's for "".
std::string hostTriple(llvm::StringRef Arch);

} // namespace fatlink

#endif // FATLINK_LINKER_DEVICEBUILD_H
