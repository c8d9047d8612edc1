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
//     driver support), or --ptx-version, and never above what ptxas accepts.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_TARGETS_H
#define FATLINK_LINKER_TARGETS_H

#include "lto/LTO.h"

#include "llvm/ADT/ArrayRef.h"
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
/// have (--arch, --ptx-version, --cuda-path). The wrappers (`fatlink cc`,
/// `fatlink llbc`) put there the setting the user set and where
/// (Settings::nameOf: "FATLINK_ARCH", "--fatlink-arch", "arch at f.conf:3"),
/// so that a message names what to change.
struct TargetSettingNames {
  std::string Arch;
  std::string PtxVersion;
  std::string CudaPath;
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

} // namespace fatlink

#endif // FATLINK_LINKER_TARGETS_H
