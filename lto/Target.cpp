//===- lto/Target.cpp - The NVPTX target machine and the arch table ------===//
//
// What the linked LLVM knows about NVIDIA processors, and the NVPTX target
// machine that optimization (here) and code generation (codegen/PTX.cpp)
// both create. The arch table is read from the NVPTX backend's own
// subtarget tables: each processor implies the minimum PTX ISA feature it
// needs (sm_90a implies ptx80), so a newer LLVM brings its arches with no
// change here.
//
//===----------------------------------------------------------------------===//

#include "lto/Target.h"
#include "lto/LTO.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
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
  const llvm::Target *T =
      TargetRegistry::lookupTarget(Triple(DeviceTriple), Err);
  assert(T && "the NVPTX backend is part of every LLVM fatlink links");
  return *T;
}

Expected<std::unique_ptr<TargetMachine>>
createTargetMachine(const Target &T, unsigned OptLevel) {
  CodeGenOptLevel Levels[] = {CodeGenOptLevel::None, CodeGenOptLevel::Less,
                              CodeGenOptLevel::Default,
                              CodeGenOptLevel::Aggressive};
  std::string Features = "+ptx" + std::to_string(T.PtxVersion);
  std::unique_ptr<TargetMachine> TM(nvptxTarget().createTargetMachine(
      Triple(DeviceTriple), T.Cpu, Features, TargetOptions(), std::nullopt,
      std::nullopt, Levels[std::min(OptLevel, 3u)]));
  if (!TM)
    return createStringError("cannot create an NVPTX target machine for %s",
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
    return createStringError("cannot create an NVPTX target machine for %s",
                             Cpu.str().c_str());
  LLVMContext Ctx;
  Module M("probe", Ctx);
  M.setTargetTriple(Triple(DeviceTriple));
  M.setDataLayout(TM->createDataLayout());
  SmallString<256> PTX;
  raw_svector_ostream OS(PTX);
  legacy::PassManager PM;
  if (TM->addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::AssemblyFile))
    return createStringError("the NVPTX backend cannot emit PTX for %s",
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
  return createStringError("the NVPTX backend wrote no .version for %s",
                           Cpu.str().c_str());
}

Expected<std::vector<ArchInfo>> getLLVMArches() {
  std::unique_ptr<MCSubtargetInfo> STI = nvptxSubtargetInfo();
  if (!STI)
    return createStringError("the NVPTX backend has no subtarget information");
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

Error checkDataLayout(StringRef Layout, StringRef Origin) {
  if (Layout.empty())
    return Error::success();
  static const std::string Want = [] {
    std::unique_ptr<TargetMachine> TM(nvptxTarget().createTargetMachine(
        Triple(DeviceTriple), "", "", TargetOptions(), std::nullopt));
    return TM ? TM->createDataLayout().getStringRepresentation()
              : std::string();
  }();
  Expected<DataLayout> Have = DataLayout::parse(Layout);
  if (!Have)
    return createStringError("%s: its data layout '%s' does not parse: %s",
                             Origin.str().c_str(), Layout.str().c_str(),
                             toString(Have.takeError()).c_str());
  DataLayout Target = cantFail(DataLayout::parse(Want));
  bool Same = Have->isBigEndian() == Target.isBigEndian();
  // Generic, global, shared, constant, local.
  for (unsigned AS : {0, 1, 3, 4, 5})
    Same &= Have->getPointerSizeInBits(AS) == Target.getPointerSizeInBits(AS);
  if (Same)
    return Error::success();
  return createStringError(
      "%s: its data layout '%s' has other pointer sizes or byte order than "
      "the NVPTX backend's '%s': its code would be compiled wrongly; compile "
      "it for nvptx64 without -fcuda-short-ptr (or -nvptx-short-ptr)",
      Origin.str().c_str(), Layout.str().c_str(), Want.c_str());
}

Expected<unsigned> getLLVMMaxPtxVersion() {
  std::unique_ptr<MCSubtargetInfo> STI = nvptxSubtargetInfo();
  if (!STI)
    return createStringError("the NVPTX backend has no subtarget information");
  unsigned Max = 0;
  for (const SubtargetFeatureKV &F : STI->getAllProcessorFeatures())
    if (std::optional<unsigned> V = ptxFeatureVersion(F.Key))
      Max = std::max(Max, *V);
  return Max;
}

} // namespace fatlink::lto
