//===- lto/Codegen.cpp - NVPTX code generation and the arch table --------===//
//
// PTX generation for one target from its optimized module, and what the
// linked LLVM knows about NVIDIA processors. The arch table is read from the
// NVPTX backend's own subtarget tables: each processor implies the minimum
// PTX ISA feature it needs (sm_90a implies ptx80), so a newer LLVM brings its
// arches with no change here.
//
// Code generation is thread-safe: each call parses the optimized bitcode
// into a private LLVMContext, so targets are compiled in parallel and the
// result does not depend on the order they finish in. Nor on the process:
// the NVPTX printer's one order that followed heap addresses (see
// orderGlobalsForPrinting) is fixed by the module before it runs.
//
//===----------------------------------------------------------------------===//

#include "lto/LTO.h"
#include "lto/Support.h"
#include "lto/Target.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

using namespace llvm;

namespace fatlink::lto {

static constexpr const char *DeviceTriple = "nvptx64-nvidia-cuda";

std::string ptxVersionString(unsigned V) {
  return std::to_string(V / 10) + "." + std::to_string(V % 10);
}

std::string Target::ptxVersionString() const {
  return lto::ptxVersionString(PtxVersion);
}

std::optional<ArchName> parseArchName(StringRef Name) {
  ArchName A;
  A.Cpu = Name.str();
  if (!Name.consume_front("sm_"))
    return std::nullopt;
  StringRef Digits = Name.take_while([](char C) { return isDigit(C); });
  StringRef Suffix = Name.drop_front(Digits.size());
  if (Digits.empty() || Digits.getAsInteger(10, A.Sm) ||
      !(Suffix.empty() || Suffix == "a" || Suffix == "f"))
    return std::nullopt;
  A.Suffix = Suffix.str();
  return A;
}

static const llvm::Target &nvptxTarget() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string Err;
  const llvm::Target *T = TargetRegistry::lookupTarget(Triple(DeviceTriple), Err);
  assert(T && "the NVPTX backend is part of every LLVM fatlink links");
  return *T;
}

Expected<std::unique_ptr<TargetMachine>> createTargetMachine(const Target &T,
                                                            unsigned OptLevel) {
  CodeGenOptLevel Levels[] = {CodeGenOptLevel::None, CodeGenOptLevel::Less,
                              CodeGenOptLevel::Default,
                              CodeGenOptLevel::Aggressive};
  std::string Features = "+ptx" + std::to_string(T.PtxVersion);
  std::unique_ptr<TargetMachine> TM(nvptxTarget().createTargetMachine(
      Triple(DeviceTriple), T.Cpu, Features, TargetOptions(), std::nullopt,
      std::nullopt, Levels[std::min(OptLevel, 3u)]));
  if (!TM)
    return makeError("cannot create an NVPTX target machine for %s",
                     T.Cpu.c_str());
  return std::move(TM);
}

/// Processor and feature tables of the NVPTX backend.
static std::unique_ptr<MCSubtargetInfo> nvptxSubtargetInfo() {
  return std::unique_ptr<MCSubtargetInfo>(
      nvptxTarget().createMCSubtargetInfo(Triple(DeviceTriple), "", ""));
}

/// "ptx78" -> 78.
static std::optional<unsigned> ptxFeatureVersion(StringRef Key) {
  unsigned V;
  if (!Key.consume_front("ptx") || Key.getAsInteger(10, V))
    return std::nullopt;
  return V;
}

/// The PTX ISA version the backend picks for Cpu when given none: the
/// oldest that supports the processor. The backend keeps this rule in code,
/// not in its tables, so ask it: generate an empty module and read the
/// `.version` directive.
static Expected<unsigned> minPtxVersion(StringRef Cpu) {
  std::unique_ptr<TargetMachine> TM(nvptxTarget().createTargetMachine(
      Triple(DeviceTriple), Cpu, "", TargetOptions(), std::nullopt));
  if (!TM)
    return makeError("cannot create an NVPTX target machine for %s",
                     Cpu.str().c_str());
  LLVMContext Ctx;
  Module M("probe", Ctx);
  M.setTargetTriple(Triple(DeviceTriple));
  M.setDataLayout(TM->createDataLayout());
  SmallString<256> PTX;
  raw_svector_ostream OS(PTX);
  legacy::PassManager PM;
  if (TM->addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX for %s",
                     Cpu.str().c_str());
  PM.run(M);
  StringRef Text = PTX.str();
  size_t Pos = Text.find(".version ");
  unsigned Major, Minor;
  if (Pos != StringRef::npos) {
    StringRef V = Text.drop_front(Pos + strlen(".version "));
    if (!V.consumeInteger(10, Major) && V.consume_front(".") &&
        !V.consumeInteger(10, Minor))
      return Major * 10 + Minor;
  }
  return makeError("the NVPTX backend wrote no .version for %s",
                   Cpu.str().c_str());
}

