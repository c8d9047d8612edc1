//===- fuzz/manifest_fuzzer.cpp - Fuzz the module descriptor reader -------===//
//
// packager::readModuleManifests is what `fatlink inspect --manifest` and
// `fatlink bindgen` run on a file: ELF objects (pointers as relocations),
// executables and shared libraries (pointers as addresses or R_*_RELATIVE
// addends) and archives of them, with the kernel tables and manifests
// their pointers and offsets lead to. Whatever the bytes, it returns the
// descriptors or an error; it never reads outside the input.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "packager/Packager.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  fuzz::consume(packager::readModuleManifests(In, "fuzz.o"));
  return 0;
}
