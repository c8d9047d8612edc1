/*===- runtime/lib/Registry.c - The modules of the running program --------===*\
 *
 * Every executable or shared library that links a fatlink host object holds
 * `struct fatlink_module` descriptors in its `fatlink_modules` section
 * (packager/Descriptor.h). The constructor in Ctor.c hands that range to
 * fatlink_rt_register_modules_v1, which parses each module's fatbin header
 * once and appends a record to the process-wide registry; the destructor
 * takes the records out again when a shared library is unloaded.
 *
 * A kernel handle points into its module's record, and the application may
 * keep one past the dlclose of the library that holds the kernel. So an
 * unregistered record is retired, not freed: unregistering frees its
 * per-device state (the part that grows with devices x kernels) and moves
 * the small registration-time part (the record, its kernel handles, its
 * images and origin, and now a copy of its kernel names: a few hundred
 * bytes per dlclose) to a retired list, where it stays reachable. A stale
 * handle then reports FATLINK_RT_ERROR_BAD_MODULE, naming its kernel,
 * without touching freed memory, nor the descriptor, which went away with
 * the library. Nothing more is freed at exit: other components'
 * destructors may still call in after ours, and the retired records stay
 * reachable, so LeakSanitizer does not count them. The GPU code of a
 * retired module stays loaded, since unloading it would need a driver call
 * from a destructor.
 *
 * Loading is lazy and thread-safe: a module is loaded on a device by the
 * first thread that needs one of its kernels there, under the module's
 * lock; afterwards the CUfunction of each kernel is published with an
 * atomic store and read without the lock.
\*===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* dladdr, dl_iterate_phdr */
#include "Internal.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t Lock = PTHREAD_MUTEX_INITIALIZER;
static flrt_module **Live;
static uint32_t NumLive, CapLive;
/* Unregistered records, linked through next_retired (see above). */
static flrt_module *Retired;

/* Ctor.c's constructor must be linked whenever the registry is. */
extern int flrt_ctor_anchor;
__attribute__((used)) static int *const AnchorRef = &flrt_ctor_anchor;

void flrt_registry_lock(void) { pthread_mutex_lock(&Lock); }
void flrt_registry_unlock(void) { pthread_mutex_unlock(&Lock); }
uint32_t flrt_registry_count_locked(void) { return NumLive; }
flrt_module *flrt_registry_get_locked(uint32_t I) {
  return I < NumLive ? Live[I] : NULL;
}

static char *dupString(const char *S) {
  size_t N = strlen(S) + 1;
  char *D = malloc(N);
  if (D)
    memcpy(D, S, N);
  return D;
}

/* Whether Addr lies in the main program (the first object
 * dl_iterate_phdr reports). */
struct MainQuery {
  const void *Addr;
  int Found, Done;
};
static int inMainCallback(struct dl_phdr_info *Info, size_t Size, void *Data) {
  (void)Size;
  struct MainQuery *Q = Data;
  for (int I = 0; I < Info->dlpi_phnum; ++I) {
    const ElfW(Phdr) *P = &Info->dlpi_phdr[I];
    uintptr_t Lo = Info->dlpi_addr + P->p_vaddr;
    if (P->p_type == PT_LOAD && (uintptr_t)Q->Addr >= Lo &&
        (uintptr_t)Q->Addr - Lo < P->p_memsz)
      Q->Found = 1;
  }
  return 1; /* the main program only */
}

/* The file a descriptor lives in: the executable or a shared library. */
static const char *originOf(const void *Addr) {
  struct MainQuery Q = {Addr, 0, 0};
  dl_iterate_phdr(inMainCallback, &Q);
  Dl_info Info;
  if (!Q.Found && dladdr(Addr, &Info) && Info.dli_fname && Info.dli_fname[0])
    return dupString(Info.dli_fname);
  char Self[PATH_MAX];
  ssize_t N = readlink("/proc/self/exe", Self, sizeof(Self) - 1);
  if (N > 0) {
    Self[N] = '\0';
    return dupString(Self);
  }
  return dupString("the program");
}

