/*===- runtime/lib/CudaRuntime.c - Registration with the CUDA runtime -----===*\
 *
 * clang's new offload driver (`--offload-new-driver -fgpu-rdc`) leaves
 * kernel launches `kernel<<<...>>>` as calls through host stubs, and
 * records each kernel and device global in a 56-byte entry in section
 * `llvm_offload_entries`:
 *
 *   u64 reserved 0 | u16 version 1 | u16 kind (2 = CUDA) | u32 flags
 *   ptr address (host stub / host shadow of the global) | ptr name
 *   u64 size (0 = kernel) | u64 data | ptr aux
 *   flags & 7: 0 global, 1 managed, 2 surface, 3 texture;
 *   0x8 extern, 0x10 constant (llvm/Frontend/Offloading/Utility.h)
 *
 * Normally clang-linker-wrapper generates a constructor that registers the
 * fatbin and walks those entries. A program linked with a plain host link
 * and fatlink's kernels.o gets the same from here, as LLVM's
 * OffloadWrapper.cpp does it: __cudaRegisterFatBinary(&wrapper),
 * __cudaRegisterFunction per kernel, __cudaRegisterVar per global,
 * __cudaRegisterFatBinaryEnd, and __cudaUnregisterFatBinary from atexit
 * (CUDA >= 9.2 forbids unregistering from a plain destructor).
 *
 * The __cuda* functions are referenced weakly: a program without the CUDA
 * runtime links and runs, and this file then does nothing.
 *
 * The descriptor lists kernels but not globals, so a global is registered
 * with the component's first module (with one module, as fatlink
 * device-link writes, that is exact).
 *
 * A component that `fatlink cc` linked with nvcc -rdc host code also holds
 * the registration code fatlink cc generated for nvcc's modules
 * (hostlink/NvccRegistration.cpp), which registers the fatbin of that
 * link. A fatbin registered twice would have two copies of its device
 * globals, so this file registers that module through the generated code
 * instead (FATLINK_CUDART_JOIN, packager/Descriptor.h): all of this
 * component's registration then runs once nvcc's modules have all called
 * in, from the last of their constructors, with the one handle.
\*===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* dladdr */
#include "Internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct OffloadEntry {
  uint64_t Reserved;
  uint16_t Version;
  uint16_t Kind;
  uint32_t Flags;
  void *Address;
  const char *Name;
  uint64_t Size;
  uint64_t Data;
  void *Aux;
};
_Static_assert(sizeof(struct OffloadEntry) == 56, "llvm offload entry layout");

enum {
  OffloadKindCuda = 2,
  EntryTypeMask = 0x7,
  EntryGlobal = 0,
  EntryManaged = 1,
  EntrySurface = 2,
  EntryTexture = 3,
  EntryExtern = 0x8,
  EntryConstant = 0x10,
};

extern const struct OffloadEntry __start_llvm_offload_entries[]
    __attribute__((weak, visibility("hidden")));
extern const struct OffloadEntry __stop_llvm_offload_entries[]
    __attribute__((weak, visibility("hidden")));

typedef struct {
  unsigned x, y, z;
} flrt_uint3;

extern void **__cudaRegisterFatBinary(void *) __attribute__((weak));
extern void __cudaRegisterFatBinaryEnd(void **) __attribute__((weak));
extern void __cudaUnregisterFatBinary(void **) __attribute__((weak));
extern void __cudaRegisterFunction(void **, const char *, char *, const char *,
                                   int, flrt_uint3 *, flrt_uint3 *,
                                   flrt_uint3 *, flrt_uint3 *, int *)
    __attribute__((weak));
extern void __cudaRegisterVar(void **, char *, char *, const char *, int,
                              size_t, int, int) __attribute__((weak));

/* Defined (hidden) by fatlink cc's nvcc registration code when this
 * component has one. The reference is weak but not hidden: a hidden weak
 * reference is addressed PC-relative, and in a PIE without the definition
 * GNU ld resolved it to the image base instead of null (cudart_test
 * crashed calling it). The definition is hidden, so the reference still
 * finds this component's or none. */
extern int FATLINK_CUDART_JOIN(const struct fatlink_fatbin_wrapper *Wrapper,
                               void (*Callback)(void **Handle))
    __attribute__((weak));

/* This component's handles, unregistered at exit; grown as modules come
 * (a program may link any number of fatlink objects). */
static void ***Handles;
static int NumHandles, CapHandles;

/* The module that nvcc's registration registers, its handle once given,
 * and this component's modules, kept until then. */
static const struct fatlink_fatbin_wrapper *SharedWrapper;
static void **SharedHandle;
static const struct fatlink_module *JoinBegin, *JoinEnd;

