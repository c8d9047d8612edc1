//===- lto/Summary.cpp - Plan a partition-first link from the inputs -----===//
//
// A partition-first link (docs/lto.md, "Memory") never holds the whole
// program's IR. Each input is read alone and summarized (ImageGraph: its
// globals, each with what it references), then let go; the summaries are
// resolved as the IR linker would resolve the modules (which definition of
// a weak or linkonce symbol prevails), internalized and dead-stripped as
// the whole link would do it, and planned (planGraph) into the same
// partitions the whole link's split would cut. Each partition is then
// linked from only the inputs that define its members.
//
//===----------------------------------------------------------------------===//

#include "lto/Target.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TimeProfiler.h"

using namespace llvm;

namespace fatlink::lto {

std::vector<AsmVariable> asmDefinedVariables(StringRef Asm) {
  std::vector<AsmVariable> Vars;
  // Statements at brace depth 0, comments removed.
  std::string Text;
  for (StringRef Line : split(Asm, '\n'))
    Text += Line.split("//").first.str() + " ";
  std::string Stmt;
  auto Finish = [&] {
    std::string Done = std::exchange(Stmt, std::string());
    SmallVector<StringRef, 8> Tokens;
    StringRef(Done).split(Tokens, ' ', -1, /*KeepEmpty=*/false);
    AsmVariable V;
    bool Space = false;
    for (StringRef T : Tokens) {
      T = T.trim("\t\r");
      if (T.empty())
        continue;
      if (T == ".extern")
        return;
      if (T.starts_with(".attribute")) // .attribute(.managed)
        continue;
      if (T.contains('(')) // a function: its parameters are not variables
        return;
      if (T == ".weak" || T == ".common")
        V.Weak = true;
      else if (T == ".global" || T == ".shared" || T == ".const") {
        Space = true;
        V.Shared = T == ".shared";
      } else if (Space && !T.starts_with(".") && !isDigit(T.front())) {
        V.Name = T.take_until([](char C) {
                    return C == '[' || C == '<' || C == '=';
                  }).str();
        break;
      }
    }
    if (Space && !V.Name.empty())
      Vars.push_back(std::move(V));
  };
  unsigned Depth = 0;
  bool Initializer = false; // braces after '=' in a depth-0 statement
  for (char C : Text) {
    if (Depth > 0) {
      if (C == '{')
        ++Depth;
      else if (C == '}' && --Depth == 0 && !Initializer)
        Stmt.clear(); // a function's body: nothing of it is kept
      continue;
    }
    if (C == '{') {
      Initializer = StringRef(Stmt).contains('=');
      ++Depth;
    } else if (C == ';') {
      Finish();
      Initializer = false;
    } else {
      Stmt += C == '\t' ? ' ' : C;
    }
  }
  return Vars;
}

std::string asmGlobalVariable(const Module &M) {
  for (const AsmVariable &V : asmDefinedVariables(M.getModuleInlineAsm()))
    if (!V.Shared)
      return V.Name;
  return "";
}

/// Why M cannot be linked in partitions; empty if it can. What is refused
/// has no CUDA or Rust device code behind it on NVPTX (no comdats, aliases
/// or constructors there) and link semantics the summary does not model,
/// or is a variable of module-level PTX that each partition would define.
static std::string unsupportedIn(const Module &M) {
  if (!M.alias_empty())
    return "an alias";
  if (!M.ifunc_empty())
    return "an ifunc";
  // Each partition would define it: one copy per partition, or nvlink's
  // "Multiple definition".
  if (std::string V = asmGlobalVariable(M); !V.empty())
    return "the variable " + V + " of module-level PTX";
  for (const GlobalValue &GV : M.global_values()) {
    if (const Comdat *C = GV.getComdat();
        C && C->getSelectionKind() != Comdat::Any)
      return ("comdat " + C->getName() + ", not of selection kind any").str();
    if (GV.hasCommonLinkage() || GV.hasAvailableExternallyLinkage())
      return ("a " + Twine(GV.hasCommonLinkage() ? "common" : "available_externally") +
              " symbol").str();
    if (GV.hasAppendingLinkage() && GV.getName() != "llvm.used" &&
        GV.getName() != "llvm.compiler.used")
      return ("the special variable " + GV.getName()).str();
  }
  return "";
}

ImageGraph imageGraphOf(const Module &M) {
  ImageGraph G;
  G.Unit = unitName(M);
  G.Unsupported = unsupportedIn(M);
  if (!G.Unsupported.empty())
    return G;
  DenseMap<const GlobalValue *, uint32_t> Index;
  for (const GlobalValue &GV : M.global_values())
    Index[&GV] = uint32_t(Index.size());
  G.Globals.resize(Index.size());
  for (const GlobalValue &GV : M.global_values()) {
    ImageGraph::Global &Out = G.Globals[Index.lookup(&GV)];
    Out.Name = GV.getName().str();
    Out.Linkage = GV.getLinkage();
    Out.Reserved = GV.getName().starts_with("llvm.");
    Out.Definition = !GV.isDeclarationForLinker();
    const auto *F = dyn_cast<Function>(&GV);
    Out.Function = F != nullptr;
    Out.Kernel = F && F->getCallingConv() == CallingConv::PTX_Kernel;
    if (const auto *V = dyn_cast<GlobalVariable>(&GV)) {
      Out.ConstantUnnamed = V->isConstant() && V->hasGlobalUnnamedAddr();
      Out.ExternallyInitialized = V->isExternallyInitialized();
    }
    if (F)
      Out.Instructions = F->getInstructionCount();
    if (const Comdat *C = GV.getComdat())
      Out.Comdat = C->getName().str();
    if (!Out.Definition || Out.Reserved)
      continue;
    forEachGlobalReferencedBy(GV, [&](const GlobalValue *Ref) {
      if (Ref != &GV)
        Out.Refs.push_back(Index.lookup(Ref));
    });
  }
  for (bool CompilerUsed : {false, true}) {
    SmallVector<GlobalValue *, 8> Used;
    collectUsedGlobalVariables(M, Used, CompilerUsed);
    for (const GlobalValue *GV : Used)
      G.Used.push_back(Index.lookup(GV));
  }
  return G;
}

ProgramGraph programGraph(ArrayRef<ImageGraph> Images,
                          const StringSet<> &Exports) {
  TimeTraceScope Scope("Resolve summaries");
  // The definition of each external name that the IR linker keeps, linking
  // the images in order (ModuleLinker::shouldLinkFromSource): the first,
  // unless a later one is strong and it is not, or it is linkonce and a
  // later one weak.
  // A comdat (selection any) prevails whole, from the first image that
  // has it; its members elsewhere are dropped.
  StringMap<std::pair<uint32_t, uint32_t>> Prevailing;
  StringMap<uint32_t> ComdatImage;
  for (auto [I, Image] : enumerate(Images))
    for (const ImageGraph::Global &G : Image.Globals)
      if (G.Definition && !G.Comdat.empty())
        ComdatImage.try_emplace(G.Comdat, uint32_t(I));
  auto InPrevailingComdat = [&](size_t I, const ImageGraph::Global &G) {
    return G.Comdat.empty() || ComdatImage.lookup(G.Comdat) == I;
  };
  for (auto [I, Image] : enumerate(Images))
    for (auto [J, G] : enumerate(Image.Globals)) {
      if (!G.Definition || G.Reserved || GlobalValue::isLocalLinkage(G.Linkage))
        continue;
      if (!G.Comdat.empty()) {
        if (InPrevailingComdat(I, G))
          Prevailing[G.Name] = {uint32_t(I), uint32_t(J)};
        continue;
      }
      auto [It, New] = Prevailing.try_emplace(G.Name, uint32_t(I), uint32_t(J));
      if (New)
        continue;
      const ImageGraph::Global &Cur =
          Images[It->second.first].Globals[It->second.second];
      bool CurWeak = GlobalValue::isWeakForLinker(Cur.Linkage);
      bool NewWeak = GlobalValue::isWeakForLinker(G.Linkage);
      if ((CurWeak && !NewWeak) ||
          (CurWeak && GlobalValue::isLinkOnceLinkage(Cur.Linkage) &&
           GlobalValue::isWeakLinkage(G.Linkage)))
        It->second = {uint32_t(I), uint32_t(J)};
    }

  // The nodes: local definitions and prevailing external ones.
  ProgramGraph P;
  std::vector<std::vector<uint32_t>> NodeOf(Images.size());
  for (auto [I, Image] : enumerate(Images)) {
    NodeOf[I].assign(Image.Globals.size(), UINT32_MAX);
    for (auto [J, G] : enumerate(Image.Globals)) {
      if (!G.Definition || G.Reserved || !InPrevailingComdat(I, G))
        continue;
      if (!GlobalValue::isLocalLinkage(G.Linkage)) {
        auto It = Prevailing.find(G.Name);
        if (It->second != std::make_pair(uint32_t(I), uint32_t(J)))
          continue;
      }
      NodeOf[I][J] = uint32_t(P.Where.size());
      P.Where.push_back({uint32_t(I), uint32_t(J)});
    }
  }
  auto Resolve = [&](size_t I, uint32_t J) -> uint32_t {
    const ImageGraph::Global &G = Images[I].Globals[J];
    if (NodeOf[I][J] != UINT32_MAX || GlobalValue::isLocalLinkage(G.Linkage) ||
        G.Reserved)
      return NodeOf[I][J];
    auto It = Prevailing.find(G.Name);
    return It == Prevailing.end()
               ? UINT32_MAX
               : NodeOf[It->second.first][It->second.second];
  };

  // What internalization keeps external: kernels, host-visible variables,
  // what Exports names and what the used lists hold (internalizeModule
  // preserves both lists' members). Those, and the used lists' members,
  // are what dead-code removal starts from.
  StringSet<> Preserved;
  for (const auto &E : Exports)
    Preserved.insert(E.getKey());
  std::vector<uint32_t> Live;
  for (auto [I, Image] : enumerate(Images))
    for (uint32_t J : Image.Used) {
      Preserved.insert(Image.Globals[J].Name);
      if (uint32_t N = Resolve(I, J); N != UINT32_MAX)
        Live.push_back(N);
    }
  size_t Count = P.Where.size();
  std::vector<bool> External(Count);
  for (uint32_t N = 0; N < Count; ++N) {
    const ImageGraph::Global &G = P.global(Images, N);
    External[N] = !GlobalValue::isLocalLinkage(G.Linkage) &&
                  (G.Kernel || G.ExternallyInitialized ||
                   Preserved.contains(G.Name));
    if (External[N])
      Live.push_back(N);
  }
  // A comdat's members live, and are internalized, together: one kept
  // external keeps them all (internalizeModule); internalized, a comdat of
  // one member is dropped, one of several stays, joining its members.
  StringMap<std::vector<uint32_t>> ComdatMembers;
  for (uint32_t N = 0; N < Count; ++N)
    if (const std::string &C = P.global(Images, N).Comdat; !C.empty())
      ComdatMembers[C].push_back(N);
  StringMap<unsigned> ComdatNumber;
  for (auto &[Name, Members] : ComdatMembers) {
    if (any_of(Members, [&](uint32_t N) { return External[N]; }))
      for (uint32_t N : Members) {
        External[N] = true;
        Live.push_back(N);
      }
  }
  std::vector<std::vector<uint32_t>> Refs(Count);
  for (uint32_t N = 0; N < Count; ++N) {
    auto [I, J] = P.Where[N];
    for (uint32_t R : Images[I].Globals[J].Refs)
      if (uint32_t To = Resolve(I, R); To != UINT32_MAX && To != N)
        Refs[N].push_back(To);
    if (const std::string &C = P.global(Images, N).Comdat; !C.empty())
      for (uint32_t M : ComdatMembers[C])
        if (M != N)
          Refs[N].push_back(M);
  }
  std::vector<bool> IsLive(Count);
  for (size_t K = 0; K < Live.size(); ++K) {
    uint32_t N = Live[K];
    if (IsLive[N])
      continue;
    IsLive[N] = true;
    for (uint32_t R : Refs[N])
      if (!IsLive[R])
        Live.push_back(R);
  }

  // The graph of what lives, in link order.
  std::vector<uint32_t> GraphIndex(Count, UINT32_MAX);
  std::vector<std::pair<uint32_t, uint32_t>> Where;
  for (uint32_t N = 0; N < Count; ++N)
    if (IsLive[N]) {
      GraphIndex[N] = uint32_t(Where.size());
      Where.push_back(P.Where[N]);
    }
  for (uint32_t N = 0; N < Count; ++N) {
    if (!IsLive[N])
      continue;
    const ImageGraph::Global &G = P.global(Images, N);
    RefGraph::Node &Node = P.Graph.Nodes.emplace_back();
    Node.Name = G.Name;
    Node.Local = !External[N];
    const std::vector<uint32_t> *Group =
        G.Comdat.empty() ? nullptr : &ComdatMembers[G.Comdat];
    bool KeepsComdat = Group && (External[N] || Group->size() > 1);
    if (KeepsComdat)
      Node.Comdat = ComdatNumber.try_emplace(G.Comdat, ComdatNumber.size() + 1)
                        .first->second;
    Node.Clonable = Node.Local && !KeepsComdat &&
                    (G.Function ? !G.Kernel : G.ConstantUnnamed);
    Node.Kernel = G.Kernel;
    Node.Instructions = G.Instructions;
    P.Graph.setUnit(Node, Images[P.Where[N].first].Unit);
    for (uint32_t R : Refs[N])
      Node.Refs.push_back(GraphIndex[R]);
    if (G.Kernel)
      ++P.Kernels;
  }
  P.Where = std::move(Where);
  return P;
}

} // namespace fatlink::lto
