// slice_kernels.cu: four kernels that share nothing but slice_helpers.cu's
// helpers, so that a partition-first link of --partitions=4 puts them in
// several partitions, each taking the helpers
// (test/device-link/partition-slices.test).
#include "slice_common.cuh"

extern "C" __global__ void slice_add(float *v) {
  v[threadIdx.x] += slice_leaf(v[threadIdx.x]);
}

extern "C" __global__ void slice_mul(float *v) {
  v[threadIdx.x] *= slice_leaf(v[threadIdx.x]) + slice_twice(v[0]);
}

extern "C" __global__ void slice_sub(float *v) {
  v[threadIdx.x] -= slice_twice(v[threadIdx.x]);
}

extern "C" __global__ void slice_neg(float *v) {
  v[threadIdx.x] = -slice_leaf(v[threadIdx.x + 1]);
}
