/*===- runtime/lib/Api.c - Listing, lookup, launch and memory -------------===*\
 *
 * The public functions over the registry and the driver. Each checks its
 * arguments, then enters the calling thread's current device (driver
 * loaded, primary context current) before any driver call.
 *
 * Kernel lookup failures suggest the closest names: edit distance, plus
 * names that contain the one asked for (so "scale" finds the C++ name
 * "_Z5scalePfi").
\*===----------------------------------------------------------------------===*/

#include "Internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*===---------------------------- Listing --------------------------------===*/

uint32_t fatlink_rt_module_count(void) {
  flrt_registry_lock();
  uint32_t N = flrt_registry_count_locked();
  flrt_registry_unlock();
  return N;
}

static flrt_module *moduleAt(uint32_t Index, const char *Fn) {
  flrt_registry_lock();
  uint32_t N = flrt_registry_count_locked();
  flrt_module *M = flrt_registry_get_locked(Index);
  flrt_registry_unlock();
  if (!M)
    flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
              "%s: module %u does not exist (this program has %u)", Fn, Index,
              N);
  return M;
}

fatlink_rt_status fatlink_rt_get_module_info(uint32_t Module,
                                         fatlink_rt_module_info *Info) {
  if (!Info)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_get_module_info: Info is NULL");
  flrt_module *M = moduleAt(Module, "fatlink_rt_get_module_info");
  if (!M)
    return FATLINK_RT_ERROR_INVALID_VALUE;
  Info->origin = M->origin;
  Info->fatbin_size = M->desc->fatbin_size;
  Info->num_kernels = M->parse_error ? 0 : M->desc->num_kernels;
  Info->num_images = M->num_images;
  if (M->parse_error)
    return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                     "the fatlink module in %s is unusable: %s", M->origin,
                     M->parse_error);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_module_image(uint32_t Module, uint32_t Image,
                                          fatlink_rt_image *Out) {
  if (!Out)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_module_image: Out is NULL");
  flrt_module *M = moduleAt(Module, "fatlink_rt_module_image");
  if (!M)
    return FATLINK_RT_ERROR_INVALID_VALUE;
  if (Image >= M->num_images)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_module_image: module %u has %u images, no "
                     "image %u",
                     Module, M->num_images, Image);
  *Out = M->images[Image];
  return flrt_ok();
}

static void fillKernelInfo(const flrt_module *M, uint32_t Index,
                           uint32_t Module, fatlink_rt_kernel_info *Info) {
  const struct fatlink_kernel *K = &M->desc->kernels[Index];
  Info->name = K->name;
  Info->module = Module;
  Info->num_params = K->num_params;
  Info->param_sizes = K->param_sizes;
}

fatlink_rt_status fatlink_rt_module_kernel(uint32_t Module, uint32_t Kernel,
                                           fatlink_rt_kernel_info *Info) {
  if (!Info)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_module_kernel: Info is NULL");
  flrt_module *M = moduleAt(Module, "fatlink_rt_module_kernel");
  if (!M)
    return FATLINK_RT_ERROR_INVALID_VALUE;
  uint32_t N = M->parse_error ? 0 : M->desc->num_kernels;
  if (Kernel >= N)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_module_kernel: module %u has %u kernels, no "
                     "kernel %u",
                     Module, N, Kernel);
  fillKernelInfo(M, Kernel, Module, Info);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_kernel_get_info(fatlink_rt_kernel Kernel,
                                             fatlink_rt_kernel_info *Info) {
  if (!Kernel || !Info)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_kernel_get_info: NULL argument");
  if (atomic_load(&Kernel->module->unloaded))
    return flrt_unloaded_failure(Kernel->module, Kernel->index);
  uint32_t Module = UINT32_MAX;
  flrt_registry_lock();
  for (uint32_t I = 0; I < flrt_registry_count_locked(); ++I)
    if (flrt_registry_get_locked(I) == Kernel->module)
      Module = I;
  flrt_registry_unlock();
  fillKernelInfo(Kernel->module, Kernel->index, Module, Info);
  return flrt_ok();
}

/*===----------------------------- Manifest ------------------------------===*/

/* The manifest of kernel Index, or NULL. Its offsets count from the
 * module's kernel array (packager/Descriptor.h). */
static const struct fatlink_kernel_manifest *manifestOf(const flrt_module *M,
                                                        uint32_t Index) {
  const struct fatlink_kernel *K = &M->desc->kernels[Index];
  if (!K->manifest)
    return NULL;
  const struct fatlink_kernel_manifest *Man =
      (const void *)((const char *)M->desc->kernels + K->manifest);
  return Man->version == FATLINK_MANIFEST_VERSION ? Man : NULL;
}

static const char *manifestString(const flrt_module *M, uint32_t Off) {
  return Off ? (const char *)M->desc->kernels + Off : "";
}

/* The module and manifest of kernel Kernel, or NULL with the failure set
 * (Man is NULL for a kernel without one); Out is the caller's output
 * argument, which must not be NULL. */
