//===- unittests/packager/FatbinTest.cpp - Fatbin format unit tests -------===//
//
// Round trips through writeFatbin/readFatbin for every entry kind and
// compression, the deterministic entry order, PTX description and
// minification, and one test per reader diagnostic on a fatbin built byte
// by byte (each with a comment on what is wrong with it).
//
//===----------------------------------------------------------------------===//

#include "unittests/packager/TestUtil.h"

#include "llvm/Support/Endian.h"

#include <zstd.h>

using namespace llvm;
using namespace fatlink::packager;
using namespace fatlink::packager::test;

namespace {

FatbinImage cubin(StringRef Arch, StringRef Data) {
  FatbinImage I;
  I.Kind = ImageKind::Cubin;
  I.Arch = Arch.str();
  I.Major = 1;
  I.Minor = 8;
  I.Data = Data.str();
  return I;
}

FatbinImage ptx(StringRef Arch, StringRef Data) {
  FatbinImage I;
  I.Kind = ImageKind::PTX;
  I.Arch = Arch.str();
  I.Major = 8;
  I.Minor = 0;
  I.Data = Data.str();
  return I;
}

// Compressible stand-ins for images: the writer does not look inside.
std::string bytes(size_t N, char Seed) {
  std::string S;
  for (size_t I = 0; I < N; ++I)
    S.push_back(char(Seed + I % 7));
  return S;
}

std::string padded(std::string S) {
  S.resize(alignTo(S.size(), 8), '\0');
  return S;
}

TEST(Fatbin, RoundTripUncompressed) {
  std::string Cubin = bytes(1001, 'a'); // not a multiple of 8: gets padded
  std::string Ptx = ".version 8.0\n.target sm_90a\n// comment\n\tret;\n";
  FatbinOptions Opts;
  Opts.Compress = Compression::None;
  auto FatbinOrErr =
      writeFatbin({cubin("sm_90a", Cubin), ptx("sm_90a", Ptx)}, Opts);
  ASSERT_OK(FatbinOrErr);
  EXPECT_EQ(FatbinOrErr->size() % 8, 0u);
  auto EntriesOrErr = readFatbin(*FatbinOrErr);
  ASSERT_OK(EntriesOrErr);
  ASSERT_EQ(EntriesOrErr->size(), 2u);

  const FatbinEntry &C = (*EntriesOrErr)[0];
  EXPECT_EQ(C.Offset, 16u);
  EXPECT_EQ(C.Kind, ImageKind::Cubin);
  EXPECT_EQ(C.Arch, "sm_90a");
  EXPECT_EQ(C.SM, 90u);
  EXPECT_EQ(C.Flags, 0x100011u);
  EXPECT_EQ(C.Major, 1u);
  EXPECT_EQ(C.Minor, 8u);
  EXPECT_EQ(C.HeaderSize, 64u);
  EXPECT_EQ(C.StoredSize, 1008u);
  EXPECT_EQ(C.UncompressedSize, 0u);
  EXPECT_EQ(C.Payload, padded(Cubin));

  const FatbinEntry &P = (*EntriesOrErr)[1];
  EXPECT_EQ(P.Offset, 16u + 64 + 1008);
  EXPECT_EQ(P.Kind, ImageKind::PTX);
  EXPECT_EQ(P.HeaderSize, 80u);
  EXPECT_EQ(P.Major, 8u);
  EXPECT_EQ(P.Minor, 0u);
  EXPECT_EQ(P.Options, "");
  // Minified as fatbinary does, NUL-terminated, padded.
  EXPECT_EQ(P.Payload,
            padded(std::string(".version 8.0\n.target sm_90a\n\nret;\n") +
                   '\0'));
}

TEST(Fatbin, RoundTripZstd) {
  std::string Cubin = bytes(5000, 'A');
  std::string Ptx = ".version 7.0\n.target sm_80\n" + bytes(3000, 'a');
  for (int Level : {1, 3, 19, 22}) {
    FatbinOptions Opts;
    Opts.ZstdLevel = Level;
    auto FatbinOrErr =
        writeFatbin({ptx("sm_80", Ptx), cubin("sm_80", Cubin)}, Opts);
    ASSERT_OK(FatbinOrErr);
    auto EntriesOrErr = readFatbin(*FatbinOrErr);
    ASSERT_OK(EntriesOrErr);
    ASSERT_EQ(EntriesOrErr->size(), 2u);
    const FatbinEntry &C = (*EntriesOrErr)[0];
    EXPECT_EQ(C.Kind, ImageKind::Cubin);
    EXPECT_EQ(C.Flags, 0x8011u);
    EXPECT_EQ(C.UncompressedSize, 5000u);
    EXPECT_LT(C.StoredSize, 5000u);
    EXPECT_EQ(C.Payload, Cubin); // exact, not padded
    const FatbinEntry &P = (*EntriesOrErr)[1];
    EXPECT_EQ(P.Kind, ImageKind::PTX);
    EXPECT_EQ(P.Flags, 0x8011u);
    EXPECT_EQ(P.Payload, Ptx + '\0');
    EXPECT_EQ(P.UncompressedSize, Ptx.size() + 1);
  }
}

// A payload zstd finds matches in at every distance: words of a small
// vocabulary, in an order from a fixed generator.
std::string wordy(size_t N) {
  std::string S;
  S.reserve(N + 16);
  uint64_t X = 12345;
  while (S.size() < N) {
    X = X * 6364136223846793005ULL + 1442695040888963407ULL;
    S += "k" + std::to_string((X >> 33) % 5000) + ' ';
  }
  S.resize(N);
  return S;
}

// The compressed bytes of an encoded cubin entry (no extension), and the
// entry's round trip.
std::string storedOf(StringRef Entry, StringRef Payload) {
  auto EntriesOrErr = readFatbin(fatbinOfEntry(Entry));
  EXPECT_TRUE(bool(EntriesOrErr));
  if (!EntriesOrErr) {
    consumeError(EntriesOrErr.takeError());
    return "";
  }
  EXPECT_EQ((*EntriesOrErr)[0].Payload, Payload);
  uint32_t HeaderSize = support::endian::read32le(Entry.data() + 4);
  uint32_t Compressed = support::endian::read32le(Entry.data() + 16);
  return Entry.substr(HeaderSize, Compressed).str();
}

// Payload's cubin entry at zstd Level, and the pieces it said it read.
std::string encodeReading(StringRef Payload, int Level,
                          std::vector<StringRef> &Read, unsigned Workers = 1) {
  FatbinOptions Opts;
  Opts.ZstdLevel = Level;
  Opts.ZstdWorkers = Workers;
  auto EntryOrErr = encodeFatbinEntry(cubin("sm_80", ""), Payload, Opts,
                                      [&](StringRef R) { Read.push_back(R); });
  EXPECT_TRUE(bool(EntryOrErr));
  if (!EntryOrErr) {
    consumeError(EntryOrErr.takeError());
    return "";
  }
  return std::move(*EntryOrErr);
}

TEST(Fatbin, EntryUpTo32MBIsOneShotZstd) {
  // 6 MB at level 3 is more than its 2 MB window: still one call, and the
  // frame one-shot ZSTD_compress writes (the bytes earlier fatlinks wrote).
  std::string Payload = wordy(6 << 20);
  std::vector<StringRef> Read;
  std::string Entry = encodeReading(Payload, 3, Read);
  std::string OneShot(ZSTD_compressBound(Payload.size()), '\0');
  OneShot.resize(ZSTD_compress(OneShot.data(), OneShot.size(), Payload.data(),
                               Payload.size(), 3));
  EXPECT_EQ(storedOf(Entry, Payload), OneShot);
  ASSERT_EQ(Read.size(), 1u); // all of it, at the end
  EXPECT_EQ(Read[0].data(), Payload.data());
  EXPECT_EQ(Read[0].size(), Payload.size());
}

TEST(Fatbin, LargeEntryIsCompressedInSteps) {
  // 40 MB: compressed by zstd's threads, fed 4 MB at a time; each piece no
  // match can reach any more is handed back as it goes, in order, every
  // byte once.
  std::string Payload = wordy(40 << 20);
  std::vector<StringRef> Read;
  std::string Entry = encodeReading(Payload, 1, Read);
  std::string Stored = storedOf(Entry, Payload);
  EXPECT_LT(Stored.size(), Payload.size() / 2);
  ASSERT_GT(Read.size(), 5u);
  const char *Next = Payload.data();
  for (StringRef R : Read) {
    EXPECT_EQ(R.data(), Next);
    Next = R.end();
  }
  EXPECT_EQ(Next, Payload.data() + Payload.size());
  // The first piece went back long before the end: the window (level 1:
  // 512 KB) and a step behind the 8 MB compressed by then.
  EXPECT_LE(Read[0].size(), size_t(8 << 20));
  // The same input gives the same bytes, with any number of zstd threads
  // (level 1: jobs of 2 MB, twenty of them).
  std::vector<StringRef> Again;
  EXPECT_EQ(encodeReading(Payload, 1, Again), Entry);
  std::vector<StringRef> Threaded;
  EXPECT_EQ(encodeReading(Payload, 1, Threaded, 3), Entry);
  EXPECT_EQ(Threaded.size(), Read.size());
}

TEST(Fatbin, IncompressibleEntryIsStoredPlain) {
  // 16 bytes cannot shrink below 16 once the zstd frame header is added.
  std::string Tiny = "0123456789abcdef";
  auto FatbinOrErr = writeFatbin({cubin("sm_80", Tiny)}, FatbinOptions());
  ASSERT_OK(FatbinOrErr);
  auto EntriesOrErr = readFatbin(*FatbinOrErr);
  ASSERT_OK(EntriesOrErr);
  EXPECT_EQ((*EntriesOrErr)[0].Flags, 0x11u);
  EXPECT_EQ((*EntriesOrErr)[0].Payload, Tiny);
}

TEST(Fatbin, OrderIsDeterministic) {
  std::vector<FatbinImage> Images = {
      ptx("sm_90", ".version 7.8\n.target sm_90\n"),
      cubin("sm_90a", "cubin90a"),
      cubin("sm_80", "cubin80"),
      ptx("sm_80", ".version 7.0\n.target sm_80\n"),
      cubin("sm_90", "cubin90"),
  };
  auto First = writeFatbin(Images);
  ASSERT_OK(First);
  std::reverse(Images.begin(), Images.end());
  auto Second = writeFatbin(Images);
  ASSERT_OK(Second);
  EXPECT_EQ(*First, *Second);
  auto EntriesOrErr = readFatbin(*First);
  ASSERT_OK(EntriesOrErr);
  std::vector<std::string> Order;
  for (const FatbinEntry &E : *EntriesOrErr)
    Order.push_back(E.Arch + (E.Kind == ImageKind::PTX ? ".ptx" : ".cubin"));
  EXPECT_EQ(Order, (std::vector<std::string>{"sm_80.cubin", "sm_80.ptx",
                                             "sm_90.cubin", "sm_90.ptx",
                                             "sm_90a.cubin"}));
}

TEST(Fatbin, WriterErrors) {
  EXPECT_EQ(errorOf(writeFatbin({})), "no images to put in the fatbin");
  EXPECT_EQ(errorOf(writeFatbin({cubin("sm_80", "a"), cubin("sm_80", "b")})),
            "two cubin images for sm_80");
  EXPECT_EQ(errorOf(writeFatbin({cubin("compute_80", "a")})),
            "arch 'compute_80' does not start with sm_");
  EXPECT_EQ(errorOf(writeFatbin({cubin("sm_x", "a")})),
            "arch 'sm_x' has no SM number");
  FatbinOptions Opts;
  Opts.ZstdLevel = 23;
  EXPECT_EQ(errorOf(writeFatbin({cubin("sm_80", "a")}, Opts)),
            "zstd level 23 is out of range 1..22");
}

TEST(Fatbin, ConcatenatedContainers) {
  auto A = writeFatbin({cubin("sm_80", "first")});
  auto B = writeFatbin({cubin("sm_90", "second")});
  ASSERT_OK(A);
  ASSERT_OK(B);
  auto EntriesOrErr = readFatbin(*A + *B);
  ASSERT_OK(EntriesOrErr);
  ASSERT_EQ(EntriesOrErr->size(), 2u);
  EXPECT_EQ((*EntriesOrErr)[1].Offset, A->size() + 16);
  EXPECT_EQ((*EntriesOrErr)[1].Arch, "sm_90");
}

//===----------------------------------------------------------------------===//
// Malformed containers, byte by byte
//===----------------------------------------------------------------------===//

void put16(std::string &S, size_t Off, uint16_t V) {
  support::endian::write16le(&S[Off], V);
}
void put32(std::string &S, size_t Off, uint32_t V) {
  support::endian::write32le(&S[Off], V);
}
void put64(std::string &S, size_t Off, uint64_t V) {
  support::endian::write64le(&S[Off], V);
}

/// A well-formed container with one uncompressed 8-byte cubin entry:
/// 16-byte header, 64-byte entry header at 0x10, payload at 0x50.
std::string goodFatbin() {
  std::string S(16 + 64 + 8, '\0');
  put32(S, 0, 0xBA55ED50);
  put16(S, 4, 1);
  put16(S, 6, 16);
  put64(S, 8, 64 + 8);
  put16(S, 16 + 0, 2);      // kind: cubin
  put16(S, 16 + 2, 0x0101); // layout
  put32(S, 16 + 4, 64);     // header size
  put64(S, 16 + 8, 8);      // payload size
  put16(S, 16 + 24, 8);     // minor
  put16(S, 16 + 26, 1);     // major
  put32(S, 16 + 28, 80);    // sm_80
  put64(S, 16 + 40, 0x11);  // flags
  S.replace(80, 8, "payload!");
  return S;
}

TEST(FatbinReader, AcceptsTheBaseline) {
  auto EntriesOrErr = readFatbin(goodFatbin());
  ASSERT_OK(EntriesOrErr);
  EXPECT_EQ((*EntriesOrErr)[0].Payload, "payload!");
  EXPECT_EQ((*EntriesOrErr)[0].Arch, "sm_80");
}

TEST(FatbinReader, TruncatedHeader) {
  // Only 10 of the 16 header bytes.
  EXPECT_EQ(errorOf(readFatbin(goodFatbin().substr(0, 10))),
            "truncated fatbin header at offset 0x0: need 16 bytes, have 10");
}

TEST(FatbinReader, BadMagic) {
  std::string S = goodFatbin();
  put32(S, 0, 0xDEADBEEF);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "bad fatbin magic 0xdeadbeef at offset 0x0 (expected 0xba55ed50)");
}

