// runtime_test.cc: unit tests of the runtime's pure parts (fatbin header
// reading, image selection, the PTX ISA / driver table) and of the registry
// on descriptors built in memory. Malformed fatbins are built byte by byte
// here, each with a comment on what is wrong with it. Everything that needs
// a driver (or its absence) runs in separate processes, in
// test/runtime/*.test.
#include "fatlink/runtime.h"
#include "packager/Descriptor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" void
fatlink_rt_register_modules_v1(const struct fatlink_module *Begin,
                               const struct fatlink_module *End);
extern "C" void
fatlink_rt_unregister_modules_v1(const struct fatlink_module *Begin,
                                 const struct fatlink_module *End);

namespace {

using Bytes = std::vector<unsigned char>;

void put(Bytes &B, size_t Off, uint64_t V, int N) {
  if (B.size() < Off + N)
    B.resize(Off + N);
  for (int I = 0; I < N; ++I)
    B[Off + I] = (unsigned char)(V >> (8 * I));
}

struct Entry {
  unsigned Kind = 2;
  unsigned Sm = 80;
  unsigned Major = 1, Minor = 8;
  uint64_t Flags = 0x11;
  uint64_t Payload = 8;
  unsigned HeaderSize = 64;
  unsigned Layout = 0x0101;
};

Bytes entryBytes(const Entry &E) {
  Bytes B(E.HeaderSize + E.Payload, 0);
  put(B, 0, E.Kind, 2);
  put(B, 2, E.Layout, 2);
  put(B, 4, E.HeaderSize, 4);
  put(B, 8, E.Payload, 8);
  put(B, 24, E.Minor, 2);
  put(B, 26, E.Major, 2);
  put(B, 28, E.Sm, 4);
  put(B, 40, E.Flags, 8);
  if (E.Flags & 0x8000)
    put(B, 56, 4 * E.Payload, 8);
  return B;
}

Bytes container(const std::vector<Entry> &Entries) {
  Bytes Body;
  for (const Entry &E : Entries) {
    Bytes EB = entryBytes(E);
    Body.insert(Body.end(), EB.begin(), EB.end());
  }
  Bytes B(16, 0);
  put(B, 0, 0xba55ed50, 4);
  put(B, 4, 1, 2);
  put(B, 6, 16, 2);
  put(B, 8, Body.size(), 8);
  B.insert(B.end(), Body.begin(), Body.end());
  return B;
}

std::vector<fatlink_rt_image> parse(const Bytes &B, fatlink_rt_status *S) {
  std::vector<fatlink_rt_image> Out(16);
  size_t N = 0;
  *S = fatlink_rt_parse_fatbin(B.data(), B.size(), Out.data(), Out.size(), &N);
  Out.resize(*S == FATLINK_RT_SUCCESS ? N : 0);
  return Out;
}

std::string parseError(const Bytes &B) {
  fatlink_rt_status S;
  parse(B, &S);
  EXPECT_EQ(S, FATLINK_RT_ERROR_BAD_MODULE);
  return fatlink_rt_last_error();
}

TEST(Fatbin, ReadsKindArchPtxVersionAndCompression) {
  Entry Cubin;
  Entry Ptx;
  Ptx.Kind = 1;
  Ptx.Sm = 90;
  Ptx.Major = 7;
  Ptx.Minor = 8;
  Ptx.HeaderSize = 80;
  Ptx.Flags = 0x8011;
  Entry Arch;
  Arch.Sm = 90;
  Arch.Flags = 0x100011;
  fatlink_rt_status S;
  auto Images = parse(container({Cubin, Ptx, Arch}), &S);
  ASSERT_EQ(S, FATLINK_RT_SUCCESS) << fatlink_rt_last_error();
  ASSERT_EQ(Images.size(), 3u);
  EXPECT_EQ(Images[0].kind, FATLINK_RT_IMAGE_CUBIN);
  EXPECT_EQ(Images[0].sm, 80u);
  EXPECT_EQ(Images[0].ptx_major, 0);
  EXPECT_EQ(Images[0].compression, FATLINK_RT_COMPRESSION_NONE);
  EXPECT_EQ(Images[1].kind, FATLINK_RT_IMAGE_PTX);
  EXPECT_EQ(Images[1].ptx_major, 7);
  EXPECT_EQ(Images[1].ptx_minor, 8);
  EXPECT_EQ(Images[1].compression, FATLINK_RT_COMPRESSION_ZSTD);
  EXPECT_EQ(Images[1].size, 32u);
  EXPECT_EQ(Images[2].variant, 'a');
  char Buf[64];
  EXPECT_STREQ(fatlink_rt_image_string(&Images[1], Buf, sizeof(Buf)),
               "PTX compute_90 (ISA 7.8)");
  EXPECT_STREQ(fatlink_rt_image_string(&Images[2], Buf, sizeof(Buf)),
               "cubin sm_90a");
}

TEST(Fatbin, CountsBeyondCapacityAndReadsConcatenatedContainers) {
  Bytes A = container({Entry{}});
  Bytes B = container({Entry{}, Entry{}});
  Bytes Both = A;
  Both.resize(Both.size() + 8, 0); // zero padding between containers
  Both.insert(Both.end(), B.begin(), B.end());
  size_t N = 0;
  ASSERT_EQ(fatlink_rt_parse_fatbin(Both.data(), Both.size(), nullptr, 0, &N),
            FATLINK_RT_SUCCESS)
      << fatlink_rt_last_error();
  EXPECT_EQ(N, 3u);
}

TEST(Fatbin, RejectsMalformedContainers) {
  // Shorter than a container header.
  EXPECT_EQ(parseError(Bytes(10, 0x50)),
            "fatbin: container header at offset 0 is truncated (10 bytes "
            "left, 16 needed)");
  // Wrong magic.
  Bytes B = container({Entry{}});
  put(B, 0, 0x12345678, 4);
  EXPECT_EQ(parseError(B), "fatbin: bad magic 0x12345678 at offset 0 "
                           "(expected 0xba55ed50)");
  // Version 2.
  B = container({Entry{}});
  put(B, 4, 2, 2);
  EXPECT_EQ(parseError(B), "fatbin: container at offset 0 has version 2, "
                           "this runtime reads version 1");
  // Header size smaller than the header.
  B = container({Entry{}});
  put(B, 6, 8, 2);
  EXPECT_NE(parseError(B).find("has header size 8"), std::string::npos);
  // Entries claim more bytes than there are; near 2^64 to catch overflow.
  B = container({Entry{}});
  put(B, 8, ~0ull - 4, 8);
  EXPECT_NE(parseError(B).find("end past the fatbin"), std::string::npos);
  // An entry header cut short.
  B = container({Entry{}});
  put(B, 8, 40, 8);
  B.resize(16 + 40);
  EXPECT_NE(parseError(B).find("entry header at offset 16 is truncated"),
            std::string::npos);
  // Unknown kind.
  Entry E;
  E.Kind = 5;
  EXPECT_EQ(parseError(container({E})),
            "fatbin: entry at offset 16 has unknown kind 5");
  // Unknown layout word.
  E = Entry{};
  E.Layout = 0x0202;
  EXPECT_NE(parseError(container({E})).find("unknown layout 0x0202"),
            std::string::npos);
  // Entry header size below 64.
  B = container({Entry{}});
  put(B, 16 + 4, 32, 4);
  EXPECT_NE(parseError(B).find("has header size 32"), std::string::npos);
  // Payload past its container (huge, to catch overflow).
  B = container({Entry{}});
  put(B, 16 + 8, ~0ull - 8, 8);
  EXPECT_NE(parseError(B).find("payload of the entry at offset 16"),
            std::string::npos);
  // What follows a container is read as cuobjdump reads it: words of
  // zeros, then a container; a tail shorter than a container header is
  // ignored (cuobjdump lists the first container of each of these).
  B = container({Entry{}});
  size_t End = B.size();
  Bytes Pad = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  B.insert(B.end(), Pad.begin(), Pad.end());
  EXPECT_EQ(parseError(B), "fatbin: bad magic 0x00000000 at offset " +
                               std::to_string(End) + " (expected 0xba55ed50)");
  B.resize(End + 8); // 8 bytes: ignored, as cuobjdump does
  fatlink_rt_status S;
  EXPECT_EQ(parse(B, &S).size(), 1u);
  EXPECT_EQ(S, FATLINK_RT_SUCCESS) << fatlink_rt_last_error();
  B = container({Entry{}}); // 16 zero bytes: cuobjdump rejects them
  B.resize(End + 16, 0);
  EXPECT_EQ(parseError(B), "fatbin: zero padding at offset " +
                               std::to_string(End) +
                               " is followed by no container (0 bytes left)");
  // Nothing at all.
  size_t N;
  unsigned char Empty[1] = {0};
  EXPECT_EQ(fatlink_rt_parse_fatbin(Empty, 0, nullptr, 0, &N),
            FATLINK_RT_ERROR_BAD_MODULE);
  EXPECT_EQ(fatlink_rt_parse_fatbin(nullptr, 0, nullptr, 0, &N),
            FATLINK_RT_ERROR_INVALID_VALUE);
}

fatlink_rt_image cubin(unsigned Sm, char Variant = 0,
                       fatlink_rt_compression C = FATLINK_RT_COMPRESSION_NONE) {
  fatlink_rt_image I{};
  I.kind = FATLINK_RT_IMAGE_CUBIN;
  I.sm = Sm;
  I.variant = Variant;
  I.compression = C;
  return I;
}

fatlink_rt_image ptx(unsigned Sm, unsigned Major, unsigned Minor,
                     char Variant = 0,
                     fatlink_rt_compression C = FATLINK_RT_COMPRESSION_NONE) {
  fatlink_rt_image I{};
  I.kind = FATLINK_RT_IMAGE_PTX;
  I.sm = Sm;
  I.ptx_major = (uint16_t)Major;
  I.ptx_minor = (uint16_t)Minor;
  I.variant = Variant;
  I.compression = C;
  return I;
}

struct Pick {
  fatlink_rt_status Status;
  int Index;
  std::string Reason;
};

Pick pick(const std::vector<fatlink_rt_image> &Images, int CC, int Driver) {
  fatlink_rt_device_desc D{CC / 10, CC % 10, Driver};
  fatlink_rt_choice C;
  fatlink_rt_status S =
      fatlink_rt_select_image(Images.data(), Images.size(), &D, &C);
  return {S, C.index, C.reason};
}

TEST(Select, ExactCubinWins) {
  Pick P = pick({cubin(75), cubin(80), ptx(80, 7, 0)}, 80, 12080);
  EXPECT_EQ(P.Status, FATLINK_RT_SUCCESS);
  EXPECT_EQ(P.Index, 1);
  EXPECT_EQ(P.Reason, "cubin sm_80 matches sm_80");
}

TEST(Select, CubinRunsOnNewerMinorOfItsMajorOnly) {
  Pick P = pick({cubin(80), cubin(86)}, 89, 12080);
  EXPECT_EQ(P.Index, 1);
  EXPECT_EQ(P.Reason, "cubin sm_86 runs on sm_89 (same major version, older "
                      "minor); no cubin for sm_89 itself");
  // sm_80 does not run on sm_90: the PTX is JIT-compiled instead.
  P = pick({cubin(80), ptx(80, 7, 0)}, 90, 12080);
  EXPECT_EQ(P.Index, 1);
  EXPECT_EQ(P.Reason, "PTX compute_80 (ISA 7.0) is JIT-compiled for sm_90: no "
                      "cubin runs on sm_90 (cubins: cubin sm_80)");
}

TEST(Select, NewestCompatiblePtx) {
  Pick P = pick({ptx(75, 6, 3), ptx(90, 7, 8), ptx(120, 8, 7)}, 100, 12080);
  EXPECT_EQ(P.Index, 1);
}

TEST(Select, ArchSpecificAndFamilyVariants) {
  // sm_90a runs on 9.0 only and is preferred over plain sm_90 there.
  EXPECT_EQ(pick({cubin(90), cubin(90, 'a')}, 90, 12080).Index, 1);
  EXPECT_EQ(pick({ptx(90, 8, 0, 'a')}, 100, 12080).Status,
            FATLINK_RT_ERROR_NO_IMAGE);
  // sm_100f covers 10.3 but not 11.0 or 12.0.
  EXPECT_EQ(pick({cubin(100, 'f')}, 103, 12090).Index, 0);
  EXPECT_EQ(pick({ptx(100, 8, 8, 'f')}, 120, 12090).Status,
            FATLINK_RT_ERROR_NO_IMAGE);
  EXPECT_EQ(pick({ptx(100, 8, 8)}, 120, 12090).Index, 0);
}

TEST(Select, NoImageForThisGpu) {
  Pick P = pick({cubin(90), ptx(90, 7, 8)}, 86, 12080);
  EXPECT_EQ(P.Status, FATLINK_RT_ERROR_NO_IMAGE);
  EXPECT_EQ(P.Index, -1);
  EXPECT_EQ(P.Reason,
            "no image runs on sm_86 (the module has cubin sm_90, PTX "
            "compute_90 (ISA 7.8)): a cubin runs only on GPUs of its major "
            "version with the same or a newer minor, and PTX is JIT-compiled "
            "only for its own arch or newer; relink with `fatlink device-link "
            "--arch=sm_86` (a cubin) or `--arch=compute_86` (PTX for sm_86 "
            "and newer GPUs)");
  EXPECT_STREQ(fatlink_rt_last_error(), P.Reason.c_str());
  EXPECT_EQ(pick({}, 80, 12080).Reason, "the module has no images");
}

TEST(Select, DriverTooOldForPtxIsa) {
  Pick P = pick({cubin(75), ptx(80, 9, 0)}, 90, 12040);
  EXPECT_EQ(P.Status, FATLINK_RT_ERROR_DRIVER_TOO_OLD);
  EXPECT_EQ(P.Reason,
            "PTX compute_80 (ISA 9.0) fits sm_90 but its PTX ISA 9.0 needs a "
            "driver for CUDA 13.0 (Linux >= 580.65.06); this driver supports "
            "CUDA 12.4: update the NVIDIA driver, or relink with `fatlink "
            "device-link --ptx-version=8.4` (the newest PTX ISA this driver "
            "loads)");
  EXPECT_EQ(pick({ptx(120, 8, 7)}, 120, 12080).Status, FATLINK_RT_SUCCESS);
  P = pick({ptx(120, 8, 7)}, 120, 12060);
  EXPECT_EQ(P.Status, FATLINK_RT_ERROR_DRIVER_TOO_OLD);
  EXPECT_NE(P.Reason.find("CUDA 12.8 (Linux >= 570.26)"), std::string::npos);
  // PTX ISA 8.6 came with the R565 driver, which reports CUDA 12.7.
  EXPECT_EQ(pick({ptx(100, 8, 6)}, 100, 12060).Status,
            FATLINK_RT_ERROR_DRIVER_TOO_OLD);
  EXPECT_EQ(pick({ptx(100, 8, 6)}, 100, 12070).Status, FATLINK_RT_SUCCESS);
  // A PTX ISA newer than the table needs a driver newer than its last row.
  EXPECT_EQ(pick({ptx(80, 9, 5)}, 80, 13010).Status,
            FATLINK_RT_ERROR_DRIVER_TOO_OLD);
  EXPECT_EQ(pick({ptx(80, 9, 5)}, 80, 13020).Status, FATLINK_RT_SUCCESS);
  // Unknown driver version (0): no driver checks.
  EXPECT_EQ(pick({ptx(80, 9, 0)}, 80, 0).Status, FATLINK_RT_SUCCESS);
}

TEST(Select, DriverTooOldForCompression) {
  auto Zstd = FATLINK_RT_COMPRESSION_ZSTD;
  Pick P = pick({cubin(80, 0, Zstd)}, 80, 12020);
  EXPECT_EQ(P.Status, FATLINK_RT_ERROR_DRIVER_TOO_OLD);
  EXPECT_EQ(P.Reason, "cubin sm_80 fits sm_80 but it is zstd-compressed, "
                      "which needs a driver for CUDA 12.4 (Linux >= "
                      "550.54.14); this driver supports CUDA 12.2: update the "
                      "NVIDIA driver, or relink with `fatlink device-link "
                      "--min-driver=<the oldest driver to serve>` (or "
                      "--compress=none; fatlink cc: FATLINK_MIN_DRIVER)");
  // An uncompressed PTX still loads, and the reason says why not the cubin.
  P = pick({cubin(80, 0, Zstd), ptx(80, 7, 0)}, 80, 12020);
  EXPECT_EQ(P.Index, 1);
  EXPECT_NE(P.Reason.find("cubin sm_80 fits but it is zstd-compressed"),
            std::string::npos);
  EXPECT_EQ(pick({cubin(80, 0, Zstd)}, 80, 12040).Status, FATLINK_RT_SUCCESS);
  EXPECT_EQ(pick({cubin(80, 0, FATLINK_RT_COMPRESSION_LZ4)}, 80, 11080).Status,
            FATLINK_RT_ERROR_DRIVER_TOO_OLD);
  EXPECT_EQ(pick({cubin(80, 0, FATLINK_RT_COMPRESSION_LZ4)}, 80, 12000).Status,
            FATLINK_RT_SUCCESS);
}

TEST(Select, PtxIsaTable) {
  const char *Linux = nullptr;
  EXPECT_EQ(fatlink_rt_ptx_min_driver(7, 0, &Linux), 11000);
  EXPECT_STREQ(Linux, "450.36.06");
  EXPECT_EQ(fatlink_rt_ptx_min_driver(8, 7, &Linux), 12080);
  EXPECT_STREQ(Linux, "570.26");
  EXPECT_EQ(fatlink_rt_ptx_min_driver(9, 0, &Linux), 13000);
  EXPECT_STREQ(Linux, "580.65.06");
  EXPECT_EQ(fatlink_rt_ptx_min_driver(6, 3, nullptr), 10000);
  EXPECT_EQ(fatlink_rt_ptx_min_driver(9, 7, &Linux), 0);
  EXPECT_EQ(Linux, nullptr);
}

// A descriptor in memory, as the packager's host object lays it out.
struct FakeModule {
  Bytes Fatbin;
  fatlink_fatbin_wrapper Wrapper{};
  std::vector<uint32_t> Sizes{4, 8, 8};
  std::vector<fatlink_kernel> Kernels;
  fatlink_module Desc[2]{};

