//===- fuzz/archive_fuzzer.cpp - Fuzz the archive and rlib readers -------===//
//
// Archives reach fatlink two ways: packager::collectBitcode (`fatlink
// embed`: the bitcode members of an rlib) and lto::readInputs (device-link,
// cc, llbc: bitcode members, ELF members' .llvm.offloading images, skipped
// lib.rmeta). readInputs takes paths, so the input is written to a scratch
// file and read in both input modes.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "lto/LTO.h"
#include "packager/Packager.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  fuzz::consume(packager::collectBitcode(In, "libfuzz.rlib"));
  std::string Path = fuzz::writeScratch("libfuzz.rlib", In);
  fuzz::consume(lto::readInputs({Path}, lto::InputMode::Device));
  fuzz::consume(lto::readInputs({Path}, lto::InputMode::HostLink));
  return 0;
}