static void unregisterAll(void) {
  for (int I = NumHandles - 1; I >= 0; --I)
    if (Handles[I] && Handles[I] != SharedHandle && __cudaUnregisterFatBinary)
      __cudaUnregisterFatBinary(Handles[I]);
  NumHandles = 0;
}

/* The host stub's symbol if the dynamic symbol table has it, else
 * "file+0xOFFSET" (the offset is what `nm` shows for a PIE or a shared
 * library). */
static const char *symbolName(const void *Addr, char *Buf, size_t Size) {
  Dl_info Info;
  if (!dladdr(Addr, &Info))
    return "?";
  if (Info.dli_sname && Info.dli_saddr == Addr)
    return Info.dli_sname;
  const char *File = Info.dli_fname ? strrchr(Info.dli_fname, '/') : NULL;
  snprintf(Buf, Size, "%s+0x%lx",
           File ? File + 1 : (Info.dli_fname ? Info.dli_fname : "?"),
           (unsigned long)((uintptr_t)Addr - (uintptr_t)Info.dli_fbase));
  return Buf;
}

/* The number of clang's CUDA entries in this component's
 * llvm_offload_entries section. */
static size_t countCudaEntries(void) {
  const struct OffloadEntry *EB = __start_llvm_offload_entries;
  const struct OffloadEntry *EE = __stop_llvm_offload_entries;
  size_t N = 0;
  for (const struct OffloadEntry *E = EB; EB && EE && E < EE; ++E)
    if (E->Reserved == 0 && E->Version == 1 && E->Kind == OffloadKindCuda)
      ++N;
  return N;
}

static void registerModules(const struct fatlink_module *Begin,
                            const struct fatlink_module *End);

/* nvcc's registration calls this with its handle for SharedWrapper. */
static void joined(void **Handle) {
  SharedHandle = Handle;
  registerModules(JoinBegin, JoinEnd);
}

void flrt_cudart_register(const struct fatlink_module *Begin,
                          const struct fatlink_module *End) {
  const struct OffloadEntry *EB = __start_llvm_offload_entries;
  size_t NumEntries = countCudaEntries();
  if (NumEntries == 0)
    return;
  if (!__cudaRegisterFatBinary || !__cudaRegisterFunction) {
    flrt_warn("this program has %zu CUDA kernel/global entries (first: %s) "
              "but does not link the CUDA runtime's registration functions; "
              "link with -lcudart (with -lcudart_static also pass "
              "-Wl,-u,__cudaRegisterFatBinary)",
              NumEntries, EB->Name ? EB->Name : "?");
    return;
  }
  /* One of the modules is registered by nvcc's registration: hand it the
   * whole of this component's, to run with its handle. */
  if (FATLINK_CUDART_JOIN && Begin && End) {
    const char *Pos = (const char *)Begin, *Stop = (const char *)End;
    const struct fatlink_module *D;
    JoinBegin = Begin;
    JoinEnd = End;
    while ((D = flrt_next_descriptor(&Pos, Stop))) {
      if (!D->wrapper || D->wrapper->magic != FATLINK_FATBINC_MAGIC)
        continue;
      SharedWrapper = D->wrapper;
      if (FATLINK_CUDART_JOIN(D->wrapper, joined)) {
        flrt_log("CUDA runtime: the fatbin of this component's fatlink cc "
                 "link is registered with nvcc's modules, once they have "
                 "all called in");
        return;
      }
    }
    SharedWrapper = NULL;
  }
  registerModules(Begin, End);
}

/* Registers the fatbins and clang's entries; SharedWrapper's handle is
 * SharedHandle, given, not registered here. */
