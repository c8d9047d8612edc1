/*===- fatlink/runtime.h - Find and launch the kernels fatlink embedded ---===*\
 *
 * The C API of fatlink's host runtime (libfatlink_rt.a). A program that
 * links a host object written by `fatlink device-link ... -o kernels.o`
 * and this library can list the device modules and kernels it carries,
 * look a kernel up by name and launch it through the CUDA driver API, and
 * move data to and from the GPU. CUDA C++ hosts that use the CUDA runtime
 * (`kernel<<<...>>>`) need none of this API: linking the library registers
 * every fatbin and kernel with the CUDA runtime (see docs/runtime.md).
 *
 * Policy:
 *  - The CUDA driver (libcuda.so.1) is loaded at run time, on the first call
 *    that needs it; nothing here needs it at link time. Listing modules and
 *    kernels never touches the driver.
 *  - Every function returns a fatlink_rt_status. On failure,
 *    fatlink_rt_last_error() gives a message for the calling thread that
 *    names what failed and what to do. Nothing aborts or exits the process,
 *    and nothing is printed unless FATLINK_RT_LOG=1 is set.
 *  - All functions are thread-safe. Modules are loaded on a device the
 *    first time one of their kernels is needed there, once.
 *  - Device calls act on the calling thread's current device (default 0,
 *    fatlink_rt_set_device), in the device's primary context, which the
 *    CUDA runtime shares.
\*===----------------------------------------------------------------------===*/

#ifndef FATLINK_RUNTIME_H
#define FATLINK_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FATLINK_RT_API __attribute__((visibility("default")))

typedef enum fatlink_rt_status {
  FATLINK_RT_SUCCESS = 0,
  /* A NULL or out-of-range argument. */
  FATLINK_RT_ERROR_INVALID_VALUE = 1,
  /* libcuda.so.1 cannot be loaded, lacks a function, or is the toolkit's
   * stub library. */
  FATLINK_RT_ERROR_NO_DRIVER = 2,
  /* The driver works but there is no such GPU. */
  FATLINK_RT_ERROR_NO_DEVICE = 3,
  /* The driver is older than the embedded PTX ISA or compression needs. */
  FATLINK_RT_ERROR_DRIVER_TOO_OLD = 4,
  /* No cubin for this GPU and no PTX that can be JIT-compiled for it. */
  FATLINK_RT_ERROR_NO_IMAGE = 5,
  /* No kernel of that name; the message suggests the closest names. */
  FATLINK_RT_ERROR_KERNEL_NOT_FOUND = 6,
  /* Argument count or sizes differ from the kernel's parameters. */
  FATLINK_RT_ERROR_ARGUMENTS = 7,
  /* A malformed module descriptor or fatbin container, or a kernel of a
   * shared library that has been unloaded. */
  FATLINK_RT_ERROR_BAD_MODULE = 8,
  /* The device is out of memory. */
  FATLINK_RT_ERROR_OUT_OF_MEMORY = 9,
  /* Any other error of the CUDA driver; the message names it. */
  FATLINK_RT_ERROR_CUDA = 10
} fatlink_rt_status;

/* "FATLINK_RT_ERROR_NO_DRIVER" etc.; never NULL. */
FATLINK_RT_API const char *fatlink_rt_status_name(fatlink_rt_status Status);

/* The message of the calling thread's last failure ("" if none). Valid
 * until the thread's next call into this library. */
FATLINK_RT_API const char *fatlink_rt_last_error(void);

/* The raw CUresult of the calling thread's last failed driver call, or 0. */
FATLINK_RT_API int fatlink_rt_last_cuda_error(void);

/*===------------------------ Modules and kernels ------------------------===*/
/* These never load the driver. Module indices follow load order (shared
 * libraries first, then the executable) and change when a shared library
 * with device code is unloaded. */

typedef enum fatlink_rt_image_kind {
  FATLINK_RT_IMAGE_PTX = 1,
  FATLINK_RT_IMAGE_CUBIN = 2,
  FATLINK_RT_IMAGE_NVVM = 8
} fatlink_rt_image_kind;