TEST(FatbinReader, BadVersion) {
  std::string S = goodFatbin();
  put16(S, 4, 2);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "unsupported fatbin version 2 at offset 0x0 (expected 1)");
}

TEST(FatbinReader, EntriesPastTheEnd) {
  // The container claims 4096 bytes of entries; 72 follow.
  std::string S = goodFatbin();
  put64(S, 8, 4096);
  EXPECT_EQ(errorOf(readFatbin(S)), "fatbin at offset 0x0 declares 4096 bytes "
                                    "of entries but only 72 follow its header");
}

TEST(FatbinReader, HugeContainerSize) {
  // 16 + size wraps around 2^64 if computed naively.
  std::string S = goodFatbin();
  put64(S, 8, ~uint64_t(0) - 7);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin at offset 0x0 declares 18446744073709551608 bytes of "
            "entries but only 72 follow its header");
}

TEST(FatbinReader, TruncatedEntryHeader) {
  // The container ends 40 bytes into the entry header.
  std::string S = goodFatbin().substr(0, 56);
  put64(S, 8, 40);
  EXPECT_EQ(errorOf(readFatbin(S)), "truncated fatbin entry header at offset "
                                    "0x10: need 64 bytes, 40 left in the "
                                    "container");
}

TEST(FatbinReader, PayloadPastTheEnd) {
  // The entry claims 100 payload bytes; 8 are there.
  std::string S = goodFatbin();
  put64(S, 16 + 8, 100);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares a payload of 100 bytes but "
            "only 8 are left in the container");
}

