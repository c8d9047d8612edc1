// unit_b.cu: the other translation unit of test/device-link/offload-units-*.test.
extern "C" __global__ void unit_b_kernel(float *v) {
  v[threadIdx.x] = expf(v[threadIdx.x]);
}
