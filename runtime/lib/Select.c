/*===- runtime/lib/Select.c - Which image of a fatbin runs on a device ----===*\
 *
 * A pure prediction of the CUDA driver's choice among a fatbin's images,
 * used to log the choice (FATLINK_RT_LOG=1) and, when the driver refuses a
 * module, to say why. The driver stays the authority: the runtime always
 * lets it load the whole container and only explains its verdict.
 *
 * The rules (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX
 * Compatibility"; PTX ISA manual, "Release Notes"):
 *  - A cubin for sm_XY runs on a GPU of compute capability X.Z with Z >= Y
 *    (sm_80 runs on sm_86 and sm_89, never on sm_90). sm_XYa cubins run on
 *    X.Y only; sm_XYf cubins on the family X.Z, Z >= Y.
 *  - PTX for compute_XY is JIT-compiled for any GPU >= X.Y; compute_XYa only
 *    for X.Y, compute_XYf for the family X.Z, Z >= Y.
 *  - The driver loads PTX ISA A.B only if it is at least the driver of the
 *    CUDA release that introduced A.B (PtxReleases.def).
 *  - Compressed entries need a driver that decodes them: LZ4
 *    (fatbinary --compress-mode=speed) R525 / CUDA 12.0, zstd (size,
 *    balance; fatlink's default) R550 / CUDA 12.4, as NVIDIA's fatbinary
 *    documentation states for those modes.
 *  - Preference: the newest compatible cubin; else the newest compatible
 *    PTX. (CUDA_FORCE_PTX_JIT=1 makes the driver prefer PTX; not modelled.)
\*===----------------------------------------------------------------------===*/

#include "Internal.h"

#include <stdio.h>
#include <string.h>

/* PTX ISA version -> the first CUDA release (and its minimum Linux driver)
 * that loads it: PtxReleases.def, which the linker's --min-driver check
 * reads too. */
static const struct PtxRelease {
  unsigned short Major, Minor;
  int Cuda;
  const char *Linux;
} PtxReleases[] = {
#define FATLINK_PTX_RELEASE(Major, Minor, Cuda, Linux)                         \
  {Major, Minor, Cuda, Linux},
#include "PtxReleases.def"
};
enum { NumPtxReleases = sizeof(PtxReleases) / sizeof(PtxReleases[0]) };

enum {
  CudaForLz4 = 12000,
  CudaForZstd = 12040,
};

int fatlink_rt_ptx_min_driver(unsigned Major, unsigned Minor,
                              const char **LinuxDriver) {
  for (int I = 0; I < NumPtxReleases; ++I)
    if (PtxReleases[I].Major == Major && PtxReleases[I].Minor == Minor) {
      if (LinuxDriver)
        *LinuxDriver = PtxReleases[I].Linux;
      return PtxReleases[I].Cuda;
    }
  if (LinuxDriver)
    *LinuxDriver = NULL;
  return 0;
}

/* The newest PTX ISA a driver loads, as "8.4"; NULL if older than all. */
static const struct PtxRelease *newestPtxFor(int Driver) {
  const struct PtxRelease *Best = NULL;
  for (int I = 0; I < NumPtxReleases; ++I)
    if (PtxReleases[I].Cuda <= Driver)
      Best = &PtxReleases[I];
  return Best;
}

static int isNewerThanTable(unsigned Major, unsigned Minor) {
  const struct PtxRelease *Last = &PtxReleases[NumPtxReleases - 1];
  return Major > Last->Major || (Major == Last->Major && Minor > Last->Minor);
}

static void cudaString(int Version, char *Buf, size_t Size) {
  snprintf(Buf, Size, "CUDA %d.%d", Version / 1000, (Version % 1000) / 10);
}

static int cubinFits(const fatlink_rt_image *I, int Major, int Minor) {
  int Sm = Major * 10 + Minor;
  if (I->variant == 'a')
    return (int)I->sm == Sm;
  return (int)I->sm / 10 == Major && (int)I->sm % 10 <= Minor;
}

static int ptxFits(const fatlink_rt_image *I, int Major, int Minor) {
  int Sm = Major * 10 + Minor;
  if (I->variant == 'a')
    return (int)I->sm == Sm;
  if (I->variant == 'f')
    return (int)I->sm / 10 == Major && (int)I->sm % 10 <= Minor;
  return (int)I->sm <= Sm;
}

/* Why the driver cannot load an image that fits the device, into S;
 * returns 0 if it can. */
