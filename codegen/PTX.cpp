//===- codegen/PTX.cpp - PTX from optimized modules: the NVPTX backend ---===//
//
// PTX for one target from its optimized module (or a partition of one),
// and the rewrite of one arch's PTX header into another's. Value to value:
// no processes, no files; the rest of codegen/ runs ptxas and nvlink on
// what comes out.
//
// Generation is thread-safe: each call parses the optimized bitcode into a
// private LLVMContext, so targets are compiled in parallel and the result
// does not depend on the order they finish in. Nor on the process: the
// NVPTX printer's one order that followed heap addresses (see
// orderGlobalsForPrinting) is fixed by the module before it runs. The
// target machine, target attributes, diagnostic collector and crash
// recovery are lto/'s, shared with optimization.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace fatlink::codegen {

Expected<std::string> generatePTX(const lto::LinkedProgram &Program,
                                  ArrayRef<lto::Target> Targets, size_t Index,
                                  unsigned OptLevel) {
  const lto::OptimizedModule *OM = nullptr;
  for (const lto::OptimizedModule &Candidate : Program.Modules)
    if (is_contained(Candidate.TargetIndices, Index))
      OM = &Candidate;
  assert(OM && "every target belongs to one optimized module");
  lto::Target T = Targets[Index];
  if (Index < Program.PtxVersions.size())
    T.PtxVersion = Program.PtxVersions[Index];
  return generatePTX(OM->Bitcode, T, OptLevel);
}

/// The global variables GV's initializer refers to, in operand order,
/// looking through constant expressions and aggregates.
static std::vector<GlobalVariable *> referencedVariables(GlobalVariable &GV) {
  std::vector<GlobalVariable *> Out;
  if (!GV.hasInitializer())
    return Out;
  SmallPtrSet<const Constant *, 16> Seen;
  std::vector<const Constant *> Work{GV.getInitializer()};
  while (!Work.empty()) {
    const Constant *C = Work.back();
    Work.pop_back();
    if (!Seen.insert(C).second)
      continue;
    if (const auto *Var = dyn_cast<GlobalVariable>(C)) {
      Out.push_back(const_cast<GlobalVariable *>(Var)); // once: Seen
      continue;
    }
    // Through aliases and functions too, as the printer looks (their
    // operands are aliasees, personalities). Pushed in reverse, so that
    // operands are visited in order.
    for (const Use &Op : reverse(C->operands()))
      if (const auto *OpC = dyn_cast<Constant>(Op.get()))
        Work.push_back(OpC);
  }
  return Out;
}

/// Puts M's global variables in an order where each comes after the global
/// variables its initializer refers to, and otherwise in module order;
/// those in `llvm.metadata` (llvm.used, llvm.compiler.used), which are not
/// printed, last.
///
/// PTX has no forward references, so the NVPTX printer emits a global only
/// after those its initializer refers to; LLVM 22's printer
/// (VisitGlobalVariableForEmission) visits them in the iteration order of a
/// DenseSet of pointers, that is by heap address. Where a global referred
/// to two or more not yet emitted, their order in the PTX changed from run
/// to run, even at -j1 (clang's `@llvm.compiler.used` comes first and
/// refers to every host-visible device global: a program with two of them
/// was enough). In the order made here, every global's references are
/// already emitted when the printer reaches it, so the PTX follows the
/// module order, which the inputs define.
static void orderGlobalsForPrinting(Module &M) {
  enum class State { Visiting, Placed };
  DenseMap<GlobalVariable *, State> States;
  std::vector<GlobalVariable *> Order;
  struct Frame {
    GlobalVariable *GV;
    std::vector<GlobalVariable *> Deps;
    size_t Next = 0;
  };
  auto Place = [&](GlobalVariable &Root) {
    // Depth first, dependencies in operand order; a cycle (which the
    // printer refuses) is cut where it closes.
    if (!States.try_emplace(&Root, State::Visiting).second)
      return;
    std::vector<Frame> Stack;
    Stack.push_back({&Root, referencedVariables(Root)});
    while (!Stack.empty()) {
      Frame &F = Stack.back();
      if (F.Next == F.Deps.size()) {
        States[F.GV] = State::Placed;
        Order.push_back(F.GV);
        Stack.pop_back();
        continue;
      }
      GlobalVariable *Dep = F.Deps[F.Next++];
      if (States.try_emplace(Dep, State::Visiting).second)
        Stack.push_back({Dep, referencedVariables(*Dep)}); // F is stale now
    }
  };
  auto IsMetadata = [](const GlobalVariable &GV) {
    return GV.getSection() == "llvm.metadata";
  };
  for (GlobalVariable &GV : M.globals())
    if (!IsMetadata(GV))
      Place(GV);
  for (GlobalVariable &GV : M.globals())
    if (IsMetadata(GV))
      Place(GV);
  for (GlobalVariable *GV : Order) {
    M.removeGlobalVariable(GV);
    M.insertGlobalVariable(GV);
  }
}