TEST(FatbinReader, HugePayloadSize) {
  // Header offset + payload size wraps around 2^64 if computed naively.
  std::string S = goodFatbin();
  put64(S, 16 + 8, ~uint64_t(0) - 0x4f);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares a payload of "
            "18446744073709551536 bytes but only 8 are left in the container");
}

TEST(FatbinReader, HugeHeaderSize) {
  std::string S = goodFatbin();
  put32(S, 16 + 4, 0xFFFFFFFF);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares a header of 4294967295 "
            "bytes but only 72 are left in the container");
}

TEST(FatbinReader, HeaderOverlapsPayload) {
  // A 48-byte header would put the payload on top of the fixed fields.
  std::string S = goodFatbin();
  put32(S, 16 + 4, 48);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares a header of 48 bytes, less "
            "than the 64 its fields take");
}

TEST(FatbinReader, OverlappingEntries) {
  // Two containers back to back; the first one's entry claims 16 payload
  // bytes, which would overlap the second container. Its container
  // (72 bytes of entries) ends first.
  std::string S = goodFatbin() + goodFatbin();
  put64(S, 16 + 8, 16);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares a payload of 16 bytes but "
            "only 8 are left in the container");
}

TEST(FatbinReader, StringOverlapsPayload) {
  // The identifier string (64, 16) would run into the payload.
  std::string S = goodFatbin();
  put32(S, 16 + 32, 64);
  put32(S, 16 + 36, 16);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "identifier string (64, 16) overlaps the fixed fields or the "
            "payload of the fatbin entry at offset 0x10");
}

