// dispatch.cuh: generic device code shared by dispatch_a.cu and
// dispatch_b.cu, the C++ that crosses translation units:
//
// - templates defined here and instantiated implicitly in both TUs (each
//   gets a linkonce_odr copy; the link keeps one);
// - a template instantiated explicitly in dispatch_a.cu and declared
//   `extern template` here, so dispatch_b.cu only references it;
// - a table of device function pointers defined in one TU, called through
//   from the other;
// - a class hierarchy with virtual functions whose key functions (and so
//   vtables) live in dispatch_b.cu while dispatch_a.cu's kernels construct
//   the objects and make the virtual calls.
#pragma once
#include "corpus_common.cuh"
#include <new>

namespace corpus {

template <typename T> struct Plus {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T> struct Max {
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

// Strided reduction of a grid's elements with any associative operation.
template <typename T, typename Op>
__device__ T grid_reduce_partial(const T *x, int n, T init, Op op) {
  T acc = init;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    acc = op(acc, x[i]);
  return acc;
}

// y = a * x + (1 - a) * y elementwise, instantiated explicitly for float
// and double in dispatch_a.cu only.
template <typename T> __device__ void lerp_all(T a, const T *x, T *y, int n);
extern template __device__ void lerp_all<float>(float, const float *, float *, int);
extern template __device__ void lerp_all<double>(double, const double *, double *, int);

using BinaryOp = float (*)(float, float);
enum OpIndex { kAdd = 0, kMul = 1, kMax = 2, kNumOps = 3 };
extern __device__ BinaryOp op_table[kNumOps]; // dispatch_a.cu

class Shape {
public:
  __device__ virtual ~Shape() {}
  __device__ virtual float area() const = 0;
  __device__ virtual float perimeter() const;
};

class Circle : public Shape {
public:
  __device__ explicit Circle(float r) : r_(r) {}
  __device__ float area() const override;      // key function: dispatch_b.cu
  __device__ float perimeter() const override;
private:
  float r_;
};

class Rect : public Shape {
public:
  __device__ Rect(float w, float h) : w_(w), h_(h) {}
  __device__ float area() const override;      // key function: dispatch_b.cu
  __device__ float perimeter() const override;
private:
  float w_, h_;
};

} // namespace corpus
