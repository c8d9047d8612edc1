// nv_ops.cu: CUDA C++ compiled by nvcc as relocatable device code
// (fatlink-build's nvcc mode), linked by fatlink-cc with the Rust crate
// `kernels` in both directions.

// Defined in Rust (device/kernels).
extern "C" __device__ float rust_cube(float x);

// Called from the Rust kernel rust_affine.
extern "C" __device__ float nv_affine(float a, float x, float b) {
  return a * x + b;
}

// p[i] = rust_cube(p[i]) for i < n.
extern "C" __global__ void nv_cube_all(float *p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = rust_cube(p[i]);
}