TEST(FatbinReader, OptionsPairOutsideHeader) {
  std::string S = goodFatbin();
  put32(S, 16 + 20, 60); // the pair would span bytes 60..67 of 64
  EXPECT_EQ(errorOf(readFatbin(S)),
            "options pair at header offset 60 lies outside the 64-byte "
            "header of the fatbin entry at offset 0x10");
}

TEST(FatbinReader, UnknownKind) {
  std::string S = goodFatbin();
  put16(S, 16, 7);
  EXPECT_EQ(errorOf(readFatbin(S)), "unknown fatbin entry kind 7 at offset 0x10");
}

TEST(FatbinReader, UnknownLayout) {
  std::string S = goodFatbin();
  put16(S, 18, 0x0202);
  EXPECT_EQ(errorOf(readFatbin(S)), "unknown fatbin entry layout 0x202 at "
                                    "offset 0x10 (expected 0x101)");
}

TEST(FatbinReader, ZstdFlagOnPlainPayload) {
  std::string S = goodFatbin();
  put64(S, 16 + 40, 0x8011);
  put32(S, 16 + 16, 8);
  put64(S, 16 + 56, 8);
  EXPECT_EQ(errorOf(readFatbin(S)), "fatbin entry at offset 0x10 is marked "
                                    "zstd but its payload is not a zstd frame");
}

