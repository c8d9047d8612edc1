//===- lto/Split.cpp - Split an optimized module for code generation -----===//
//
// After the whole-program O3 run, code generation (llc, then ptxas) is most
// of a device link, and most of it is for kernels that did not change since
// the last link. Splitting the optimized module into independent partitions
// lets the driver compile them in parallel and reuse each one's cubin from
// the cache while its IR is unchanged.
//
// A partition must compile on its own and link with the others without
// surprises, so the split never cuts a reference: every defined global
// (function, variable, alias) lands in the same partition as everything it
// references and everything that references it. The connected components
// of that graph are the units of the split; a device global and every
// function that touches it always share one. Nothing is cloned, so the
// linked cubin holds each function and each global exactly once.
//
// A component goes to partition hash(its smallest external name) mod N.
// Editing one unit leaves the other components where they were, so their
// partitions' IR, and their cache keys, stay the same. N is fixed by the
// caller (never by the thread count), so the output does not depend on -j.
//
//===----------------------------------------------------------------------===//

#include "lto/LTO.h"
#include "lto/Support.h"
#include "lto/Target.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <map>

using namespace llvm;

namespace fatlink::lto {

/// Calls F on every global value that \p U uses, looking through constant
/// expressions and aggregates.
static void forEachReferencedGlobal(const User *U,
                                    function_ref<void(const GlobalValue *)> F,
                                    SmallPtrSetImpl<const Constant *> &Seen) {
  for (const Use &Op : U->operands()) {
    const Value *V = Op.get();
    if (const auto *GV = dyn_cast<GlobalValue>(V)) {
      F(GV);
      continue;
    }
    if (const auto *C = dyn_cast<Constant>(V))
      if (Seen.insert(C).second)
        forEachReferencedGlobal(C, F, Seen);
  }
}

/// The number of instructions, the size measure used for the partitions'
/// report.
static size_t instructionCount(const GlobalValue &GV) {
  if (const auto *F = dyn_cast<Function>(&GV))
    return F->getInstructionCount();
  return 0;
}

/// Removes what other partitions define: CloneModule leaves it as unused
/// declarations, and `nvvm.annotations` entries that name it.
static void dropForeignDeclarations(Module &Part) {
  auto Foreign = [](const Metadata *MD) {
    const auto *VM = dyn_cast_or_null<ValueAsMetadata>(MD);
    const auto *GV = VM ? dyn_cast<GlobalValue>(VM->getValue()) : nullptr;
    const auto *F = dyn_cast_or_null<Function>(GV);
    return GV && GV->isDeclaration() && !(F && F->isIntrinsic());
  };
  if (NamedMDNode *Annotations = Part.getNamedMetadata("nvvm.annotations")) {
    std::vector<MDNode *> Keep;
    for (MDNode *N : Annotations->operands())
      if (N->getNumOperands() == 0 || !Foreign(N->getOperand(0)))
        Keep.push_back(N);
    Annotations->clearOperands();
    for (MDNode *N : Keep)
      Annotations->addOperand(N);
  }
  for (GlobalValue &GV : make_early_inc_range(Part.global_values())) {
    const auto *F = dyn_cast<Function>(&GV);
    if (GV.isDeclaration() && GV.use_empty() && !(F && F->isIntrinsic()))
      GV.eraseFromParent();
  }
}

Expected<std::vector<CodegenPartition>>
splitForCodegen(StringRef Bitcode, unsigned MaxPartitions) {
  TimeTraceScope Scope("Split for codegen");
  LLVMContext Ctx;
  DiagnosticCollector Diags;
  Diags.install(Ctx);
  Expected<std::unique_ptr<Module>> MOrErr =
      parseBitcodeFile(MemoryBufferRef(Bitcode, "optimized module"), Ctx);
  if (!MOrErr)
    return MOrErr.takeError();
  Module &M = **MOrErr;

  // Join every definition with what it references.
  EquivalenceClasses<const GlobalValue *> Classes;
  std::vector<const GlobalValue *> Defined;
  for (const GlobalValue &GV : M.global_values())
    if (!GV.isDeclaration()) {
      Classes.insert(&GV);
      Defined.push_back(&GV);
    }
  std::map<const Comdat *, const GlobalValue *> ComdatLeader;
  for (const GlobalValue *GV : Defined) {
    SmallPtrSet<const Constant *, 16> Seen;
    auto Join = [&](const GlobalValue *Ref) {
      if (!Ref->isDeclaration())
        Classes.unionSets(GV, Ref);
    };
    if (const auto *F = dyn_cast<Function>(GV)) {
      for (const BasicBlock &BB : *F)
        for (const Instruction &I : BB)
          forEachReferencedGlobal(&I, Join, Seen);
      if (F->hasPersonalityFn())
        forEachReferencedGlobal(F, Join, Seen);
    } else {
      forEachReferencedGlobal(GV, Join, Seen);
    }
    if (const Comdat *C = GV->getComdat()) {
      auto [It, New] = ComdatLeader.try_emplace(C, GV);
      if (!New)
        Classes.unionSets(GV, It->second);
    }
  }

  // Name each component by its smallest external name (else its smallest
  // name): stable across edits of other units.
  std::map<const GlobalValue *, std::string> ComponentName;
  std::map<const GlobalValue *, size_t> ComponentSize;
  for (const GlobalValue *GV : Defined) {
    const GlobalValue *Leader = Classes.getLeaderValue(GV);
    std::string &Name = ComponentName[Leader];
    bool External = !GV->hasLocalLinkage();
    std::string Candidate = (External ? "0" : "1") + GV->getName().str();
    if (Name.empty() || Candidate < Name)
      Name = Candidate;
    ComponentSize[Leader] += instructionCount(*GV);
  }
  // Buckets, not capped by the number of components: the bucket of a
  // component must not move when components come and go elsewhere.
  unsigned N = std::max(1u, MaxPartitions);

  std::vector<CodegenPartition> Parts(N);
  std::map<const GlobalValue *, unsigned> PartOf;
  for (const auto &[Leader, Name] : ComponentName) {
    unsigned P = N == 1 ? 0 : unsigned(xxh3_64bits(Name) % N);
    PartOf[Leader] = P;
    Parts[P].Instructions += ComponentSize[Leader];
  }
  for (const GlobalValue *GV : Defined)
    if (const auto *F = dyn_cast<Function>(GV))
      if (F->getCallingConv() == CallingConv::PTX_Kernel)
        Parts[PartOf[Classes.getLeaderValue(GV)]].Kernels.push_back(
            F->getName().str());

  if (N == 1) {
    Parts[0].Bitcode = Bitcode.str();
    return Parts;
  }

  std::vector<CodegenPartition> Out;
  for (unsigned P = 0; P < N; ++P) {
    if (none_of(Defined, [&](const GlobalValue *GV) {
          return PartOf[Classes.getLeaderValue(GV)] == P;
        }))
      continue; // no component hashed here
    ValueToValueMapTy VMap;
    std::unique_ptr<Module> Part =
        CloneModule(M, VMap, [&](const GlobalValue *GV) {
          return PartOf[Classes.getLeaderValue(GV)] == P;
        });
    dropForeignDeclarations(*Part);
    raw_string_ostream OS(Parts[P].Bitcode);
    WriteBitcodeToFile(*Part, OS);
    OS.flush();
    Out.push_back(std::move(Parts[P]));
  }
  if (Error E = Diags.takeError("splitting the optimized module"))
    return std::move(E);
  return Out;
}

} // namespace fatlink::lto
