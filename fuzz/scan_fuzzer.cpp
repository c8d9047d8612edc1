//===- fuzz/scan_fuzzer.cpp - Fuzz the device-code scanner ---------------===//
//
// packager::scanFile is what `fatlink inspect` runs on any file: bare
// fatbins and OffloadBinaries, ELF objects, executables and shared
// libraries (.nv_fatbin, __nv_relfatbin, .llvm.offloading sections) and ar
// archives of all of those, nested.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "packager/Packager.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  fuzz::consume(packager::scanFile(In, "fuzz.o"));
  return 0;
}
