//===- linker/PtxIsa.h - Each target's PTX ISA during a build --*- C++ -*-===//
//
// Internal to linker/. A target's PTX ISA version is planned (Targets.h),
// then raised by what the build links into it: the bitcode inputs'
// (+ptxNN, after the link) and nvcc's PTX (its `.version`, after code
// generation). These follow it through the build for -v, --json and the
// kernel rows, and hold each step to --min-driver: the oldest driver named
// must JIT-compile every PTX target's ISA (checkMinDriver), checked as soon
// as the ISA is known, before anything is written.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_PTXISA_H
#define FATLINK_LINKER_PTXISA_H

#include "linker/DeviceBuild.h"
#include "linker/Targets.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace fatlink {

class Context;

/// Takes the PTX ISA versions the link chose, with what each input was
/// compiled for and which targets it serves (-v): an input compiled for
/// sm_75 serving sm_90 lacks its sm_90-only code.
void raisePtxVersions(Context &Ctx, DeviceBuild &B);

/// A PTX target's module links nvcc's PTX into fatlink's, and takes the
/// newest `.version` of them (codegen::linkPTX): that is the PTX ISA the
/// target's code needs, which -v, --json and the kernel rows report.
void reportLinkedPtxVersions(Context &Ctx, DeviceBuild &B);

/// The targets' PTX ISA versions, in order: what checkRaisedDriverTargets
/// compares a later step with.
std::vector<unsigned> ptxVersions(llvm::ArrayRef<lto::Target> Targets);

/// --min-driver: every PTX target's PTX ISA, as \p Source set it, must be
/// one the oldest driver named JIT-compiles (Targets.h, checkMinDriver).
/// Facts say the oldest PTX ISA each arch allows; without them (a cache
/// hit probes no tools) the backend is asked for the PTX targets' arches
/// alone, a millisecond each. Nothing to check without --min-driver.
llvm::Error checkDriverTargets(const DeviceLinkConfig &C,
                               llvm::ArrayRef<lto::Target> Targets,
                               const ToolFacts *Facts,
                               PtxIsaSource Source = PtxIsaSource::Plan);

/// checkDriverTargets for the targets whose PTX ISA a step raised from
/// \p Before (one version per target), saying what raised it.
llvm::Error checkRaisedDriverTargets(const DeviceLinkConfig &C,
                                     llvm::ArrayRef<unsigned> Before,
                                     llvm::ArrayRef<lto::Target> Targets,
                                     const ToolFacts &Facts,
                                     PtxIsaSource Source);

/// A PTX target's code takes nvcc's PTX entries as they are, with their
/// `.version` (codegen::linkPTX keeps the newest): with --min-driver, one
/// that the oldest driver named cannot JIT-compile is refused before any
/// work, naming the input. (The PTX nvJitLink makes of LTO-IR is known
/// only once made: checkRaisedDriverTargets after code generation.)
llvm::Error checkNvccPtxDriver(const DeviceLinkConfig &C,
                               const lto::InputSet &Inputs,
                               llvm::ArrayRef<lto::Target> Targets,
                               const ToolFacts &Facts);

} // namespace fatlink

#endif // FATLINK_LINKER_PTXISA_H
