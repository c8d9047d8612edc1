//===- fuzz/RoundTrip.h - Fuzzed inputs for the round-trip targets -------===//
//
// The round-trip targets (fatbin_roundtrip, hostobj_roundtrip) derive the
// writer's input from the fuzz bytes, write it, read it back and require the
// same thing back, as zstd's round-trip fuzzers do. This header turns fuzz
// bytes into a set of fatbin images and writer options, and checks a
// reader's entries against them. A mismatch prints what differs and aborts,
// which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_FUZZ_ROUNDTRIP_H
#define FATLINK_FUZZ_ROUNDTRIP_H

#include "fuzz/FuzzSupport.h"
#include "packager/Packager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cstdio>
#include <tuple>

namespace fatlink::fuzz {

/// Aborts with \p What unless \p Cond holds.
inline void require(bool Cond, const char *What) {
  if (Cond)
    return;
  std::fprintf(stderr, "round trip: %s\n", What);
  std::abort();
}

struct FuzzedFatbin {
  std::vector<packager::FatbinImage> Images;
  packager::FatbinOptions Opts;
};

/// One to four images of distinct (kind, arch), as a link writes them:
/// cubins and PTX for any sm_N, sm_Na and sm_Nf, any bytes as the image
/// (the writer does not look inside), .nv.compat attributes on some, and
/// either compression, with or without PTX minification.
inline FuzzedFatbin fuzzedFatbin(ByteReader &R) {
  FuzzedFatbin F;
  uint8_t O = R.byte();
  F.Opts.Compress =
      O & 1 ? packager::Compression::Zstd : packager::Compression::None;
  F.Opts.ZstdLevel = 1 + (O >> 1) % 3; // cheap levels: the format is the same
  F.Opts.MinifyPtx = O & 8;
  unsigned N = 1 + R.byte() % 4;
  for (unsigned I = 0; I < N; ++I) {
    packager::FatbinImage Img;
    uint8_t K = R.byte();
    Img.Kind = K & 1 ? packager::ImageKind::PTX : packager::ImageKind::Cubin;
    unsigned SM = 1 + R.u16() % 1200;
    const char *Suffix[] = {"", "a", "f"};
    Img.Arch = "sm_" + std::to_string(SM) + Suffix[(K >> 1) % 3];
    Img.Major = R.byte();
    Img.Minor = R.byte();
    if (K & 8)
      Img.Compat = R.bytes(24);
    Img.Data = R.bytes(600);
    bool Dup = llvm::any_of(F.Images, [&](const packager::FatbinImage &P) {
      return P.Arch == Img.Arch && P.Kind == Img.Kind;
    });
    if (!Dup)
      F.Images.push_back(std::move(Img));
  }
  return F;
}

/// The SM number of an arch made by fuzzedFatbin.
inline unsigned smOf(llvm::StringRef Arch) {
  unsigned SM = 0;
  Arch.drop_front(3)
      .take_while([](char C) { return C >= '0' && C <= '9'; })
      .getAsInteger(10, SM);
  return SM;
}

/// The images in the order writeFatbin stores them: by SM, then arch, then
/// cubin before PTX.
inline std::vector<const packager::FatbinImage *>
inFatbinOrder(const std::vector<packager::FatbinImage> &Images) {
  std::vector<const packager::FatbinImage *> Sorted;
  for (const packager::FatbinImage &I : Images)
    Sorted.push_back(&I);
  auto Key = [](const packager::FatbinImage *I) {
    return std::make_tuple(smOf(I->Arch), llvm::StringRef(I->Arch),
                           I->Kind == packager::ImageKind::PTX);
  };
  llvm::stable_sort(
      Sorted, [&](const packager::FatbinImage *L,
                  const packager::FatbinImage *R) { return Key(L) < Key(R); });
  return Sorted;
}

/// The bytes an image's entry must decode to: the (minified) PTX text plus
/// its NUL, or the cubin as given.
inline std::string storedImage(const packager::FatbinImage &Img,
                               const packager::FatbinOptions &Opts) {
  if (Img.Kind != packager::ImageKind::PTX)
    return Img.Data;
  std::string S = Opts.MinifyPtx ? packager::minifyPtx(Img.Data) : Img.Data;
  S.push_back('\0');
  return S;
}

/// Checks one entry read back against the image it was written from.
inline void checkEntry(const packager::FatbinEntry &E,
                       const packager::FatbinImage &Img,
                       const packager::FatbinOptions &Opts) {
  using namespace packager;
  require(E.Kind == Img.Kind, "kind differs");
  require(E.Arch == Img.Arch, "arch differs");
  require(E.SM == smOf(Img.Arch), "SM differs");
  require(E.Major == Img.Major && E.Minor == Img.Minor, "version differs");
  require(!(E.Flags & FlagLZ4), "LZ4 flag on a written entry");
  bool Zstd = E.Flags & FlagZstd;
  require(!Zstd || Opts.Compress == Compression::Zstd,
          "compressed although compression is off");
  std::string Raw = storedImage(Img, Opts);
  if (Zstd) {
    require(E.Payload == Raw, "decompressed payload differs");
    require(E.UncompressedSize == Raw.size(), "uncompressed size differs");
    require(E.StoredSize < llvm::alignTo(Raw.size(), 8),
            "compressed although that saves nothing");
  } else {
    require(E.StoredSize == llvm::alignTo(Raw.size(), 8),
            "stored size is not the image padded to 8");
    require(llvm::StringRef(E.Payload).starts_with(Raw) &&
                E.Payload.size() == E.StoredSize &&
                llvm::StringRef(E.Payload).drop_front(Raw.size()).count('\0') ==
                    E.Payload.size() - Raw.size(),
            "payload is not the image padded with zeros");
  }
  bool A = llvm::StringRef(Img.Arch).ends_with("a"),
       F = llvm::StringRef(Img.Arch).ends_with("f");
  require(bool(E.Flags & FlagArchSpecific) == A &&
              bool(E.Flags & FlagFamilySpecific) == F,
          "arch flags differ");
  bool Compat = Img.Kind == ImageKind::Cubin && smOf(Img.Arch) >= 100 &&
                !Img.Compat.empty();
  require(bool(E.Flags & FlagCompatAttributes) == Compat,
          "compat flag differs");
  if (Compat)
    require(E.Options == '\0' + Img.Compat.substr(0, Img.Compat.size() - 1),
            ".nv.compat attributes differ");
  else
    require(E.Options.empty(), "options string on an entry without one");
  require(E.Identifier.empty(), "identifier on a written entry");
}

} // namespace fatlink::fuzz

#endif // FATLINK_FUZZ_ROUNDTRIP_H
