// A kernel whose whole body is for sm_80 and newer (cp.async-era code, say),
// compiled for sm_75 only: the sm_75 bitcode holds an empty kernel, and a
// link for sm_80 from that bitcode would get the empty kernel too. fatlink
// warns, naming the input, the kernel and the targets.
extern "C" __global__ void ampere_only(float *p) {
#if __CUDA_ARCH__ >= 800
  p[threadIdx.x] = __fsqrt_rn(p[threadIdx.x]);
#endif
}