const struct fatlink_module *flrt_next_descriptor(const char **Pos,
                                                  const char *End) {
  while (*Pos < End) {
    const char *P = *Pos;
    if ((size_t)(End - P) < 8) {
      *Pos = End;
      return NULL;
    }
    uint32_t Magic;
    memcpy(&Magic, P, 4);
    if (Magic == 0) { /* alignment padding between input sections */
      *Pos = P + 8;
      continue;
    }
    uint16_t Version, Size;
    memcpy(&Version, P + 4, 2);
    memcpy(&Size, P + 6, 2);
    if (Magic != FATLINK_MODULE_MAGIC || Size < 8 || Size % 8 != 0 ||
        Size > (size_t)(End - P)) {
      const char *Origin = originOf(P);
      flrt_warn("%s: malformed fatlink module descriptor (magic 0x%08x, size "
                "%u) in its fatlink_modules section; ignoring the rest of "
                "the section",
                Origin, Magic, Size);
      free((void *)Origin);
      *Pos = End;
      return NULL;
    }
    *Pos = P + Size;
    if (Version != FATLINK_MODULE_VERSION ||
        Size != sizeof(struct fatlink_module)) {
      const char *Origin = originOf(P);
      flrt_warn("%s: skipping a fatlink module descriptor of version %u "
                "(%u bytes); this runtime reads version %u (%zu bytes): "
                "update libfatlink_rt.a to the fatlink that wrote it",
                Origin, Version, Size, FATLINK_MODULE_VERSION,
                sizeof(struct fatlink_module));
      free((void *)Origin);
      continue;
    }
    return (const struct fatlink_module *)(const void *)P;
  }
  return NULL;
}

long flrt_find_kernel(const struct fatlink_module *Desc, const char *Name) {
  if (!Desc->kernels)
    return -1;
  for (uint32_t I = 0; I < Desc->num_kernels; ++I)
    if (Desc->kernels[I].name && strcmp(Desc->kernels[I].name, Name) == 0)
      return (long)I;
  return -1;
}

/* Checks what the runtime dereferences; returns a message or NULL. */
static char *checkDescriptor(const struct fatlink_module *D) {
  char Buf[512];
  if (!D->wrapper || D->wrapper->magic != FATLINK_FATBINC_MAGIC ||
      D->wrapper->data != D->fatbin)
    snprintf(Buf, sizeof(Buf),
             "its __fatBinC_Wrapper_t is missing or does not point to its "
             "fatbin");
  else if (!D->fatbin || D->fatbin_size == 0)
    snprintf(Buf, sizeof(Buf), "it has no fatbin");
  else if (D->num_kernels && !D->kernels)
    snprintf(Buf, sizeof(Buf), "its kernel table is missing");
  else {
    for (uint32_t I = 0; I < D->num_kernels; ++I) {
      if (!D->kernels[I].name) {
        snprintf(Buf, sizeof(Buf), "kernel %u has no name", I);
        return dupString(Buf);
      }
      if (D->kernels[I].num_params && !D->kernels[I].param_sizes) {
        snprintf(Buf, sizeof(Buf), "kernel %s has no parameter sizes",
                 D->kernels[I].name);
        return dupString(Buf);
      }
    }
    return NULL;
  }
  return dupString(Buf);
}

static flrt_module *newModule(const struct fatlink_module *D) {
  flrt_module *M = calloc(1, sizeof(*M));
  if (!M)
    return NULL;
  M->desc = D;
  M->origin = originOf(D);
  pthread_mutex_init(&M->lock, NULL);
  atomic_init(&M->unloaded, 0);
  atomic_init(&M->devices, NULL);
  M->parse_error = checkDescriptor(D);
  M->descriptor_ok = !M->parse_error;
  if (!M->parse_error) {
    size_t N = 0;
    if (fatlink_rt_parse_fatbin(D->fatbin, D->fatbin_size, NULL, 0, &N) !=
        FATLINK_RT_SUCCESS) {
      M->parse_error = dupString(fatlink_rt_last_error());
    } else if (N) {
      M->images = calloc(N, sizeof(fatlink_rt_image));
      if (M->images &&
          fatlink_rt_parse_fatbin(D->fatbin, D->fatbin_size, M->images, N,
                                  &N) == FATLINK_RT_SUCCESS)
        M->num_images = (uint32_t)N;
    }
  }
  uint32_t NK = M->parse_error ? 0 : D->num_kernels;
  M->kernels = calloc(NK ? NK : 1, sizeof(*M->kernels));
  for (uint32_t I = 0; M->kernels && I < NK; ++I) {
    M->kernels[I].module = M;
    M->kernels[I].index = I;
  }
  return M;
}

