//===- packager/Fatbin.cpp - CUDA fatbin container reader and writer ------===//
//
// The fatbin container is the format CUDA's `fatbinary` writes and the
// driver's cuModuleLoadData / __cudaRegisterFatBinary read. NVIDIA does not
// publish it; the layout below is what CUDA 13.0's fatbinary writes, checked
// field by field against its output (unittests/packager/FatbinaryCompareTest).
// All fields are little-endian.
//
//   Container header, 16 bytes:
//     0  u32 magic 0xBA55ED50
//     4  u16 version 1
//     6  u16 header size, 16
//     8  u64 size of all entries that follow the header
//
//   Entry header, 64 bytes plus optional trailing strings:
//     0  u16 kind: 1 PTX, 2 cubin (ELF), 8 LTO-IR (nvcc code=lto_NN, -dlto)
//     2  u16 0x0101
//     4  u32 header size (64 cubin, 80 PTX, 120 nvcc LTO-IR, more with
//            strings)
//     8  u64 payload size, padded to 8
//    16  u32 compressed size, unpadded (0 when not compressed)
//    20  u32 offset of the (offset, length) pair of the ptxas options (PTX)
//            or NVVM options (LTO-IR) in this header (0: none; 64 in a
//            PTX or LTO-IR entry)
//    24  u16 minor, u16 major: PTX ISA version; a cubin has 1.<ELF ABI>,
//            nvcc 13.0's LTO-IR 1.65
//    28  u32 SM (80, 90, 100, ...)
//    32  u32 offset, u32 length of the identifier string (fatbinary --ident)
//    40  u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux host, 0x2000 LZ4,
//            0x8000 zstd, 0x10000 obfuscated, 0x100000 "a" arch,
//            0x200000 "f" family
//    48  u64 0; in an obfuscated entry, the word at offset 0x28 of the
//            plain LTO-IR
//    56  u64 uncompressed size (0 when not compressed)
//    64  optional strings, each NUL-terminated and padded to 8, addressed
//        by the offsets above (a plain PTX entry carries an empty options
//        string: the pair (72, 0) at 64 and 8 zero bytes at 72)
//
// The payload follows its header and is padded with zeros to 8 bytes, so
// every header stays 8-aligned. A PTX payload is the (minified) text plus a
// NUL. A compressed payload is one zstd frame (or an LZ4 block) of exactly
// the uncompressed bytes; its header records both sizes.
//
// nvcc's LTO-IR (kind 8) is itself an opaque blob (it starts ed 43 4e 7f;
// nvJitLink reads it as NVJITLINK_INPUT_LTOIR). Stored plain (fatbinary
// --compress-mode=none) it is an ordinary payload. Compressed (zstd by
// default, LZ4 in speed mode), fatbinary also sets flag 0x10000 and the
// compressed bytes are obfuscated with a key that neither this reader nor
// NVIDIA's cuobjdump has ("Can't deobfuscate entry ... without obfuscation
// key"): such an entry is read, checked and kept as stored, never
// decompressed; nvJitLink takes it inside a fatbin (fatbinOfEntry).
//
// The reader trusts nothing: every size and offset is checked in a form
// that cannot overflow (`Len > Size - Off`) before it is used.
//
//===----------------------------------------------------------------------===//

#include "packager/Packager.h"
#include "packager/Descriptor.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <memory>
#include <system_error>
#include <tuple>
// ZSTD_c_stableInBuffer and ZSTD_getCParams (exported by libzstd.so).
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

using namespace llvm;
using namespace fatlink;
using namespace fatlink::packager;

