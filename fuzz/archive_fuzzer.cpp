//===- fuzz/archive_fuzzer.cpp - Fuzz the archive and rlib readers -------===//
//
// Archives reach fatlink through one walk, intake::forEachMember, two ways:
// on bytes, thin archives refused (what `fatlink inspect` does, here with
// every member's bytes touched), and through lto::readInputs (device-link,
// embed, cc, llbc: bitcode members, ELF members' .llvm.offloading images,
// skipped lib.rmeta). readInputs takes paths, so the input is written to a
// scratch file and read in both input modes.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "intake/Intake.h"
#include "lto/LTO.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  size_t NonZero = 0;
  fuzz::consume(intake::forEachMember(
      llvm::MemoryBufferRef(In, "libfuzz.rlib"), "libfuzz.rlib",
      intake::ThinArchive::Refuse, [&](intake::Member &M) {
        for (char C : M.Data.getBuffer())
          NonZero += C != 0;
        return llvm::Error::success();
      }));
  std::string Path = fuzz::writeScratch("libfuzz.rlib", In);
  fuzz::consume(lto::readInputs({Path}, lto::InputMode::Device));
  fuzz::consume(lto::readInputs({Path}, lto::InputMode::HostLink));
  return 0;
}
