// nv_ops.cu: CUDA C++ compiled by nvcc through the cc crate (app/build.rs)
// as relocatable device code; fatlink-cc links it with the Rust crate
// `kernels`. Calls go one way, Rust into nvcc code: the cc crate runs
// `nvcc --device-link` over its archive, which fails on a call into Rust
// device code (docs/cargo.md, "CUDA C++ compiled by nvcc").
#include <cuda_runtime.h>

// Called from the Rust kernel rust_affine.
extern "C" __device__ float nv_affine(float a, float x, float b) {
  return a * x + b;
}

// p[i] = p[i] * p[i] for i < n.
extern "C" __global__ void nv_square_all(float *p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = p[i] * p[i];
}

// Squares x[0..n) on the GPU with nv_square_all, launched with <<<>>>
// through the CUDA runtime. Returns the first CUDA error (0: success).
extern "C" int nv_square(float *x, unsigned n) {
  float *d = nullptr;
  size_t bytes = n * sizeof(float);
  cudaError_t err = cudaMalloc(&d, bytes);
  if (err != cudaSuccess)
    return err;
  err = cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) {
    nv_square_all<<<(n + 255) / 256, 256>>>(d, n);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess)
    err = cudaMemcpy(x, d, bytes, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return err;
}
