//===- lto/Split.cpp - Split a module into partitions --------------------===//
//
// Optimization and code generation are most of a device link, and after a
// one-file edit most of that work is for kernels whose code did not change.
// Splitting the linked module into independent partitions lets the driver
// optimize and compile them in parallel and reuse each one's result while
// its IR is unchanged.
//
// A partition must optimize and compile on its own and link with the others
// without surprises, so the split never cuts a reference to something that
// must exist once: a kernel, a global variable, an external function. Those
// roots are joined with every root their code reaches; the connected
// components are the units of the split, so a device global and every
// function that touches it always share one.
//
// Two modes. Before O3 (splitForOptimization), local functions and unnamed
// local constants are looked through and copied into every partition that
// reaches them (after inlining, most copies disappear; the rest are local
// symbols of their own cubin). After O3 (splitForCodegen, for a module
// given back with --codegen-only) nothing is copied: every definition joins
// what it references.
//
// A component goes to a partition chosen by hash: of its input unit and
// its place among the unit's components (in chunks of UnitChunk), where the
// unit is known, else of its smallest external name; mod N. Editing one
// unit leaves the other units' components where they were, so their
// partitions' IR, and their cache keys, stay the same; keeping a unit's
// components together keeps its edit to few partitions. N is fixed by the
// caller (never by the thread count), so the output does not depend on -j.
//
//===----------------------------------------------------------------------===//

#include "lto/LTO.h"
#include "lto/Support.h"
#include "lto/Target.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

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

