/*===- runtime/lib/Internal.h - Shared internals of libfatlink_rt ---------===*\
 *
 * Declarations shared by the runtime's translation units. Everything here
 * has hidden visibility: only the fatlink_rt_* API (and the two registry
 * entry points below) is exported, so that when an executable and a shared
 * library each link a copy of libfatlink_rt.a, the dynamic linker binds
 * both to one copy of the exported functions and thus to one registry
 * (docs/runtime.md, "Shared libraries").
\*===----------------------------------------------------------------------===*/

#ifndef FATLINK_RUNTIME_INTERNAL_H
#define FATLINK_RUNTIME_INTERNAL_H

#include "fatlink/runtime.h"
#include "packager/Descriptor.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define FLRT_PRINTF(F, A) __attribute__((format(printf, F, A)))

/*===---------------------------- Errors, log ----------------------------===*/

/* Sets the calling thread's message and returns Status. */
fatlink_rt_status flrt_fail(fatlink_rt_status Status, const char *Fmt, ...)
    FLRT_PRINTF(2, 3);
fatlink_rt_status flrt_vfail(fatlink_rt_status Status, const char *Fmt,
                             va_list Ap);
/* Clears the calling thread's message and returns FATLINK_RT_SUCCESS. */
fatlink_rt_status flrt_ok(void);
void flrt_set_cuda_error(int Code);

/* 1 if FATLINK_RT_LOG asks for logging; 0 if it is "0" (which also mutes
 * warnings); -1 if unset. */
int flrt_log_level(void);
/* "fatlink-rt: ..." on stderr when logging is on. */
void flrt_log(const char *Fmt, ...) FLRT_PRINTF(1, 2);
/* "fatlink-rt: warning: ..." on stderr unless FATLINK_RT_LOG=0. */
void flrt_warn(const char *Fmt, ...) FLRT_PRINTF(1, 2);

/* A growable string for messages. Never fails: on allocation failure it
 * keeps what fits. */
typedef struct flrt_str {
  char *data;
  size_t len, cap;
  char inline_buf[256];
} flrt_str;
void flrt_str_init(flrt_str *S);
void flrt_str_addf(flrt_str *S, const char *Fmt, ...) FLRT_PRINTF(2, 3);
const char *flrt_str_get(const flrt_str *S);
void flrt_str_free(flrt_str *S);
/* Appends " (fatlink cc's link log: PATH)" when that log of this program
 * exists, else nothing. */
void flrt_str_add_link_log(flrt_str *S);

/*===---------------------------- The driver -----------------------------===*/

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_JIT_COMPILATION_DISABLED = 223,
  CUDA_ERROR_NOT_FOUND = 500,
};

enum {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* The driver functions the runtime uses, resolved with dlsym. */
typedef struct flrt_driver_api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void **);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction,
                                                          int, size_t);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  /* cuEventElapsedTime_v2 (CUDA 12.8), else cuEventElapsedTime. */
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  /* Optional: absent in the stub library's error names. */
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
} flrt_driver_api;

/* Loads and initializes the driver once; returns its status (and sets the
 * message) on every call. */
fatlink_rt_status flrt_driver(const flrt_driver_api **Api);
/* Number of devices (after a successful flrt_driver). */
int flrt_driver_device_count(void);
int flrt_driver_version(void);
/* Makes Device's primary context current on this thread (retaining it on
 * first use) and fills Desc if not NULL. */
fatlink_rt_status flrt_driver_enter(int Device, fatlink_rt_device_desc *Desc,
                                    const char **Name);
/* Fails with a message naming the call, the CUresult name and its text. */
fatlink_rt_status flrt_cuda_fail(CUresult R, const char *Fmt, ...)
    FLRT_PRINTF(2, 3);
const char *flrt_cuda_error_name(CUresult R);

/* The calling thread's current device. */
int flrt_current_device(void);

/*===---------------------------- The registry ---------------------------===*/

typedef struct flrt_module flrt_module;

/* A kernel handle: fatlink_rt_kernel points to one of these. */
struct fatlink_rt_kernel_s {
  flrt_module *module;
  uint32_t index;
  /* Once its module is unregistered: a copy of the kernel's name, for the
   * message (the descriptor went away with the library). */
  char *retired_name;
};

enum { FLRT_UNLOADED = 0, FLRT_LOADED = 1, FLRT_FAILED = 2 };

/* A module's state on one device. */
typedef struct flrt_module_device {
  atomic_int state;
  CUmodule handle;
  fatlink_rt_status status; /* when FAILED */
  char *error;              /* when FAILED */
  _Atomic(CUfunction) *functions; /* per kernel, loaded lazily */
} flrt_module_device;

struct flrt_module {
  const struct fatlink_module *desc;
  const char *origin;       /* from dladdr */
  fatlink_rt_image *images; /* parsed at registration */
  uint32_t num_images;
  char *parse_error;        /* non-NULL if the fatbin is malformed */
  int descriptor_ok;        /* its kernel table was checked and may be read,
                               even when parse_error says the fatbin is bad */
  struct fatlink_rt_kernel_s *kernels;
  atomic_int unloaded;      /* its shared library was unloaded */
  pthread_mutex_t lock;     /* guards loading */
  /* num_devices entries, allocated on first load; published with a
   * release store so the lock-free fast path sees them initialized. */
  _Atomic(flrt_module_device *) devices;
  int num_devices;
  /* Once unregistered: the next record on the retired list. Its desc is
   * then dangling (the library is gone) and must not be read. */
  flrt_module *next_retired;
};

/* Snapshot access to the live modules, under the registry lock. */
void flrt_registry_lock(void);
void flrt_registry_unlock(void);
uint32_t flrt_registry_count_locked(void);
flrt_module *flrt_registry_get_locked(uint32_t Index);

/* The BAD_MODULE failure for a kernel handle of an unregistered module. */
fatlink_rt_status flrt_unloaded_failure(const flrt_module *M, uint32_t Kernel);

/* Loads Module on Device (once) and returns the kernel's CUfunction. */
fatlink_rt_status flrt_module_function(flrt_module *M, uint32_t Kernel,
                                       int Device, CUfunction *Out);

/* Registers this component's modules with the CUDA runtime, if the
 * program uses it (CudaRuntime.c); called by the registry constructor. */
void flrt_cudart_register(const struct fatlink_module *Begin,
                          const struct fatlink_module *End);

/* Iterates the valid descriptor records in [Begin, End): returns the next
 * record at or after *Pos, advancing *Pos past it, or NULL at the end. */
const struct fatlink_module *flrt_next_descriptor(const char **Pos,
                                                  const char *End);

/* Finds a kernel by exact name in a descriptor's sorted table; -1 if not. */
long flrt_find_kernel(const struct fatlink_module *Desc, const char *Name);

#pragma GCC visibility pop

/* The registry entry points each copy of the runtime's constructor and
 * destructor call. Exported (so interposable): every copy reaches the one
 * registry the dynamic linker bound first. */
FATLINK_RT_API void
fatlink_rt_register_modules_v1(const struct fatlink_module *Begin,
                               const struct fatlink_module *End);
FATLINK_RT_API void
fatlink_rt_unregister_modules_v1(const struct fatlink_module *Begin,
                                 const struct fatlink_module *End);

#endif /* FATLINK_RUNTIME_INTERNAL_H */
