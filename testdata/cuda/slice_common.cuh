// slice_common.cuh: what slice_helpers.cu and slice_kernels.cu share
// (test/device-link/partition-slices.test): the helper the kernels call,
// and an inline function both define (linkonce_odr in each; not inlined,
// so that each partition links it).
extern "C" __device__ float slice_leaf(float x);

inline __device__ __noinline__ float slice_twice(float x) {
  return 2.0f * x + 1.0f;
}
