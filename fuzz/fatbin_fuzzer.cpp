//===- fuzz/fatbin_fuzzer.cpp - Fuzz the fatbin container reader ---------===//
//
// packager::readFatbin reads fatbins from any file `fatlink inspect` is
// given and from host objects' .nv_fatbin sections. Besides memory safety,
// it checks the reader's promises: a compressed entry's payload is exactly
// its declared uncompressed size, and entries come in file order.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "packager/Packager.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<std::vector<packager::FatbinEntry>> Entries =
      packager::readFatbin(In);
  if (!Entries) {
    llvm::consumeError(Entries.takeError());
    return 0;
  }
  uint64_t Prev = 0;
  for (const packager::FatbinEntry &E : *Entries) {
    // Obfuscated entries (nvcc's LTO-IR) are kept as stored: at most the
    // stored payload, never decompressed.
    bool Obfuscated = E.Flags & packager::FlagObfuscated;
    bool Compressed =
        !Obfuscated && (E.Flags & (packager::FlagZstd | packager::FlagLZ4));
    if (Obfuscated && E.Payload.size() > E.StoredSize)
      __builtin_trap();
    if (Compressed && E.Payload.size() != E.UncompressedSize)
      __builtin_trap();
    if (!Obfuscated && !Compressed && E.Payload.size() != E.StoredSize)
      __builtin_trap();
    if (E.Offset < Prev || E.Offset >= Size)
      __builtin_trap();
    Prev = E.Offset;
  }
  return 0;
}
