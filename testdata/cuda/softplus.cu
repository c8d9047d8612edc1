// softplus.cu: CUDA C++ device code called from Rust (`cuda_softplus`) and a
// CUDA kernel of its own. `never_called` must not survive the device link.
#include <cuda_runtime.h>

extern "C" __device__ float cuda_softplus(float x) {
  return logf(1.0f + expf(x));
}

extern "C" __device__ float never_called(float x) { return sinf(x) * cosf(x); }

__device__ float scale_factor = 0.5f;

extern "C" __global__ void cuda_scale(float *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    v[i] = cuda_softplus(v[i]) * scale_factor;
}
