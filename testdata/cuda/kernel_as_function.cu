// Calls `cuda_scale`, a kernel of softplus.cu, as if it were a __device__
// function (an extern "C" declaration cannot say otherwise). nvcc and clang
// compile each file alone; only the device link sees both, and the call
// would compile to nothing (`exit;`). fatlink refuses it, naming both files.
extern "C" __device__ void cuda_scale(float *v, int n);

extern "C" __global__ void calls_a_kernel(float *x, int n) {
  cuda_scale(x, n);
}