void forEachGlobalReferencedBy(const GlobalValue &GV,
                               function_ref<void(const GlobalValue *)> F) {
  SmallPtrSet<const Constant *, 16> Seen;
  if (const auto *Fn = dyn_cast<Function>(&GV)) {
    for (const BasicBlock &BB : *Fn)
      for (const Instruction &I : BB)
        forEachReferencedGlobal(&I, F, Seen);
    if (Fn->hasPersonalityFn())
      forEachReferencedGlobal(Fn, F, Seen);
    return;
  }
  forEachReferencedGlobal(&GV, F, Seen);
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

/// Whether the split may copy GV into every partition that uses it instead
/// of keeping its users together: before O3, local functions (other than
/// kernels) and local constants whose address nobody compares.
static bool isClonable(const GlobalValue &GV, bool CloneLocals) {
  if (!CloneLocals || !GV.hasLocalLinkage() || GV.hasComdat())
    return false;
  if (const auto *F = dyn_cast<Function>(&GV))
    return F->getCallingConv() != CallingConv::PTX_Kernel;
  if (const auto *V = dyn_cast<GlobalVariable>(&GV))
    return V->isConstant() && V->hasGlobalUnnamedAddr();
  return false;
}

/// What one partition defines, before it is cut out of the module.
struct PartitionPlan {
  SmallPtrSet<const GlobalValue *, 32> Members;
  std::vector<std::string> Kernels;
  size_t Instructions = 0;
};

void RefGraph::setUnit(Node &N, StringRef Name) {
  if (Name.empty())
    return;
  auto [It, New] = UnitIndex.try_emplace(Name, uint32_t(Units.size() + 1));
  if (New)
    Units.push_back(Name.str());
  N.Unit = It->second;
}

std::string unitName(const Module &M) {
  std::optional<StringRef> Smallest;
  for (const GlobalValue &GV : M.global_values())
    if (!GV.isDeclarationForLinker() && !GV.hasLocalLinkage() &&
        !GV.getName().starts_with("llvm.") &&
        (!Smallest || GV.getName() < *Smallest))
      Smallest = GV.getName();
  return Smallest ? Smallest->str() : std::string();
}

std::vector<GraphPartition> planGraph(const RefGraph &G, unsigned N) {
  TimeTraceScope Scope("Plan partitions");
  size_t Count = G.Nodes.size();
  // Roots: what must exist once. Each root is joined with every root its
  // code reaches, looking through clonable definitions.
  EquivalenceClasses<uint32_t> Classes;
  std::vector<uint32_t> Roots;
  for (uint32_t I = 0; I < Count; ++I)
    if (!G.Nodes[I].Clonable) {
      Classes.insert(I);
      Roots.push_back(I);
    }
  std::vector<std::vector<uint32_t>> Clones(Count);
  std::map<unsigned, uint32_t> ComdatLeader;
  std::vector<uint32_t> SeenBy(Count, UINT32_MAX);
  for (uint32_t Root : Roots) {
    SeenBy[Root] = Root;
    std::vector<uint32_t> Work{Root};
    while (!Work.empty()) {
      uint32_t I = Work.back();
      Work.pop_back();
      for (uint32_t Ref : G.Nodes[I].Refs) {
        if (SeenBy[Ref] == Root)
          continue;
        SeenBy[Ref] = Root;
        if (G.Nodes[Ref].Clonable) {
          Clones[Root].push_back(Ref);
          Work.push_back(Ref);
        } else {
          Classes.unionSets(Root, Ref);
        }
      }
    }
    if (unsigned C = G.Nodes[Root].Comdat) {
      auto [It, New] = ComdatLeader.try_emplace(C, Root);
      if (!New)
        Classes.unionSets(Root, It->second);
    }
  }

  // Name each component by its smallest external name (else its smallest
  // name), and give it that root's unit: stable across edits of other
  // units. Buckets are not capped by the number of components, so a
  // component's bucket never moves when components come and go elsewhere.
  struct Component {
    std::string Name;
    uint32_t Unit = 0;
  };
  std::map<uint32_t, Component> Components;
  for (uint32_t I : Roots) {
    const RefGraph::Node &Node = G.Nodes[I];
    Component &C = Components[Classes.getLeaderValue(I)];
    std::string Candidate = (Node.Local ? "1" : "0") + Node.Name;
    if (C.Name.empty() || Candidate < C.Name)
      C = {std::move(Candidate), Node.Unit};
  }
  // A unit's components, in name order, are dealt in chunks: a chunk goes
  // to the bucket of (unit, chunk number), so an edit of the unit reaches
  // the partitions of its chunks, not one partition per component.
  std::vector<std::vector<std::pair<StringRef, uint32_t>>> OfUnit(
      G.Units.size());
  for (const auto &[Leader, C] : Components)
    if (C.Unit)
      OfUnit[C.Unit - 1].push_back({C.Name, Leader});
  std::vector<GraphPartition> Plans(std::max(1u, N));
  auto BucketOf = [&](StringRef Key) {
    return Plans.size() == 1 ? 0u : unsigned(xxh3_64bits(Key) % Plans.size());
  };
  // With fewer than two chunks per bucket, units together would leave
  // many buckets empty (a program of one input would not split at all):
  // each component goes by its name, as it does where its unit is not
  // known.
  size_t Chunks = 0;
  for (const auto &Members : OfUnit)
    Chunks += divideCeil(Members.size(), UnitChunk);
  bool ByUnit = Chunks >= 2 * Plans.size();
  std::map<uint32_t, unsigned> Bucket;
  for (const auto &[Leader, C] : Components)
    if (!C.Unit || !ByUnit)
      Bucket[Leader] = BucketOf(C.Name);
  for (auto [U, Members] : enumerate(OfUnit)) {
    if (!ByUnit)
      break;
    llvm::sort(Members);
    for (auto [Rank, Member] : enumerate(Members))
      Bucket[Member.second] = BucketOf(
          (Twine("unit ") + G.Units[U] + " " + Twine(Rank / UnitChunk)).str());
  }
  // Where each definition went (a clone, to several partitions).
  std::vector<SmallVector<unsigned, 1>> Placed(Count);
  for (uint32_t Root : Roots) {
    unsigned B = Bucket[Classes.getLeaderValue(Root)];
    auto Place = [&](uint32_t I) {
      if (Placed[I].empty() || Placed[I].back() != B) {
        if (is_contained(Placed[I], B))
          return;
        Placed[I].push_back(B);
      }
    };
    Place(Root);
    for (uint32_t C : Clones[Root])
      Place(C);
  }
  // Members, kernels and sizes in the graph's order.
  for (uint32_t I = 0; I < Count; ++I)
    for (unsigned B : Placed[I]) {
      GraphPartition &P = Plans[B];
      P.Members.push_back(I);
      P.Instructions += G.Nodes[I].Instructions;
      if (G.Nodes[I].Kernel)
        P.Kernels.push_back(G.Nodes[I].Name);
    }
  return Plans;
}

/// Assigns M's definitions to (at most) N partitions: the connected
/// components of the reference graph, where references through a clonable
/// global (isClonable) do not join their users; clonable globals go, copied,
/// to every partition that reaches them, and nowhere if none does.
static std::vector<PartitionPlan>
planPartitions(const Module &M, unsigned N, bool CloneLocals,
               const StringMap<StringRef> *Units = nullptr) {
  std::vector<const GlobalValue *> Defined;
  DenseMap<const GlobalValue *, uint32_t> Index;
  for (const GlobalValue &GV : M.global_values())
    if (!GV.isDeclaration()) {
      Index[&GV] = uint32_t(Defined.size());
      Defined.push_back(&GV);
    }

  RefGraph G;
  G.Nodes.resize(Defined.size());
  DenseMap<const Comdat *, unsigned> Comdats;
  for (auto [I, GV] : enumerate(Defined)) {
    RefGraph::Node &Node = G.Nodes[I];
    Node.Name = GV->getName().str();
    Node.Local = GV->hasLocalLinkage();
    Node.Clonable = isClonable(*GV, CloneLocals);
    if (const Comdat *C = GV->getComdat())
      Node.Comdat = Comdats.try_emplace(C, Comdats.size() + 1).first->second;
    Node.Instructions = instructionCount(*GV);
    const auto *F = dyn_cast<Function>(GV);
    Node.Kernel = F && F->getCallingConv() == CallingConv::PTX_Kernel;
    if (Units)
      if (auto It = Units->find(GV->getName()); It != Units->end())
        G.setUnit(Node, It->second);
    // Direct references between definitions.
    forEachGlobalReferencedBy(*GV, [&](const GlobalValue *Ref) {
      if (!Ref->isDeclaration() && Ref != GV)
        Node.Refs.push_back(Index.lookup(Ref));
    });
  }

  std::vector<PartitionPlan> Plans;
  for (GraphPartition &GP : planGraph(G, N)) {
    PartitionPlan &P = Plans.emplace_back();
    for (uint32_t I : GP.Members)
      P.Members.insert(Defined[I]);
    P.Kernels = std::move(GP.Kernels);
    P.Instructions = GP.Instructions;
  }
  // A `.global` or `.const` variable of module-level PTX would be defined
  // by every partition (asmGlobalVariable): everything goes to the first,
  // the others stay empty (and get no module asm, cutPartitions).
  if (Plans.size() > 1 && !asmGlobalVariable(M).empty())
    for (PartitionPlan &P : drop_begin(Plans)) {
      Plans[0].Members.insert(P.Members.begin(), P.Members.end());
      append_range(Plans[0].Kernels, P.Kernels);
      Plans[0].Instructions += P.Instructions;
      P = PartitionPlan();
    }
  return Plans;
}

static void copyComdat(GlobalObject *To, const GlobalObject *From) {
  if (const Comdat *C = From->getComdat()) {
    Comdat *New = To->getParent()->getOrInsertComdat(C->getName());
    New->setSelectionKind(C->getSelectionKind());
    To->setComdat(New);
  }
}

/// What every cut of one module shares: each global's place in the module
/// (so that a partition declares its globals in the module's order, as
/// CloneModule would) and the intrinsic declarations every partition keeps.
struct CutContext {
  DenseMap<const GlobalValue *, unsigned> Order;
  std::vector<const Function *> Intrinsics;
  bool HasIFuncs = false;
  /// Definitions whose bodies an earlier cut deleted (cutPartitions with
  /// Consume): declared as the definitions of other partitions are.
  DenseSet<const Function *> Gone;

  explicit CutContext(const Module &M) {
    unsigned I = 0;
    for (const GlobalVariable &GV : M.globals())
      Order[&GV] = I++;
    for (const Function &F : M) {
      Order[&F] = I++;
      if (F.isIntrinsic())
        Intrinsics.push_back(&F);
    }
    for (const GlobalAlias &GA : M.aliases())
      Order[&GA] = I++;
    HasIFuncs = !M.ifunc_empty();
  }
};

/// A declaration in Part of GV, a global of the split module that Part
/// does not define: as CloneModule declares what it does not clone.
static GlobalValue *declareIn(Module &Part, const GlobalValue &GV) {
  GlobalValue::LinkageTypes Linkage = GV.isDeclaration()
                                          ? GV.getLinkage()
                                          : GlobalValue::ExternalLinkage;
  if (const auto *F = dyn_cast<Function>(&GV)) {
    Function *NF =
        Function::Create(F->getFunctionType(), F->getLinkage(),
                         F->getAddressSpace(), F->getName(), &Part);
    NF->copyAttributesFrom(F);
    NF->setLinkage(Linkage);
    NF->setPersonalityFn(nullptr);
    NF->setPrefixData(nullptr);
    NF->setPrologueData(nullptr);
    return NF;
  }
  if (const auto *V = dyn_cast<GlobalVariable>(&GV)) {
    auto *NV = new GlobalVariable(
        Part, V->getValueType(), V->isConstant(), V->getLinkage(), nullptr,
        V->getName(), nullptr, V->getThreadLocalMode(),
        V->getType()->getAddressSpace());
    NV->copyAttributesFrom(V);
    NV->setLinkage(Linkage);
    return NV;
  }
  // An alias cannot be a declaration: declare what it names instead.
  if (GV.getValueType()->isFunctionTy())
    return Function::Create(cast<FunctionType>(GV.getValueType()),
                            GlobalValue::ExternalLinkage, GV.getAddressSpace(),
                            GV.getName(), &Part);
  return new GlobalVariable(Part, GV.getValueType(), false,
                            GlobalValue::ExternalLinkage, nullptr, GV.getName(),
                            nullptr, GV.getThreadLocalMode(),
                            GV.getType()->getAddressSpace());
}

namespace {
/// Declares, when the cut first maps it, a global that no member's code
/// references and only metadata names (the pre-pass of cutPartition finds
/// every other one).
class DeclareOnUse final : public ValueMaterializer {
public:
  DeclareOnUse(const Module &M, Module &Part) : M(M), Part(Part) {}
  Value *materialize(Value *V) override {
    auto *GV = dyn_cast<GlobalValue>(V);
    if (!GV || GV->getParent() != &M)
      return nullptr;
    return declareIn(Part, *GV);
  }

private:
  const Module &M;
  Module &Part;
};
} // namespace

/// Plan's partition of M: what it defines, and what that declares. The
/// result is CloneModule's with the other partitions' definitions left out
/// and the declarations nothing uses dropped, built from the partition's
/// members and their references alone: cutting N partitions costs the
/// program once, not N times (CloneModule declares every global of M in
/// each).
static std::unique_ptr<Module> cutPartition(const Module &M,
                                            const PartitionPlan &Plan,
                                            const CutContext &Cx) {
  if (Cx.HasIFuncs) { // none on NVPTX; CloneModule knows what to do
    ValueToValueMapTy VMap;
    std::unique_ptr<Module> Part = CloneModule(
        M, VMap, [&](const GlobalValue *GV) { return Plan.Members.count(GV); });
    dropForeignDeclarations(*Part);
    return Part;
  }

  // What the partition names: its members, what their code and
  // initializers reference, and the intrinsics, in M's order.
  SmallPtrSet<const GlobalValue *, 32> NeededSet;
  std::vector<const GlobalValue *> Needed;
  auto Need = [&](const GlobalValue *GV) {
    if (NeededSet.insert(GV).second)
      Needed.push_back(GV);
  };
  for (const GlobalValue *GV : Plan.Members) {
    Need(GV);
    SmallPtrSet<const Constant *, 16> Seen;
    if (const auto *F = dyn_cast<Function>(GV))
      for (const BasicBlock &BB : *F)
        for (const Instruction &I : BB)
          forEachReferencedGlobal(&I, Need, Seen);
    forEachReferencedGlobal(GV, Need, Seen);
  }
  for (const Function *F : Cx.Intrinsics)
    Need(F);
  llvm::sort(Needed, [&](const GlobalValue *A, const GlobalValue *B) {
    return Cx.Order.lookup(A) < Cx.Order.lookup(B);
  });

  auto Part = std::make_unique<Module>(M.getModuleIdentifier(), M.getContext());
  Part->setSourceFileName(M.getSourceFileName());
  Part->setDataLayout(M.getDataLayout());
  Part->setTargetTriple(M.getTargetTriple());
  // Its variables and declarations, for the code that uses them; a
  // partition without code defines nothing (one with a `.global` variable
  // of module-level PTX is the only one with code, planPartitions).
  if (!Plan.Members.empty())
    Part->setModuleInlineAsm(M.getModuleInlineAsm());
  auto Defines = [&](const GlobalValue *GV) {
    return !GV->isDeclaration() && Plan.Members.count(GV);
  };

  // Declarations first, as CloneModule makes them: variables, functions,
  // then aliases (M's order sorts them so).
  ValueToValueMapTy VMap;
  DeclareOnUse Materializer(M, *Part);
  for (const GlobalValue *GV : Needed) {
    if (const auto *GA = dyn_cast<GlobalAlias>(GV); GA && Defines(GA)) {
      GlobalAlias *NA = GlobalAlias::create(
          GA->getValueType(), GA->getType()->getPointerAddressSpace(),
          GA->getLinkage(), GA->getName(), Part.get());
      NA->copyAttributesFrom(GA);
      VMap[GA] = NA;
      continue;
    }
    GlobalValue *New = declareIn(*Part, *GV);
    if (Defines(GV)) // declareIn makes a definition's copy external
      New->setLinkage(GV->getLinkage());
    VMap[GV] = New;
  }
  auto Map = [&](const Constant *C) {
    return MapValue(C, VMap, RF_None, nullptr, &Materializer);
  };
  auto CopyMetadata = [&](const GlobalObject &From, GlobalObject &To) {
    SmallVector<std::pair<unsigned, MDNode *>, 1> MDs;
    From.getAllMetadata(MDs);
    for (auto [Kind, MD] : MDs)
      To.addMetadata(Kind, *MapMetadata(MD, VMap, RF_None, nullptr,
                                        &Materializer));
  };

  // Variables' metadata and initializers, then bodies, then aliasees.
  for (const GlobalValue *GV : Needed) {
    const auto *V = dyn_cast<GlobalVariable>(GV);
    if (!V)
      continue;
    auto *NV = cast<GlobalVariable>(VMap[V]);
    CopyMetadata(*V, *NV);
    if (!Defines(V))
      continue;
    if (V->hasInitializer())
      NV->setInitializer(Map(V->getInitializer()));
    copyComdat(NV, V);
  }
  for (const GlobalValue *GV : Needed) {
    const auto *F = dyn_cast<Function>(GV);
    if (!F)
      continue;
    auto *NF = cast<Function>(VMap[F]);
    if (F->isDeclaration() && !Cx.Gone.count(F)) {
      CopyMetadata(*F, *NF);
      continue;
    }
    if (!Defines(F))
      continue;
    auto DestArg = NF->arg_begin();
    for (const Argument &A : F->args()) {
      DestArg->setName(A.getName());
      VMap[&A] = &*DestArg++;
    }
    SmallVector<ReturnInst *, 8> Returns;
    CloneFunctionInto(NF, F, VMap, CloneFunctionChangeType::ClonedModule,
                      Returns, "", nullptr, nullptr, &Materializer);
    if (F->hasPersonalityFn())
      NF->setPersonalityFn(Map(F->getPersonalityFn()));
    copyComdat(NF, F);
  }
  for (const GlobalValue *GV : Needed)
    if (const auto *GA = dyn_cast<GlobalAlias>(GV); GA && Defines(GA))
      if (const Constant *C = GA->getAliasee())
        cast<GlobalAlias>(VMap[GA])->setAliasee(Map(C));

  // Named metadata; of `nvvm.annotations`, only the entries of what the
  // partition defines.
  auto Foreign = [&](const MDNode *N) {
    if (N->getNumOperands() == 0)
      return false;
    const auto *VM = dyn_cast_or_null<ValueAsMetadata>(N->getOperand(0));
    const auto *GV = VM ? dyn_cast<GlobalValue>(VM->getValue()) : nullptr;
    const auto *F = dyn_cast_or_null<Function>(GV);
    return GV && !Defines(GV) && !(F && F->isIntrinsic());
  };
  for (const NamedMDNode &NMD : M.named_metadata()) {
    NamedMDNode *New = Part->getOrInsertNamedMetadata(NMD.getName());
    bool Annotations = NMD.getName() == "nvvm.annotations";
    for (const MDNode *N : NMD.operands())
      if (!Annotations || !Foreign(N))
        New->addOperand(
            MapMetadata(N, VMap, RF_None, nullptr, &Materializer));
  }
  dropForeignDeclarations(*Part);
  return Part;
}

static std::string writeBitcode(const Module &M) {
  std::string Out;
  raw_string_ostream OS(Out);
  WriteBitcodeToFile(M, OS);
  OS.flush();
  return Out;
}

/// Cuts every non-empty planned partition out of M, as bitcode. With
/// Consume, each function's body is deleted once the last partition that
/// holds it is cut, and its memory handed back, so the module shrinks as
/// the partitions' bitcode grows (the peak of a large link was both).
static std::vector<CodegenPartition>
cutPartitions(Module &M, std::vector<PartitionPlan> &Plans, bool Consume) {
  CutContext Cx(M);
  DenseMap<const Function *, size_t> LastCut;
  if (Consume)
    for (auto [I, Plan] : enumerate(Plans))
      for (const GlobalValue *GV : Plan.Members)
        if (const auto *F = dyn_cast<Function>(GV))
          LastCut[F] = I;
  std::vector<CodegenPartition> Out;
  for (auto [I, Plan] : enumerate(Plans)) {
    if (Plan.Members.empty())
      continue; // no component hashed here
    CodegenPartition CP;
    {
      std::unique_ptr<Module> Part;
      {
        TimeTraceScope Scope("Cut partition");
        Part = cutPartition(M, Plan, Cx);
      }
      TimeTraceScope Scope("Write partition");
      CP.Bitcode = writeBitcode(*Part);
    }
    CP.Kernels = std::move(Plan.Kernels);
    CP.Instructions = Plan.Instructions;
    Out.push_back(std::move(CP));
    if (!Consume)
      continue;
    TimeTraceScope Scope("Free what was cut");
    for (const GlobalValue *GV : Plan.Members)
      if (const auto *F = dyn_cast<Function>(GV); F && LastCut.lookup(F) == I) {
        // A member is a definition of M, and only this loop deletes one.
        auto *Body = const_cast<Function *>(F);
        Body->deleteBody();
        Cx.Gone.insert(Body);
      }
    releaseFreedMemory();
  }
  return Out;
}

Expected<std::vector<CodegenPartition>>
splitForCodegen(StringRef Bitcode, unsigned MaxPartitions) {
  TimeTraceScope Scope("Split for codegen");
  LLVMContext Ctx;
  DiagnosticCollector Diags;
  Diags.install(Ctx);
  Expected<std::unique_ptr<Module>> MOrErr =
      readOwnBitcode(MemoryBufferRef(Bitcode, "optimized module"), Ctx,
                     "the optimized module");
  if (!MOrErr)
    return MOrErr.takeError();
  std::vector<PartitionPlan> Plans =
      planPartitions(**MOrErr, MaxPartitions, /*CloneLocals=*/false);
  if (Plans.size() == 1) {
    CodegenPartition Whole;
    Whole.Bitcode = Bitcode.str();
    Whole.Kernels = std::move(Plans[0].Kernels);
    Whole.Instructions = Plans[0].Instructions;
    return std::vector<CodegenPartition>{std::move(Whole)};
  }
  std::vector<CodegenPartition> Out =
      cutPartitions(**MOrErr, Plans, /*Consume=*/false);
  if (Error E = Diags.takeError("splitting the optimized module"))
    return std::move(E);
  return Out;
}

/// The named metadata of splitForBuild's pieces (PartitionTag) and of the
/// kernel table the pieces leave out.
static constexpr StringLiteral PartitionTagMD = "fatlink.partition";
static constexpr StringLiteral KernelTableMD = "fatlink.kernels";

static Expected<std::unique_ptr<Module>> parseOptimized(StringRef Bitcode,
                                                        LLVMContext &Ctx) {
  MemoryBufferRef MB(Bitcode, "optimized module");
  if (Error E = checkBitcode(MB, "the optimized module"))
    return std::move(E);
  takeOverDebugInfoChecks();
  std::unique_ptr<Module> M;
  bool Valid = false;
  if (Error E = runRecoverably(
          [&]() -> Error {
            Expected<std::unique_ptr<Module>> P = parseBitcodeFile(MB, Ctx);
            if (!P)
              return P.takeError();
            M = std::move(*P);
            Valid = !verifyModule(*M, nullptr);
            return Error::success();
          },
          "reading the optimized module"))
    return std::move(E);
  if (!Valid)
    return createStringError("the optimized module is not valid LLVM IR "
                             "(LLVM's verifier): it is not what fatlink "
                             "wrote, or it was changed since");
  return std::move(M);
}

Expected<std::vector<std::string>> splitForBuild(StringRef Bitcode,
                                                 unsigned Count) {
  TimeTraceScope Scope("Split for build");
  assert(Count >= 1 && "the driver checks the count");
  LLVMContext Ctx;
  DiagnosticCollector Diags;
  Diags.install(Ctx);
  Expected<std::unique_ptr<Module>> MOrErr = parseOptimized(Bitcode, Ctx);
  if (!MOrErr)
    return MOrErr.takeError();
  Module &M = **MOrErr;
  if (readPartitionTag(M))
    return createStringError(
        "the module is already one partition of a split: give --split the "
        "whole program's .bc");
  std::vector<PartitionPlan> Plans =
      planPartitions(M, Count, /*CloneLocals=*/false);
  // splitForCodegen compiles the module whole where it would get one
  // partition: then so does the piece holding it.
  bool Whole = count_if(Plans, [](const PartitionPlan &P) {
                 return !P.Members.empty();
               }) <= 1;
  Type *I32 = Type::getInt32Ty(Ctx);
  auto Tag = [&](Module &Part, unsigned Index) {
    NamedMDNode *N = Part.getOrInsertNamedMetadata(PartitionTagMD);
    N->clearOperands();
    LLVMContext &C = Part.getContext();
    N->addOperand(MDNode::get(
        C, {ConstantAsMetadata::get(ConstantInt::get(I32, Index)),
            ConstantAsMetadata::get(ConstantInt::get(I32, Count)),
            ConstantAsMetadata::get(ConstantInt::getBool(C, Whole))}));
  };
  std::vector<std::string> Out;
  CutContext Cx(M);
  for (auto [Index, Plan] : enumerate(Plans)) {
    if (Whole && !Plan.Members.empty()) {
      Tag(M, Index);
      Out.push_back(writeBitcode(M));
      if (NamedMDNode *N = M.getNamedMetadata(PartitionTagMD))
        M.eraseNamedMetadata(N);
      continue;
    }
    std::unique_ptr<Module> Part = cutPartition(M, Plan, Cx);
    if (NamedMDNode *N = Part->getNamedMetadata(KernelTableMD))
      Part->eraseNamedMetadata(N);
    Tag(*Part, Index);
    Out.push_back(writeBitcode(*Part));
  }
  if (Error E = Diags.takeError("splitting the optimized module"))
    return std::move(E);
  return Out;
}

std::optional<PartitionTag> readPartitionTag(const Module &M) {
  const NamedMDNode *N = M.getNamedMetadata(PartitionTagMD);
  if (!N || N->getNumOperands() != 1 || N->getOperand(0)->getNumOperands() != 3)
    return std::nullopt;
  const MDNode *Node = N->getOperand(0);
  auto Int = [&](unsigned I) -> const ConstantInt * {
    const auto *C = dyn_cast<ConstantAsMetadata>(Node->getOperand(I));
    return C ? dyn_cast<ConstantInt>(C->getValue()) : nullptr;
  };
  const ConstantInt *Index = Int(0), *Count = Int(1), *Whole = Int(2);
  if (!Index || !Count || !Whole)
    return std::nullopt;
  PartitionTag T;
  T.Index = unsigned(Index->getZExtValue());
  T.Count = unsigned(Count->getZExtValue());
  T.Whole = !Whole->isZero();
  T.Empty = none_of(M.global_values(), [](const GlobalValue &GV) {
    return !GV.isDeclaration();
  });
  return T;
}

std::optional<PartitionTag> readPartitionTag(MemoryBufferRef Bitcode) {
  if (Error E = checkBitcode(Bitcode, Bitcode.getBufferIdentifier())) {
    consumeError(std::move(E));
    return std::nullopt;
  }
  std::optional<PartitionTag> Tag;
  Error E = runRecoverably(
      [&]() -> Error {
        LLVMContext Ctx;
        Expected<std::unique_ptr<Module>> M =
            getLazyBitcodeModule(Bitcode, Ctx);
        if (!M)
          return M.takeError();
        if (Error E = (*M)->materializeMetadata())
          return E;
        Tag = readPartitionTag(**M);
        return Error::success();
      },
      "reading it");
  consumeError(std::move(E));
  return Tag;
}

Expected<std::vector<BucketContents>> bucketContents(StringRef Bitcode,
                                                     unsigned Count) {
  LLVMContext Ctx;
  Expected<std::unique_ptr<Module>> MOrErr = parseOptimized(Bitcode, Ctx);
  if (!MOrErr)
    return MOrErr.takeError();
  std::vector<PartitionPlan> Plans =
      planPartitions(**MOrErr, Count, /*CloneLocals=*/false);
  std::vector<BucketContents> Out;
  for (PartitionPlan &P : Plans) {
    BucketContents B;
    B.Empty = P.Members.empty();
    B.Kernels = std::move(P.Kernels);
    llvm::sort(B.Kernels);
    Out.push_back(std::move(B));
  }
  return Out;
}

std::vector<CodegenPartition>
splitForOptimization(std::unique_ptr<Module> &M, unsigned MaxPartitions,
                     const StringMap<StringRef> &Units) {
  TimeTraceScope Scope("Split for optimization");
  std::vector<PartitionPlan> Plans =
      planPartitions(*M, MaxPartitions, /*CloneLocals=*/true, &Units);
  if (count_if(Plans, [](const PartitionPlan &P) {
        return !P.Members.empty();
      }) < 2)
    return {}; // one partition: the caller optimizes M whole
  std::vector<CodegenPartition> Out =
      cutPartitions(*M, Plans, /*Consume=*/true);
  TimeTraceScope FreeScope("Free the split module");
  M.reset();
  releaseFreedMemory();
  return Out;
}

} // namespace fatlink::lto