static void logModule(uint32_t Index, const flrt_module *M) {
  if (flrt_log_level() != 1)
    return;
  flrt_str S;
  flrt_str_init(&S);
  if (M->parse_error) {
    flrt_log("module %u from %s is unusable: %s", Index, M->origin,
             M->parse_error);
    return;
  }
  for (uint32_t I = 0; I < M->num_images; ++I) {
    char Buf[64];
    flrt_str_addf(&S, "%s%s", I ? ", " : "",
                  fatlink_rt_image_string(&M->images[I], Buf, sizeof(Buf)));
  }
  flrt_str_addf(&S, "; %u kernel%s", M->desc->num_kernels,
                M->desc->num_kernels == 1 ? "" : "s");
  for (uint32_t I = 0; I < M->desc->num_kernels; ++I)
    flrt_str_addf(&S, "%s%s", I ? ", " : ": ", M->desc->kernels[I].name);
  flrt_log("module %u from %s: %llu-byte fatbin: %s", Index, M->origin,
           (unsigned long long)M->desc->fatbin_size, flrt_str_get(&S));
  flrt_str_free(&S);
}

void fatlink_rt_register_modules_v1(const struct fatlink_module *Begin,
                                    const struct fatlink_module *End) {
  if (!Begin || !End || End <= Begin)
    return;
  const char *Pos = (const char *)Begin, *Stop = (const char *)End;
  const struct fatlink_module *D;
  while ((D = flrt_next_descriptor(&Pos, Stop))) {
    flrt_module *M = newModule(D);
    if (!M || !M->kernels) {
      flrt_warn("out of memory registering a fatlink module");
      return;
    }
    if (M->parse_error)
      flrt_warn("%s: fatlink module is unusable: %s", M->origin,
                M->parse_error);
    pthread_mutex_lock(&Lock);
    if (NumLive == CapLive) {
      uint32_t NewCap = CapLive ? CapLive * 2 : 8;
      flrt_module **New = realloc(Live, NewCap * sizeof(*New));
      if (!New) {
        pthread_mutex_unlock(&Lock);
        flrt_warn("out of memory registering a fatlink module");
        return;
      }
      Live = New;
      CapLive = NewCap;
    }
    uint32_t Index = NumLive;
    Live[NumLive++] = M;
    pthread_mutex_unlock(&Lock);
    logModule(Index, M);
  }
}

/* Marks M unloaded and frees its per-device state; M itself is retired.
 * Its descriptor is still mapped here (this runs from the destructor of
 * the component that holds it), so the kernel names are copied for the
 * messages of stale handles. */
static void retireModule(flrt_module *M) {
  pthread_mutex_lock(&M->lock);
  uint32_t NK = M->parse_error ? 0 : M->desc->num_kernels;
  for (uint32_t I = 0; I < NK; ++I)
    M->kernels[I].retired_name = dupString(M->desc->kernels[I].name);
  atomic_store(&M->unloaded, 1);
  flrt_module_device *Devices =
      atomic_exchange_explicit(&M->devices, NULL, memory_order_acq_rel);
  for (int I = 0; Devices && I < M->num_devices; ++I) {
    free((void *)Devices[I].functions);
    free(Devices[I].error);
  }
  free(Devices);
  M->num_devices = 0;
  pthread_mutex_unlock(&M->lock);
}

void fatlink_rt_unregister_modules_v1(const struct fatlink_module *Begin,
                                      const struct fatlink_module *End) {
  if (!Begin || !End || End <= Begin)
    return;
  pthread_mutex_lock(&Lock);
  uint32_t Out = 0;
  for (uint32_t I = 0; I < NumLive; ++I) {
    flrt_module *M = Live[I];
    if ((const void *)M->desc >= (const void *)Begin &&
        (const void *)M->desc < (const void *)End) {
      retireModule(M);
      M->next_retired = Retired;
      Retired = M;
    } else {
      Live[Out++] = M;
    }
  }
  NumLive = Out;
  pthread_mutex_unlock(&Lock);
}

/*===------------------------------ Loading ------------------------------===*/

static fatlink_rt_status moduleFailure(flrt_module_device *MD) {
  fatlink_rt_status S = flrt_fail(MD->status, "%s", MD->error ? MD->error : "");
  return S;
}

static uint32_t indexOf(const flrt_module *M) {
  uint32_t Index = UINT32_MAX;
  pthread_mutex_lock(&Lock);
  for (uint32_t I = 0; I < NumLive; ++I)
    if (Live[I] == M)
      Index = I;
  pthread_mutex_unlock(&Lock);
  return Index;
}