static const flrt_module *
kernelFor(uint32_t Module, uint32_t Kernel, const char *Fn, const void *Out,
          const struct fatlink_kernel_manifest **Man) {
  if (!Out) {
    flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE, "%s: Out is NULL", Fn);
    return NULL;
  }
  flrt_module *M = moduleAt(Module, Fn);
  if (!M)
    return NULL;
  uint32_t N = M->parse_error ? 0 : M->desc->num_kernels;
  if (Kernel >= N) {
    flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
              "%s: module %u has %u kernels, no kernel %u", Fn, Module, N,
              Kernel);
    return NULL;
  }
  *Man = manifestOf(M, Kernel);
  return M;
}

/* Fills Out from kernel Kernel of M, whose manifest is Man (or NULL). */
static void fillManifest(const flrt_module *M, uint32_t Kernel,
                         const struct fatlink_kernel_manifest *Man,
                         fatlink_rt_kernel_manifest *Out) {
  memset(Out, 0, sizeof(*Out));
  Out->origin = "";
  if (!Man)
    return;
  Out->language = (fatlink_rt_language)Man->language;
  Out->num_params = Man->params ? M->desc->kernels[Kernel].num_params : 0;
  Out->origin = manifestString(M, Man->origin);
  for (int D = 0; D < 3; ++D) {
    Out->max_threads[D] = Man->max_threads[D];
    Out->req_threads[D] = Man->req_threads[D];
    Out->cluster[D] = Man->cluster[D];
  }
  Out->min_blocks = Man->min_blocks;
}

/* Fills Out with parameter Param of kernel Kernel of M (manifest Man). */
static fatlink_rt_status fillParam(const flrt_module *M, uint32_t Kernel,
                                   const struct fatlink_kernel_manifest *Man,
                                   uint32_t Param, const char *Fn,
                                   fatlink_rt_param *Out) {
  const struct fatlink_kernel *K = &M->desc->kernels[Kernel];
  uint32_t N = Man && Man->params ? K->num_params : 0;
  if (Param >= N)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "%s: the manifest of %s lists %u parameters, no "
                     "parameter %u",
                     Fn, K->name, N, Param);
  const struct fatlink_param *P =
      (const void *)((const char *)M->desc->kernels + Man->params +
                     (uint64_t)Param * sizeof(struct fatlink_param));
  Out->kind = (fatlink_rt_param_kind)P->kind;
  Out->flags = P->flags;
  Out->addrspace = P->addrspace;
  Out->elem_kind = (fatlink_rt_param_kind)P->elem_kind;
  Out->size = P->size;
  Out->align = P->align;
  Out->elem_size = P->elem_size;
  Out->type = manifestString(M, P->type);
  Out->name = manifestString(M, P->name);
  return flrt_ok();
}

fatlink_rt_status
fatlink_rt_module_kernel_manifest(uint32_t Module, uint32_t Kernel,
                                  fatlink_rt_kernel_manifest *Out) {
  const struct fatlink_kernel_manifest *Man;
  const flrt_module *M =
      kernelFor(Module, Kernel, "fatlink_rt_module_kernel_manifest", Out, &Man);
  if (!M)
    return FATLINK_RT_ERROR_INVALID_VALUE;
  fillManifest(M, Kernel, Man, Out);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_module_kernel_param(uint32_t Module,
                                                 uint32_t Kernel,
                                                 uint32_t Param,
                                                 fatlink_rt_param *Out) {
  const struct fatlink_kernel_manifest *Man;
  const flrt_module *M =
      kernelFor(Module, Kernel, "fatlink_rt_module_kernel_param", Out, &Man);
  if (!M)
    return FATLINK_RT_ERROR_INVALID_VALUE;
  return fillParam(M, Kernel, Man, Param, "fatlink_rt_module_kernel_param",
                   Out);
}

/* The handle's module, or NULL with the failure set (a NULL argument, or a
 * module whose library was unloaded). */
static const flrt_module *handleModule(fatlink_rt_kernel Kernel,
                                       const void *Out, const char *Fn) {
  if (!Kernel || !Out) {
    flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE, "%s: NULL argument", Fn);
    return NULL;
  }
  if (atomic_load(&Kernel->module->unloaded)) {
    flrt_unloaded_failure(Kernel->module, Kernel->index);
    return NULL;
  }
  return Kernel->module;
}

