// Inline PTX that needs a newer PTX ISA than the oldest target's minimum,
// as CCCL writes it: `bmsk` exists from sm_70 but needs PTX ISA 7.6, while
// sm_75 alone would get 6.3. The bitcode says which ISA it was compiled for
// (clang: the CUDA version's, +ptx88 for CUDA 12.9+); every target must be
// generated for at least that, or ptxas rejects the instruction.
extern "C" __global__ void low_bits_mask(const unsigned *width, unsigned *out) {
  unsigned i = threadIdx.x, mask;
#if __CUDA_ARCH__ >= 700
  asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(mask) : "r"(0u), "r"(width[i]));
#else
  mask = width[i] >= 32 ? ~0u : (1u << width[i]) - 1;
#endif
  out[i] = mask;
}