typedef enum fatlink_rt_compression {
  FATLINK_RT_COMPRESSION_NONE = 0,
  FATLINK_RT_COMPRESSION_ZSTD = 1,
  FATLINK_RT_COMPRESSION_LZ4 = 2
} fatlink_rt_compression;

/* One entry of a fatbin container. */
typedef struct fatlink_rt_image {
  fatlink_rt_image_kind kind;
  uint32_t sm;                /* 80 for sm_80 / compute_80 */
  char variant;               /* 0, 'a' (sm_90a) or 'f' (sm_100f) */
  uint16_t ptx_major;         /* PTX ISA of a PTX entry; 0 for cubins */
  uint16_t ptx_minor;
  fatlink_rt_compression compression;
  uint64_t size;              /* uncompressed bytes */
} fatlink_rt_image;

typedef struct fatlink_rt_module_info {
  const char *origin;         /* the executable or shared library */
  uint64_t fatbin_size;
  uint32_t num_kernels;
  uint32_t num_images;        /* 0 if the fatbin is malformed */
} fatlink_rt_module_info;

typedef struct fatlink_rt_kernel_info {
  const char *name;           /* the symbol name (mangled for C++) */
  uint32_t module;
  uint32_t num_params;
  const uint32_t *param_sizes; /* bytes of each parameter */
} fatlink_rt_kernel_info;

FATLINK_RT_API uint32_t fatlink_rt_module_count(void);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_get_module_info(uint32_t Module, fatlink_rt_module_info *Info);
FATLINK_RT_API fatlink_rt_status fatlink_rt_module_image(uint32_t Module,
                                                         uint32_t Image,
                                                         fatlink_rt_image *Out);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_module_kernel(uint32_t Module, uint32_t Kernel,
                         fatlink_rt_kernel_info *Info);

/* The kernel manifest (docs/abi.md): what the link knew of a kernel's
 * parameters, the input that defined it and the launches it declares.
 * Kernels linked from bitcode have one; nvcc's kernels and modules written
 * by an older fatlink have none (language UNKNOWN, num_params 0). */
typedef enum fatlink_rt_param_kind {
  FATLINK_RT_PARAM_UNKNOWN = 0,
  FATLINK_RT_PARAM_SINT = 1,      /* signed integer */
  FATLINK_RT_PARAM_UINT = 2,      /* unsigned integer */
  FATLINK_RT_PARAM_INT = 3,       /* integer; no input states its sign */
  FATLINK_RT_PARAM_FLOAT = 4,     /* IEEE binary16/32/64 by size */
  FATLINK_RT_PARAM_BF16 = 5,
  FATLINK_RT_PARAM_POINTER = 6,   /* a device pointer */
  FATLINK_RT_PARAM_AGGREGATE = 7  /* a struct or array passed by value */
} fatlink_rt_param_kind;

#define FATLINK_RT_PARAM_CONST 0x1u /* flags: the pointee is const */

typedef enum fatlink_rt_language {
  FATLINK_RT_LANGUAGE_UNKNOWN = 0,
  FATLINK_RT_LANGUAGE_RUST = 1,
  FATLINK_RT_LANGUAGE_CUDA = 2,
  FATLINK_RT_LANGUAGE_C = 3
} fatlink_rt_language;

typedef struct fatlink_rt_param {
  fatlink_rt_param_kind kind;
  uint32_t flags;              /* FATLINK_RT_PARAM_CONST */
  uint32_t addrspace;          /* pointers: 0 generic, 1 global, 3 shared,
                                * 4 constant, 5 local */
  fatlink_rt_param_kind elem_kind; /* pointers: the pointee, where known */
  uint32_t size;               /* bytes, as passed */
  uint32_t align;
  uint32_t elem_size;          /* pointers: the pointee's bytes, or 0 */
  const char *type;            /* in the defining input's language, or "" */
  const char *name;            /* or "" */
} fatlink_rt_param;

