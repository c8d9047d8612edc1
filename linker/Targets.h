//===- linker/Targets.h - From --arch to code generation targets ---------===//
//
// Internal to linker/. Turns the user's target list into lto::Targets,
// refusing up front any target the installed LLVM or ptxas cannot serve,
// with the reason and what would serve it. Pure: the facts about the tools
// are passed in, so the rules are unit-tested without running them.
//
// Rules (docs/lto.md, "Targets"):
//   - sm_XX[a|f] makes a cubin, compute_XX[a|f] keeps PTX for the driver's JIT;
//   - presets: `all-major` (the first sm of each major generation both tools
//     support, plus compute_ PTX of the newest plain arch) and `all` (every
//     plain sm both support, plus that PTX);
//   - the PTX ISA version of a target is the oldest its arch allows (widest
//     driver support), or --ptx-version, and never above what ptxas accepts;
//   - with --min-driver, a PTX target whose PTX ISA that driver cannot
//     JIT-compile is refused (checkMinDriver), from the runtime's table of
//     which driver first loads each PTX ISA (runtime/lib/PtxReleases.def),
//     unless the driver knows no GPU the PTX runs on (one too old for the
//     oldest PTX ISA of its arch). Cubins load on any driver that knows
//     their arch: not checked.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_TARGETS_H
#define FATLINK_LINKER_TARGETS_H

#include "lto/LTO.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace fatlink {

struct ToolFacts {
  unsigned LLVMMajor = 0;
  /// Each with the PTX ISA it requires, or 0 where probeTools has not
  /// worked it out (it does for namedCpus, or for all): allTargets and
  /// the presets leave those out, and planning one is a bug.
  std::vector<lto::ArchInfo> LLVMArches;
  unsigned LLVMMaxPtx = 0;
  std::string PtxasRelease; ///< "13.0"
  std::vector<std::string> PtxasArches;
  unsigned PtxasMaxPtx = 0;
};

/// How messages name the settings behind the targets. Empty: `fatlink
/// device-link`'s own options, which the messages name as they always
/// have (--arch, --ptx-version, --cuda-path, --min-driver). The wrappers
/// (`fatlink cc`, `fatlink llbc`) put there the setting the user set and where
/// (Settings::nameOf: "FATLINK_ARCH", "--fatlink-arch", "arch at f.conf:3"),
/// so that a message names what to change.
struct TargetSettingNames {
  std::string Arch;
  std::string PtxVersion;
  std::string CudaPath;
  std::string MinDriver;
};

/// Parses "7.8" into 78.
std::optional<unsigned> parsePtxVersion(llvm::StringRef S);

/// Targets from comma-separated lists, in the order given, duplicates
/// dropped. Every problem is reported, not only the first.
llvm::Expected<std::vector<lto::Target>>
planTargets(llvm::ArrayRef<std::string> Lists, const ToolFacts &Facts,
            std::optional<unsigned> PtxVersion,
            const TargetSettingNames &From = {});

/// The processors (sm_XX[a|f]) of the targets \p Lists name, in order,
/// each once: the arches whose PTX ISA planning them reads. None where a
/// list names a preset, or a target LLVM or ptxas does not know, whose
/// message names what they support: those read every arch's.
std::optional<std::vector<std::string>>
namedCpus(llvm::ArrayRef<std::string> Lists, const ToolFacts &Facts);

/// Every target both tools support ("sm_75", ..., "compute_121f"), in
/// planning order, for --list-targets.
std::vector<lto::Target> allTargets(const ToolFacts &Facts);

/// The target names a preset ("all", "all-major") stands for on this
/// machine; none if \p Name is not a preset.
std::optional<std::vector<std::string>>
expandPreset(llvm::StringRef Name, const ToolFacts &Facts);

/// An NVIDIA driver version, as --min-driver takes one: a branch ("535",
/// "R535") or a release ("550.54.15"); not a CUDA version.
struct DriverVersion {
  std::string Given;                     ///< as written: "R535"
  llvm::SmallVector<unsigned, 3> Fields; ///< {535}, {550, 54, 15}
};

/// Parses a driver version; none unless the branch is 100 to 9999 and
/// every further field is digits.
std::optional<DriverVersion> parseDriverVersion(llvm::StringRef V);

/// What set a target's PTX ISA version, for what to do about it.
enum class PtxIsaSource {
  Plan,   ///< its arch's oldest, or --ptx-version (planTargets)
  Inputs, ///< raised to the newest its bitcode inputs were compiled for
  Nvcc,   ///< raised to the `.version` of nvcc's PTX linked into it
};

/// Refuses each PTX target of \p Targets whose PTX ISA a driver as old as
/// \p MinDriver cannot JIT-compile, or whose PTX ISA the table
/// (runtime/lib/PtxReleases.def) does not know; every one is reported,
/// naming the target, its PTX ISA, the CUDA release and Linux driver it
/// needs, and what to do. A branch alone ("580") stands for each of its
/// releases. \p Lists are the target lists the targets were planned from
/// (to say when a preset brought one in); \p Facts, where known, say the
/// oldest PTX ISA each arch allows: a driver too old for it drives no GPU
/// the target's PTX runs on, and the target is left alone; a lower
/// --ptx-version is suggested only where the arch allows it. For
/// PtxIsaSource::Nvcc, \p Origins (empty, or one per target) name the nvcc
/// input whose PTX needs it.
llvm::Error checkMinDriver(llvm::ArrayRef<lto::Target> Targets,
                           const DriverVersion &MinDriver,
                           llvm::ArrayRef<std::string> Lists,
                           const TargetSettingNames &From,
                           const ToolFacts *Facts = nullptr,
                           PtxIsaSource Source = PtxIsaSource::Plan,
                           llvm::ArrayRef<std::string> Origins = {});

} // namespace fatlink

#endif // FATLINK_LINKER_TARGETS_H
