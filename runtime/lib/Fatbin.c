/*===- runtime/lib/Fatbin.c - Reading the fatbin container header ---------===*\
 *
 * Just enough of the fatbin container to tell which images a module
 * carries: kind, SM, arch variant, PTX ISA version and compression of each
 * entry. Payloads are never decoded (the driver does that). The layout is
 * docs/packager.md's "Fatbin container" table:
 *
 *   header (16 B): u32 magic 0xBA55ED50, u16 version 1, u16 header size,
 *                  u64 bytes of entries that follow
 *   entry (>= 64 B header, then the payload):
 *     @0 u16 kind (1 PTX, 2 cubin, 8 NVVM IR)  @2 u16 0x0101
 *     @4 u32 header size  @8 u64 payload size  @16 u32 compressed size
 *     @24 u16 minor  @26 u16 major (PTX ISA)  @28 u32 SM  @40 u64 flags
 *     @56 u64 uncompressed size
 *   flags: 0x8000 zstd, 0x2000 LZ4, 0x100000 sm_NNa, 0x200000 sm_NNf
 *
 * Containers may follow each other with 8-byte words of zeros between
 * them. Every size is checked against what is left before it is used, in
 * the form `Len > Size - Off`, which cannot overflow. Everything the
 * packager's reader (packager/Fatbin.cpp) checks short of decoding a
 * payload is checked here too, and fuzz/fatbin_diff.cpp holds the two to
 * the same answer on any input.
\*===----------------------------------------------------------------------===*/

#include "Internal.h"

#include <stdio.h>
#include <string.h>

enum {
  ContainerHeaderSize = 16,
  EntryHeaderMin = 64,
  FlagLz4 = 0x2000,
  FlagZstd = 0x8000,
  FlagArchSpecific = 0x100000,
  FlagFamily = 0x200000,
};
/* The largest uncompressed size the packager's reader accepts. */
static const uint64_t MaxUncompressed = (uint64_t)1 << 32;

static uint64_t le(const unsigned char *P, int N) {
  uint64_t V = 0;
  for (int I = N - 1; I >= 0; --I)
    V = (V << 8) | P[I];
  return V;
}

/* The (offset, length) pair at PairOff of an entry header must be (0, 0)
 * or name a string inside the header after its 64 fixed bytes. */
static int headerStringOk(const unsigned char *E, uint64_t HeaderSize,
                          uint64_t PairOff) {
  if (PairOff > HeaderSize || 8 > HeaderSize - PairOff)
    return 0;
  uint64_t StrOff = le(E + PairOff, 4), Len = le(E + PairOff + 4, 4);
  if (StrOff == 0 && Len == 0)
    return 1;
  return StrOff >= EntryHeaderMin && StrOff <= HeaderSize &&
         Len <= HeaderSize - StrOff;
}

/* Checks the entry at Off (which must end by End) and records it in
 * Out[*N] if there is room. Returns the offset just past it, or 0 after
 * setting the message. */
static uint64_t parseEntry(const unsigned char *B, uint64_t Off, uint64_t End,
                           fatlink_rt_image *Out, size_t Capacity, size_t *N) {
  if (EntryHeaderMin > End - Off) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: entry header at offset %llu is truncated (%llu bytes "
              "left, 64 needed)",
              (unsigned long long)Off, (unsigned long long)(End - Off));
    return 0;
  }
  const unsigned char *E = B + Off;
  unsigned Kind = (unsigned)le(E, 2);
  unsigned Layout = (unsigned)le(E + 2, 2);
  uint64_t EntryHeader = le(E + 4, 4);
  uint64_t Payload = le(E + 8, 8);
  uint64_t Compressed = le(E + 16, 4);
  uint64_t OptionsPair = le(E + 20, 4);
  uint64_t Flags = le(E + 40, 8);
  uint64_t Uncompressed = le(E + 56, 8);
  const char *Bad = NULL;
  if (Kind != FATLINK_RT_IMAGE_PTX && Kind != FATLINK_RT_IMAGE_CUBIN &&
      Kind != FATLINK_RT_IMAGE_NVVM) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: entry at offset %llu has unknown kind %u",
              (unsigned long long)Off, Kind);
    return 0;
  }
  if (Layout != 0x0101) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: entry at offset %llu has unknown layout 0x%04x "
              "(expected 0x0101)",
              (unsigned long long)Off, Layout);
    return 0;
  }
  if (EntryHeader < EntryHeaderMin || EntryHeader > End - Off) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: entry at offset %llu has header size %llu (64..%llu "
              "allowed)",
              (unsigned long long)Off, (unsigned long long)EntryHeader,
              (unsigned long long)(End - Off));
    return 0;
  }
  if (Payload > End - Off - EntryHeader) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: payload of the entry at offset %llu ends past its "
              "container (%llu bytes claimed, %llu left)",
              (unsigned long long)Off, (unsigned long long)Payload,
              (unsigned long long)(End - Off - EntryHeader));
    return 0;
  }
  /* What the packager's reader checks in the header too (docs/packager.md,
   * "Reader policy"), so that both accept the same fatbins. */
  if (!headerStringOk(E, EntryHeader, 32))
    Bad = "its identifier string lies outside its header";
  else if (OptionsPair != 0 && !headerStringOk(E, EntryHeader, OptionsPair))
    Bad = "its options string lies outside its header";
  else if ((Flags & FlagZstd) && (Flags & FlagLz4))
    Bad = "it is marked both zstd and LZ4";
  else if ((Flags & (FlagZstd | FlagLz4)) && Compressed > Payload)
    Bad = "its compressed size is larger than its payload";
  else if ((Flags & (FlagZstd | FlagLz4)) && Uncompressed > MaxUncompressed)
    Bad = "its uncompressed size is over 4 GiB";
  if (Bad) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: entry at offset %llu is malformed: %s",
              (unsigned long long)Off, Bad);
    return 0;
  }
  if (*N < Capacity && Out) {
    fatlink_rt_image *I = &Out[*N];
    memset(I, 0, sizeof(*I));
    I->kind = (fatlink_rt_image_kind)Kind;
    I->sm = (uint32_t)le(E + 28, 4);
    I->variant = (Flags & FlagArchSpecific) ? 'a'
                 : (Flags & FlagFamily)     ? 'f'
                                            : 0;
    if (Kind != FATLINK_RT_IMAGE_CUBIN) {
      I->ptx_minor = (uint16_t)le(E + 24, 2);
      I->ptx_major = (uint16_t)le(E + 26, 2);
    }
    I->compression = (Flags & FlagZstd)  ? FATLINK_RT_COMPRESSION_ZSTD
                     : (Flags & FlagLz4) ? FATLINK_RT_COMPRESSION_LZ4
                                         : FATLINK_RT_COMPRESSION_NONE;
    I->size = I->compression != FATLINK_RT_COMPRESSION_NONE ? Uncompressed
                                                            : Payload;
  }
  ++*N;
  return Off + EntryHeader + Payload;
}

