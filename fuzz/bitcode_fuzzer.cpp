//===- fuzz/bitcode_fuzzer.cpp - Fuzz the bitcode intake checks ----------===//
//
// lto::readInputs on one file: the type sniffing, the producer and triple
// checks every image passes before LLVM's full reader sees it (bitcode,
// rustc .rcgu.o) and the OffloadBinary extraction of ELF objects (clang
// --offload-new-driver, fatlink embed), and the arch-neutral digest each
// image of a several-arch unit gets next (lto::archNeutralDigest: LLVM's
// bitstream reader on the image, record by record).
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "lto/LTO.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  std::string Path = fuzz::writeScratch("input.o", In);
  llvm::Expected<lto::InputSet> Set =
      lto::readInputs({Path}, lto::InputMode::Device);
  if (Set) {
    for (const lto::DeviceImage &I : Set->Images) {
      if (I.Bitcode.getBufferSize() > Size)
        __builtin_trap();
      (void)lto::archNeutralDigest(I.Bitcode);
    }
  } else {
    llvm::consumeError(Set.takeError());
  }
  fuzz::consume(lto::readInputs({Path}, lto::InputMode::HostLink));
  return 0;
}