namespace {

constexpr uint64_t ContainerHeaderSize = 16;
constexpr uint64_t EntryHeaderSize = 64;
constexpr uint16_t EntryLayout = 0x0101;
constexpr uint64_t BaseFlags = FlagAddress64 | FlagHostLinux;
// No image the driver loads comes near this; it bounds what a malformed
// header can make the reader allocate.
constexpr uint64_t MaxUncompressedSize = uint64_t(1) << 32;

std::string hex(uint64_t V) { return "0x" + utohexstr(V, /*LowerCase=*/true); }

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

struct ParsedArch {
  unsigned SM = 0;
  uint64_t Flags = 0;
};

Expected<ParsedArch> parseArch(StringRef Arch) {
  StringRef Rest = Arch;
  ParsedArch P;
  if (!Rest.consume_front("sm_"))
    return createStringError("arch '" + Arch + "' does not start with sm_");
  if (Rest.consume_back("a"))
    P.Flags = FlagArchSpecific;
  else if (Rest.consume_back("f"))
    P.Flags = FlagFamilySpecific;
  if (Rest.getAsInteger(10, P.SM) || P.SM == 0)
    return createStringError("arch '" + Arch + "' has no SM number");
  return P;
}

void appendU16(std::string &Out, uint16_t V) {
  char B[2];
  support::endian::write16le(B, V);
  Out.append(B, 2);
}
void appendU32(std::string &Out, uint32_t V) {
  char B[4];
  support::endian::write32le(B, V);
  Out.append(B, 4);
}
void appendU64(std::string &Out, uint64_t V) {
  char B[8];
  support::endian::write64le(B, V);
  Out.append(B, 8);
}
void padTo8(std::string &Out) { Out.resize(alignTo(Out.size(), 8), '\0'); }

/// zstd at \p Level over \p In. Up to \p ThreadsAbove bytes are compressed
/// in one call, into the frame one-shot ZSTD_compress writes. A larger
/// input (a large program's cubin, mapped) is compressed by zstd's threads,
/// \p Workers of them (at least one), fed 4 MB at a time from where it lies,
/// and \p Read is given, in order, each piece no match can reach any more,
/// so that little of it is resident at once. That frame is valid zstd but
/// not the one-shot one: zstd cuts the input into jobs (four windows each,
/// 32 MB at level 19), compressed in parallel, each able to match the
/// window before it. It does not depend on Workers: zstd's streaming
/// output is the same for any number of threads from one, a property zstd
/// keeps (facebook/zstd issues 2238 and 2327), so the caller gives whatever
/// threads are idle. Read is given every byte of In once.
Expected<std::string> zstdCompress(StringRef In, int Level, size_t ThreadsAbove,
                                   unsigned Workers,
                                   function_ref<void(StringRef)> Read) {
  constexpr size_t Step = 4 << 20; // a multiple of zstd's 128 KB blocks
  auto Fail = [](size_t R) {
    return createStringError(Twine("zstd compression failed: ") +
                             ZSTD_getErrorName(R));
  };
  ZSTD_CCtx *C = ZSTD_createCCtx();
  if (!C)
    return createStringError("zstd compression failed: out of memory");
  scope_exit Free([&] { ZSTD_freeCCtx(C); });
  for (size_t R : {ZSTD_CCtx_setParameter(C, ZSTD_c_compressionLevel, Level),
                   ZSTD_CCtx_setParameter(C, ZSTD_c_stableInBuffer, 1),
                   ZSTD_CCtx_setPledgedSrcSize(C, In.size())})
    if (ZSTD_isError(R))
      return Fail(R);
  bool Threaded = In.size() > ThreadsAbove;
  if (Threaded)
    if (size_t R =
            ZSTD_CCtx_setParameter(C, ZSTD_c_nbWorkers, std::max(Workers, 1u));
        ZSTD_isError(R))
      return createStringError(
          Twine("zstd compression failed: this libzstd has no threads (") +
          ZSTD_getErrorName(R) + "): build fatlink with one that has them");
  // The bound is more than the input, and zstd writes only the compressed
  // bytes: a buffer left uninitialized keeps the untouched pages (nearly
  // all of a 100 MB cubin's) from ever being resident.
  size_t Bound = ZSTD_compressBound(In.size());
  std::unique_ptr<char[]> Buf(new char[Bound]);
  ZSTD_outBuffer Out{Buf.get(), Bound, 0};
  ZSTD_inBuffer Src{In.data(), 0, 0};
  // Calls zstd until Src is consumed (Mode e_continue) or the frame is
  // written (e_end).
  auto Run = [&](ZSTD_EndDirective Mode) -> Error {
    for (;;) {
      size_t Before = Src.pos + Out.pos;
      size_t R = ZSTD_compressStream2(C, &Out, &Src, Mode);
      if (ZSTD_isError(R))
        return Fail(R);
      if (Mode == ZSTD_e_end ? R == 0 : Src.pos == Src.size)
        return Error::success();
      if (Src.pos + Out.pos == Before) // cannot happen with Bound bytes out
        return createStringError("zstd compression made no progress");
    }
  };
  size_t Given = 0; // bytes of In passed to Read
  if (!Threaded) {
    Src.size = In.size();
    if (Error E = Run(ZSTD_e_end))
      return std::move(E);
  } else {
    // How far back a match reaches: the window, and the block being built.
    size_t Reach =
        (size_t(1) << ZSTD_getCParams(Level, In.size(), 0).windowLog) +
        ZSTD_BLOCKSIZE_MAX;
    // Every byte goes in with e_continue and the frame ends in a call of
    // its own: a first call with e_end would be compressed on this thread
    // alone (zstd hands it to ZSTD_compress2), whatever the workers.
    while (Src.size < In.size()) {
      Src.size = std::min(In.size(), Src.size + Step);
      if (Error E = Run(ZSTD_e_continue))
        return std::move(E);
      if (Read && Src.pos > Given + Reach + Step) {
        Read(In.slice(Given, Src.pos - Reach));
        Given = Src.pos - Reach;
      }
    }
    if (Error E = Run(ZSTD_e_end))
      return std::move(E);
  }
  if (Read)
    Read(In.drop_front(Given));
  return std::string(Buf.get(), Out.pos);
}

// One entry, ready to be laid out.
struct PendingEntry {
  const FatbinImage *Image;
  ParsedArch Arch;
};

Error checkOptions(const FatbinOptions &Opts) {
  if (Opts.Compress == Compression::Zstd &&
      (Opts.ZstdLevel < 1 || Opts.ZstdLevel > ZSTD_maxCLevel()))
    return createStringError("zstd level " + Twine(Opts.ZstdLevel) +
                             " is out of range 1.." + Twine(ZSTD_maxCLevel()));
  return Error::success();
}

Expected<ParsedArch> checkImage(const FatbinImage &Img) {
  if (Img.Kind == ImageKind::LtoIR)
    return createStringError("cannot write LTO-IR entries (" + Img.Arch +
                             "): only cubin and PTX are supported");
  return parseArch(Img.Arch);
}

/// Appends the entry for \p Img, whose bytes are \p Payload (header and
/// payload), to \p Out.
Error encodeEntry(std::string &Out, const FatbinImage &Img, StringRef Payload,
                  const ParsedArch &Arch, const FatbinOptions &Opts,
                  function_ref<void(StringRef)> Read) {
  bool IsPtx = Img.Kind == ImageKind::PTX;
  // PTX is stored NUL-terminated (and maybe minified): a copy. A cubin is
  // stored as it is, read in place.
  std::string Ptx;
  if (IsPtx) {
    Ptx = Opts.MinifyPtx ? minifyPtx(Payload) : Payload.str();
    Ptx.push_back('\0');
    if (Read)
      Read(Payload);
  }
  StringRef Raw = IsPtx ? StringRef(Ptx) : Payload;

  uint64_t Flags = BaseFlags | Arch.Flags;
  std::string Compressed;
  StringRef Stored = Raw;
  uint64_t CompressedSize = 0, UncompressedSize = 0;
  if (Opts.Compress == Compression::Zstd) {
    Expected<std::string> Z = zstdCompress(
        Raw, Opts.ZstdLevel, Opts.ZstdThreadsAbove, Opts.ZstdWorkers,
        IsPtx ? function_ref<void(StringRef)>() : Read);
    if (!Z)
      return Z.takeError();
    // Keep the compressed form only when it saves space once padded.
    if (alignTo(Z->size(), 8) < alignTo(Raw.size(), 8)) {
      CompressedSize = Z->size();
      UncompressedSize = Raw.size();
      Flags |= FlagZstd;
      Compressed = std::move(*Z);
      Stored = Compressed;
    }
  }
  if (Stored.size() > UINT32_MAX)
    return createStringError(Img.Arch + " image of " + Twine(Stored.size()) +
                             " bytes does not fit a fatbin entry");

  // The header's extension at offset 64: a (u32 offset, u32 size) pair
  // naming a blob after it. PTX entries carry their (empty) ptxas options
  // there; cubins for SM >= 100 carry their .nv.compat attributes, written as
  // fatbinary writes them: a zero byte, then all but the last byte of the
  // section (checked against fatbinary for sm_100, 100a, 110, 120, 121f).
  std::string Extension;
  if (IsPtx) {
    Extension.append(8, '\0');
  } else if (Arch.SM >= 100 && !Img.Compat.empty()) {
    Extension = '\0' + Img.Compat.substr(0, Img.Compat.size() - 1);
    Flags |= FlagCompatAttributes;
  }
  uint64_t HeaderSize =
      Extension.empty() ? EntryHeaderSize
                        : alignTo(EntryHeaderSize + 8 + Extension.size(), 8);
  appendU16(Out, uint16_t(Img.Kind));
  appendU16(Out, EntryLayout);
  appendU32(Out, HeaderSize);
  appendU64(Out, alignTo(Stored.size(), 8));
  appendU32(Out, CompressedSize);
  appendU32(Out, Extension.empty() ? 0 : EntryHeaderSize);
  appendU16(Out, Img.Minor);
  appendU16(Out, Img.Major);
  appendU32(Out, Arch.SM);
  appendU32(Out, 0); // identifier offset
  appendU32(Out, 0); // identifier length
  appendU64(Out, Flags);
  appendU64(Out, 0);
  appendU64(Out, UncompressedSize);
  if (!Extension.empty()) {
    appendU32(Out, EntryHeaderSize + 8);
    appendU32(Out, IsPtx ? 0 : Extension.size());
    Out += Extension;
    padTo8(Out);
  }
  Out += Stored;
  padTo8(Out);
  if (Read && !IsPtx && Stored.data() == Payload.data())
    Read(Payload); // read again to be stored as it is
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

/// Makes room in \p Out for \p N more bytes of an image of at most
/// \p Limit: its capacity doubles, never past Limit, so what is allocated
/// follows what the payload really produces, not what its header declares.
/// Memory that cannot be had (ulimit -v) is an error naming the entry: the
/// allocation itself would end the process with no word of which file
/// asked for it. The probe is a malloc of the same size while Out still
/// holds its bytes, as the reallocation will.
Error reserveFor(std::string &Out, uint64_t N, uint64_t Limit,
                 uint64_t EntryOff) {
  if (Out.capacity() - Out.size() >= N)
    return Error::success();
  uint64_t Want = std::max<uint64_t>(
      Out.size() + N,
      std::min<uint64_t>(Limit, std::max<uint64_t>(2 * uint64_t(Out.capacity()),
                                                   uint64_t(1) << 20)));
  if (void *Probe = std::malloc(Want))
    std::free(Probe);
  else
    return createStringError(
        std::make_error_code(std::errc::not_enough_memory),
        "cannot allocate " + Twine(Want) +
            " bytes to decompress the fatbin entry at offset " + hex(EntryOff) +
            " (" + Twine(Limit) + " bytes): out of memory");
  Out.reserve(Want);
  return Error::success();
}

/// Decodes one LZ4 block (the format fatbinary --compress-mode=speed
/// writes) of exactly \p OutSize bytes. Every length is checked against
/// what remains of the input and the output.
Expected<std::string> lz4Decompress(StringRef In, uint64_t OutSize,
                                    uint64_t EntryOff, uint64_t Max) {
  auto Bad = [&](const Twine &What) {
    return createStringError(
        "malformed LZ4 payload in fatbin entry at offset " + hex(EntryOff) +
        ": " + What);
  };
  // A header may declare any size up to the limit; an LZ4 input byte yields
  // at most 255 output bytes, so reserve no more than the input can fill.
  std::string Out;
  uint64_t Bound = std::min({OutSize, uint64_t(In.size()) * 255, Max});
  if (Error E = reserveFor(Out, Bound, Bound, EntryOff))
    return std::move(E);
  size_t I = 0;
  auto ReadLength = [&](uint64_t &Len) -> bool {
    if (Len != 15)
      return true;
    while (true) {
      if (I >= In.size())
        return false;
      uint8_t B = In[I++];
      Len += B;
      if (Len > OutSize)
        return false;
      if (B != 255)
        return true;
    }
  };
  while (I < In.size()) {
    if (Out.size() >= Max)
      return Out.substr(0, Max);
    uint8_t Token = In[I++];
    uint64_t Lit = Token >> 4;
    if (!ReadLength(Lit))
      return Bad("literal length runs past the end");
    if (Lit > In.size() - I || Lit > OutSize - Out.size())
      return Bad("literal run of " + Twine(Lit) + " bytes past the end");
    Out.append(In.data() + I, std::min<uint64_t>(Lit, Max - Out.size()));
    I += Lit;
    if (Out.size() >= Max)
      return std::move(Out);
    if (I == In.size())
      break; // the last sequence has literals only
    if (In.size() - I < 2)
      return Bad("truncated match offset");
    uint64_t MatchOff = uint8_t(In[I]) | (uint64_t(uint8_t(In[I + 1])) << 8);
    I += 2;
    uint64_t MatchLen = Token & 15;
    if (!ReadLength(MatchLen))
      return Bad("match length runs past the end");
    MatchLen += 4;
    if (MatchOff == 0 || MatchOff > Out.size())
      return Bad("match offset " + Twine(MatchOff) + " before the start");
    if (MatchLen > OutSize - Out.size())
      return Bad("match of " + Twine(MatchLen) + " bytes past the end");
    size_t From = Out.size() - MatchOff;
    // May overlap its own output; a prefix stops at Max.
    for (uint64_t K = 0; K < MatchLen && Out.size() < Max; ++K)
      Out.push_back(Out[From + K]);
  }
  if (Out.size() >= Max)
    return Out.substr(0, Max);
  if (Out.size() != OutSize)
    return Bad("decodes to " + Twine(Out.size()) + " bytes, header says " +
               Twine(OutSize));
  return std::move(Out);
}

Expected<std::string> zstdDecompress(StringRef In, uint64_t OutSize,
                                     uint64_t EntryOff, uint64_t Max) {
  unsigned long long Declared = ZSTD_getFrameContentSize(In.data(), In.size());
  if (Declared == ZSTD_CONTENTSIZE_ERROR)
    return createStringError(
        "fatbin entry at offset " + hex(EntryOff) +
        " is marked zstd but its payload is not a zstd frame");
  if (Declared != ZSTD_CONTENTSIZE_UNKNOWN && Declared != OutSize)
    return createStringError("zstd frame in fatbin entry at offset " +
                             hex(EntryOff) + " holds " + Twine(Declared) +
                             " bytes, header says " + Twine(OutSize));
  // The output grows only as the frame really produces it: a header (and
  // the frame's own size field) may declare up to 4 GiB over a few bytes.
  ZSTD_DCtx *DCtx = ZSTD_createDCtx();
  if (!DCtx)
    return createStringError("cannot decompress fatbin entry at offset " +
                             hex(EntryOff) + ": out of memory");
  scope_exit FreeDCtx([&] { ZSTD_freeDCtx(DCtx); });
  std::string Out;
  std::vector<char> Chunk(
      std::min<uint64_t>(1 << 16, std::max<uint64_t>(Max, 1)));
  ZSTD_inBuffer Src{In.data(), In.size(), 0};
  while (true) {
    ZSTD_outBuffer Dst{Chunk.data(), Chunk.size(), 0};
    size_t Ret = ZSTD_decompressStream(DCtx, &Dst, &Src);
    if (ZSTD_isError(Ret))
      return createStringError("cannot decompress fatbin entry at offset " +
                               hex(EntryOff) + ": " + ZSTD_getErrorName(Ret));
    if (Dst.pos > OutSize - Out.size())
      return createStringError("zstd frame in fatbin entry at offset " +
                               hex(EntryOff) + " holds more than the " +
                               Twine(OutSize) + " bytes its header says");
    if (Error E = reserveFor(Out, Dst.pos, std::min(OutSize, Max), EntryOff))
      return std::move(E);
    Out.append(Chunk.data(), Dst.pos);
    if (Out.size() >= Max)
      return Out.substr(0, Max);
    if (Ret == 0 && Src.pos == Src.size)
      break;
    if (Src.pos == Src.size && Dst.pos < Dst.size)
      return createStringError("cannot decompress fatbin entry at offset " +
                               hex(EntryOff) + ": truncated zstd frame");
  }
  size_t N = Out.size();
  if (N != OutSize)
    return createStringError("zstd frame in fatbin entry at offset " +
                             hex(EntryOff) + " holds " + Twine(N) +
                             " bytes, header says " + Twine(OutSize));
  return std::move(Out);
}

/// Reads the string that the (offset, length) pair at \p PairOff of an
/// entry header points to. An empty pair (0, 0) is no string.
Expected<std::string> readHeaderString(StringRef Header, uint64_t PairOff,
                                       uint64_t EntryOff, const char *What) {
  if (PairOff > Header.size() || 8 > Header.size() - PairOff)
    return createStringError(
        Twine(What) + " pair at header offset " + Twine(PairOff) +
        " lies outside the " + Twine(Header.size()) +
        "-byte header of the fatbin entry at offset " + hex(EntryOff));
  uint32_t Off = support::endian::read32le(Header.data() + PairOff);
  uint32_t Len = support::endian::read32le(Header.data() + PairOff + 4);
  if (Off == 0 && Len == 0)
    return std::string();
  if (Off < EntryHeaderSize || Off > Header.size() ||
      Len > Header.size() - Off)
    return createStringError(Twine(What) + " string (" + Twine(Off) + ", " +
                             Twine(Len) +
                             ") overlaps the fixed fields or the payload "
                             "of the fatbin entry at offset " +
                             hex(EntryOff));
  return Header.substr(Off, Len).str();
}

std::string archName(unsigned SM, uint64_t Flags) {
  std::string S = "sm_" + std::to_string(SM);
  if (Flags & FlagArchSpecific)
    S += 'a';
  else if (Flags & FlagFamilySpecific)
    S += 'f';
  return S;
}

/// Reads the entry at \p Off, which must end by \p End. Returns the offset
/// just past it.
Expected<uint64_t> readEntry(StringRef Data, uint64_t Off, uint64_t End,
                             bool Decompress,
                             std::vector<FatbinEntry> &Entries) {
  using namespace support::endian;
  if (EntryHeaderSize > End - Off)
    return createStringError("truncated fatbin entry header at offset " +
                             hex(Off) + ": need 64 bytes, " + Twine(End - Off) +
                             " left in the container");
  const char *P = Data.data() + Off;
  FatbinEntry E;
  E.Offset = Off;
  uint16_t Kind = read16le(P);
  uint16_t Layout = read16le(P + 2);
  E.HeaderSize = read32le(P + 4);
  E.StoredSize = read64le(P + 8);
  uint32_t CompressedSize = read32le(P + 16);
  uint32_t OptionsPair = read32le(P + 20);
  E.Minor = read16le(P + 24);
  E.Major = read16le(P + 26);
  E.SM = read32le(P + 28);
  E.Flags = read64le(P + 40);
  E.KeyWord = read64le(P + 48);
  E.UncompressedSize = read64le(P + 56);

  if (Kind != uint16_t(ImageKind::PTX) && Kind != uint16_t(ImageKind::Cubin) &&
      Kind != uint16_t(ImageKind::LtoIR))
    return createStringError("unknown fatbin entry kind " + Twine(Kind) +
                             " at offset " + hex(Off));
  E.Kind = ImageKind(Kind);
  if (Layout != EntryLayout)
    return createStringError("unknown fatbin entry layout " + hex(Layout) +
                             " at offset " + hex(Off) + " (expected 0x101)");
  if (E.HeaderSize < EntryHeaderSize)
    return createStringError("fatbin entry at offset " + hex(Off) +
                             " declares a header of " + Twine(E.HeaderSize) +
                             " bytes, less than the 64 its fields take");
  if (E.HeaderSize > End - Off)
    return createStringError("fatbin entry at offset " + hex(Off) +
                             " declares a header of " + Twine(E.HeaderSize) +
                             " bytes but only " + Twine(End - Off) +
                             " are left in the container");
  uint64_t PayloadOff = Off + E.HeaderSize;
  if (E.StoredSize > End - PayloadOff)
    return createStringError("fatbin entry at offset " + hex(Off) +
                             " declares a payload of " + Twine(E.StoredSize) +
                             " bytes but only " + Twine(End - PayloadOff) +
                             " are left in the container");

  StringRef Header = Data.substr(Off, E.HeaderSize);
  Expected<std::string> Ident = readHeaderString(Header, 32, Off, "identifier");
  if (!Ident)
    return Ident.takeError();
  E.Identifier = std::move(*Ident);
  if (OptionsPair != 0) {
    Expected<std::string> Opts =
        readHeaderString(Header, OptionsPair, Off, "options");
    if (!Opts)
      return Opts.takeError();
    E.Options = std::move(*Opts);
  }
  E.Arch = archName(E.SM, E.Flags);

  StringRef Payload = Data.substr(PayloadOff, E.StoredSize);
  bool Zstd = E.Flags & FlagZstd, LZ4 = E.Flags & FlagLZ4;
  if (Zstd && LZ4)
    return createStringError("fatbin entry at offset " + hex(Off) +
                             " is marked both zstd and LZ4 (flags " +
                             hex(E.Flags) + ")");
  if (Zstd || LZ4) {
    if (CompressedSize > E.StoredSize)
      return createStringError("fatbin entry at offset " + hex(Off) +
                               " declares " + Twine(CompressedSize) +
                               " compressed bytes in a payload of " +
                               Twine(E.StoredSize));
    if (E.UncompressedSize > MaxUncompressedSize)
      return createStringError("fatbin entry at offset " + hex(Off) +
                               " declares an uncompressed size of " +
                               Twine(E.UncompressedSize) +
                               " bytes, over the 4 GiB "
                               "limit");
    Payload = Payload.take_front(CompressedSize);
  }
  if (E.Flags & FlagObfuscated) {
    // Obfuscated with a key we do not have: kept as stored, never
    // decompressed (see the top of this file).
    E.Payload = Payload.str();
    E.Encoded = Data.substr(Off, E.HeaderSize + E.StoredSize).str();
  } else if ((Zstd || LZ4) && Decompress) {
    Expected<std::string> Out =
        decompressFatbinPayload(Payload, E.Flags, E.UncompressedSize, Off);
    if (!Out)
      return Out.takeError();
    E.Payload = std::move(*Out);
  } else {
    E.Payload = Payload.str();
  }
  uint64_t Next = PayloadOff + E.StoredSize;
  Entries.push_back(std::move(E));
  return Next;
}

/// Reads the container at \p Off. Returns the offset just past it.
Expected<uint64_t> readContainer(StringRef Data, uint64_t Off, bool Decompress,
                                 std::vector<FatbinEntry> &Entries) {
  using namespace support::endian;
  uint64_t Size = Data.size();
  if (ContainerHeaderSize > Size - Off)
    return createStringError("truncated fatbin header at offset " + hex(Off) +
                             ": need 16 bytes, have " + Twine(Size - Off));
  const char *P = Data.data() + Off;
  uint32_t Magic = read32le(P);
  uint16_t Version = read16le(P + 4);
  uint16_t HeaderSize = read16le(P + 6);
  uint64_t EntriesSize = read64le(P + 8);
  if (Magic != FATLINK_FATBIN_MAGIC)
    return createStringError("bad fatbin magic " + hex(Magic) + " at offset " +
                             hex(Off) + " (expected 0xba55ed50)");
  if (Version != 1)
    return createStringError("unsupported fatbin version " + Twine(Version) +
                             " at offset " + hex(Off) + " (expected 1)");
  if (HeaderSize < ContainerHeaderSize || HeaderSize > Size - Off)
    return createStringError("fatbin at offset " + hex(Off) +
                             " declares a header of " + Twine(HeaderSize) +
                             " bytes (expected 16)");
  uint64_t Begin = Off + HeaderSize;
  if (EntriesSize > Size - Begin)
    return createStringError("fatbin at offset " + hex(Off) + " declares " +
                             Twine(EntriesSize) +
                             " bytes of entries but only " +
                             Twine(Size - Begin) + " follow its header");
  uint64_t End = Begin + EntriesSize;
  for (uint64_t Cur = Begin; Cur != End;) {
    Expected<uint64_t> Next = readEntry(Data, Cur, End, Decompress, Entries);
    if (!Next)
      return Next.takeError();
    Cur = *Next;
  }
  return End;
}

} // namespace

Expected<std::string>
fatlink::packager::writeFatbin(ArrayRef<FatbinImage> Images,
                               const FatbinOptions &Opts) {
  if (Images.empty())
    return createStringError("no images to put in the fatbin");
  if (Error E = checkOptions(Opts))
    return std::move(E);

  std::vector<PendingEntry> Pending;
  for (const FatbinImage &Img : Images) {
    Expected<ParsedArch> A = checkImage(Img);
    if (!A)
      return A.takeError();
    Pending.push_back({&Img, *A});
  }
  // Deterministic order whatever the input order: by SM, then arch (plain
  // before a/f), then cubin before PTX so the driver's exact-SM match wins.
  auto Key = [](const PendingEntry &E) {
    return std::make_tuple(E.Arch.SM, StringRef(E.Image->Arch),
                           E.Image->Kind == ImageKind::PTX);
  };
  llvm::stable_sort(Pending, [&](const PendingEntry &L, const PendingEntry &R) {
    return Key(L) < Key(R);
  });
  for (size_t I = 1; I < Pending.size(); ++I)
    if (Key(Pending[I - 1]) == Key(Pending[I]))
      return createStringError(
          Twine("two ") +
          (Pending[I].Image->Kind == ImageKind::PTX ? "PTX" : "cubin") +
          " images for " + Pending[I].Image->Arch);

  std::string Out;
  appendU32(Out, FATLINK_FATBIN_MAGIC);
  appendU16(Out, 1);
  appendU16(Out, ContainerHeaderSize);
  appendU64(Out, 0); // patched below
  for (const PendingEntry &E : Pending) {
    if (!E.Image->Entry.empty())
      Out += E.Image->Entry;
    else if (Error Err = encodeEntry(Out, *E.Image, E.Image->Data, E.Arch,
                                     Opts, {}))
      return std::move(Err);
  }
  support::endian::write64le(Out.data() + 8, Out.size() - ContainerHeaderSize);
  return Out;
}

Expected<std::string>
fatlink::packager::encodeFatbinEntry(const FatbinImage &Img,
                                     const FatbinOptions &Opts) {
  return encodeFatbinEntry(Img, Img.Data, Opts);
}

Expected<std::string>
fatlink::packager::encodeFatbinEntry(const FatbinImage &Img, StringRef Payload,
                                     const FatbinOptions &Opts,
                                     function_ref<void(StringRef)> Read) {
  if (Error E = checkOptions(Opts))
    return std::move(E);
  Expected<ParsedArch> A = checkImage(Img);
  if (!A)
    return A.takeError();
  std::string Out;
  if (Error E = encodeEntry(Out, Img, Payload, *A, Opts, Read))
    return std::move(E);
  return Out;
}

std::string fatlink::packager::fatbinOfEntry(StringRef Encoded) {
  std::string Out;
  appendU32(Out, FATLINK_FATBIN_MAGIC);
  appendU16(Out, 1);
  appendU16(Out, ContainerHeaderSize);
  appendU64(Out, Encoded.size());
  Out += Encoded;
  return Out;
}

Expected<std::string>
fatlink::packager::decompressFatbinPayload(StringRef Stored, uint64_t Flags,
                                           uint64_t UncompressedSize,
                                           uint64_t EntryOff, uint64_t Max) {
  if (!(Flags & (FlagZstd | FlagLZ4)) || (Flags & FlagObfuscated))
    return Stored.take_front(Max).str();
  Expected<std::string> Out =
      Flags & FlagZstd ? zstdDecompress(Stored, UncompressedSize, EntryOff, Max)
                       : lz4Decompress(Stored, UncompressedSize, EntryOff, Max);
  if (Out)
    return Out;
  // A payload error (see readFatbin), unless memory ran out.
  std::error_code EC = std::make_error_code(std::errc::illegal_byte_sequence);
  std::string Msg;
  handleAllErrors(Out.takeError(), [&](const ErrorInfoBase &Info) {
    Msg = Info.message();
    if (Info.convertToErrorCode() == std::errc::not_enough_memory)
      EC = Info.convertToErrorCode();
  });
  return createStringError(EC, Msg);
}

Expected<std::vector<FatbinEntry>>
fatlink::packager::readFatbin(StringRef Data, bool Decompress) {
  std::vector<FatbinEntry> Entries;
  uint64_t Off = 0;
  // cuobjdump's rule for what follows a container (docs/packager.md,
  // "Several containers"): while a container header still fits, 8-byte
  // words of zeros are padding and a container follows them; a tail
  // shorter than a header is ignored.
  do {
    Expected<uint64_t> End = readContainer(Data, Off, Decompress, Entries);
    if (!End)
      return End.takeError();
    Off = *End;
    if (Data.size() - Off < ContainerHeaderSize)
      break;
    uint64_t Padding = Off;
    while (Data.size() - Off >= 8 &&
           support::endian::read64le(Data.data() + Off) == 0)
      Off += 8;
    if (Off != Padding && Data.size() - Off < ContainerHeaderSize)
      return createStringError("zero padding at offset " + hex(Padding) +
                               " is followed by no fatbin container (" +
                               Twine(Data.size() - Off) + " bytes left)");
  } while (true);
  return Entries;
}