/* Checks the container at Off. Returns the offset just past it, or 0 after
 * setting the message. */
static uint64_t parseContainer(const unsigned char *B, uint64_t Size,
                               uint64_t Off, fatlink_rt_image *Out,
                               size_t Capacity, size_t *N) {
  if (ContainerHeaderSize > Size - Off) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: container header at offset %llu is truncated (%llu "
              "bytes left, 16 needed)",
              (unsigned long long)Off, (unsigned long long)(Size - Off));
    return 0;
  }
  uint32_t Magic = (uint32_t)le(B + Off, 4);
  if (Magic != FATLINK_FATBIN_MAGIC) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: bad magic 0x%08x at offset %llu (expected 0x%08x)",
              Magic, (unsigned long long)Off, FATLINK_FATBIN_MAGIC);
    return 0;
  }
  unsigned Version = (unsigned)le(B + Off + 4, 2);
  uint64_t HeaderSize = le(B + Off + 6, 2);
  uint64_t EntriesSize = le(B + Off + 8, 8);
  if (Version != 1) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: container at offset %llu has version %u, this runtime "
              "reads version 1",
              (unsigned long long)Off, Version);
    return 0;
  }
  if (HeaderSize < ContainerHeaderSize || HeaderSize > Size - Off) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: container at offset %llu has header size %llu "
              "(16..%llu allowed)",
              (unsigned long long)Off, (unsigned long long)HeaderSize,
              (unsigned long long)(Size - Off));
    return 0;
  }
  uint64_t Begin = Off + HeaderSize;
  if (EntriesSize > Size - Begin) {
    flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
              "fatbin: entries of the container at offset %llu end past the "
              "fatbin (%llu bytes claimed, %llu left)",
              (unsigned long long)Off, (unsigned long long)EntriesSize,
              (unsigned long long)(Size - Begin));
    return 0;
  }
  uint64_t End = Begin + EntriesSize;
  for (uint64_t Cur = Begin; Cur != End;) {
    Cur = parseEntry(B, Cur, End, Out, Capacity, N);
    if (Cur == 0)
      return 0;
  }
  return End;
}

fatlink_rt_status fatlink_rt_parse_fatbin(const void *Data, uint64_t Size,
                                          fatlink_rt_image *Out,
                                          size_t Capacity, size_t *Count) {
  if (!Data || !Count)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_parse_fatbin: data and count must not be NULL");
  const unsigned char *B = (const unsigned char *)Data;
  if (Size == 0)
    return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE, "fatbin: empty (0 bytes)");
  size_t N = 0;
  uint64_t Off = 0;
  /* What may follow a container is cuobjdump's rule: while a container
   * header still fits, 8-byte words of zeros are padding and a container
   * follows them; a tail shorter than a header is ignored. */
  for (;;) {
    Off = parseContainer(B, Size, Off, Out, Capacity, &N);
    if (Off == 0)
      return FATLINK_RT_ERROR_BAD_MODULE;
    if (Size - Off < ContainerHeaderSize)
      break;
    uint64_t Padding = Off;
    while (Size - Off >= 8 && le(B + Off, 8) == 0)
      Off += 8;
    if (Off != Padding && Size - Off < ContainerHeaderSize)
      return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                       "fatbin: zero padding at offset %llu is followed by "
                       "no container (%llu bytes left)",
                       (unsigned long long)Padding,
                       (unsigned long long)(Size - Off));
  }
  *Count = N;
  return flrt_ok();
}

const char *fatlink_rt_image_string(const fatlink_rt_image *Image, char *Buf,
                                    size_t Size) {
  if (!Buf || Size == 0)
    return "";
  if (!Image) {
    snprintf(Buf, Size, "(null)");
    return Buf;
  }
  char Variant[2] = {Image->variant, 0};
  switch (Image->kind) {
  case FATLINK_RT_IMAGE_CUBIN:
    snprintf(Buf, Size, "cubin sm_%u%s", Image->sm, Variant);
    break;
  case FATLINK_RT_IMAGE_PTX:
    snprintf(Buf, Size, "PTX compute_%u%s (ISA %u.%u)", Image->sm, Variant,
             Image->ptx_major, Image->ptx_minor);
    break;
  default:
    snprintf(Buf, Size, "NVVM IR compute_%u%s", Image->sm, Variant);
    break;
  }
  return Buf;
}
