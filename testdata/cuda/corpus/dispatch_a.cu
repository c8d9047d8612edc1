// dispatch_a.cu: kernels using the cross-TU C++ of dispatch.cuh (see
// there): implicit and explicit template instantiations, the device
// function-pointer table (defined here), and virtual calls on objects
// built in device memory (vtables from dispatch_b.cu).
//
// Kernels: reduce_sum_max, lerp_kernel_f32, apply_ops, shapes_virtual.
#include "dispatch.cuh"

namespace corpus {

template <typename T> __device__ void lerp_all(T a, const T *x, T *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + (T(1) - a) * y[i];
}
template __device__ void lerp_all<float>(float, const float *, float *, int);
template __device__ void lerp_all<double>(double, const double *, double *, int);

__device__ float op_add(float a, float b) { return a + b; }
__device__ float op_mul(float a, float b) { return a * b; }
__device__ float op_max(float a, float b) { return fmaxf(a, b); }
__device__ BinaryOp op_table[kNumOps] = {op_add, op_mul, op_max};

} // namespace corpus

using namespace corpus;

extern "C" __device__ float corpus_apply_op(int op, float a, float b) {
  return op_table[op % kNumOps](a, b);
}

// Per block: partial sum and partial max (grid_reduce_partial<float, ...>,
// instantiated here and in dispatch_b.cu), combined with atomics.
extern "C" __global__ void reduce_sum_max(const float *x, int n, float *sum,
                                          int *max_bits) {
  float s = grid_reduce_partial(x, n, 0.0f, Plus<float>());
  float m = grid_reduce_partial(x, n, 0.0f, Max<float>());
  atomicAdd(sum, s);
  atomicMax(max_bits, __float_as_int(m)); // non-negative inputs
}

extern "C" __global__ void lerp_kernel_f32(float a, const float *x, float *y, int n) {
  lerp_all(a, x, y, n);
}

// out[i] = op_table[ops[i]](a[i], b[i]): an indirect call per element.
extern "C" __global__ void apply_ops(const int *ops, const float *a,
                                     const float *b, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = corpus_apply_op(ops[i], a[i], b[i]);
}

// Each thread builds a Circle or a Rect in its slot of `storage` (objects
// with device vtables must be constructed on the device), then reports
// area and perimeter through virtual calls, and destroys it virtually.
extern "C" __global__ void shapes_virtual(const float *params, float *area,
                                          float *perim, int n) {
  struct alignas(8) Slot {
    unsigned char bytes[sizeof(Rect) > sizeof(Circle) ? sizeof(Rect) : sizeof(Circle)];
  };
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  Slot slot;
  Shape *s = (i % 2) ? static_cast<Shape *>(new (&slot) Circle(params[i]))
                     : static_cast<Shape *>(new (&slot) Rect(params[i], 2.0f));
  area[i] = s->area();
  perim[i] = s->perimeter();
  s->~Shape();
}
