// arch_variant.cu: a kernel whose code depends on __CUDA_ARCH__, so that
// clang's per-arch images of it differ and each target must link the image
// that fits it (fatlink merges per-arch images only when they are the same
// program).
extern "C" __global__ void arch_variant(int *out) {
#if __CUDA_ARCH__ >= 900
  out[0] = 900;
#else
  out[0] = 750;
#endif
}