  explicit FakeModule(std::vector<const char *> Names) {
    Fatbin = container({Entry{}});
    Wrapper = {FATLINK_FATBINC_MAGIC, FATLINK_FATBINC_VERSION, Fatbin.data(),
               nullptr};
    for (const char *N : Names)
      Kernels.push_back({N, Sizes.data(), (uint32_t)Sizes.size(), 0});
    Desc[0] = {FATLINK_MODULE_MAGIC,
               FATLINK_MODULE_VERSION,
               sizeof(fatlink_module),
               &Wrapper,
               Fatbin.data(),
               Fatbin.size(),
               Kernels.data(),
               (uint32_t)Kernels.size(),
               0};
  }
};

TEST(Registry, RegistersListsSuggestsAndUnregisters) {
  uint32_t Before = fatlink_rt_module_count();
  FakeModule M({"rust_softplus", "saxpy", "vec_add"});
  fatlink_rt_register_modules_v1(&M.Desc[0], &M.Desc[1]);
  ASSERT_EQ(fatlink_rt_module_count(), Before + 1);
  fatlink_rt_module_info Info;
  ASSERT_EQ(fatlink_rt_get_module_info(Before, &Info), FATLINK_RT_SUCCESS);
  EXPECT_EQ(Info.num_kernels, 3u);
  EXPECT_EQ(Info.num_images, 1u);
  fatlink_rt_kernel_info K;
  ASSERT_EQ(fatlink_rt_module_kernel(Before, 1, &K), FATLINK_RT_SUCCESS);
  EXPECT_STREQ(K.name, "saxpy");
  EXPECT_EQ(K.num_params, 3u);
  EXPECT_EQ(fatlink_rt_module_kernel(Before, 3, &K),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "fatlink_rt_module_kernel: module 0 has 3 kernels, no kernel 3");

  fatlink_rt_kernel H = nullptr;
  EXPECT_EQ(fatlink_rt_get_kernel("saxpi", &H),
            FATLINK_RT_ERROR_KERNEL_NOT_FOUND);
  EXPECT_EQ(H, nullptr);
  EXPECT_STREQ(fatlink_rt_last_error(), "kernel 'saxpi' not found in 1 module "
                                        "(3 kernels); did you mean 'saxpy'?");
  EXPECT_EQ(fatlink_rt_get_kernel("softplus", &H),
            FATLINK_RT_ERROR_KERNEL_NOT_FOUND);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "kernel 'softplus' not found in 1 module (3 kernels); did you "
               "mean 'rust_softplus'?");
  EXPECT_EQ(fatlink_rt_get_kernel("matmul", &H),
            FATLINK_RT_ERROR_KERNEL_NOT_FOUND);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "kernel 'matmul' not found in 1 module (3 kernels); the kernels "
               "are: rust_softplus, saxpy, vec_add");
  EXPECT_EQ(fatlink_rt_get_kernel("", &H), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_module_get_kernel(7, "saxpy", &H),
            FATLINK_RT_ERROR_INVALID_VALUE);

  fatlink_rt_unregister_modules_v1(&M.Desc[0], &M.Desc[1]);
  EXPECT_EQ(fatlink_rt_module_count(), Before);
}