TEST(FatbinReader, CompressedSizeLargerThanPayload) {
  std::string S = goodFatbin();
  put64(S, 16 + 40, 0x8011);
  put32(S, 16 + 16, 9);
  EXPECT_EQ(errorOf(readFatbin(S)), "fatbin entry at offset 0x10 declares 9 "
                                    "compressed bytes in a payload of 8");
}

TEST(FatbinReader, HugeUncompressedSize) {
  // Would make the reader allocate 2^63 bytes.
  std::string S = goodFatbin();
  put64(S, 16 + 40, 0x8011);
  put32(S, 16 + 16, 8);
  put64(S, 16 + 56, uint64_t(1) << 63);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares an uncompressed size of "
            "9223372036854775808 bytes, over the 4 GiB limit");
}

TEST(FatbinReader, ZstdSizeMismatch) {
  // A valid frame of 16 bytes, but the header says 20.
  auto Z = writeFatbin({cubin("sm_80", bytes(4000, 'x'))});
  ASSERT_OK(Z);
  std::string S = *Z;
  put64(S, 16 + 56, 20);
  EXPECT_EQ(errorOf(readFatbin(S)), "zstd frame in fatbin entry at offset "
                                    "0x10 holds 4000 bytes, header says 20");
}

TEST(FatbinReader, LZ4Block) {
  // Token 0x32: 3 literals "abc", then a match at distance 3 of 2+4 bytes;
  // token 0x10: one final literal "x". Decodes to "abcabcabcx".
  std::string Block = std::string("\x32" "abc" "\x03\x00" "\x10" "x", 8);
  std::string S = goodFatbin();
  S.replace(80, 8, Block);
  put64(S, 16 + 40, 0x2011);
  put32(S, 16 + 16, 8);
  put64(S, 16 + 56, 10);
  auto EntriesOrErr = readFatbin(S);
  ASSERT_OK(EntriesOrErr);
  EXPECT_EQ((*EntriesOrErr)[0].Payload, "abcabcabcx");

  put64(S, 16 + 56, 12); // the block is 2 bytes short of what is declared
  EXPECT_EQ(errorOf(readFatbin(S)),
            "malformed LZ4 payload in fatbin entry at offset 0x10: decodes to "
            "10 bytes, header says 12");
  S[80 + 4] = 9; // match distance 9 reaches before the start of the output
  EXPECT_EQ(errorOf(readFatbin(S)),
            "malformed LZ4 payload in fatbin entry at offset 0x10: match "
            "offset 9 before the start");
}

