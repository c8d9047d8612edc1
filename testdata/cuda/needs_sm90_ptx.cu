// needs_sm90_ptx.cu: inline PTX that only sm_90 and newer accept
// (`fence.proxy.async`, Hopper's async-proxy fence), written without an
// `#if __CUDA_ARCH__ >= 900` guard: the same PTX for every arch, which
// ptxas rejects for the older ones. The tests link it for sm_75..sm_100.
extern "C" __global__ void publish(float *v, float x) {
  v[threadIdx.x] = x;
  asm volatile("fence.proxy.async;" ::: "memory");
}
