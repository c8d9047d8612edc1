// Kernels whose resources differ in every column `fatlink inspect
// --resources` reports, for tests/gpu/res_check.cpp, which compares the
// table with what the CUDA driver reports for the loaded cubin
// (cuFuncGetAttribute). Built by fatlink (clang bitcode) and by nvcc, at -O3
// and -G.

// Static shared memory and a declared block size.
__global__ void __launch_bounds__(256) res_shared(float *p, int n) {
  __shared__ float tile[256];
  tile[threadIdx.x] = p[threadIdx.x * n];
  __syncthreads();
  p[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
}

// A local array indexed at run time: a stack frame.
__global__ void res_local(float *p, int n) {
  float loc[64];
  for (int i = 0; i < 64; ++i)
    loc[i] = p[i * n + threadIdx.x];
  p[threadIdx.x] = loc[(n + threadIdx.x) % 64] + loc[n % 64];
}

// 64 live floats under __launch_bounds__(1024, 2), which leaves 32
// registers a thread: ptxas spills.
__global__ void __launch_bounds__(1024, 2) res_spill(float *p, int n) {
  float v[64];
#pragma unroll
  for (int i = 0; i < 64; ++i)
    v[i] = p[i * n + threadIdx.x];
  float s = 0;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int i = 0; i < 64; ++i)
      s += v[i] * v[(i * 7 + r) % 64];
  p[threadIdx.x] = s;
}

// Recursion: a stack ptxas cannot bound.
__device__ int res_fib(int n) { return n < 2 ? n : res_fib(n - 1) + res_fib(n - 2); }
__global__ void res_recursive(int *p, int n) { p[threadIdx.x] = res_fib(n); }

// User constant memory.
__constant__ float res_coeffs[512];
__global__ void res_constant(float *p) {
  p[threadIdx.x] = res_coeffs[threadIdx.x % 512] * 2.0f;
}

// Nothing of note.
__global__ void res_plain(float *p) { p[threadIdx.x] += 1.0f; }