Expected<std::vector<ArchInfo>> getLLVMArches() {
  std::unique_ptr<MCSubtargetInfo> STI = nvptxSubtargetInfo();
  if (!STI)
    return makeError("the NVPTX backend has no subtarget information");
  std::vector<ArchInfo> Arches;
  for (const SubtargetSubTypeKV &Proc : STI->getAllProcessorDescriptions()) {
    std::optional<ArchName> A = parseArchName(Proc.Key);
    if (!A)
      continue;
    ArchInfo Info;
    Info.Cpu = A->Cpu;
    Info.Sm = A->Sm;
    Arches.push_back(std::move(Info));
  }
  // Oldest first; plain, then the `a` and `f` variants of each.
  llvm::sort(Arches, [](const ArchInfo &A, const ArchInfo &B) {
    return std::make_tuple(A.Sm, A.Cpu) < std::make_tuple(B.Sm, B.Cpu);
  });
  return Arches;
}

Error fillMinPtxVersion(ArchInfo &Arch) {
  if (Arch.MinPtxVersion)
    return Error::success();
  Expected<unsigned> V = minPtxVersion(Arch.Cpu);
  if (!V)
    return V.takeError();
  Arch.MinPtxVersion = *V;
  return Error::success();
}

Expected<unsigned> getLLVMMaxPtxVersion() {
  std::unique_ptr<MCSubtargetInfo> STI = nvptxSubtargetInfo();
  if (!STI)
    return makeError("the NVPTX backend has no subtarget information");
  unsigned Max = 0;
  for (const SubtargetFeatureKV &F : STI->getAllProcessorFeatures())
    if (std::optional<unsigned> V = ptxFeatureVersion(F.Key))
      Max = std::max(Max, *V);
  return Max;
}

Expected<std::string> generatePTX(const LinkedProgram &Program,
                                  ArrayRef<Target> Targets, size_t Index,
                                  unsigned OptLevel) {
  const OptimizedModule *OM = nullptr;
  for (const OptimizedModule &Candidate : Program.Modules)
    if (is_contained(Candidate.TargetIndices, Index))
      OM = &Candidate;
  assert(OM && "every target belongs to one optimized module");
  Target T = Targets[Index];
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

Expected<std::string> generatePTX(StringRef Bitcode, const Target &T,
                                  unsigned OptLevel) {
  TimeTraceScope Scope("Codegen", T.Name);
  LLVMContext Ctx;
  DiagnosticCollector Diags;
  Diags.install(Ctx);
  Expected<std::unique_ptr<Module>> MOrErr = parseBitcodeFile(
      MemoryBufferRef(Bitcode, "optimized module"), Ctx);
  if (!MOrErr)
    return MOrErr.takeError();
  Module &M = **MOrErr;
  setTargetAttributes(M, T);
  orderGlobalsForPrinting(M);

  Expected<std::unique_ptr<TargetMachine>> TMOrErr =
      createTargetMachine(T, OptLevel);
  if (!TMOrErr)
    return TMOrErr.takeError();
  M.setDataLayout((*TMOrErr)->createDataLayout());

  SmallString<0> PTX;
  raw_svector_ostream OS(PTX);
  legacy::PassManager PM;
  if ((*TMOrErr)->addPassesToEmitFile(PM, OS, nullptr,
                                      CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX for %s",
                     T.Cpu.c_str());
  // The NVPTX printer aborts on what it cannot print (the driver refuses
  // the causes it knows first: names that are not PTX identifiers).
  if (Error E = runRecoverably(
          [&] {
            PM.run(M);
            return Error::success();
          },
          "generating PTX for " + T.Name))
    return std::move(E);
  if (Error E = Diags.takeError("code generation for " + T.Name))
    return std::move(E);
  return std::string(PTX.str());
}

std::optional<std::string> retargetPTX(StringRef PTX, const Target &From,
                                       const Target &To) {
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

} // namespace fatlink::lto