static int driverBlocks(const fatlink_rt_image *I, int Driver, flrt_str *S) {
  if (Driver <= 0)
    return 0;
  char Have[32];
  cudaString(Driver, Have, sizeof(Have));
  int Need = 0;
  const char *Linux = NULL;
  if (I->compression == FATLINK_RT_COMPRESSION_ZSTD && Driver < CudaForZstd) {
    Need = CudaForZstd;
    Linux = "550.54.14";
  } else if (I->compression == FATLINK_RT_COMPRESSION_LZ4 &&
             Driver < CudaForLz4) {
    Need = CudaForLz4;
    Linux = "525.60.13";
  }
  if (Need) {
    char Want[32];
    cudaString(Need, Want, sizeof(Want));
    if (S)
      flrt_str_addf(S,
                    "it is %s-compressed, which needs a driver for %s (Linux "
                    ">= %s); this driver supports %s",
                    I->compression == FATLINK_RT_COMPRESSION_ZSTD ? "zstd"
                                                                  : "LZ4",
                    Want, Linux, Have);
    return 1;
  }
  if (I->kind != FATLINK_RT_IMAGE_PTX)
    return 0;
  Need = fatlink_rt_ptx_min_driver(I->ptx_major, I->ptx_minor, &Linux);
  if (Need == 0) {
    const struct PtxRelease *Last = &PtxReleases[NumPtxReleases - 1];
    if (isNewerThanTable(I->ptx_major, I->ptx_minor) && Driver <= Last->Cuda) {
      char LastCuda[32];
      cudaString(Last->Cuda, LastCuda, sizeof(LastCuda));
      if (S)
        flrt_str_addf(S,
                      "its PTX ISA %u.%u is newer than %s's %u.%u and needs a "
                      "newer driver; this driver supports %s",
                      I->ptx_major, I->ptx_minor, LastCuda, Last->Major,
                      Last->Minor, Have);
      return 1;
    }
    return 0;
  }
  if (Driver >= Need)
    return 0;
  char Want[32];
  cudaString(Need, Want, sizeof(Want));
  if (S)
    flrt_str_addf(S,
                  "its PTX ISA %u.%u needs a driver for %s (Linux >= %s); this "
                  "driver supports %s",
                  I->ptx_major, I->ptx_minor, Want, Linux, Have);
  return 1;
}

static int variantRank(char V) { return V == 'a' ? 2 : V == 0 ? 1 : 0; }

static int better(const fatlink_rt_image *A, const fatlink_rt_image *B) {
  if (A->sm != B->sm)
    return A->sm > B->sm;
  return variantRank(A->variant) > variantRank(B->variant);
}

static void listImages(flrt_str *S, const fatlink_rt_image *Images, size_t N,
                       fatlink_rt_image_kind Kind) {
  int First = 1;
  for (size_t I = 0; I < N; ++I) {
    if (Images[I].kind != Kind)
      continue;
    char Buf[64];
    flrt_str_addf(S, "%s%s", First ? "" : ", ",
                  fatlink_rt_image_string(&Images[I], Buf, sizeof(Buf)));
    First = 0;
  }
  if (First)
    flrt_str_addf(S, "none");
}

static void setReason(fatlink_rt_choice *Out, const flrt_str *S) {
  snprintf(Out->reason, sizeof(Out->reason), "%s", flrt_str_get(S));
}

