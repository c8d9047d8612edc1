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

/// The graph the split plans on: definitions, each with what it
/// references. For a module, its definitions in its order; for a
/// partitioned link (linkPartitioned), the definitions of all the inputs
/// that prevail, in link order, as internalization will leave them.
struct RefGraph {
  struct Node {
    std::string Name;
    bool Local = false;    ///< local linkage (after internalization)
    bool Clonable = false; ///< copied into every partition that reaches it
    unsigned Comdat = 0;   ///< its comdat's number (from 1); 0: none
    bool Kernel = false;
    size_t Instructions = 0;
    std::vector<uint32_t> Refs; ///< the other definitions it references
  };
  std::vector<Node> Nodes;
};

/// One partition of a RefGraph: its members in the graph's order (clonable
/// nodes can be members of several), its kernels' names and its size.
struct GraphPartition {
  std::vector<uint32_t> Members;
  std::vector<std::string> Kernels;
  size_t Instructions = 0;
};

/// Assigns G's nodes to (at most) N partitions: the connected components of
/// the roots (the nodes that are not clonable), joined through clonable
/// nodes; each component goes to bucket hash(its smallest external name)
/// mod N, and a clonable node to every partition whose roots reach it
/// (nowhere if none does). Empty partitions stay, so that bucket numbers
/// mean the same in every link.
std::vector<GraphPartition> planGraph(const RefGraph &G, unsigned N);

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