//===----------------------------------------------------------------------===//
// nvcc's LTO-IR entries (kind 8), laid out as nvcc 13.0 writes them
//===----------------------------------------------------------------------===//

/// A container with one LTO-IR entry as `nvcc -dc -gencode
/// arch=compute_80,code=lto_80` writes it: a 120-byte header whose pair at
/// 64 names the 40-byte NVVM options string at 72, then \p Payload. With
/// \p Flags 0x18011 (zstd, obfuscated) or 0x12011 (LZ4, obfuscated), the
/// word at 48 repeats the LTO-IR's own word at 0x28 and the payload is the
/// obfuscated compressed bytes, which no frame header identifies.
std::string ltoFatbin(uint64_t Flags, StringRef Payload,
                      uint64_t Uncompressed) {
  StringRef Opts = "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 ";
  uint64_t Padded = alignTo(Payload.size(), 8);
  std::string S(16 + 120 + Padded, '\0');
  put32(S, 0, 0xBA55ED50);
  put16(S, 4, 1);
  put16(S, 6, 16);
  put64(S, 8, 120 + Padded);
  put16(S, 16 + 0, 8);      // kind: LTO-IR
  put16(S, 16 + 2, 0x0101); // layout
  put32(S, 16 + 4, 120);    // header size
  put64(S, 16 + 8, Padded); // payload size
  bool Compressed = Flags & (FlagZstd | FlagLZ4);
  put32(S, 16 + 16, Compressed ? Payload.size() : 0);
  put32(S, 16 + 20, 64); // options pair at 64
  put16(S, 16 + 24, 65); // "code version [1,65]" in cuobjdump
  put16(S, 16 + 26, 1);
  put32(S, 16 + 28, 80); // sm_80
  put64(S, 16 + 40, Flags);
  put64(S, 16 + 48, Flags & FlagObfuscated ? 0x49304acc : 0);
  put64(S, 16 + 56, Compressed ? Uncompressed : 0);
  put32(S, 16 + 64, 72); // options string at 72
  put32(S, 16 + 68, Opts.size());
  S.replace(16 + 72, Opts.size(), Opts.str());
  S.replace(16 + 120, Payload.size(), Payload.str());
  return S;
}

// Not a zstd frame nor a valid LZ4 block, as the obfuscated bytes are not.
constexpr StringLiteral Obfuscated = "\x73\x63\x61\x38\x75\xe9\x19\x9e\x71\x06";

