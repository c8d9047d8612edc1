// relu.cu: a CUDA C++ kernel of the Bazel example, using a helper from a
// cc_library header (activation.cuh).
#include "examples/bazel/activation.cuh"

extern "C" __global__ void cuda_relu(float *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    v[i] = relu(v[i]);
}
