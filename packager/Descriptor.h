/*===- packager/Descriptor.h - Module descriptors in fatlink objects -----===*\
 *
 * The layout a runtime uses to find every device module that fatlink
 * embedded in a program. It is plain C with no dependencies so that the
 * runtime library (which must not depend on LLVM) and the packager, which
 * writes these bytes, share one definition.
 *
 * Every host object fatlink writes holds one `struct fatlink_module` in the
 * section named FATLINK_MODULES_SECTION. The static linker concatenates those
 * sections and defines `__start_fatlink_modules` / `__stop_fatlink_modules`
 * around them, so a runtime iterates all modules of a program with
 *
 *   extern const struct fatlink_module __start_fatlink_modules[];
 *   extern const struct fatlink_module __stop_fatlink_modules[];
 *   for (const struct fatlink_module *M = __start_fatlink_modules;
 *        M != __stop_fatlink_modules; ++M) ...
 *
 * (declare them weak if a program may hold no module). The stride is fixed:
 * each struct is 48 bytes and 8-byte aligned, so concatenation leaves no
 * gaps. A runtime checks `magic` and `version` before using a record and
 * skips a record whose `size` it does not know (newer fields are appended).
 *
 * The layout is defined for LP64 hosts (x86-64 and AArch64 Linux); the
 * offsets are given in comments and checked below.
\*===----------------------------------------------------------------------===*/

#ifndef FATLINK_PACKAGER_DESCRIPTOR_H
#define FATLINK_PACKAGER_DESCRIPTOR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Section names. FATLINK_MODULES_SECTION is a C identifier on purpose: only
 * such sections get __start_/__stop_ symbols from the static linker. */
#define FATLINK_MODULES_SECTION "fatlink_modules"
#define FATLINK_KERNELS_SECTION ".data.rel.ro.fatlink_kernels"
#define FATLINK_FATBIN_SECTION ".nv_fatbin"
#define FATLINK_WRAPPER_SECTION ".nvFatBinSegment"

#define FATLINK_MODULE_MAGIC 0x4b4e4c46u /* "FLNK" in little-endian memory */
#define FATLINK_MODULE_VERSION 1u

/* CUDA's __fatBinC_Wrapper_t (fatbinary_section.h), the argument of
 * __cudaRegisterFatBinary. */
#define FATLINK_FATBINC_MAGIC 0x466243b1u
#define FATLINK_FATBINC_VERSION 1u

/* Magic of the fatbin container the wrapper points to. */
#define FATLINK_FATBIN_MAGIC 0xba55ed50u

/* Every host object defines one symbol, weak and hidden, at its wrapper:
 * this prefix and 16 lower-case hex digits of the fatbin's BLAKE3 hash. */
#define FATLINK_WRAPPER_SYMBOL_PREFIX "__fatlink_wrapper_"

/* nvcc relocatable device code. nvcc's host code registers its kernels by
 * calling __cudaRegisterLinkedBinary_<module id>(callback, ...) from a
 * static constructor, and `fatlink cc` defines those functions (hidden)
 * in registration code it generates per link. That code registers the
 * wrapper of its link's fatbin once, when every linked nvcc module has
 * called in, calls each callback with the handle, then
 * __cudaRegisterFatBinaryEnd; each linked module adds one pointer to its
 * id string to the section FATLINK_NVCC_MODULES_SECTION, so the static
 * linker counts them (__start_/__stop_).
 *
 * The runtime, which registers clang's CUDA entries, must not register the
 * same fatbin a second time (device globals would be duplicated). The
 * generated code defines, hidden,
 *
 *   int FATLINK_CUDART_JOIN(const struct fatlink_fatbin_wrapper *wrapper,
 *                           void (*callback)(void **handle));
 *
 * which returns 0 when it does not register `wrapper`, else 1 and calls
 * `callback` with the one handle before __cudaRegisterFatBinaryEnd (at
 * once if that handle exists already). The runtime references it weakly
 * and hidden, so it sees only its own component's. */
#define FATLINK_NVCC_MODULES_SECTION "fatlink_nvcc_modules"
#define FATLINK_CUDART_JOIN __fatlink_cudart_join

struct fatlink_fatbin_wrapper {
  uint32_t magic;            /*  0: FATLINK_FATBINC_MAGIC */
  uint32_t version;          /*  4: FATLINK_FATBINC_VERSION */
  const void *data;          /*  8: the fatbin container in .nv_fatbin */
  const void *filename_or_fatbins; /* 16: always NULL */
};                           /* 24 bytes */

/* One kernel of a module: what a runtime needs to check a launch. */
struct fatlink_kernel {
  const char *name;            /*  0: mangled kernel name, NUL-terminated */
  const uint32_t *param_sizes; /*  8: size in bytes of each parameter, in
                                *     order; NULL when num_params is 0 */
  uint32_t num_params;         /* 16 */
  uint32_t manifest;           /* 20: 0, or the offset of the kernel's
                                *     struct fatlink_kernel_manifest */
};                             /* 24 bytes; sorted by name (strcmp order) */

/* The kernel manifest (docs/abi.md): what the link knew of each kernel's
 * parameters, where it was defined and what launches it declares.
 *
 * A kernel record whose `manifest` is not 0 has a manifest at that byte
 * offset from the start of its module's kernel array (`kernels`). Every
 * offset inside a manifest is from the same base, and all of it lies in
 * the kernel table's own section after the records, so it needs no
 * relocation. Strings are NUL-terminated; offset 0 is never a string, so
 * a string offset of 0 means "not known". Modules written before the
 * manifest existed have 0 there (the field was reserved, always 0). */
