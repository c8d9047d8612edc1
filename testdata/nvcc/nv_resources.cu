// Kernels whose resources differ (registers, static shared memory, a
// stack frame at -G, declared launch bounds), for `fatlink inspect
// --resources` against cuobjdump -res-usage (test/inspect/resources.test).
__global__ void __launch_bounds__(256) k_shared(float *p, int n) {
  __shared__ float tile[128];
  float loc[64];
  for (int i = 0; i < 64; ++i) loc[i] = p[i * n];
  tile[threadIdx.x % 128] = loc[n % 64];
  __syncthreads();
  p[threadIdx.x] = tile[(threadIdx.x + 1) % 128];
}
__global__ void k_plain(float *p) { p[threadIdx.x] += 1.0f; }
