// typed_kernels.cu: CUDA C++ kernels for tests/gpu/rust_typed.rs, launched
// through fatlink-rt's typed handles. Their C++ (mangled) names give the
// kernel manifest each parameter's type, pointee and const-ness.

// y[i] = a * x[i] + y[i] for i < n
__global__ void typed_axpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// out[i] = start + i * step for i < n
__global__ void typed_iota(long long *out, long long start, int step,
                           unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = start + (long long)i * step;
}