static void registerModules(const struct fatlink_module *Begin,
                            const struct fatlink_module *End) {
  const struct OffloadEntry *EB = __start_llvm_offload_entries;
  const struct OffloadEntry *EE = __stop_llvm_offload_entries;
  size_t NumEntries = countCudaEntries();

  /* This component's modules: as many as its fatlink_modules section
   * holds. Out of memory, no module is registered, with a word. */
  const struct fatlink_module **Mods = NULL;
  int NumMods = 0, CapMods = 0;
  const char *Pos = (const char *)Begin, *Stop = (const char *)End;
  const struct fatlink_module *D;
  while (Begin && End && (D = flrt_next_descriptor(&Pos, Stop))) {
    if (!D->wrapper || D->wrapper->magic != FATLINK_FATBINC_MAGIC)
      continue;
    if (NumMods == CapMods) {
      int NewCap = CapMods ? 2 * CapMods : 16;
      const struct fatlink_module **New =
          realloc((void *)Mods, (size_t)NewCap * sizeof(*New));
      if (!New) {
        free((void *)Mods);
        flrt_warn("out of memory registering %d fatlink modules with the "
                  "CUDA runtime; none is registered",
                  NumMods + 1);
        return;
      }
      Mods = New;
      CapMods = NewCap;
    }
    Mods[NumMods++] = D;
  }
  if (NumHandles + NumMods > CapHandles) {
    int NewCap = CapHandles ? CapHandles : 16;
    while (NewCap < NumHandles + NumMods)
      NewCap *= 2;
    void ***New = realloc(Handles, (size_t)NewCap * sizeof(*New));
    if (!New) {
      free((void *)Mods);
      flrt_warn("out of memory registering %d fatlink modules with the CUDA "
                "runtime; none is registered",
                NumMods);
      return;
    }
    Handles = New;
    CapHandles = NewCap;
  }
  if (NumMods == 0) {
    flrt_warn("this program has %zu CUDA kernel/global entries (first: %s) "
              "but no fatlink device code: device-link the objects with "
              "`fatlink device-link --arch=... <objects> -o kernels.o` and "
              "link kernels.o into the program",
              NumEntries, EB->Name ? EB->Name : "?");
    free((void *)Mods);
    return;
  }

  int Base = NumHandles;
  for (int I = 0; I < NumMods; ++I)
    Handles[NumHandles++] =
        SharedHandle && Mods[I]->wrapper == SharedWrapper
            ? SharedHandle
            : __cudaRegisterFatBinary((void *)(uintptr_t)Mods[I]->wrapper);
  int Log = flrt_log_level() == 1;
  flrt_str S;
  flrt_str_init(&S);
  size_t Kernels = 0, Vars = 0;
  char Sym[512];
  for (const struct OffloadEntry *E = EB; E < EE; ++E) {
    if (E->Reserved != 0 || E->Version != 1 || E->Kind != OffloadKindCuda ||
        !E->Name)
      continue;
    if (E->Size == 0) {
      int Mod = -1;
      for (int I = 0; I < NumMods && Mod < 0; ++I)
        if (flrt_find_kernel(Mods[I], E->Name) >= 0)
          Mod = I;
      if (Mod < 0) {
        flrt_warn("kernel %s has a host stub (%s) but no device code in this "
                  "program's fatlink modules; its launches will fail with "
                  "cudaErrorInvalidDeviceFunction: pass the object that "
                  "defines it to `fatlink device-link`",
                  E->Name, symbolName(E->Address, Sym, sizeof(Sym)));
        continue;
      }
      __cudaRegisterFunction(Handles[Base + Mod], (const char *)E->Address,
                             (char *)E->Name, E->Name, -1, NULL, NULL, NULL,
                             NULL, NULL);
      if (Log)
        flrt_str_addf(&S, "%skernel %s (host stub %s)",
                      Kernels + Vars ? ", " : "", E->Name,
                      symbolName(E->Address, Sym, sizeof(Sym)));
      ++Kernels;
      continue;
    }
    switch (E->Flags & EntryTypeMask) {
    case EntryGlobal:
      if (!__cudaRegisterVar)
        break;
      __cudaRegisterVar(Handles[Base], (char *)E->Address, (char *)E->Name,
                        E->Name, (E->Flags & EntryExtern) ? 1 : 0,
                        (size_t)E->Size, (E->Flags & EntryConstant) ? 1 : 0, 0);
      if (Log)
        flrt_str_addf(&S, "%s%s %s (%llu bytes)", Kernels + Vars ? ", " : "",
                      (E->Flags & EntryConstant) ? "constant" : "variable",
                      E->Name, (unsigned long long)E->Size);
      ++Vars;
      break;
    default:
      flrt_warn("%s is a %s variable: fatlink's runtime does not register "
                "those with the CUDA runtime yet",
                E->Name,
                (E->Flags & EntryTypeMask) == EntryManaged ? "__managed__"
                : (E->Flags & EntryTypeMask) == EntrySurface ? "surface"
                                                             : "texture");
      break;
    }
  }
  /* The shared handle's end is nvcc's registration's, after its own
   * callbacks. */
  int Shared = 0;
  for (int I = Base; I < NumHandles; ++I)
    if (Handles[I] == SharedHandle)
      ++Shared;
    else if (__cudaRegisterFatBinaryEnd)
      __cudaRegisterFatBinaryEnd(Handles[I]);
  free((void *)Mods);
  if (Base == 0)
    atexit(unregisterAll);
  flrt_log("CUDA runtime: registered %d fatbin%s%s, %zu kernel%s and %zu "
           "variable%s: %s",
           NumHandles - Base, NumHandles - Base == 1 ? "" : "s",
           Shared ? " (1 with nvcc's modules, one handle)" : "", Kernels,
           Kernels == 1 ? "" : "s", Vars, Vars == 1 ? "" : "s",
           flrt_str_get(&S));
  flrt_str_free(&S);
}
