//===- fuzz/link_fuzzer.cpp - Fuzz the whole device link ------------------===//
//
// One input file (bitcode, a rustc .rcgu.o or rlib, an offload object)
// through everything fatlink does with it before ptxas: readInputs, parse
// and verify, symbol resolution, link, libdevice, internalize, O2 and PTX
// generation for sm_80. Corrupt bitcode that passes the intake checks
// must end in an Error, never a crash.
//
// LLVM's crashes and fatal errors are recovered here as in the fatlink
// executable (lto::enableCrashRecovery): libLLVM is not instrumented, and
// what the property is about is that fatlink turns them into errors. What
// ASan finds in fatlink's own (instrumented) code still ends the run.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "fuzz/FuzzSupport.h"
#include "lto/LTO.h"

#include <cstdlib>

using namespace fatlink;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  lto::enableCrashRecovery();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  std::string Path = fuzz::writeScratch("input.bc", In);
  llvm::Expected<lto::InputSet> Set =
      lto::readInputs({Path}, lto::InputMode::Device);
  if (!Set) {
    fuzz::consume(Set.takeError());
    return 0;
  }
  lto::Target T;
  T.Name = T.Cpu = "sm_80";
  T.Sm = 80;
  T.PtxVersion = 70;
  lto::LinkOptions Opts;
  Opts.OptLevel = 2;
  Opts.Jobs = 1;
  const char *Cuda = std::getenv("CUDA_PATH");
  Opts.LibdevicePath = std::string(Cuda && *Cuda ? Cuda : "/usr/local/cuda") +
                       "/nvvm/libdevice/libdevice.10.bc";
  llvm::Expected<lto::LinkedProgram> P = lto::linkAndOptimize(*Set, {T}, Opts);
  if (!P) {
    fuzz::consume(P.takeError());
    return 0;
  }
  if (!P->Modules.empty())
    fuzz::consume(codegen::generatePTX(*P, {T}, 0, Opts.OptLevel));
  return 0;
}