TEST(FatbinLtoIR, ObfuscatedZstdIsKeptAsStored) {
  std::string S = ltoFatbin(0x18011, Obfuscated, 3336);
  auto EntriesOrErr = readFatbin(S);
  ASSERT_OK(EntriesOrErr);
  ASSERT_EQ(EntriesOrErr->size(), 1u);
  const FatbinEntry &E = (*EntriesOrErr)[0];
  EXPECT_EQ(E.Kind, ImageKind::LtoIR);
  EXPECT_EQ(E.Arch, "sm_80");
  EXPECT_EQ(E.Major, 1u);
  EXPECT_EQ(E.Minor, 65u);
  EXPECT_EQ(E.HeaderSize, 120u);
  EXPECT_EQ(E.StoredSize, 16u);
  EXPECT_EQ(E.UncompressedSize, 3336u);
  EXPECT_EQ(E.KeyWord, 0x49304accu);
  EXPECT_EQ(E.Options, "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 ");
  // The compressed bytes, without the container's padding.
  EXPECT_EQ(E.Payload, Obfuscated.str());
  // The entry as stored, which wraps back into the same container.
  EXPECT_EQ(E.Encoded, S.substr(16));
  EXPECT_EQ(fatbinOfEntry(E.Encoded), S);
}

TEST(FatbinLtoIR, ObfuscatedLZ4IsKeptAsStored) {
  // --compress-mode=speed: LZ4 and obfuscated.
  std::string S = ltoFatbin(0x12011, Obfuscated, 3336);
  auto EntriesOrErr = readFatbin(S);
  ASSERT_OK(EntriesOrErr);
  EXPECT_EQ((*EntriesOrErr)[0].Payload, Obfuscated.str());
  EXPECT_EQ(fatbinOfEntry((*EntriesOrErr)[0].Encoded), S);
}

TEST(FatbinLtoIR, PlainIsAnOrdinaryPayload) {
  // --compress-mode=none: the LTO-IR blob as is (ed 43 4e 7f ...), no
  // obfuscation flag, no key word.
  std::string Blob =
      std::string("\xed\x43\x4e\x7f\x01\x41\x02\x62", 8) + bytes(20, 'q');
  auto EntriesOrErr = readFatbin(ltoFatbin(0x11, Blob, 0));
  ASSERT_OK(EntriesOrErr);
  const FatbinEntry &E = (*EntriesOrErr)[0];
  EXPECT_EQ(E.Kind, ImageKind::LtoIR);
  EXPECT_EQ(E.Payload, padded(Blob));
  EXPECT_EQ(E.KeyWord, 0u);
  EXPECT_TRUE(E.Encoded.empty());
}

TEST(FatbinLtoIR, ObfuscatedSizesAreStillChecked) {
  // 40 compressed bytes declared in a 16-byte payload.
  std::string S = ltoFatbin(0x18011, Obfuscated, 3336);
  put32(S, 16 + 16, 40);
  EXPECT_EQ(errorOf(readFatbin(S)), "fatbin entry at offset 0x10 declares 40 "
                                    "compressed bytes in a payload of 16");
  S = ltoFatbin(0x18011, Obfuscated, uint64_t(1) << 40);
  EXPECT_EQ(errorOf(readFatbin(S)),
            "fatbin entry at offset 0x10 declares an uncompressed size of "
            "1099511627776 bytes, over the 4 GiB limit");
  // Without the obfuscation flag the same bytes are a broken zstd frame.
  S = ltoFatbin(0x8011, Obfuscated, 3336);
  EXPECT_EQ(errorOf(readFatbin(S)), "fatbin entry at offset 0x10 is marked "
                                    "zstd but its payload is not a zstd frame");
}

TEST(FatbinLtoIR, WriterRefusesLtoIR) {
  FatbinImage I = cubin("sm_80", "x");
  I.Kind = ImageKind::LtoIR;
  EXPECT_EQ(errorOf(writeFatbin({I})),
            "cannot write LTO-IR entries (sm_80): only cubin and PTX are "
            "supported");
}