fatlink_rt_status
fatlink_rt_kernel_get_manifest(fatlink_rt_kernel Kernel,
                               fatlink_rt_kernel_manifest *Out) {
  const flrt_module *M =
      handleModule(Kernel, Out, "fatlink_rt_kernel_get_manifest");
  if (!M)
    return Kernel && Out ? FATLINK_RT_ERROR_BAD_MODULE
                         : FATLINK_RT_ERROR_INVALID_VALUE;
  fillManifest(M, Kernel->index, manifestOf(M, Kernel->index), Out);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_kernel_get_param(fatlink_rt_kernel Kernel,
                                              uint32_t Param,
                                              fatlink_rt_param *Out) {
  const flrt_module *M =
      handleModule(Kernel, Out, "fatlink_rt_kernel_get_param");
  if (!M)
    return Kernel && Out ? FATLINK_RT_ERROR_BAD_MODULE
                         : FATLINK_RT_ERROR_INVALID_VALUE;
  return fillParam(M, Kernel->index, manifestOf(M, Kernel->index), Param,
                   "fatlink_rt_kernel_get_param", Out);
}

static const char *addrspaceName(uint32_t AS) {
  switch (AS) {
  case 0: return "generic";
  case 1: return "global";
  case 3: return "shared";
  case 4: return "constant";
  case 5: return "local";
  default: return "?";
  }
}

const char *fatlink_rt_param_string(const fatlink_rt_param *P, char *Buf,
                                    size_t Size) {
  if (!Buf || !Size)
    return "";
  if (!P) {
    snprintf(Buf, Size, "?");
    return Buf;
  }
  unsigned Bits = P->size * 8;
  int N;
  switch (P->kind) {
  case FATLINK_RT_PARAM_SINT: N = snprintf(Buf, Size, "i%u", Bits); break;
  case FATLINK_RT_PARAM_UINT: N = snprintf(Buf, Size, "u%u", Bits); break;
  case FATLINK_RT_PARAM_INT:
    N = snprintf(Buf, Size, "i%u (sign unknown)", Bits);
    break;
  case FATLINK_RT_PARAM_FLOAT: N = snprintf(Buf, Size, "f%u", Bits); break;
  case FATLINK_RT_PARAM_BF16: N = snprintf(Buf, Size, "bf16"); break;
  case FATLINK_RT_PARAM_POINTER:
    N = snprintf(Buf, Size, "ptr %s", addrspaceName(P->addrspace));
    break;
  case FATLINK_RT_PARAM_AGGREGATE:
    N = snprintf(Buf, Size, "aggregate %u bytes, align %u", P->size, P->align);
    break;
  default: N = snprintf(Buf, Size, "%u bytes", P->size); break;
  }
  if (N >= 0 && (size_t)N < Size && P->type && *P->type)
    snprintf(Buf + N, Size - (size_t)N, " \"%s\"", P->type);
  return Buf;
}

/*===----------------------------- Lookup --------------------------------===*/

static size_t editDistance(const char *A, const char *B) {
  size_t LA = strlen(A), LB = strlen(B);
  if (LB > 512 || LA > 512)
    return (size_t)-1;
  size_t Row[513];
  for (size_t J = 0; J <= LB; ++J)
    Row[J] = J;
  for (size_t I = 1; I <= LA; ++I) {
    size_t Diag = Row[0];
    Row[0] = I;
    for (size_t J = 1; J <= LB; ++J) {
      size_t Up = Row[J];
      size_t Best = Diag + (A[I - 1] != B[J - 1]);
      if (Up + 1 < Best)
        Best = Up + 1;
      if (Row[J - 1] + 1 < Best)
        Best = Row[J - 1] + 1;
      Row[J] = Best;
      Diag = Up;
    }
  }
  return Row[LB];
}

enum { MaxSuggestions = 3 };

typedef struct Suggestion {
  const char *Name;
  size_t Score;
} Suggestion;

static void consider(Suggestion *Best, const char *Query, const char *Name) {
  size_t QL = strlen(Query);
  size_t Limit = QL / 3 > 2 ? QL / 3 : 2;
  size_t Score = strstr(Name, Query) ? 0 : editDistance(Query, Name);
  if (Score > Limit)
    return;
  for (int I = 0; I < MaxSuggestions; ++I) {
    if (Best[I].Name && strcmp(Best[I].Name, Name) == 0)
      return;
    if (!Best[I].Name || Score < Best[I].Score) {
      for (int J = MaxSuggestions - 1; J > I; --J)
        Best[J] = Best[J - 1];
      Best[I].Name = Name;
      Best[I].Score = Score;
      return;
    }
  }
}

static fatlink_rt_status notFound(const char *Name, int OnlyModule,
                                  uint32_t Module) {
  flrt_str S;
  flrt_str_init(&S);
  Suggestion Best[MaxSuggestions];
  memset(Best, 0, sizeof(Best));
  uint32_t Modules = 0, Kernels = 0;
  flrt_registry_lock();
  uint32_t N = flrt_registry_count_locked();
  for (uint32_t I = 0; I < N; ++I) {
    if (OnlyModule && I != Module)
      continue;
    flrt_module *M = flrt_registry_get_locked(I);
    ++Modules;
    if (M->parse_error)
      continue;
    for (uint32_t K = 0; K < M->desc->num_kernels; ++K, ++Kernels)
      consider(Best, Name, M->desc->kernels[K].name);
  }
  if (Modules == 0) {
    flrt_registry_unlock();
    flrt_str_addf(&S,
                  "kernel '%s' not found: this program carries no fatlink "
                  "device code; link the kernels.o that `fatlink "
                  "device-link` wrote (as an object file: a linker drops "
                  "archive members that nothing references)",
                  Name);
    flrt_str_add_link_log(&S);
    fatlink_rt_status St =
        flrt_fail(FATLINK_RT_ERROR_KERNEL_NOT_FOUND, "%s", flrt_str_get(&S));
    flrt_str_free(&S);
    return St;
  }
  if (OnlyModule)
    flrt_str_addf(&S, "kernel '%s' not found in module %u (%u kernel%s)", Name,
                  Module, Kernels, Kernels == 1 ? "" : "s");
  else
    flrt_str_addf(&S, "kernel '%s' not found in %u module%s (%u kernel%s)",
                  Name, Modules, Modules == 1 ? "" : "s", Kernels,
                  Kernels == 1 ? "" : "s");
  if (Best[0].Name) {
    flrt_str_addf(&S, "; did you mean ");
    for (int I = 0; I < MaxSuggestions && Best[I].Name; ++I)
      flrt_str_addf(&S, "%s'%s'",
                    I == 0                                          ? ""
                    : (I + 1 < MaxSuggestions && Best[I + 1].Name) ? ", "
                                                                    : " or ",
                    Best[I].Name);
    flrt_str_addf(&S, "?");
  } else if (Kernels > 0 && Kernels <= 16) {
    flrt_str_addf(&S, "; the kernels are: ");
    uint32_t Listed = 0;
    for (uint32_t I = 0; I < N; ++I) {
      flrt_module *M = flrt_registry_get_locked(I);
      if ((OnlyModule && I != Module) || M->parse_error)
        continue;
      for (uint32_t K = 0; K < M->desc->num_kernels; ++K)
        flrt_str_addf(&S, "%s%s", Listed++ ? ", " : "",
                      M->desc->kernels[K].name);
    }
  }
  flrt_registry_unlock();
  flrt_str_add_link_log(&S);
  fatlink_rt_status St =
      flrt_fail(FATLINK_RT_ERROR_KERNEL_NOT_FOUND, "%s", flrt_str_get(&S));
  flrt_str_free(&S);
  return St;
}

/* A kernel that no usable module has may be in an unusable one (a corrupt
 * fatbin, a malformed descriptor): then the reason is the answer, not "not
 * found". BAD_MODULE when a searched module's descriptor names the kernel,
 * or when a searched module's kernel table cannot be read (it may hold it);
 * success (nothing to say) otherwise. Under the registry lock. */
static fatlink_rt_status unusableModuleFailure(const char *Name,
                                               int OnlyModule,
                                               uint32_t Module) {
  uint32_t N = flrt_registry_count_locked();
  flrt_module *Unreadable = NULL;
  uint32_t UnreadableIndex = 0;
  for (uint32_t I = 0; I < N; ++I) {
    if (OnlyModule && I != Module)
      continue;
    flrt_module *M = flrt_registry_get_locked(I);
    if (!M->parse_error)
      continue;
    if (M->descriptor_ok && flrt_find_kernel(M->desc, Name) >= 0)
      return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                       "kernel '%s' is in module %u from %s, which is "
                       "unusable: %s",
                       Name, I, M->origin, M->parse_error);
    if (!M->descriptor_ok && !Unreadable) {
      Unreadable = M;
      UnreadableIndex = I;
    }
  }
  if (Unreadable)
    return flrt_fail(FATLINK_RT_ERROR_BAD_MODULE,
                     "kernel '%s' not found in the usable modules; module %u "
                     "from %s is unusable and may hold it: %s",
                     Name, UnreadableIndex, Unreadable->origin,
                     Unreadable->parse_error);
  return FATLINK_RT_SUCCESS;
}