#define FATLINK_MANIFEST_VERSION 1u
/* fatlink_module.flags: some kernel of the module has a manifest. */
#define FATLINK_MODULE_FLAG_MANIFEST 0x1u

enum fatlink_param_kind {
  FATLINK_PARAM_UNKNOWN = 0,
  FATLINK_PARAM_SINT = 1,      /* signed integer of `size` bytes */
  FATLINK_PARAM_UINT = 2,      /* unsigned integer */
  FATLINK_PARAM_INT = 3,       /* integer whose sign no input states */
  FATLINK_PARAM_FLOAT = 4,     /* IEEE binary16/32/64 by `size` */
  FATLINK_PARAM_BF16 = 5,      /* bfloat16 */
  FATLINK_PARAM_POINTER = 6,   /* a device pointer (8 bytes) */
  FATLINK_PARAM_AGGREGATE = 7  /* a struct or array passed by value */
};

/* fatlink_param.flags */
#define FATLINK_PARAM_CONST 0x1u /* pointers: the pointee is const */

/* Address spaces of NVPTX pointers (fatlink_param.addrspace). */
#define FATLINK_ADDRSPACE_GENERIC 0u
#define FATLINK_ADDRSPACE_GLOBAL 1u
#define FATLINK_ADDRSPACE_SHARED 3u
#define FATLINK_ADDRSPACE_CONSTANT 4u
#define FATLINK_ADDRSPACE_LOCAL 5u

enum fatlink_language {
  FATLINK_LANGUAGE_UNKNOWN = 0,
  FATLINK_LANGUAGE_RUST = 1,
  FATLINK_LANGUAGE_CUDA = 2, /* CUDA C++ (clang or nvcc) */
  FATLINK_LANGUAGE_C = 3
};

struct fatlink_param {
  uint8_t kind;       /*  0: enum fatlink_param_kind */
  uint8_t flags;      /*  1: FATLINK_PARAM_* flags */
  uint8_t addrspace;  /*  2: pointers: FATLINK_ADDRSPACE_* */
  uint8_t elem_kind;  /*  3: pointers: the pointee's kind, where known */
  uint32_t size;      /*  4: bytes, as passed */
  uint32_t align;     /*  8: bytes */
  uint32_t elem_size; /* 12: pointers: the pointee's bytes, 0 if not known */
  uint32_t type;      /* 16: offset of the type in the defining input's
                       *     language ("*const f32", "const float *") */
  uint32_t name;      /* 20: offset of the parameter's name */
};                    /* 24 bytes */

struct fatlink_kernel_manifest {
  uint16_t version;          /*  0: FATLINK_MANIFEST_VERSION */
  uint8_t language;          /*  2: enum fatlink_language */
  uint8_t flags;             /*  3: 0 */
  uint32_t params;           /*  4: offset of num_params fatlink_param
                              *     records (0 when num_params is 0) */
  uint32_t origin;           /*  8: offset of the input that defined it */
  uint32_t max_threads[3];   /* 12: __launch_bounds__ / .maxntid; 0: none */
  uint32_t req_threads[3];   /* 24: .reqntid; 0: none */
  uint32_t min_blocks;       /* 36: .minnctapersm; 0: none */
  uint32_t cluster[3];       /* 40: __cluster_dims__ / .reqnctapercluster;
                              *     0: none */
  uint32_t reserved;         /* 52: 0 */
};                           /* 56 bytes, 8-byte aligned */

/* One embedded device module (one fatbin). */
struct fatlink_module {
  uint32_t magic;    /*  0: FATLINK_MODULE_MAGIC */
  uint16_t version;  /*  4: FATLINK_MODULE_VERSION */
  uint16_t size;     /*  6: sizeof(struct fatlink_module) = 48 */
  const struct fatlink_fatbin_wrapper *wrapper; /* 8: for __cudaRegisterFatBinary */
  const void *fatbin;     /* 16: the container, for cuModuleLoadData */
  uint64_t fatbin_size;   /* 24: bytes of the container */
  const struct fatlink_kernel *kernels; /* 32: num_kernels records */
  uint32_t num_kernels;   /* 40 */
  uint32_t flags;         /* 44: FATLINK_MODULE_FLAG_* */
};                        /* 48 bytes */

#if defined(__cplusplus) && __cplusplus >= 201103L
#define FATLINK_STATIC_ASSERT(C, M) static_assert(C, M)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define FATLINK_STATIC_ASSERT(C, M) _Static_assert(C, M)
#else
#define FATLINK_STATIC_ASSERT(C, M)
#endif

#if UINTPTR_MAX == 0xffffffffffffffffu
FATLINK_STATIC_ASSERT(sizeof(struct fatlink_fatbin_wrapper) == 24,
                      "wrapper layout is fixed");
FATLINK_STATIC_ASSERT(sizeof(struct fatlink_kernel) == 24,
                      "kernel record layout is fixed");
FATLINK_STATIC_ASSERT(sizeof(struct fatlink_param) == 24,
                      "parameter record layout is fixed");
FATLINK_STATIC_ASSERT(sizeof(struct fatlink_kernel_manifest) == 56,
                      "manifest layout is fixed");
FATLINK_STATIC_ASSERT(sizeof(struct fatlink_module) == 48,
                      "module record layout is fixed");
#endif

#ifdef __cplusplus
}
#endif

#endif /* FATLINK_PACKAGER_DESCRIPTOR_H */