/* Loads M on Device; called with M->lock held and Device current. */
static void loadModule(flrt_module *M, flrt_module_device *MD, int Device) {
  const flrt_driver_api *Api;
  fatlink_rt_device_desc Dev;
  const char *DevName;
  flrt_driver(&Api);
  flrt_driver_enter(Device, &Dev, &DevName);
  uint32_t Index = indexOf(M);

  fatlink_rt_choice Choice;
  fatlink_rt_status Predicted =
      fatlink_rt_select_image(M->images, M->num_images, &Dev, &Choice);
  char Where[1024];
  snprintf(Where, sizeof(Where),
           "module %u (%s) on device %d (%s, sm_%d%d, driver CUDA %d.%d)",
           Index, M->origin, Device, DevName, Dev.cc_major, Dev.cc_minor,
           Dev.driver_version / 1000, (Dev.driver_version % 1000) / 10);
  flrt_log("%s: %s%s", Where,
           Predicted == FATLINK_RT_SUCCESS ? "expecting " : "no loadable image: ",
           Choice.reason);

  enum { LogSize = 8192 };
  char *Log = calloc(1, LogSize);
  int Opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *Vals[2] = {Log, (void *)(uintptr_t)(Log ? LogSize : 0)};
  CUmodule Handle = NULL;
  CUresult R = Api->cuModuleLoadDataEx(&Handle, M->desc->fatbin,
                                       Log ? 2 : 0, Opts, Vals);
  if (R == CUDA_SUCCESS) {
    MD->handle = Handle;
    atomic_store_explicit(&MD->state, FLRT_LOADED, memory_order_release);
    flrt_log("%s: loaded", Where);
    free(Log);
    return;
  }

  flrt_str S;
  flrt_str_init(&S);
  fatlink_rt_status Status = FATLINK_RT_ERROR_CUDA;
  int Explained = 0;
  if (R == CUDA_ERROR_NO_BINARY_FOR_GPU || R == CUDA_ERROR_INVALID_IMAGE ||
      R == CUDA_ERROR_INVALID_PTX || R == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    if (Predicted != FATLINK_RT_SUCCESS) {
      Status = Predicted;
      flrt_str_addf(&S, "cannot load %s: %s (the driver returned %s)", Where,
                    Choice.reason, flrt_cuda_error_name(R));
      Explained = 1;
    } else if (R == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
      Status = FATLINK_RT_ERROR_DRIVER_TOO_OLD;
      flrt_str_addf(&S,
                    "cannot load %s: the driver cannot compile the embedded "
                    "PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); expected %s; "
                    "update the NVIDIA driver",
                    Where, Choice.reason);
      Explained = 1;
    }
  } else if (R == CUDA_ERROR_JIT_COMPILER_NOT_FOUND ||
             R == CUDA_ERROR_JIT_COMPILATION_DISABLED) {
    flrt_str_addf(&S,
                  "cannot load %s: %s (%d): the module needs the driver's PTX "
                  "JIT compiler (%s), which is %s; relink with `fatlink "
                  "device-link --arch=sm_%d%d` for a cubin",
                  Where, flrt_cuda_error_name(R), R, Choice.reason,
                  R == CUDA_ERROR_JIT_COMPILER_NOT_FOUND
                      ? "not installed (libnvidia-ptxjitcompiler.so)"
                      : "disabled (CUDA_DISABLE_PTX_JIT?)",
                  Dev.cc_major, Dev.cc_minor);
    Explained = 1;
  }
  if (!Explained) {
    const char *Text = NULL;
    if (!Api->cuGetErrorString || Api->cuGetErrorString(R, &Text) != 0 || !Text)
      Text = "no description";
    if (R == CUDA_ERROR_OUT_OF_MEMORY)
      Status = FATLINK_RT_ERROR_OUT_OF_MEMORY;
    flrt_str_addf(&S, "cannot load %s: cuModuleLoadData: %s (%d): %s; %s %s",
                  Where, flrt_cuda_error_name(R), R, Text,
                  Predicted == FATLINK_RT_SUCCESS ? "expected" : "and",
                  Choice.reason);
  }
  if (Log && Log[0])
    flrt_str_addf(&S, "; JIT log: %s", Log);
  free(Log);
  MD->status = Status;
  MD->error = dupString(flrt_str_get(&S));
  flrt_str_free(&S);
  flrt_set_cuda_error(R);
  atomic_store_explicit(&MD->state, FLRT_FAILED, memory_order_release);
  flrt_log("%s", MD->error ? MD->error : "module load failed");
}