typedef struct fatlink_rt_kernel_manifest {
  fatlink_rt_language language;
  uint32_t num_params;         /* the kernel's, or 0 when none is known */
  const char *origin;          /* the input that defined it, or "" */
  uint32_t max_threads[3];     /* __launch_bounds__ / .maxntid; 0: none */
  uint32_t req_threads[3];     /* .reqntid; 0: none */
  uint32_t min_blocks;         /* .minnctapersm; 0: none */
  uint32_t cluster[3];         /* cluster dimensions; 0: none */
} fatlink_rt_kernel_manifest;

/* The manifest of kernel Kernel of module Module (all zeros and "" when it
 * has none). */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_module_kernel_manifest(uint32_t Module, uint32_t Kernel,
                                  fatlink_rt_kernel_manifest *Out);
/* Parameter Param of that kernel; INVALID_VALUE past the manifest's
 * num_params. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_module_kernel_param(uint32_t Module, uint32_t Kernel,
                               uint32_t Param, fatlink_rt_param *Out);
/* Formats a parameter as "f32", "i32 (sign unknown)", "ptr global
 * \"const float *\"", "aggregate 16 bytes, align 8 \"S\"". */
FATLINK_RT_API const char *fatlink_rt_param_string(const fatlink_rt_param *P,
                                                   char *Buf, size_t Size);

/* Formats an image as "cubin sm_80", "PTX compute_90a (ISA 8.0)". */
FATLINK_RT_API const char *fatlink_rt_image_string(const fatlink_rt_image *Image,
                                                   char *Buf, size_t Size);

/*===------------------------------ Devices ------------------------------===*/

typedef struct fatlink_rt_device_info {
  char name[256];
  int cc_major, cc_minor;     /* compute capability: 8, 6 for sm_86 */
  int driver_version;         /* cuDriverGetVersion: 12080 for CUDA 12.8 */
  uint64_t total_memory;
} fatlink_rt_device_info;

/* Loads libcuda.so.1 (or $FATLINK_RT_LIBCUDA) and calls cuInit. Every other
 * device function calls it; calling it first only makes the failure early. */
FATLINK_RT_API fatlink_rt_status fatlink_rt_init(void);
FATLINK_RT_API fatlink_rt_status fatlink_rt_device_count(int *Count);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_get_device_info(int Device, fatlink_rt_device_info *Info);
/* Sets the calling thread's current device. */
FATLINK_RT_API fatlink_rt_status fatlink_rt_set_device(int Device);
FATLINK_RT_API fatlink_rt_status fatlink_rt_get_device(int *Device);

/*===---------------------------- Kernels --------------------------------===*/

typedef struct fatlink_rt_kernel_s *fatlink_rt_kernel;

/* Finds a kernel by name in every module (the first module that has it
 * wins) and loads its module on the current device if it is not loaded
 * yet: the driver picks the best cubin or JIT-compiles the PTX. */
FATLINK_RT_API fatlink_rt_status fatlink_rt_get_kernel(const char *Name,
                                                       fatlink_rt_kernel *Out);
/* The same, in one module only. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_module_get_kernel(uint32_t Module, const char *Name,
                             fatlink_rt_kernel *Out);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_kernel_get_info(fatlink_rt_kernel Kernel, fatlink_rt_kernel_info *Info);
/* Finds a kernel as fatlink_rt_get_kernel does, without loading its module
 * (no driver needed): for checks; a launch loads the module then. */
FATLINK_RT_API fatlink_rt_status fatlink_rt_find_kernel(const char *Name,
                                                        fatlink_rt_kernel *Out);

