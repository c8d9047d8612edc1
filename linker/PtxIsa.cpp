//===- linker/PtxIsa.cpp - Each target's PTX ISA during a build ----------===//
//
// See PtxIsa.h.
//
//===----------------------------------------------------------------------===//

#include "linker/PtxIsa.h"

#include "linker/Context.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace fatlink {

void raisePtxVersions(Context &Ctx, DeviceBuild &B) {
  for (const lto::InputUse &U : B.Program.Inputs)
    Ctx.verbose("input " + U.Origin + ": compiled for " +
                (U.CompiledFor.empty() ? "(no arch)" : U.CompiledFor) +
                ", serves " + join(U.Targets, ", "));
  for (auto [T, V] : zip(B.Targets, B.Program.PtxVersions))
    if (T.PtxVersion != V) {
      T.PtxVersion = V;
      Ctx.verbose("target " + T.Name + ": PTX ISA raised to " +
                  T.ptxVersionString() +
                  ", the newest its inputs were compiled for");
    }
}

/// The `.version` of PTX text, times ten, from its first 4 KiB (the
/// header); none if it has none there.
static std::optional<unsigned> ptxTextVersion(StringRef PTX) {
  for (StringRef Line : split(PTX.take_front(4096), '\n')) {
    StringRef Directive = Line.trim();
    if (!Directive.consume_front(".version"))
      continue;
    auto [Major, Minor] = Directive.trim().split('.');
    unsigned X = 0, Y = 0;
    if (Major.getAsInteger(10, X) || Minor.trim().getAsInteger(10, Y))
      return std::nullopt;
    return X * 10 + Y;
  }
  return std::nullopt;
}

void reportLinkedPtxVersions(Context &Ctx, DeviceBuild &B) {
  for (auto [T, Out] : zip(B.Targets, B.Outputs)) {
    if (!T.IsPTX)
      continue;
    std::optional<unsigned> V = ptxTextVersion(Out.PTX);
    if (!V || *V <= T.PtxVersion)
      continue;
    T.PtxVersion = *V;
    Ctx.verbose("target " + T.Name + ": PTX ISA raised to " +
                T.ptxVersionString() +
                ", the newest of the nvcc PTX linked into it");
  }
}

Error checkDriverTargets(const DeviceLinkConfig &C,
                         ArrayRef<lto::Target> Targets, const ToolFacts *Facts,
                         PtxIsaSource Source) {
  if (!C.MinDriver)
    return Error::success();
  ToolFacts Arches;
  if (!Facts) {
    for (const lto::Target &T : Targets) {
      if (!T.IsPTX)
        continue;
      lto::ArchInfo A{T.Cpu, T.Sm};
      if (Error E = lto::fillMinPtxVersion(A))
        consumeError(std::move(E)); // unknown: the target is checked
      else
        Arches.LLVMArches.push_back(std::move(A));
    }
    Facts = &Arches;
  }
  return checkMinDriver(Targets, *C.MinDriver, C.ArchLists, C.Names, Facts,
                        Source);
}

Error checkRaisedDriverTargets(const DeviceLinkConfig &C,
                               ArrayRef<unsigned> Before,
                               ArrayRef<lto::Target> Targets,
                               const ToolFacts &Facts, PtxIsaSource Source) {
  std::vector<lto::Target> Raised;
  for (auto [V, T] : zip(Before, Targets))
    if (T.PtxVersion != V)
      Raised.push_back(T);
  return checkDriverTargets(C, Raised, &Facts, Source);
}

std::vector<unsigned> ptxVersions(ArrayRef<lto::Target> Targets) {
  std::vector<unsigned> V;
  for (const lto::Target &T : Targets)
    V.push_back(T.PtxVersion);
  return V;
}

Error checkNvccPtxDriver(const DeviceLinkConfig &C, const lto::InputSet &Inputs,
                         ArrayRef<lto::Target> Targets,
                         const ToolFacts &Facts) {
  if (!C.MinDriver)
    return Error::success();
  std::vector<lto::Target> Raised;
  std::vector<std::string> Origins;
  for (const lto::Target &T : Targets) {
    if (!T.IsPTX)
      continue;
    lto::Target R = T;
    std::string Origin;
    for (const lto::DeviceObject *O : lto::objectsForTarget(Inputs, T)) {
      std::optional<unsigned> V =
          O->IsPTX ? ptxTextVersion(O->Data.getBuffer()) : std::nullopt;
      if (V && *V > R.PtxVersion) {
        R.PtxVersion = *V;
        Origin = O->Origin;
      }
    }
    if (Origin.empty())
      continue;
    Raised.push_back(std::move(R));
    Origins.push_back(std::move(Origin));
  }
  return checkMinDriver(Raised, *C.MinDriver, C.ArchLists, C.Names, &Facts,
                        PtxIsaSource::Nvcc, Origins);
}

} // namespace fatlink
