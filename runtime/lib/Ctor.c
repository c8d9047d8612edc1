/*===- runtime/lib/Ctor.c - Registration at program and library start -----===*\
 *
 * One copy of this constructor runs in every executable or shared library
 * that links libfatlink_rt.a. It sees only its own component's sections:
 * the __start_/__stop_ symbols are declared hidden, so a shared library's
 * reference can never bind to the executable's section. It hands the
 * modules to the (exported, so shared) registry, then registers them with
 * the CUDA runtime if this component holds clang's offload entries.
 *
 * Priority 101, like the registration code clang-linker-wrapper generates,
 * so kernels are registered before ordinary static constructors run.
\*===----------------------------------------------------------------------===*/

#include "Internal.h"

extern const struct fatlink_module __start_fatlink_modules[]
    __attribute__((weak, visibility("hidden")));
extern const struct fatlink_module __stop_fatlink_modules[]
    __attribute__((weak, visibility("hidden")));

/* Referenced by Registry.c, so that linking the registry links this file. */
int flrt_ctor_anchor;

__attribute__((constructor(101))) static void flrt_register(void) {
  const struct fatlink_module *Begin = __start_fatlink_modules;
  const struct fatlink_module *End = __stop_fatlink_modules;
  if (!Begin || !End || End <= Begin)
    flrt_log("no fatlink module in this component");
  else
    fatlink_rt_register_modules_v1(Begin, End);
  flrt_cudart_register(Begin, End);
}

__attribute__((destructor(101))) static void flrt_unregister(void) {
  if (__start_fatlink_modules && __stop_fatlink_modules)
    fatlink_rt_unregister_modules_v1(__start_fatlink_modules,
                                     __stop_fatlink_modules);
}
