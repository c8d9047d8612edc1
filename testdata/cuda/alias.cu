// alias.cu: a device function reached through an alias. The summaries a
// partition-first link plans on do not model aliases (nothing else in CUDA or
// Rust device code makes one), so a program with this unit is linked whole
// (test/device-link/partition-first.test).
extern "C" __device__ float alias_impl(float x) { return 3.0f * x; }
extern "C" __device__ float alias_thrice(float) __attribute__((alias("alias_impl")));

extern "C" __global__ void alias_kernel(float *v) {
  v[threadIdx.x] = alias_thrice(v[threadIdx.x]);
}