/* The manifest of a kernel handle, and its parameter Param: as
 * fatlink_rt_module_kernel_manifest and _param, without the indices. No
 * driver needed. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_kernel_get_manifest(fatlink_rt_kernel Kernel,
                               fatlink_rt_kernel_manifest *Out);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_kernel_get_param(fatlink_rt_kernel Kernel, uint32_t Param,
                            fatlink_rt_param *Out);

/* What a launch argument is, for fatlink_rt_kernel_check_args. */
typedef struct fatlink_rt_arg {
  fatlink_rt_param_kind kind;     /* SINT, UINT, FLOAT, POINTER, AGGREGATE */
  uint32_t size;                  /* bytes */
  fatlink_rt_param_kind elem_kind; /* pointers: the pointee, or UNKNOWN */
  uint32_t elem_size;
  uint32_t devptr;                /* 1: an integer that holds a device
                                   * pointer (fatlink_rt_devptr) */
  const char *type;               /* its type, for messages ("float *") */
} fatlink_rt_arg;

/* Checks arguments against the kernel's manifest, without the driver:
 * their count; then each one's kind (an integer, a floating-point number,
 * a pointer or a struct where the kernel takes another), its size, and a
 * pointer's element (kind and size) where both sides know it; a
 * fatlink_rt_devptr passes for any pointer. A kernel without a manifest
 * (nvcc's) has its sizes checked only. ERROR_ARGUMENTS names each
 * argument that does not fit, and the parameter's type where known. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_kernel_check_args(fatlink_rt_kernel Kernel,
                             const fatlink_rt_arg *Args, uint32_t NumArgs);

typedef struct fatlink_rt_dim3 {
  uint32_t x, y, z;
} fatlink_rt_dim3;

/* A CUstream; NULL is the default stream. */
typedef void *fatlink_rt_stream;

/* Launches Kernel on the current device. Args[i] points to the value of
 * parameter i and ArgSizes[i] is its size in bytes; both arrays have
 * NumArgs elements, which must equal the kernel's parameter count and
 * sizes (ArgSizes may be NULL to check the count only). SharedMemBytes of
 * dynamic shared memory over 48 KB are allowed for the kernel first (what
 * cudaFuncSetAttribute(MaxDynamicSharedMemorySize) does in CUDA C++), up to
 * the device's per-block limit less the kernel's static shared memory;
 * more is refused with FATLINK_RT_ERROR_INVALID_VALUE naming both. The
 * launch is asynchronous: errors inside the kernel surface at the next
 * fatlink_rt_synchronize or copy. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_launch(fatlink_rt_kernel Kernel, fatlink_rt_dim3 Grid,
                  fatlink_rt_dim3 Block, uint32_t SharedMemBytes,
                  fatlink_rt_stream Stream, void **Args, const size_t *ArgSizes,
                  uint32_t NumArgs);

/* As fatlink_rt_launch, for a kernel that synchronizes its whole grid
 * (cooperative groups' grid.sync()): cuLaunchCooperativeKernel, after
 * checking that the device supports it and that every block of Grid can be
 * resident at once (the kernel's occupancy at Block and SharedMemBytes
 * times the SMs); a larger grid is refused with FATLINK_RT_ERROR_INVALID_VALUE
 * naming those figures. */
FATLINK_RT_API fatlink_rt_status fatlink_rt_launch_cooperative(
    fatlink_rt_kernel Kernel, fatlink_rt_dim3 Grid, fatlink_rt_dim3 Block,
    uint32_t SharedMemBytes, fatlink_rt_stream Stream, void **Args,
    const size_t *ArgSizes, uint32_t NumArgs);

/* Waits for all work on the current device (cuCtxSynchronize). */
FATLINK_RT_API fatlink_rt_status fatlink_rt_synchronize(void);

/*===------------------------- Streams and events ------------------------===*/
/* A stream runs its work (launches, event records) in order; work on
 * different streams may overlap. Streams are created on the calling
 * thread's current device (with CU_STREAM_DEFAULT: they synchronize with
 * the legacy default stream, NULL, which the copies above use) and are
 * only valid for launches of kernels on that device. Handles are plain
 * CUstream / CUevent values, so streams from the CUDA runtime
 * (cudaStream_t) may be passed too. */