/* Looks Name up (in module Module only, if OnlyModule); with Load, loads
 * its module on the current device, as the launch would. */
static fatlink_rt_status getKernel(const char *Name, int OnlyModule,
                                   uint32_t Module, int Load,
                                   fatlink_rt_kernel *Out) {
  if (!Out)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_get_kernel: Out is NULL");
  *Out = NULL;
  if (!Name || !*Name)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_get_kernel: the kernel name is empty");
  fatlink_rt_kernel Found = NULL;
  flrt_registry_lock();
  uint32_t N = flrt_registry_count_locked();
  if (OnlyModule && Module >= N) {
    flrt_registry_unlock();
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_module_get_kernel: module %u does not exist "
                     "(this program has %u)",
                     Module, N);
  }
  for (uint32_t I = 0; I < N && !Found; ++I) {
    if (OnlyModule && I != Module)
      continue;
    flrt_module *M = flrt_registry_get_locked(I);
    if (M->parse_error)
      continue;
    long K = flrt_find_kernel(M->desc, Name);
    if (K >= 0)
      Found = &M->kernels[K];
  }
  if (!Found) {
    fatlink_rt_status S = unusableModuleFailure(Name, OnlyModule, Module);
    flrt_registry_unlock();
    return S != FATLINK_RT_SUCCESS ? S : notFound(Name, OnlyModule, Module);
  }
  flrt_registry_unlock();
  if (Load) {
    CUfunction F;
    fatlink_rt_status S = flrt_module_function(Found->module, Found->index,
                                               flrt_current_device(), &F);
    if (S != FATLINK_RT_SUCCESS)
      return S;
  }
  *Out = Found;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_get_kernel(const char *Name,
                                        fatlink_rt_kernel *Out) {
  return getKernel(Name, 0, 0, 1, Out);
}

fatlink_rt_status fatlink_rt_module_get_kernel(uint32_t Module,
                                               const char *Name,
                                               fatlink_rt_kernel *Out) {
  return getKernel(Name, 1, Module, 1, Out);
}

fatlink_rt_status fatlink_rt_find_kernel(const char *Name,
                                         fatlink_rt_kernel *Out) {
  return getKernel(Name, 0, 0, 0, Out);
}

