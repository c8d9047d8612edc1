//===- lto/Target.h - NVPTX target helpers internal to lto/ --------------===//
//
// Arch-name parsing, TargetMachine creation and the collector that turns
// LLVM's diagnostics into llvm::Error values instead of printing them.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_TARGET_H
#define FATLINK_LTO_TARGET_H

#include "lto/LTO.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class DiagnosticInfo;
class LLVMContext;
class Module;
class TargetMachine;
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

/// An NVPTX TargetMachine for T (processor T.Cpu, PTX ISA T.PtxVersion).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const Target &T, unsigned OptLevel);

/// Sets every defined function's target-cpu and target-features to T's.
void setTargetAttributes(llvm::Module &M, const Target &T);

/// Splits a linked, internalized module that O3 has not run on yet into at
/// most MaxPartitions partitions (Split.cpp): roots (kernels, globals,
/// external functions) that reach one another share a partition; local
/// functions and unnamed constants are copied into every partition that
/// reaches them, so each partition optimizes on its own.
std::vector<CodegenPartition> splitForOptimization(const llvm::Module &M,
                                                   unsigned MaxPartitions);

/// Records LLVM's error diagnostics for one LLVMContext.
class DiagnosticCollector {
public:
  void install(llvm::LLVMContext &Ctx);
  /// The collected errors, prefixed with Context; success if none.
  llvm::Error takeError(const llvm::Twine &Context);

private:
  void handle(const llvm::DiagnosticInfo &DI);
  std::vector<std::string> Errors;
};

} // namespace fatlink::lto

#endif // FATLINK_LTO_TARGET_H
