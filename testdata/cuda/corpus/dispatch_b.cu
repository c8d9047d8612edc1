// dispatch_b.cu: the other half of dispatch.cuh's cross-TU C++: the
// virtual functions' out-of-line definitions (so the vtables of Circle and
// Rect are emitted here), an implicit instantiation of the same templates
// dispatch_a.cu instantiates, a call of the explicit instantiation that
// lives in dispatch_a.cu, and calls through dispatch_a.cu's function
// pointer table.
//
// Kernels: reduce_max_f32, lerp_kernel_f64, fold_with_table.
#include "dispatch.cuh"

// Shape is abstract, so its vtable (emitted here, with its key function)
// points its pure virtual slot at __cxa_pure_virtual. clang-22 emits that
// reference in device code but nothing defines it for NVPTX (neither
// libdevice nor the CUDA toolkit; nvlink fails on it too; newer clang
// defines it itself): code built with clang defines it, trapping, as here.
// The reference survives only where the base constructor is not inlined
// (-O0).
extern "C" __device__ void __cxa_pure_virtual() { __trap(); }

namespace corpus {

__device__ float Shape::perimeter() const { return 0.0f; }
__device__ float Circle::area() const { return 3.14159265f * r_ * r_; }
__device__ float Circle::perimeter() const { return 2.0f * 3.14159265f * r_; }
__device__ float Rect::area() const { return w_ * h_; }
__device__ float Rect::perimeter() const { return 2.0f * (w_ + h_); }

} // namespace corpus

using namespace corpus;

// Same instantiation as in dispatch_a.cu: grid_reduce_partial<float, Max>.
extern "C" __global__ void reduce_max_f32(const float *x, int n, int *max_bits) {
  float m = grid_reduce_partial(x, n, 0.0f, Max<float>());
  atomicMax(max_bits, __float_as_int(m));
}

// lerp_all<double> is only declared here (extern template).
extern "C" __global__ void lerp_kernel_f64(double a, const double *x, double *y, int n) {
  lerp_all(a, x, y, n);
}

// out[i] = fold of x[i*4 .. i*4+3] with op_table[op] (indirect calls).
extern "C" __global__ void fold_with_table(const float *x, float *out, int op, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  BinaryOp f = op_table[op % kNumOps];
  float acc = x[4 * i];
  for (int k = 1; k < 4; ++k)
    acc = f(acc, x[4 * i + k]);
  out[i] = acc;
}
