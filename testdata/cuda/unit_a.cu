// unit_a.cu: one translation unit of test/device-link/offload-units-*.test,
// compiled for other arches than unit_b.cu and merged with it by `ld -r`.
extern "C" __device__ float unit_a_twice(float x) { return 2.0f * x; }

extern "C" __global__ void unit_a_kernel(float *v) {
  v[threadIdx.x] = unit_a_twice(v[threadIdx.x]);
}