/*===-------------------------- Argument kinds ---------------------------===*/

static const char *kindWord(fatlink_rt_param_kind K) {
  switch (K) {
  case FATLINK_RT_PARAM_SINT:
  case FATLINK_RT_PARAM_UINT:
  case FATLINK_RT_PARAM_INT: return "an integer";
  case FATLINK_RT_PARAM_FLOAT: return "a floating-point number";
  case FATLINK_RT_PARAM_BF16: return "a bf16";
  case FATLINK_RT_PARAM_POINTER: return "a pointer";
  case FATLINK_RT_PARAM_AGGREGATE: return "a struct";
  default: return "a value";
  }
}

static int isInt(fatlink_rt_param_kind K) {
  return K == FATLINK_RT_PARAM_SINT || K == FATLINK_RT_PARAM_UINT ||
         K == FATLINK_RT_PARAM_INT;
}

/* Why argument A cannot be parameter P, or NULL. Buf holds the reason. */
static const char *argMismatch(const fatlink_rt_param *P,
                               const fatlink_rt_arg *A, char *Buf,
                               size_t Size) {
  if (P->kind == FATLINK_RT_PARAM_UNKNOWN || A->kind == FATLINK_RT_PARAM_UNKNOWN)
    return NULL;
  int SameKind =
      (isInt(P->kind) && isInt(A->kind)) || P->kind == A->kind ||
      /* A device pointer held as an integer (fatlink_rt_devptr). */
      (P->kind == FATLINK_RT_PARAM_POINTER && A->kind == FATLINK_RT_PARAM_UINT &&
       A->size == 8 && A->devptr);
  if (!SameKind) {
    snprintf(Buf, Size, "the launch passes %s (%s) where the kernel takes %s",
             kindWord(A->kind), A->type ? A->type : "?", kindWord(P->kind));
    return Buf;
  }
  if (P->kind != FATLINK_RT_PARAM_POINTER && A->size != P->size) {
    snprintf(Buf, Size, "the launch passes %u bytes (%s) where the kernel "
             "takes %u", A->size, A->type ? A->type : "?", P->size);
    return Buf;
  }
  if (P->kind == FATLINK_RT_PARAM_POINTER &&
      A->kind == FATLINK_RT_PARAM_POINTER &&
      P->elem_kind != FATLINK_RT_PARAM_UNKNOWN &&
      A->elem_kind != FATLINK_RT_PARAM_UNKNOWN &&
      ((!(isInt(P->elem_kind) && isInt(A->elem_kind)) &&
        P->elem_kind != A->elem_kind) ||
       P->elem_size != A->elem_size)) {
    snprintf(Buf, Size, "the launch passes a pointer to %u-byte %s (%s) "
             "where the kernel takes a pointer to %u-byte %s",
             A->elem_size, isInt(A->elem_kind) ? "integers" : "floats",
             A->type ? A->type : "?", P->elem_size,
             isInt(P->elem_kind) ? "integers" : "floats");
    return Buf;
  }
  return NULL;
}

fatlink_rt_status fatlink_rt_kernel_check_args(fatlink_rt_kernel Kernel,
                                               const fatlink_rt_arg *Args,
                                               uint32_t NumArgs) {
  if (!Kernel || (NumArgs && !Args))
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_kernel_check_args: NULL argument");
  if (atomic_load(&Kernel->module->unloaded))
    return flrt_unloaded_failure(Kernel->module, Kernel->index);
  const flrt_module *M = Kernel->module;
  const struct fatlink_kernel *K = &M->desc->kernels[Kernel->index];
  if (NumArgs != K->num_params)
    return flrt_fail(FATLINK_RT_ERROR_ARGUMENTS,
                     "kernel %s takes %u argument%s, but the launch passes %u",
                     K->name, K->num_params, K->num_params == 1 ? "" : "s",
                     NumArgs);
  const struct fatlink_kernel_manifest *Man = manifestOf(M, Kernel->index);
  flrt_str S;
  flrt_str_init(&S);
  int Bad = 0;
  for (uint32_t I = 0; I < NumArgs; ++I) {
    char Buf[256];
    const char *Why = NULL;
    fatlink_rt_param P = {0}; /* set where the manifest has parameters */
    if (Man && Man->params) {
      const struct fatlink_param *D =
          (const void *)((const char *)M->desc->kernels + Man->params +
                         (uint64_t)I * sizeof(struct fatlink_param));
      P.kind = (fatlink_rt_param_kind)D->kind;
      P.size = D->size;
      P.elem_kind = (fatlink_rt_param_kind)D->elem_kind;
      P.elem_size = D->elem_size;
      P.type = manifestString(M, D->type);
      Why = argMismatch(&P, &Args[I], Buf, sizeof(Buf));
    } else if (Args[I].size != K->param_sizes[I]) {
      snprintf(Buf, sizeof(Buf), "the launch passes %u bytes where the "
               "kernel takes %u", Args[I].size, K->param_sizes[I]);
      Why = Buf;
    }
    if (!Why)
      continue;
    flrt_str_addf(&S, "%sargument %u of kernel %s: %s", Bad++ ? "; " : "", I,
                  K->name, Why);
    if (Man && Man->params && *P.type)
      flrt_str_addf(&S, " (parameter %u is \"%s\")", I, P.type);
  }
  if (!Bad) {
    flrt_str_free(&S);
    return flrt_ok();
  }
  fatlink_rt_status St =
      flrt_fail(FATLINK_RT_ERROR_ARGUMENTS, "%s", flrt_str_get(&S));
  flrt_str_free(&S);
  return St;
}

