//===- fuzz/image_fuzzer.cpp - Fuzz cubin/PTX identification -------------===//
//
// packager::describeImage reads a cubin's ELF header, sections and notes
// (.nv.compat, .note.nv.tkinfo) or a PTX file's leading directives, and
// packager::minifyPtx rewrites PTX text; both see whatever ptxas or a user
// hands them. minifyPtx must never grow its input.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "packager/Packager.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  fuzz::consume(packager::describeImage(In));
  if (packager::minifyPtx(In).size() > Size)
    __builtin_trap();
  return 0;
}
