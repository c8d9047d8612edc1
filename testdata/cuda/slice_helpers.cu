// slice_helpers.cu: device functions and no kernel. Linked first, it
// defines the prevailing slice_twice; every partition of a partition-first
// link of slice_kernels.cu takes only these helpers from it, so the link
// reads it once, as a slice (test/device-link/partition-slices.test).
#include "slice_common.cuh"

// A variable the host can see: clang lists it in llvm.compiler.used, which
// comes before every function in the module's numbering. No kernel uses
// it, so it is a partition's own code and not in the slice, whose used
// list is then empty and goes.
__device__ int slice_counter;

// Nothing calls it: no partition takes it, and the slice drops it
// (first, so that the slice numbers its functions differently).
extern "C" __device__ __noinline__ float slice_unused(float x) {
  return x * 3.0f + slice_counter;
}

// Local: it goes with slice_leaf into the slice.
static __device__ __noinline__ float slice_scale(float x) {
  return x * 0.5f + slice_twice(x);
}

extern "C" __device__ __noinline__ float slice_leaf(float x) {
  return slice_scale(x) + expf(-x);
}