/*===----------------------------- Launch --------------------------------===*/

static void addSizes(flrt_str *S, const struct fatlink_kernel *K) {
  for (uint32_t I = 0; I < K->num_params; ++I)
    flrt_str_addf(S, "%s%u", I ? ", " : "", K->param_sizes[I]);
}

static fatlink_rt_status checkArguments(const struct fatlink_kernel *K,
                                        void **Args, const size_t *Sizes,
                                        uint32_t NumArgs) {
  if (NumArgs && !Args)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_launch(%s): Args is NULL but NumArgs is %u",
                     K->name, NumArgs);
  flrt_str S;
  flrt_str_init(&S);
  if (NumArgs != K->num_params) {
    flrt_str_addf(&S, "kernel %s takes %u argument%s", K->name, K->num_params,
                  K->num_params == 1 ? "" : "s");
    if (K->num_params) {
      flrt_str_addf(&S, " (sizes in bytes: ");
      addSizes(&S, K);
      flrt_str_addf(&S, ")");
    }
    flrt_str_addf(&S, ", but the launch passes %u", NumArgs);
  } else {
    int Bad = 0;
    for (uint32_t I = 0; I < NumArgs; ++I) {
      if (!Args[I]) {
        flrt_str_addf(&S, "%sargument %u of kernel %s is a NULL pointer (Args[i] "
                          "must point to the value)",
                      Bad++ ? "; " : "", I, K->name);
        continue;
      }
      if (Sizes && Sizes[I] != K->param_sizes[I])
        flrt_str_addf(&S, "%sargument %u of kernel %s is %u bytes, but the "
                          "launch passes %zu",
                      Bad++ ? "; " : "", I, K->name, K->param_sizes[I],
                      Sizes[I]);
    }
    if (!Bad) {
      flrt_str_free(&S);
      return FATLINK_RT_SUCCESS;
    }
    flrt_str_addf(&S, " (parameter sizes: ");
    addSizes(&S, K);
    flrt_str_addf(&S, ")");
  }
  fatlink_rt_status St =
      flrt_fail(FATLINK_RT_ERROR_ARGUMENTS, "%s", flrt_str_get(&S));
  flrt_str_free(&S);
  return St;
}

/* A launch's dynamic shared memory beyond the 48 KB every kernel may have:
 * the driver wants it allowed first, per function
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, what
 * cudaFuncSetAttribute sets in CUDA C++), up to the device's opt-in limit
 * less the kernel's static shared memory. The runtime raises the allowance
 * itself, under a lock so that launches side by side only ever raise it,
 * and says what does not fit. */
enum { DefaultDynamicShared = 48 * 1024 };
static pthread_mutex_t DynamicSharedLock = PTHREAD_MUTEX_INITIALIZER;

static fatlink_rt_status allowDynamicShared(const flrt_driver_api *Api,
                                            const char *Name, CUfunction F,
                                            int Device, uint32_t Bytes) {
  int Allowed = 0, Static = 0, OptIn = 0;
  CUdevice Dev;
  CUresult R = Api->cuFuncGetAttribute(
      &Allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, F);
  if (R == CUDA_SUCCESS && (uint32_t)Allowed >= Bytes)
    return flrt_ok();
  if (R == CUDA_SUCCESS)
    R = Api->cuFuncGetAttribute(&Static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                F);
  if (R == CUDA_SUCCESS)
    R = Api->cuDeviceGet(&Dev, Device);
  if (R == CUDA_SUCCESS)
    R = Api->cuDeviceGetAttribute(
        &OptIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, Dev);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "cannot launch kernel %s on device %d: cannot read "
                          "its shared memory limits",
                          Name, Device);
  if ((uint64_t)Bytes + (uint64_t)Static > (uint64_t)OptIn)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "cannot launch kernel %s on device %d: %u bytes of "
                     "dynamic shared memory and its %d static exceed the %d "
                     "a block may have there (at most %d dynamic)",
                     Name, Device, Bytes, Static, OptIn,
                     OptIn > Static ? OptIn - Static : 0);
  pthread_mutex_lock(&DynamicSharedLock);
  R = Api->cuFuncGetAttribute(
      &Allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, F);
  if (R == CUDA_SUCCESS && (uint32_t)Allowed < Bytes)
    R = Api->cuFuncSetAttribute(
        F, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)Bytes);
  pthread_mutex_unlock(&DynamicSharedLock);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "cannot launch kernel %s on device %d: cannot allow "
                          "it %u bytes of dynamic shared memory",
                          Name, Device, Bytes);
  flrt_log("kernel %s on device %d: dynamic shared memory allowed up to %u "
           "bytes",
           Name, Device, Bytes);
  return flrt_ok();
}