FATLINK_RT_API fatlink_rt_status
fatlink_rt_stream_create(fatlink_rt_stream *Out);
/* Work still queued on the stream completes; the handle is invalid after.
 * The default stream (NULL) cannot be destroyed. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_stream_destroy(fatlink_rt_stream Stream);
/* Waits for the work queued on Stream (NULL: the default stream); faults of
 * its kernels surface here. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_stream_synchronize(fatlink_rt_stream Stream);

/* A CUevent: a point in a stream's work, for waiting and timing. */
typedef void *fatlink_rt_event;

FATLINK_RT_API fatlink_rt_status fatlink_rt_event_create(fatlink_rt_event *Out);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_event_destroy(fatlink_rt_event Event);
/* Marks the current end of Stream's work: Event completes when all work
 * queued on Stream before it has. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_event_record(fatlink_rt_event Event, fatlink_rt_stream Stream);
/* Waits for Event's work. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_event_synchronize(fatlink_rt_event Event);
/* Work queued on Stream after this call waits for Event (on the device;
 * the host does not wait). */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_stream_wait_event(fatlink_rt_stream Stream, fatlink_rt_event Event);
/* Milliseconds between two recorded, completed events
 * (cuEventElapsedTime; about 0.5 us resolution). */
FATLINK_RT_API fatlink_rt_status fatlink_rt_event_elapsed_ms(
    fatlink_rt_event Start, fatlink_rt_event End, float *Milliseconds);

/*===----------------------------- Memory --------------------------------===*/

typedef uint64_t fatlink_rt_devptr;

FATLINK_RT_API fatlink_rt_status fatlink_rt_malloc(fatlink_rt_devptr *Ptr,
                                                   size_t Bytes);
FATLINK_RT_API fatlink_rt_status fatlink_rt_free(fatlink_rt_devptr Ptr);
FATLINK_RT_API fatlink_rt_status fatlink_rt_memset(fatlink_rt_devptr Dst,
                                                   unsigned char Value,
                                                   size_t Bytes);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_memcpy_htod(fatlink_rt_devptr Dst, const void *Src, size_t Bytes);
FATLINK_RT_API fatlink_rt_status
fatlink_rt_memcpy_dtoh(void *Dst, fatlink_rt_devptr Src, size_t Bytes);

/*===------------------- Image selection (no driver) ---------------------===*/

/* What fatlink_rt_select_image needs to know about a device. */
typedef struct fatlink_rt_device_desc {
  int cc_major, cc_minor;
  int driver_version;         /* as cuDriverGetVersion; 0 = unknown */
} fatlink_rt_device_desc;

typedef struct fatlink_rt_choice {
  int index;                  /* chosen image, -1 if none */
  char reason[1024];          /* why (on success and on failure) */
} fatlink_rt_choice;

/* Predicts which image of a fatbin the driver loads on a device, following
 * NVIDIA's compatibility rules (docs/runtime.md): the newest compatible
 * cubin, else the newest PTX the device and driver can JIT. Returns
 * FATLINK_RT_SUCCESS, FATLINK_RT_ERROR_DRIVER_TOO_OLD or
 * FATLINK_RT_ERROR_NO_IMAGE, with the reason in Out->reason. Pure. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_select_image(const fatlink_rt_image *Images, size_t NumImages,
                        const fatlink_rt_device_desc *Device,
                        fatlink_rt_choice *Out);

/* The CUDA version (1000 * major + 10 * minor, as cuDriverGetVersion
 * reports it) of the first driver that loads PTX ISA Major.Minor, and the
 * minimum Linux driver of that release in *LinuxDriver; 0 if unknown. */
FATLINK_RT_API int fatlink_rt_ptx_min_driver(unsigned Major, unsigned Minor,
                                             const char **LinuxDriver);

/* Parses a fatbin container (possibly several back to back) into at most
 * Capacity images; *Count receives the total. Bounds-checked; the error
 * names the offset. Pure. */
FATLINK_RT_API fatlink_rt_status
fatlink_rt_parse_fatbin(const void *Data, uint64_t Size, fatlink_rt_image *Out,
                        size_t Capacity, size_t *Count);

#ifdef __cplusplus
}
#endif

#endif /* FATLINK_RUNTIME_H */
