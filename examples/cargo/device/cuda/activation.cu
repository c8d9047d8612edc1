// activation.cu: CUDA C++ device code called from Rust (gpu_kernels).
#include <cuda_runtime.h>

// The tanh approximation of GELU.
extern "C" __device__ float cuda_gelu(float x) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