/* A cooperative launch (grid.sync() in the kernel) needs every block of
 * the grid resident at once: the device must support it, and the grid may
 * have at most the kernel's occupancy per SM (at this block size and
 * dynamic shared memory) times the SMs. The driver says only
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE; this says the figures. */
static fatlink_rt_status checkCooperative(const flrt_driver_api *Api,
                                          const char *Name, CUfunction F,
                                          int Device, fatlink_rt_dim3 Grid,
                                          fatlink_rt_dim3 Block,
                                          uint32_t SharedMemBytes) {
  CUdevice Dev;
  int Supported = 0, Sms = 0, PerSm = 0;
  unsigned long long Threads = (unsigned long long)Block.x * Block.y * Block.z;
  CUresult R = Api->cuDeviceGet(&Dev, Device);
  if (R == CUDA_SUCCESS)
    R = Api->cuDeviceGetAttribute(&Supported,
                                  CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, Dev);
  if (R == CUDA_SUCCESS)
    R = Api->cuDeviceGetAttribute(
        &Sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, Dev);
  if (R == CUDA_SUCCESS && Supported && Threads <= 1024)
    R = Api->cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &PerSm, F, (int)Threads, SharedMemBytes);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "cannot launch kernel %s cooperatively on device "
                          "%d: cannot read its occupancy",
                          Name, Device);
  if (!Supported)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "cannot launch kernel %s cooperatively on device %d: "
                     "the device does not support cooperative launches",
                     Name, Device);
  unsigned long long Blocks = (unsigned long long)Grid.x * Grid.y * Grid.z;
  unsigned long long Resident = (unsigned long long)PerSm * (unsigned)Sms;
  if (Threads <= 1024 && Blocks > Resident)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "cannot launch kernel %s cooperatively on device %d: a "
                     "grid of %llu blocks exceeds the %llu that can be "
                     "resident at once (%d per SM x %d SMs, at %llu threads "
                     "and %u bytes of dynamic shared memory a block)",
                     Name, Device, Blocks, Resident, PerSm, Sms, Threads,
                     SharedMemBytes);
  return flrt_ok();
}

static fatlink_rt_status
launch(const char *Fn, fatlink_rt_kernel Kernel, fatlink_rt_dim3 Grid,
       fatlink_rt_dim3 Block, uint32_t SharedMemBytes, fatlink_rt_stream Stream,
       void **Args, const size_t *ArgSizes, uint32_t NumArgs, int Cooperative) {
  if (!Kernel)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "%s: the kernel is NULL (did fatlink_rt_get_kernel "
                     "fail?)",
                     Fn);
  flrt_module *M = Kernel->module;
  if (atomic_load(&M->unloaded))
    return flrt_module_function(M, Kernel->index, 0, NULL);
  const struct fatlink_kernel *K = &M->desc->kernels[Kernel->index];
  fatlink_rt_status S = checkArguments(K, Args, ArgSizes, NumArgs);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  if (!Grid.x || !Grid.y || !Grid.z || !Block.x || !Block.y || !Block.z)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "launch of kernel %s: grid %ux%ux%u and block %ux%ux%u "
                     "must have every dimension >= 1",
                     K->name, Grid.x, Grid.y, Grid.z, Block.x, Block.y,
                     Block.z);
  int Device = flrt_current_device();
  CUfunction F;
  S = flrt_module_function(M, Kernel->index, Device, &F);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  const flrt_driver_api *Api;
  flrt_driver(&Api);
  if (SharedMemBytes > DefaultDynamicShared &&
      (S = allowDynamicShared(Api, K->name, F, Device, SharedMemBytes)) !=
          FATLINK_RT_SUCCESS)
    return S;
  if (Cooperative &&
      (S = checkCooperative(Api, K->name, F, Device, Grid, Block,
                            SharedMemBytes)) != FATLINK_RT_SUCCESS)
    return S;
  CUresult R = Cooperative
                   ? Api->cuLaunchCooperativeKernel(
                         F, Grid.x, Grid.y, Grid.z, Block.x, Block.y, Block.z,
                         SharedMemBytes, (CUstream)Stream, Args)
                   : Api->cuLaunchKernel(F, Grid.x, Grid.y, Grid.z, Block.x,
                                         Block.y, Block.z, SharedMemBytes,
                                         (CUstream)Stream, Args, NULL);
  if (R != CUDA_SUCCESS) {
    int MaxThreads = 0;
    unsigned long long Threads =
        (unsigned long long)Block.x * Block.y * Block.z;
    if (R == CUDA_ERROR_INVALID_VALUE &&
        Api->cuFuncGetAttribute(&MaxThreads,
                                CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                F) == CUDA_SUCCESS &&
        Threads > (unsigned long long)MaxThreads)
      return flrt_cuda_fail(R,
                            "cannot launch kernel %s on device %d: a block of "
                            "%ux%ux%u = %llu threads exceeds its limit of %d",
                            K->name, Device, Block.x, Block.y, Block.z,
                            Threads, MaxThreads);
    return flrt_cuda_fail(R,
                          "cannot launch kernel %s%s on device %d (grid "
                          "%ux%ux%u, block %ux%ux%u, %u bytes of shared "
                          "memory)",
                          K->name, Cooperative ? " cooperatively" : "", Device,
                          Grid.x, Grid.y, Grid.z, Block.x, Block.y, Block.z,
                          SharedMemBytes);
  }
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_launch(fatlink_rt_kernel Kernel,
                                    fatlink_rt_dim3 Grid, fatlink_rt_dim3 Block,
                                    uint32_t SharedMemBytes,
                                    fatlink_rt_stream Stream, void **Args,
                                    const size_t *ArgSizes, uint32_t NumArgs) {
  return launch("fatlink_rt_launch", Kernel, Grid, Block, SharedMemBytes,
                Stream, Args, ArgSizes, NumArgs, 0);
}

