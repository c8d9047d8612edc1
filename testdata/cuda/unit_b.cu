// unit_b.cu: the other translation unit of tests/e2e/offload_units_test.sh.
extern "C" __global__ void unit_b_kernel(float *v) {
  v[threadIdx.x] = expf(v[threadIdx.x]);
}
