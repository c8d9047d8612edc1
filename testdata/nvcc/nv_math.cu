// Device code compiled by nvcc as relocatable device code (-dc) or as
// LTO-IR (-dc -gencode ...,code=lto_XX), linked by fatlink with Rust device
// code (testdata/rust/nvcc_calls.rs) in both directions:
//   - the Rust kernel `rust_scale_all` calls nv_scale, defined here;
//   - the kernel nv_square_all, defined here, calls the Rust device function
//     rust_square;
//   - both use the device global nv_calls, defined here.
extern "C" __device__ float rust_square(float x);

extern "C" __device__ unsigned nv_calls;
__device__ unsigned nv_calls;

extern "C" __device__ float nv_scale(float x) { return 3.0f * x + 1.0f; }

extern "C" __global__ void nv_square_all(float *p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = rust_square(p[i]);
  if (i == 0)
    atomicAdd(&nv_calls, 1u);
}
