//===- lto/Target.h - NVPTX target helpers internal to lto/ --------------===//
//
// Arch-name parsing and the split for optimization. (TargetMachine
// creation and the diagnostic collector are in LTO.h: codegen/ uses them.)
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_TARGET_H
#define FATLINK_LTO_TARGET_H

#include "lto/LTO.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace fatlink::lto {

/// "sm_90a" -> {Cpu "sm_90a", Sm 90, Suffix "a"}.
struct ArchName {
  std::string Cpu;
  unsigned Sm = 0;
  std::string Suffix;
};

/// Parses "sm_NN[a|f]"; none for anything else.
std::optional<ArchName> parseArchName(llvm::StringRef Name);

/// Splits a linked, internalized module that O3 has not run on yet into at
/// most MaxPartitions partitions (Split.cpp): roots (kernels, globals,
/// external functions) that reach one another share a partition; local
/// functions and unnamed constants are copied into every partition that
/// reaches them, so each partition optimizes on its own. Where the module
/// splits into two partitions or more, it is consumed: each function's body
/// is deleted, and its memory given back, once the last partition that
/// holds it is cut, and M is freed. Otherwise M is left as it was and the
/// result is empty.
std::vector<CodegenPartition>
splitForOptimization(std::unique_ptr<llvm::Module> &M, unsigned MaxPartitions);

} // namespace fatlink::lto

#endif // FATLINK_LTO_TARGET_H
