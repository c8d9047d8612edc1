/* Links with a fatlink host object and walks its module descriptors the way
 * a runtime does: every record between __start_/__stop_fatlink_modules must
 * point (directly and through the __fatBinC_Wrapper_t) at a fatbin whose
 * header gives the recorded size, and its kernel table must list the
 * kernels the test wrote. Prints what it found; exits non-zero on a
 * mismatch. */
#include "packager/Descriptor.h"

#include <stdio.h>
#include <string.h>

extern const struct fatlink_module __start_fatlink_modules[];
extern const struct fatlink_module __stop_fatlink_modules[];

int main(void) {
  int Count = 0;
  for (const struct fatlink_module *M = __start_fatlink_modules;
       M != __stop_fatlink_modules; ++M, ++Count) {
    if (M->magic != FATLINK_MODULE_MAGIC || M->version != 1 ||
        M->size != sizeof(*M))
      return printf("bad module record %d\n", Count), 1;
    if (M->wrapper->magic != FATLINK_FATBINC_MAGIC ||
        M->wrapper->version != 1 || M->wrapper->filename_or_fatbins)
      return printf("bad wrapper\n"), 1;
    if (M->wrapper->data != M->fatbin)
      return printf("wrapper and descriptor disagree\n"), 1;
    const unsigned char *F = (const unsigned char *)M->fatbin;
    uint32_t Magic;
    uint64_t Size;
    memcpy(&Magic, F, 4);
    memcpy(&Size, F + 8, 8);
    if (Magic != FATLINK_FATBIN_MAGIC || Size + 16 != M->fatbin_size)
      return printf("bad fatbin\n"), 1;
    printf("module %d: fatbin %llu bytes, %u kernels\n", Count,
           (unsigned long long)M->fatbin_size, M->num_kernels);
    for (uint32_t I = 0; I < M->num_kernels; ++I) {
      const struct fatlink_kernel *K = &M->kernels[I];
      printf("  %s(", K->name);
      for (uint32_t P = 0; P < K->num_params; ++P)
        printf("%s%u", P ? "," : "", K->param_sizes[P]);
      printf(")\n");
    }
  }
  printf("%d modules\n", Count);
  return 0;
}