fatlink_rt_status
fatlink_rt_launch_cooperative(fatlink_rt_kernel Kernel, fatlink_rt_dim3 Grid,
                              fatlink_rt_dim3 Block, uint32_t SharedMemBytes,
                              fatlink_rt_stream Stream, void **Args,
                              const size_t *ArgSizes, uint32_t NumArgs) {
  return launch("fatlink_rt_launch_cooperative", Kernel, Grid, Block,
                SharedMemBytes, Stream, Args, ArgSizes, NumArgs, 1);
}

fatlink_rt_status fatlink_rt_synchronize(void) {
  int Device = flrt_current_device();
  fatlink_rt_status S = flrt_driver_enter(Device, NULL, NULL);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  const flrt_driver_api *Api;
  flrt_driver(&Api);
  CUresult R = Api->cuCtxSynchronize();
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "work on device %d failed (a kernel launched "
                          "earlier faulted or timed out)",
                          Device);
  return flrt_ok();
}

/*===----------------------------- Memory --------------------------------===*/

static fatlink_rt_status enter(const flrt_driver_api **Api, int *Device) {
  *Device = flrt_current_device();
  fatlink_rt_status S = flrt_driver_enter(*Device, NULL, NULL);
  if (S == FATLINK_RT_SUCCESS)
    flrt_driver(Api);
  return S;
}

fatlink_rt_status fatlink_rt_malloc(fatlink_rt_devptr *Ptr, size_t Bytes) {
  if (!Ptr)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_malloc: Ptr is NULL");
  *Ptr = 0;
  if (Bytes == 0)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_malloc: cannot allocate 0 bytes");
  const flrt_driver_api *Api;
  int Device;
  fatlink_rt_status S = enter(&Api, &Device);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  CUdeviceptr P = 0;
  CUresult R = Api->cuMemAlloc(&P, Bytes);
  if (R != CUDA_SUCCESS) {
    size_t Free = 0, Total = 0;
    if (R == CUDA_ERROR_OUT_OF_MEMORY &&
        Api->cuMemGetInfo(&Free, &Total) == CUDA_SUCCESS)
      return flrt_cuda_fail(R,
                            "cannot allocate %zu bytes on device %d (%zu of "
                            "%zu bytes free)",
                            Bytes, Device, Free, Total);
    return flrt_cuda_fail(R, "cannot allocate %zu bytes on device %d", Bytes,
                          Device);
  }
  *Ptr = P;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_free(fatlink_rt_devptr Ptr) {
  if (!Ptr)
    return flrt_ok();
  const flrt_driver_api *Api;
  int Device;
  fatlink_rt_status S = enter(&Api, &Device);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  CUresult R = Api->cuMemFree(Ptr);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot free device memory 0x%llx on device %d",
                          (unsigned long long)Ptr, Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_memset(fatlink_rt_devptr Dst,
                                    unsigned char Value, size_t Bytes) {
  if (Bytes == 0)
    return flrt_ok();
  if (!Dst)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_memset: the device pointer is 0");
  const flrt_driver_api *Api;
  int Device;
  fatlink_rt_status S = enter(&Api, &Device);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  CUresult R = Api->cuMemsetD8(Dst, Value, Bytes);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot set %zu bytes at 0x%llx on device %d",
                          Bytes, (unsigned long long)Dst, Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_memcpy_htod(fatlink_rt_devptr Dst,
                                         const void *Src, size_t Bytes) {
  if (Bytes == 0)
    return flrt_ok();
  if (!Dst || !Src)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_memcpy_htod: %s pointer is NULL",
                     Dst ? "the host" : "the device");
  const flrt_driver_api *Api;
  int Device;
  fatlink_rt_status S = enter(&Api, &Device);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  CUresult R = Api->cuMemcpyHtoD(Dst, Src, Bytes);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot copy %zu bytes to device %d at 0x%llx",
                          Bytes, Device, (unsigned long long)Dst);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_memcpy_dtoh(void *Dst, fatlink_rt_devptr Src,
                                         size_t Bytes) {
  if (Bytes == 0)
    return flrt_ok();
  if (!Dst || !Src)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_memcpy_dtoh: %s pointer is NULL",
                     Src ? "the host" : "the device");
  const flrt_driver_api *Api;
  int Device;
  fatlink_rt_status S = enter(&Api, &Device);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  CUresult R = Api->cuMemcpyDtoH(Dst, Src, Bytes);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "cannot copy %zu bytes from device %d at 0x%llx "
                          "(errors of earlier kernel launches show up here)",
                          Bytes, Device, (unsigned long long)Src);
  return flrt_ok();
}
