//===- fuzz/hostobj_roundtrip_fuzzer.cpp - Host object, then scanFile ----===//
//
// A round trip through the host object `fatlink device-link` writes: the
// fuzz bytes become fatbin images (as fatbin_roundtrip makes them), a kernel
// table and a host arch; packager::writeHostObject embeds the fatbin, and
// packager::scanFile (what `fatlink inspect` runs) must find in its
// .nv_fatbin section exactly the entries readFatbin finds in the fatbin,
// with the same offsets, kinds, arches, flags and bytes, both in the object
// and in an ar archive holding it. A kernel table the writer must refuse
// (an empty name, a NUL in a name, a name twice) must be refused.
//
//===----------------------------------------------------------------------===//

#include "fuzz/RoundTrip.h"

#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/MemoryBuffer.h"

#include <set>

using namespace fatlink;
using namespace fatlink::fuzz;

namespace {

/// Checks what scanFile found in \p Origin against the fatbin's entries.
void checkScan(llvm::StringRef Data, llvm::StringRef Name,
               llvm::StringRef Origin,
               const std::vector<packager::FatbinEntry> &Entries) {
  llvm::Expected<std::vector<packager::EmbeddedImage>> Found =
      packager::scanFile(Data, Name);
  if (!Found) {
    std::fprintf(stderr, "scanFile: %s\n",
                 llvm::toString(Found.takeError()).c_str());
    require(false, "scanFile rejected writeHostObject's output");
  }
  require(Found->size() == Entries.size(), "image count differs");
  for (size_t I = 0; I < Entries.size(); ++I) {
    const packager::FatbinEntry &E = Entries[I];
    const packager::EmbeddedImage &Img = (*Found)[I];
    const char *Kind = E.Kind == packager::ImageKind::PTX ? "ptx" : "cubin";
    require(Img.Container == packager::EmbeddedImage::ContainerKind::Fatbin,
            "not found as a fatbin entry");
    require(Img.Origin == Origin, "origin differs");
    require(Img.Section == ".nv_fatbin", "section differs");
    require(Img.Offset == E.Offset, "offset differs");
    require(Img.Kind == Kind, "kind differs");
    require(Img.Arch == E.Arch, "arch differs");
    require(Img.Flags == E.Flags, "flags differ");
    require(Img.Major == E.Major && Img.Minor == E.Minor, "version differs");
    require(Img.StoredSize == E.StoredSize, "stored size differs");
    require(Img.Data == E.Payload, "image bytes differ");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  ByteReader R(llvm::StringRef(reinterpret_cast<const char *>(Data), Size));
  FuzzedFatbin F = fuzzedFatbin(R);
  llvm::Expected<std::string> Fatbin = packager::writeFatbin(F.Images, F.Opts);
  require(bool(Fatbin), "writeFatbin failed on valid images");
  llvm::Expected<std::vector<packager::FatbinEntry>> Entries =
      packager::readFatbin(*Fatbin);
  require(bool(Entries), "readFatbin rejected writeFatbin's output");

  std::vector<packager::KernelInfo> Kernels(R.byte() % 5);
  std::set<std::string> Names;
  bool Valid = true;
  for (packager::KernelInfo &K : Kernels) {
    K.Name = R.bytes(20);
    for (unsigned P = R.byte() % 6; P > 0; --P)
      K.ParamSizes.push_back(R.u16());
    Valid &= !K.Name.empty() && K.Name.find('\0') == std::string::npos &&
             Names.insert(K.Name).second;
  }
  packager::HostArch Arch =
      R.byte() & 1 ? packager::HostArch::AArch64 : packager::HostArch::X86_64;

  llvm::Expected<std::string> Obj =
      packager::writeHostObject(*Fatbin, Kernels, Arch);
  if (!Valid) {
    require(!Obj, "writeHostObject accepted a bad kernel table");
    llvm::consumeError(Obj.takeError());
    return 0;
  }
  if (!Obj) {
    std::fprintf(stderr, "writeHostObject: %s\n",
                 llvm::toString(Obj.takeError()).c_str());
    require(false, "writeHostObject failed on a valid fatbin and table");
  }
  checkScan(*Obj, "k.o", "k.o", *Entries);

  // The same object as a member of a static library.
  std::vector<llvm::NewArchiveMember> Members;
  Members.emplace_back(llvm::MemoryBufferRef(*Obj, "k.o"));
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> Ar =
      llvm::writeArchiveToBuffer(Members, llvm::SymtabWritingMode::NoSymtab,
                                 llvm::object::Archive::K_GNU,
                                 /*Deterministic=*/true, /*Thin=*/false);
  require(bool(Ar), "cannot write an archive");
  checkScan((*Ar)->getBuffer(), "libk.a", "libk.a(k.o)", *Entries);
  return 0;
}