TEST(Registry, MalformedModulesAreReportedNotFatal) {
  uint32_t Before = fatlink_rt_module_count();
  FakeModule M({"k"});
  M.Fatbin[0] ^= 0xff; // the container's magic is wrong
  // A record of a newer descriptor version is skipped; padding is skipped.
  fatlink_module Recs[3] = {M.Desc[0], {}, M.Desc[0]};
  Recs[2].version = 2;
  fatlink_rt_register_modules_v1(&Recs[0], &Recs[3]);
  ASSERT_EQ(fatlink_rt_module_count(), Before + 1);
  fatlink_rt_module_info Info;
  EXPECT_EQ(fatlink_rt_get_module_info(Before, &Info),
            FATLINK_RT_ERROR_BAD_MODULE);
  EXPECT_NE(std::string(fatlink_rt_last_error()).find("fatbin: bad magic"),
            std::string::npos);
  EXPECT_EQ(Info.num_kernels, 0u);
  fatlink_rt_unregister_modules_v1(&Recs[0], &Recs[3]);
  EXPECT_EQ(fatlink_rt_module_count(), Before);
}

// A module whose fatbin is corrupt (its descriptor is fine and names the
// kernel) must not read as "kernel not found (0 kernels)": the lookup says
// which module holds the kernel and why it is unusable.
TEST(Registry, KernelOfACorruptModuleIsBadModuleWithTheReason) {
  uint32_t Before = fatlink_rt_module_count();
  FakeModule M({"vec_add"});
  M.Fatbin[0] ^= 0xff; // the container's magic is wrong
  fatlink_rt_register_modules_v1(&M.Desc[0], &M.Desc[1]);
  ASSERT_EQ(fatlink_rt_module_count(), Before + 1);
  fatlink_rt_kernel H = nullptr;
  EXPECT_EQ(fatlink_rt_get_kernel("vec_add", &H), FATLINK_RT_ERROR_BAD_MODULE);
  std::string Err = fatlink_rt_last_error();
  EXPECT_NE(Err.find("kernel 'vec_add' is in module " + std::to_string(Before)),
            std::string::npos)
      << Err;
  EXPECT_NE(Err.find("which is unusable: fatbin: bad magic"), std::string::npos)
      << Err;
  EXPECT_EQ(fatlink_rt_module_get_kernel(Before, "vec_add", &H),
            FATLINK_RT_ERROR_BAD_MODULE);
  EXPECT_NE(std::string(fatlink_rt_last_error()).find("fatbin: bad magic"),
            std::string::npos);
  EXPECT_EQ(H, nullptr);
  // A name the module does not hold is still not found.
  EXPECT_EQ(fatlink_rt_get_kernel("matmul", &H),
            FATLINK_RT_ERROR_KERNEL_NOT_FOUND);
  fatlink_rt_unregister_modules_v1(&M.Desc[0], &M.Desc[1]);
  EXPECT_EQ(fatlink_rt_module_count(), Before);
}