fatlink_rt_status flrt_unloaded_failure(const flrt_module *M, uint32_t Kernel) {
  const char *Name = M->kernels[Kernel].retired_name;
  if (!Name) /* out of memory when it was retired */
    return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                     "kernel #%u belongs to a module of %s, which has been "
                     "unloaded",
                     Kernel, M->origin);
  return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                   "kernel %s belongs to a module of %s, which has been "
                   "unloaded",
                   Name, M->origin);
}

fatlink_rt_status flrt_module_function(flrt_module *M, uint32_t Kernel,
                                       int Device, CUfunction *Out) {
  if (atomic_load(&M->unloaded))
    return flrt_unloaded_failure(M, Kernel);
  if (M->parse_error)
    return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                     "the fatlink module in %s is unusable: %s", M->origin,
                     M->parse_error);
  if (Kernel >= M->desc->num_kernels)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "kernel index %u out of range", Kernel);
  fatlink_rt_status S = flrt_driver_enter(Device, NULL, NULL);
  if (S != FATLINK_RT_SUCCESS)
    return S;

  /* Fast path: loaded and the function already looked up. */
  flrt_module_device *Devices =
      atomic_load_explicit(&M->devices, memory_order_acquire);
  if (Devices) {
    flrt_module_device *MD = &Devices[Device];
    int State = atomic_load_explicit(&MD->state, memory_order_acquire);
    if (State == FLRT_LOADED) {
      CUfunction F = atomic_load_explicit(&MD->functions[Kernel],
                                          memory_order_acquire);
      if (F) {
        *Out = F;
        return flrt_ok();
      }
    } else if (State == FLRT_FAILED) {
      return moduleFailure(MD);
    }
  }

  pthread_mutex_lock(&M->lock);
  if (atomic_load(&M->unloaded)) { /* retired since the check above */
    pthread_mutex_unlock(&M->lock);
    return flrt_unloaded_failure(M, Kernel);
  }
  Devices = atomic_load_explicit(&M->devices, memory_order_relaxed);
  if (!Devices) {
    int N = flrt_driver_device_count();
    flrt_module_device *Devs = calloc((size_t)N, sizeof(*Devs));
    for (int I = 0; Devs && I < N; ++I) {
      Devs[I].functions = calloc(M->desc->num_kernels ? M->desc->num_kernels : 1,
                                 sizeof(*Devs[I].functions));
      if (!Devs[I].functions) {
        for (int J = 0; J < I; ++J)
          free((void *)Devs[J].functions);
        free(Devs);
        Devs = NULL;
      }
    }
    if (!Devs) {
      pthread_mutex_unlock(&M->lock);
      return flrt_fail(FATLINK_RT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    M->num_devices = N;
    atomic_store_explicit(&M->devices, Devs, memory_order_release);
    Devices = Devs;
  }
  flrt_module_device *MD = &Devices[Device];
  if (atomic_load(&MD->state) == FLRT_UNLOADED)
    loadModule(M, MD, Device);
  if (atomic_load(&MD->state) == FLRT_FAILED) {
    pthread_mutex_unlock(&M->lock);
    return moduleFailure(MD);
  }
  CUfunction F = atomic_load(&MD->functions[Kernel]);
  if (!F) {
    const flrt_driver_api *Api;
    flrt_driver(&Api);
    const char *Name = M->desc->kernels[Kernel].name;
    CUresult R = Api->cuModuleGetFunction(&F, MD->handle, Name);
    if (R != CUDA_SUCCESS) {
      pthread_mutex_unlock(&M->lock);
      return flrt_cuda_fail(R,
                            "kernel %s is in the kernel table of the module "
                            "in %s but the driver cannot find it in the "
                            "loaded image (cuModuleGetFunction)",
                            Name, M->origin);
    }
    atomic_store_explicit(&MD->functions[Kernel], F, memory_order_release);
    int Binary = 0, Ptx = 0;
    if (flrt_log_level() == 1 &&
        Api->cuFuncGetAttribute(&Binary, CU_FUNC_ATTRIBUTE_BINARY_VERSION,
                                F) == CUDA_SUCCESS &&
        Api->cuFuncGetAttribute(&Ptx, CU_FUNC_ATTRIBUTE_PTX_VERSION, F) ==
            CUDA_SUCCESS)
      flrt_log("kernel %s on device %d: the driver reports binary sm_%d, "
               "PTX compute_%d",
               Name, Device, Binary, Ptx);
  }
  pthread_mutex_unlock(&M->lock);
  *Out = F;
  return flrt_ok();
}
