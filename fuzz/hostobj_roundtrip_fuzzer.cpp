//===- fuzz/hostobj_roundtrip_fuzzer.cpp - Host object, then scanFile ----===//
//
// A round trip through the host object `fatlink device-link` writes: the
// fuzz bytes become fatbin images (as fatbin_roundtrip makes them), a kernel
// table and a host arch; packager::writeHostObject embeds the fatbin, and
// packager::scanFile (what `fatlink inspect` runs) must find in its
// .nv_fatbin section exactly the entries readFatbin finds in the fatbin,
// with the same offsets, kinds, arches, flags and bytes, both in the object
// and in an ar archive holding it; and packager::readModuleManifests (what
// `inspect --manifest` and `bindgen` run) must read back the kernel table
// and every kernel's manifest exactly as written. A kernel table the
// writer must refuse (an empty name, a NUL in a name, a name twice) must
// be refused.
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

/// A string the manifest stores as written: no NUL (a C string) and no
/// '/' (the writer keeps an origin's file name only).
std::string manifestString(ByteReader &R, size_t Max) {
  std::string S = R.bytes(Max);
  for (char &C : S)
    if (C == '\0' || C == '/')
      C = '_';
  return S;
}

/// Checks what readModuleManifests found in \p Origin against \p Kernels.
void checkManifests(llvm::StringRef Data, llvm::StringRef Name,
                    llvm::StringRef Origin,
                    const std::vector<packager::KernelInfo> &Kernels) {
  llvm::Expected<std::vector<packager::ModuleManifest>> Found =
      packager::readModuleManifests(Data, Name);
  if (!Found) {
    std::fprintf(stderr, "readModuleManifests: %s\n",
                 llvm::toString(Found.takeError()).c_str());
    require(false, "readModuleManifests rejected writeHostObject's output");
  }
  require(Found->size() == 1, "not one module descriptor");
  const packager::ModuleManifest &M = (*Found)[0];
  require(M.Origin == Origin, "module origin differs");
  require(M.Known && M.Version == FATLINK_MODULE_VERSION, "version differs");
  std::vector<const packager::KernelInfo *> Sorted;
  for (const packager::KernelInfo &K : Kernels)
    Sorted.push_back(&K);
  llvm::sort(Sorted, [](const packager::KernelInfo *A,
                        const packager::KernelInfo *B) {
    return A->Name < B->Name;
  });
  bool AnyManifest = llvm::any_of(
      Kernels, [](const packager::KernelInfo &K) { return K.hasManifest(); });
  require(M.hasManifest() == AnyManifest, "manifest flag differs");
  require(M.Kernels.size() == Sorted.size(), "kernel count differs");
  for (size_t I = 0; I < Sorted.size(); ++I) {
    const packager::KernelInfo &W = *Sorted[I];
    const packager::ManifestKernel &R = M.Kernels[I];
    require(R.Info.Name == W.Name, "kernel name differs");
    require(R.Info.ParamSizes == W.ParamSizes, "parameter sizes differ");
    if (!W.hasManifest()) {
      require(R.ManifestVersion == 0, "a manifest where none was written");
      continue;
    }
    require(R.ManifestVersion == FATLINK_MANIFEST_VERSION,
            "manifest version differs");
    require(R.Info.Origin == W.Origin, "origin differs");
    const packager::KernelManifest &A = W.Manifest, &B = R.Info.Manifest;
    require(A.Language == B.Language, "language differs");
    for (unsigned D = 0; D < 3; ++D)
      require(A.MaxThreads[D] == B.MaxThreads[D] &&
                  A.ReqThreads[D] == B.ReqThreads[D] &&
                  A.Cluster[D] == B.Cluster[D],
              "launch dimensions differ");
    require(A.MinBlocks == B.MinBlocks, "min blocks differ");
    require(A.Params.size() == B.Params.size(), "parameter count differs");
    for (size_t P = 0; P < A.Params.size(); ++P) {
      const packager::ParamInfo &X = A.Params[P], &Y = B.Params[P];
      require(X.Kind == Y.Kind && X.Flags == Y.Flags &&
                  X.AddrSpace == Y.AddrSpace && X.ElemKind == Y.ElemKind &&
                  X.Size == Y.Size && X.Align == Y.Align &&
                  X.ElemSize == Y.ElemSize && X.Type == Y.Type &&
                  X.Name == Y.Name,
              "parameter record differs");
    }
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
  // Manifests, from what is left (older corpus files have none).
  for (packager::KernelInfo &K : Kernels) {
    if (!(R.byte() & 1))
      continue;
    K.Origin = manifestString(R, 40);
    packager::KernelManifest &M = K.Manifest;
    M.Language = R.byte() % 5;
    for (unsigned D = 0; D < 3; ++D) {
      M.MaxThreads[D] = R.u16();
      M.ReqThreads[D] = R.byte();
      M.Cluster[D] = R.byte();
    }
    M.MinBlocks = R.byte();
    if (R.byte() & 1)
      for (uint32_t Size : K.ParamSizes) {
        packager::ParamInfo P;
        P.Kind = R.byte();
        P.Flags = R.byte();
        P.AddrSpace = R.byte();
        P.ElemKind = R.byte();
        P.Size = Size;
        P.Align = R.u16();
        P.ElemSize = R.u16();
        P.Type = manifestString(R, 20);
        P.Name = manifestString(R, 10);
        M.Params.push_back(std::move(P));
      }
  }

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
  checkManifests(*Obj, "k.o", "k.o", Kernels);

  // The same object as a member of a static library.
  std::vector<llvm::NewArchiveMember> Members;
  Members.emplace_back(llvm::MemoryBufferRef(*Obj, "k.o"));
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> Ar =
      llvm::writeArchiveToBuffer(Members, llvm::SymtabWritingMode::NoSymtab,
                                 llvm::object::Archive::K_GNU,
                                 /*Deterministic=*/true, /*Thin=*/false);
  require(bool(Ar), "cannot write an archive");
  checkScan((*Ar)->getBuffer(), "libk.a", "libk.a(k.o)", *Entries);
  checkManifests((*Ar)->getBuffer(), "libk.a", "libk.a(k.o)", Kernels);
  return 0;
}