Expected<std::string> generatePTX(StringRef Bitcode, const lto::Target &T,
                                  unsigned OptLevel) {
  TimeTraceScope Scope("Codegen", T.Name);
  LLVMContext Ctx;
  lto::DiagnosticCollector Diags;
  Diags.install(Ctx);
  Expected<std::unique_ptr<Module>> MOrErr =
      lto::readOwnBitcode(MemoryBufferRef(Bitcode, "optimized module"), Ctx,
                          "the optimized module for " + T.Name);
  if (!MOrErr)
    return MOrErr.takeError();
  Module &M = **MOrErr;
  lto::setTargetAttributes(M, T);
  orderGlobalsForPrinting(M);

  Expected<std::unique_ptr<TargetMachine>> TMOrErr =
      lto::createTargetMachine(T, OptLevel);
  if (!TMOrErr)
    return TMOrErr.takeError();
  M.setDataLayout((*TMOrErr)->createDataLayout());

  SmallString<0> PTX;
  raw_svector_ostream OS(PTX);
  legacy::PassManager PM;
  if ((*TMOrErr)->addPassesToEmitFile(PM, OS, nullptr,
                                      CodeGenFileType::AssemblyFile))
    return createStringError("the NVPTX backend cannot emit PTX for %s",
                             T.Cpu.c_str());
  // The NVPTX printer aborts on what it cannot print (the driver refuses
  // the causes it knows first: names that are not PTX identifiers).
  if (Error E = lto::runRecoverably(
          [&] {
            PM.run(M);
            return Error::success();
          },
          "generating PTX for " + T.Name, /*OnProgram=*/true))
    return std::move(E);
  if (Error E = Diags.takeError("code generation for " + T.Name))
    return std::move(E);
  return std::string(PTX.str());
}

std::optional<std::string> retargetPTX(StringRef PTX, const lto::Target &From,
                                       const lto::Target &To) {
  // The header is comments and blank lines, then `.version X.Y` and
  // `.target sm_NN[, modifiers]`, each on its own line.
  std::string Version = ".version " + From.ptxVersionString();
  std::string TargetDirective = ".target " + From.Cpu;
  size_t Pos = 0;
  std::optional<size_t> VersionAt, TargetAt;
  while (Pos < PTX.size() && !TargetAt) {
    size_t End = PTX.find('\n', Pos);
    if (End == StringRef::npos)
      End = PTX.size();
    StringRef Line = PTX.slice(Pos, End).rtrim('\r');
    if (!VersionAt && Line == Version) {
      VersionAt = Pos;
    } else if (VersionAt && Line.starts_with(TargetDirective) &&
               (Line.size() == TargetDirective.size() ||
                Line[TargetDirective.size()] == ',')) {
      TargetAt = Pos;
    } else if (!Line.empty() && !Line.starts_with("//")) {
      return std::nullopt;
    }
    Pos = End + 1;
  }
  if (!TargetAt)
    return std::nullopt;
  std::string Out;
  Out.reserve(PTX.size() + 8);
  Out += PTX.take_front(*VersionAt);
  Out += ".version " + To.ptxVersionString();
  Out += PTX.slice(*VersionAt + Version.size(), *TargetAt);
  Out += ".target " + To.Cpu;
  Out += PTX.drop_front(*TargetAt + TargetDirective.size());
  return Out;
}

} // namespace fatlink::codegen
