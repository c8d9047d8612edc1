// Dynamic parallelism in nvcc code (relocatable device code, -rdc=true /
// -dc, required for device-side launches), linked by fatlink with Rust
// device code (testdata/rust/nvcc_calls.rs) and CUDA's device runtime,
// libcudadevrt.a: the kernel nv_cdp_parent launches nv_cdp_child from the
// device (cudaGetParameterBuffer and cudaLaunchDevice, which
// libcudadevrt.a defines), and nv_cdp_child calls the Rust device function
// rust_square.
extern "C" __device__ float rust_square(float x);

extern "C" __global__ void nv_cdp_child(float *p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = rust_square(p[i]);
}

// One thread launches a grid that squares p[0..n).
extern "C" __global__ void nv_cdp_parent(float *p, unsigned n) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    nv_cdp_child<<<(n + 255) / 256, 256>>>(p, n);
}
