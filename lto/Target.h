//===- lto/Target.h - NVPTX target helpers internal to lto/ --------------===//
//
// Arch-name parsing and the split for optimization. (TargetMachine
// creation and the diagnostic collector are in LTO.h: codegen/ uses them.)
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_TARGET_H
#define FATLINK_LTO_TARGET_H

#include "lto/LTO.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/GlobalValue.h"

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

/// Checks that bitcode laid out for \p Layout (its module's data layout)
/// can be compiled by this LLVM's NVPTX backend: the same byte order and
/// pointer sizes in the address spaces device code uses (generic, global,
/// shared, constant, local). Code laid out otherwise (clang's
/// -fcuda-short-ptr, 32-bit shared and local pointers) would be compiled
/// against the wrong layout, silently. An empty layout is the target's.
llvm::Error checkDataLayout(llvm::StringRef Layout, llvm::StringRef Origin);

/// The graph the split plans on: definitions, each with what it
/// references. For a module, its definitions in its order; for a
/// partition-first link (linkPartitionFirst), the definitions of all the inputs
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
    /// The input unit that defined it: 1 + an index into Units; 0 where
    /// not known (a module given back after O3, a device library).
    uint32_t Unit = 0;
  };
  std::vector<Node> Nodes;
  /// The names of the input units (unitName), each once.
  std::vector<std::string> Units;
  llvm::StringMap<uint32_t> UnitIndex; ///< 1 + the index of each in Units

  /// Node \p N's unit, by name: \p Name's index in Units (added if new).
  void setUnit(Node &N, llvm::StringRef Name);
};

/// How a link names the input unit a definition comes from, for placing
/// its components (planGraph): the smallest name among the unit's external
/// definitions (not llvm.*). It depends on the unit's interface alone, not
/// on its path, its place on the command line or its code, so an edit that
/// keeps a unit's external names keeps its components where they were.
/// Empty for a unit that defines nothing external.
std::string unitName(const llvm::Module &M);

/// One partition of a RefGraph: its members in the graph's order (clonable
/// nodes can be members of several), its kernels' names and its size.
struct GraphPartition {
  std::vector<uint32_t> Members;
  std::vector<std::string> Kernels;
  size_t Instructions = 0;
};

/// Assigns G's nodes to (at most) N partitions: the connected components of
/// the roots (the nodes that are not clonable), joined through clonable
/// nodes; each component goes to a bucket (below), and a clonable node to
/// every partition whose roots reach it (nowhere if none does). Empty
/// partitions stay, so that bucket numbers mean the same in every link.
///
/// A component is named by its smallest external name. One whose name
/// comes from a known unit goes with the unit's other components: a unit's
/// components, in name order, are dealt in chunks of UnitChunk, and chunk
/// K of unit U goes to bucket hash(U, K) mod N. Any other component, and
/// every component where the units' chunks are fewer than 2N (by unit,
/// many buckets would stay empty), goes to bucket hash(its name) mod N.
constexpr size_t UnitChunk = 4;
std::vector<GraphPartition> planGraph(const RefGraph &G, unsigned N);

/// Calls F on every global value GV's body or initializer (and a
/// function's personality) references, looking through constant
/// expressions and aggregates; GV itself too, if it refers to itself.
void forEachGlobalReferencedBy(const llvm::GlobalValue &GV,
                               llvm::function_ref<void(const llvm::GlobalValue *)> F);

/// A variable module-level PTX defines: `.shared .align 16 .b8 TILE[1024];`
/// (fatlink-device's shared_array!, Rust's global_asm!; clang leaves CUDA's
/// file-scope asm out of device code), `.global`, `.const`; weak for
/// `.weak` and `.common`.
struct AsmVariable {
  std::string Name;
  bool Weak = false;
  bool Shared = false; ///< in .shared: one per block, per kernel launch
};

/// The variables module-level inline PTX defines: program symbols the IR
/// does not show. `.extern` declares without defining; functions' bodies
/// and initializers are skipped; a statement of another form defines
/// nothing here (ptxas judges it).
std::vector<AsmVariable> asmDefinedVariables(llvm::StringRef Asm);

/// The first `.global` or `.const` variable M's module-level PTX defines
/// (empty: none). A module with one is not split into partitions: each
/// would define it, and the program would have a copy per partition (or
/// nvlink's "Multiple definition"). A `.shared` one may be split: shared
/// memory lives for one launch, and a kernel's code is in one partition.
std::string asmGlobalVariable(const llvm::Module &M);

/// What a partition-first link knows of one input (Summary.cpp): its globals in
/// the module's order, each with what it references, and the members of
/// its used lists (llvm.used, llvm.compiler.used).
struct ImageGraph {
  struct Global {
    std::string Name;
    llvm::GlobalValue::LinkageTypes Linkage = llvm::GlobalValue::ExternalLinkage;
    bool Reserved = false;   ///< LLVM's own ("llvm.*")
    bool Definition = false; ///< for the linker
    bool Function = false;
    bool Kernel = false;
    bool ConstantUnnamed = false; ///< a constant whose address nobody compares
    bool ExternallyInitialized = false;
    size_t Instructions = 0;
    std::string Comdat; ///< its comdat's name (selection "any"); empty: none
    std::vector<uint32_t> Refs; ///< indices of the globals it references
  };
  std::vector<Global> Globals;
  std::vector<uint32_t> Used;
  /// What the module holds that only the whole link handles ("a comdat");
  /// empty if nothing.
  std::string Unsupported;
  /// Its unitName.
  std::string Unit;
};

ImageGraph imageGraphOf(const llvm::Module &M);

/// The inputs' summaries resolved, internalized and stripped as the whole
/// link would leave the program: the definitions that prevail and live,
/// in link order, as a graph to plan on.
struct ProgramGraph {
  RefGraph Graph;
  /// For each node: its image (an index into the summaries) and global.
  std::vector<std::pair<uint32_t, uint32_t>> Where;
  size_t Kernels = 0;

  const ImageGraph::Global &global(llvm::ArrayRef<ImageGraph> Images,
                                   uint32_t Node) const {
    return Images[Where[Node].first].Globals[Where[Node].second];
  }
};

/// Images: the summaries in link order; Exports: the names kept external
/// besides kernels, host-visible variables and the used lists' members.
ProgramGraph programGraph(llvm::ArrayRef<ImageGraph> Images,
                          const llvm::StringSet<> &Exports);

/// Splits a linked, internalized module that O3 has not run on yet into at
/// most MaxPartitions partitions (Split.cpp): roots (kernels, globals,
/// external functions) that reach one another share a partition; local
/// functions and unnamed constants are copied into every partition that
/// reaches them, so each partition optimizes on its own. Where the module
/// splits into two partitions or more, it is consumed: each function's body
/// is deleted, and its memory given back, once the last partition that
/// holds it is cut, and M is freed. Otherwise M is left as it was and the
/// result is empty.
/// \p Units names, for each definition M holds, its input unit (unitName);
/// a definition not in it is placed by its own name.
std::vector<CodegenPartition>
splitForOptimization(std::unique_ptr<llvm::Module> &M, unsigned MaxPartitions,
                     const llvm::StringMap<llvm::StringRef> &Units);

} // namespace fatlink::lto

#endif // FATLINK_LTO_TARGET_H
