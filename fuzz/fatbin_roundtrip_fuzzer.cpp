//===- fuzz/fatbin_roundtrip_fuzzer.cpp - writeFatbin, then readFatbin ---===//
//
// A round trip in zstd's style: the fuzz bytes become one to four cubin and
// PTX images (any arch, any bytes) and writer options (zstd or none, PTX
// minified or not); packager::writeFatbin writes them and readFatbin must
// give back the same images, arches, kinds, versions, flags and payload
// bytes, in the writer's documented order. Entries encoded up front with
// encodeFatbinEntry must give the same bytes, and two containers with zero
// padding between them (a linked .nv_fatbin) must read as both.
//
//===----------------------------------------------------------------------===//

#include "fuzz/RoundTrip.h"

using namespace fatlink;
using namespace fatlink::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  ByteReader R(llvm::StringRef(reinterpret_cast<const char *>(Data), Size));
  FuzzedFatbin F = fuzzedFatbin(R);
  llvm::Expected<std::string> Fatbin = packager::writeFatbin(F.Images, F.Opts);
  if (!Fatbin) {
    std::fprintf(stderr, "writeFatbin: %s\n",
                 llvm::toString(Fatbin.takeError()).c_str());
    require(false, "writeFatbin failed on valid images");
  }

  llvm::Expected<std::vector<packager::FatbinEntry>> Entries =
      packager::readFatbin(*Fatbin);
  if (!Entries) {
    std::fprintf(stderr, "readFatbin: %s\n",
                 llvm::toString(Entries.takeError()).c_str());
    require(false, "readFatbin rejected writeFatbin's output");
  }
  std::vector<const packager::FatbinImage *> Order = inFatbinOrder(F.Images);
  require(Entries->size() == Order.size(), "entry count differs");
  for (size_t I = 0; I < Order.size(); ++I)
    checkEntry((*Entries)[I], *Order[I], F.Opts);

  // The same container from entries encoded up front (what a parallel
  // device link does).
  std::vector<packager::FatbinImage> Encoded = F.Images;
  for (packager::FatbinImage &Img : Encoded) {
    llvm::Expected<std::string> E = packager::encodeFatbinEntry(Img, F.Opts);
    require(bool(E), "encodeFatbinEntry failed on a valid image");
    Img.Entry = std::move(*E);
  }
  llvm::Expected<std::string> Again = packager::writeFatbin(Encoded, F.Opts);
  require(Again && *Again == *Fatbin,
          "pre-encoded entries give different bytes");

  // Two containers, as ld concatenates two objects' .nv_fatbin sections
  // with alignment padding between them.
  std::string Linked = *Fatbin + std::string(8, '\0') + *Fatbin;
  llvm::Expected<std::vector<packager::FatbinEntry>> Both =
      packager::readFatbin(Linked);
  require(Both && Both->size() == 2 * Order.size(),
          "concatenated containers do not read as both");
  for (size_t I = 0; I < Order.size(); ++I) {
    const packager::FatbinEntry &Second = (*Both)[Order.size() + I];
    checkEntry(Second, *Order[I], F.Opts);
    require(Second.Offset == (*Entries)[I].Offset + Fatbin->size() + 8,
            "offset in the second container differs");
  }
  return 0;
}
