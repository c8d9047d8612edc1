//===- fuzz/embed_roundtrip_fuzzer.cpp - fatlink embed, then scanFile ----===//
//
// A round trip through what `fatlink embed` writes: the fuzz bytes become
// one to four device bitcode modules (bitcode magic, then any bytes: the
// writer does not parse them), each with an arch and a triple, and a host
// arch; packager::writeOffloadObject writes the .llvm.offloading object and
// packager::scanFile (`fatlink inspect`'s reader) must give back the same
// images in the same order: OffloadBinary, kind "bc", arch, triple and the
// exact bitcode bytes. An image the writer must refuse (no arch, a NUL in
// its arch or triple, no bitcode magic) must be refused.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "fuzz/RoundTrip.h"
#include "packager/Packager.h"

using namespace fatlink;
using namespace fatlink::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  ByteReader R(llvm::StringRef(reinterpret_cast<const char *>(Data), Size));
  std::vector<packager::OffloadImage> Images(1 + R.byte() % 4);
  bool Valid = true;
  for (packager::OffloadImage &Img : Images) {
    uint8_t K = R.byte();
    // Mostly arches and triples as fatlink writes them; sometimes any bytes.
    Img.Arch = K & 1 ? R.bytes(12) : "sm_" + std::to_string(R.u16() % 1200);
    if (K & 2)
      Img.Triple = R.bytes(24);
    Img.Bitcode = (K & 4 ? "" : "BC\xc0\xde") + R.bytes(300);
    if (K & 8)
      Img.Origin = R.bytes(40); // fatlink embed's origin string, any bytes
    Valid &= !Img.Arch.empty() && Img.Arch.find('\0') == std::string::npos &&
             Img.Triple.find('\0') == std::string::npos &&
             Img.Origin.find('\0') == std::string::npos &&
             llvm::StringRef(Img.Bitcode).starts_with("BC\xc0\xde");
  }
  packager::HostArch Arch =
      R.byte() & 1 ? packager::HostArch::AArch64 : packager::HostArch::X86_64;

  llvm::Expected<std::string> Obj = packager::writeOffloadObject(Images, Arch);
  if (!Valid) {
    require(!Obj, "writeOffloadObject accepted a bad image");
    llvm::consumeError(Obj.takeError());
    return 0;
  }
  if (!Obj) {
    std::fprintf(stderr, "writeOffloadObject: %s\n",
                 llvm::toString(Obj.takeError()).c_str());
    require(false, "writeOffloadObject failed on valid images");
  }
  llvm::Expected<std::vector<packager::EmbeddedImage>> Found =
      packager::scanFile(*Obj, "e.o");
  if (!Found) {
    std::fprintf(stderr, "scanFile: %s\n",
                 llvm::toString(Found.takeError()).c_str());
    require(false, "scanFile rejected writeOffloadObject's output");
  }
  require(Found->size() == Images.size(), "image count differs");
  for (size_t I = 0; I < Images.size(); ++I) {
    const packager::EmbeddedImage &F = (*Found)[I];
    require(F.Container ==
                packager::EmbeddedImage::ContainerKind::OffloadBinary,
            "not found as an OffloadBinary");
    require(F.Section == ".llvm.offloading", "section differs");
    require(F.Kind == "bc", "kind differs");
    require(F.Arch == Images[I].Arch, "arch differs");
    require(F.Triple == Images[I].Triple, "triple differs");
    require(F.EmbeddedOrigin == Images[I].Origin, "origin differs");
    require(F.Data == Images[I].Bitcode, "bitcode differs");
  }
  return 0;
}