fatlink_rt_status fatlink_rt_select_image(const fatlink_rt_image *Images,
                                          size_t N,
                                          const fatlink_rt_device_desc *Dev,
                                          fatlink_rt_choice *Out) {
  if (!Out || !Dev || (N && !Images))
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_select_image: NULL argument");
  Out->index = -1;
  Out->reason[0] = '\0';
  int Major = Dev->cc_major, Minor = Dev->cc_minor;
  int Sm = Major * 10 + Minor;
  int Driver = Dev->driver_version;

  int Cubin = -1, Ptx = -1, BlockedCubin = -1;
  for (size_t I = 0; I < N; ++I) {
    const fatlink_rt_image *Img = &Images[I];
    if (Img->kind == FATLINK_RT_IMAGE_CUBIN && cubinFits(Img, Major, Minor)) {
      if (driverBlocks(Img, Driver, NULL)) {
        if (BlockedCubin < 0 || better(Img, &Images[BlockedCubin]))
          BlockedCubin = (int)I;
      } else if (Cubin < 0 || better(Img, &Images[Cubin])) {
        Cubin = (int)I;
      }
    } else if (Img->kind == FATLINK_RT_IMAGE_PTX &&
               ptxFits(Img, Major, Minor) && !driverBlocks(Img, Driver, NULL)) {
      if (Ptx < 0 || better(Img, &Images[Ptx]))
        Ptx = (int)I;
    }
  }

  flrt_str S;
  flrt_str_init(&S);
  char Buf[64];
  if (Cubin >= 0) {
    const fatlink_rt_image *Img = &Images[Cubin];
    fatlink_rt_image_string(Img, Buf, sizeof(Buf));
    if ((int)Img->sm == Sm)
      flrt_str_addf(&S, "%s matches sm_%d", Buf, Sm);
    else
      flrt_str_addf(&S,
                    "%s runs on sm_%d (same major version, older minor); no "
                    "cubin for sm_%d itself",
                    Buf, Sm, Sm);
    Out->index = Cubin;
    setReason(Out, &S);
    flrt_str_free(&S);
    return flrt_ok();
  }
  if (Ptx >= 0) {
    fatlink_rt_image_string(&Images[Ptx], Buf, sizeof(Buf));
    flrt_str_addf(&S, "%s is JIT-compiled for sm_%d: ", Buf, Sm);
    if (BlockedCubin >= 0) {
      char CB[64];
      flrt_str_addf(&S, "%s fits but ",
                    fatlink_rt_image_string(&Images[BlockedCubin], CB,
                                            sizeof(CB)));
      driverBlocks(&Images[BlockedCubin], Driver, &S);
    } else {
      flrt_str_addf(&S, "no cubin runs on sm_%d (cubins: ", Sm);
      listImages(&S, Images, N, FATLINK_RT_IMAGE_CUBIN);
      flrt_str_addf(&S, ")");
    }
    Out->index = Ptx;
    setReason(Out, &S);
    flrt_str_free(&S);
    return flrt_ok();
  }

  /* Nothing loads. Images that fit the device but not the driver? */
  int Blocked = 0;
  const struct PtxRelease *Newest = Driver > 0 ? newestPtxFor(Driver) : NULL;
  int NeedsCompressNone = 0, NeedsPtxVersion = 0;
  for (size_t I = 0; I < N; ++I) {
    const fatlink_rt_image *Img = &Images[I];
    int Fits = Img->kind == FATLINK_RT_IMAGE_CUBIN ? cubinFits(Img, Major, Minor)
               : Img->kind == FATLINK_RT_IMAGE_PTX ? ptxFits(Img, Major, Minor)
                                                   : 0;
    if (!Fits)
      continue;
    flrt_str_addf(&S, "%s%s fits sm_%d but ", Blocked ? "; " : "",
                  fatlink_rt_image_string(Img, Buf, sizeof(Buf)), Sm);
    driverBlocks(Img, Driver, &S);
    if (Img->compression != FATLINK_RT_COMPRESSION_NONE &&
        ((Img->compression == FATLINK_RT_COMPRESSION_ZSTD &&
          Driver < CudaForZstd) ||
         (Img->compression == FATLINK_RT_COMPRESSION_LZ4 &&
          Driver < CudaForLz4)))
      NeedsCompressNone = 1;
    else
      NeedsPtxVersion = 1;
    ++Blocked;
  }
  if (Blocked) {
    flrt_str_addf(&S, ": update the NVIDIA driver");
    if (NeedsCompressNone)
      flrt_str_addf(&S, ", or relink with `fatlink device-link "
                        "--min-driver=<the oldest driver to serve>` (or "
                        "--compress=none; fatlink cc: FATLINK_MIN_DRIVER)");
    if (NeedsPtxVersion && Newest)
      flrt_str_addf(&S,
                    ", or relink with `fatlink device-link --ptx-version=%u.%u` "
                    "(the newest PTX ISA this driver loads)",
                    Newest->Major, Newest->Minor);
    setReason(Out, &S);
    flrt_str_free(&S);
    return flrt_fail(FATLINK_RT_ERROR_DRIVER_TOO_OLD, "%s", Out->reason);
  }

  if (N == 0) {
    flrt_str_addf(&S, "the module has no images");
  } else {
    flrt_str_addf(&S, "no image runs on sm_%d (the module has ", Sm);
    for (size_t I = 0; I < N; ++I)
      flrt_str_addf(&S, "%s%s", I ? ", " : "",
                    fatlink_rt_image_string(&Images[I], Buf, sizeof(Buf)));
    flrt_str_addf(&S,
                  "): a cubin runs only on GPUs of its major version with the "
                  "same or a newer minor, and PTX is JIT-compiled only for its "
                  "own arch or newer; relink with `fatlink device-link "
                  "--arch=sm_%d` (a cubin) or `--arch=compute_%d` (PTX for "
                  "sm_%d and newer GPUs)",
                  Sm, Sm, Sm);
  }
  flrt_str_add_link_log(&S);
  setReason(Out, &S);
  flrt_str_free(&S);
  return flrt_fail(FATLINK_RT_ERROR_NO_IMAGE, "%s", Out->reason);
}
