/* main.c: the host side of the bundled example. It walks the module
 * descriptors that fatlink's host object places in the `fatlink_modules`
 * section and prints what the binary carries: every GPU target in the
 * embedded fatbin and every kernel with its parameter sizes. (Launching the
 * kernels is the runtime's job, see docs/runtime.md.) */
#include "packager/Descriptor.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern const struct fatlink_module __start_fatlink_modules[];
extern const struct fatlink_module __stop_fatlink_modules[];

/* Reads a little-endian field of the fatbin container. */
static uint64_t read_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

int main(void) {
  for (const struct fatlink_module *m = __start_fatlink_modules;
       m < __stop_fatlink_modules; ++m) {
    const unsigned char *fb = (const unsigned char *)m->fatbin;
    printf("module: %llu-byte fatbin\n", (unsigned long long)m->fatbin_size);
    /* Container: 16-byte header, then entries (kind u16, ..., header size
     * u32 at 4, payload size u64 at 8, sm u32 at 28). */
    uint64_t off = 16, end = 16 + read_le(fb + 8, 8);
    while (off < end) {
      unsigned kind = (unsigned)read_le(fb + off, 2);
      uint64_t hdr = read_le(fb + off + 4, 4), size = read_le(fb + off + 8, 8);
      unsigned sm = (unsigned)read_le(fb + off + 28, 4);
      printf("  %s for sm_%u\n", kind == 2 ? "cubin" : "PTX  ", sm);
      off += hdr + size;
    }
    for (uint32_t k = 0; k < m->num_kernels; ++k) {
      printf("  kernel %s(", m->kernels[k].name);
      for (uint32_t p = 0; p < m->kernels[k].num_params; ++p)
        printf("%s%u", p ? ", " : "", m->kernels[k].param_sizes[p]);
      printf(")\n");
    }
  }
  return 0;
}