// A corrupt descriptor (its kernel table cannot be trusted): any lookup
// that finds nothing elsewhere names the unusable module, which may hold it.
TEST(Registry, LookupPastAnUnreadableDescriptorIsBadModule) {
  uint32_t Before = fatlink_rt_module_count();
  FakeModule M({"vec_add"});
  M.Desc[0].num_kernels = 1;
  M.Desc[0].kernels = nullptr; // a descriptor that lists kernels it lacks
  fatlink_rt_register_modules_v1(&M.Desc[0], &M.Desc[1]);
  ASSERT_EQ(fatlink_rt_module_count(), Before + 1);
  fatlink_rt_kernel H = nullptr;
  EXPECT_EQ(fatlink_rt_get_kernel("vec_add", &H), FATLINK_RT_ERROR_BAD_MODULE);
  EXPECT_NE(std::string(fatlink_rt_last_error()).find("is unusable and may hold it"),
            std::string::npos)
      << fatlink_rt_last_error();
  fatlink_rt_unregister_modules_v1(&M.Desc[0], &M.Desc[1]);
  EXPECT_EQ(fatlink_rt_module_count(), Before);
}

TEST(Api, NullArgumentsAreErrors) {
  EXPECT_EQ(fatlink_rt_launch(nullptr, {1, 1, 1}, {1, 1, 1}, 0, nullptr,
                              nullptr, nullptr, 0),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "fatlink_rt_launch: the kernel is NULL (did "
               "fatlink_rt_get_kernel fail?)");
  EXPECT_EQ(fatlink_rt_get_kernel("x", nullptr), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_malloc(nullptr, 4), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_get_module_info(0, nullptr),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_free(0), FATLINK_RT_SUCCESS);
  fatlink_rt_kernel_manifest Man;
  EXPECT_EQ(fatlink_rt_kernel_get_manifest(nullptr, &Man),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "fatlink_rt_kernel_get_manifest: NULL argument");
  fatlink_rt_param P;
  EXPECT_EQ(fatlink_rt_kernel_get_param(nullptr, 0, &P),
            FATLINK_RT_ERROR_INVALID_VALUE);
  // Streams and events: refused before the driver is needed.
  EXPECT_EQ(fatlink_rt_stream_create(nullptr), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_stream_destroy(nullptr), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "fatlink_rt_stream_destroy: the default stream (NULL) cannot "
               "be destroyed");
  EXPECT_EQ(fatlink_rt_event_create(nullptr), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_event_destroy(nullptr), FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_event_record(nullptr, nullptr),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_event_synchronize(nullptr),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_EQ(fatlink_rt_stream_wait_event(nullptr, nullptr),
            FATLINK_RT_ERROR_INVALID_VALUE);
  float Ms = 1;
  EXPECT_EQ(fatlink_rt_event_elapsed_ms(nullptr, nullptr, &Ms),
            FATLINK_RT_ERROR_INVALID_VALUE);
  EXPECT_STREQ(fatlink_rt_last_error(),
               "fatlink_rt_event_elapsed_ms: NULL argument");
  EXPECT_STREQ(fatlink_rt_status_name(FATLINK_RT_ERROR_NO_DRIVER),
               "FATLINK_RT_ERROR_NO_DRIVER");
  EXPECT_STREQ(fatlink_rt_status_name((fatlink_rt_status)99),
               "FATLINK_RT_ERROR_UNKNOWN");
}

} // namespace