TEST(ScanFile, TellsTheKindsOfNvccDeviceCode) {
  // A bare fatbin with a relocatable cubin (e_type ET_REL, as nvcc -dc
  // writes), a linked one (ET_EXEC) and an obfuscated LTO-IR entry.
  auto Elf = [](uint16_t Type) {
    std::string C = "\x7f"
                    "ELF\x02\x01\x01" +
                    std::string(57, '\0');
    put16(C, 16, Type);
    return C;
  };
  auto FatbinOrErr =
      writeFatbin({cubin("sm_80", Elf(1)), cubin("sm_90", Elf(2))},
                  FatbinOptions{Compression::None});
  ASSERT_OK(FatbinOrErr);
  std::string Lto = ltoFatbin(0x18011, Obfuscated, 3336);
  std::string All = *FatbinOrErr + Lto;
  auto ImagesOrErr = scanFile(All, "x.fatbin");
  ASSERT_OK(ImagesOrErr);
  ASSERT_EQ(ImagesOrErr->size(), 3u);
  EXPECT_EQ((*ImagesOrErr)[0].Kind, "cubin");
  EXPECT_TRUE((*ImagesOrErr)[0].Relocatable);
  EXPECT_FALSE((*ImagesOrErr)[1].Relocatable);
  const EmbeddedImage &L = (*ImagesOrErr)[2];
  EXPECT_EQ(L.Kind, "lto-ir");
  EXPECT_EQ(L.Arch, "sm_80");
  EXPECT_EQ(L.Options, "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 ");
  EXPECT_EQ(L.Data, Lto); // the entry in a container of its own
  // A bare fatbin is no object: no module, not a whole program.
  EXPECT_EQ(L.ModuleId, "");
  EXPECT_FALSE(L.WholeProgram);
}

//===----------------------------------------------------------------------===//
// PTX
//===----------------------------------------------------------------------===//

TEST(Ptx, Describe) {
  auto ImgOrErr = describeImage("//\n// Generated\n.version 8.8\n"
                                ".target sm_100f, debug\n.address_size 64\n");
  ASSERT_OK(ImgOrErr);
  EXPECT_EQ(ImgOrErr->Kind, ImageKind::PTX);
  EXPECT_EQ(ImgOrErr->Arch, "sm_100f");
  EXPECT_EQ(ImgOrErr->Major, 8u);
  EXPECT_EQ(ImgOrErr->Minor, 8u);

  EXPECT_EQ(errorOf(describeImage(".version 8\n.target sm_80\n")),
            "PTX .version '8' is not of the form X.Y");
  EXPECT_EQ(errorOf(describeImage(".version 7.0\n.target compute_80\n")),
            "PTX .target 'compute_80' is not an sm_NN target");
  EXPECT_EQ(errorOf(describeImage(".version 7.0\n.entry k()\n")),
            "PTX has '.entry k()' before its .target directive");
  EXPECT_EQ(errorOf(describeImage(".target sm_80\n")),
            "PTX has no .version directive before .target");
  EXPECT_EQ(errorOf(describeImage(StringRef("ab\0cd", 5))),
            "image is neither a cubin (ELF) nor PTX text");
  EXPECT_EQ(errorOf(describeImage("")),
            "image is empty: neither a cubin nor PTX");
}

TEST(Ptx, Minify) {
  // Each case is what CUDA 13.0's fatbinary stored for the input; the
  // FatbinaryCompare test checks the same inputs against fatbinary itself.
  EXPECT_EQ(minifyPtx("\t// .globl\tk // begin\n\tld.param.b64 \t%rd1, [p];\n"),
            "\nld.param.b64 %rd1, [p];\n");
  EXPECT_EQ(minifyPtx("a  /* c */  b\t\t/* multi\nline */ c\n"), "a  b\t c\n");
  EXPECT_EQ(minifyPtx("\t/* c */\tfoo\n  /**/x\n"), "\tfoo\nx\n");
  EXPECT_EQ(minifyPtx("x\"y // z\"w\n\"a\\\"//b\" y\r\n"),
            "x\"y // z\"w\n\"a\\\"//b\" y\r\n");
  EXPECT_EQ(minifyPtx("tab\there  \n/* a */ /* b */ z\n\t\n"),
            "tab\there \n  z\n\n");
}

} // namespace
