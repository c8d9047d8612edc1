// numerics.cu: the numeric side of CUDA C++ as applications write it:
//
// - half and bfloat16 through cuda_fp16.h / cuda_bf16.h: conversions,
//   __half2 vector arithmetic, hfma, h2exp, bf16 math;
// - the math library across libdevice, float and double: sinf/cosf,
//   sincospi, expf/logf/powf, erff/erfcinvf, lgammaf/tgammaf, cbrtf,
//   atan2f, rsqrtf, and the double versions (sin, exp, log1p, pow, hypot,
//   erfc, j0, cyl_bessel_i0), plus the __fdividef/__expf fast intrinsics;
// - printf (vprintf), assert (__assertfail), and device malloc/free.
//
// Kernels: half_bf16_math, math_float, math_double, device_heap_printf.
#include "corpus_common.cuh"
#include <cassert>
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __device__ float corpus_half_fma(float a, float b, float c) {
  return __half2float(__hfma(__float2half_rn(a), __float2half_rn(b),
                             __float2half_rn(c)));
}

extern "C" __device__ double corpus_special(double x) {
  return erfc(x) + lgamma(x + 1.0) + cbrt(x);
}

// y[i] = a*x[i] + y[i] in half2 pairs, and z[i] = bf16(exp(x) * 2).
extern "C" __global__ void half_bf16_math(const __half2 *x, __half2 *y,
                                          __nv_bfloat162 *z, float a, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2)
    return;
  __half2 ha = __float2half2_rn(a);
  __half2 xi = x[i];
  y[i] = __hfma2(ha, xi, y[i]);
  float2 f = __half22float2(h2exp(xi));
  __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  z[i] = __hmul2(b, __floats2bfloat162_rn(2.0f, 2.0f));
  if (__hisnan(__low2half(y[i])))
    z[i] = __float2bfloat162_rn(0.0f);
}

// Several libdevice float functions per element; out has 4 results each.
extern "C" __global__ void math_float(const float *x, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = x[i], s, c;
  sincosf(v, &s, &c);
  out[4 * i + 0] = s * s + c * c;                        // 1
  out[4 * i + 1] = logf(expf(v)) + powf(2.0f, v) - exp2f(v); // v
  out[4 * i + 2] = erff(v) + erfcinvf(1.0f) + cbrtf(v * v * v) - v; // erf(v)
  out[4 * i + 3] = atan2f(sinpif(0.5f), 0.0f) + rsqrtf(4.0f) +
                   lgammaf(3.0f) - logf(tgammaf(3.0f)) +
                   __fdividef(1.0f, 2.0f) + __expf(0.0f); // pi/2 + 2
}

// The same for double: out has 3 results per element.
extern "C" __global__ void math_double(const double *x, double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  double v = x[i], s, c;
  sincospi(v, &s, &c);
  out[3 * i + 0] = s * s + c * c;                           // 1
  out[3 * i + 1] = log1p(expm1(v)) + hypot(3.0, 4.0) - pow(2.0, 2.0); // v + 1
  out[3 * i + 2] = corpus_special(v) + j0(0.0) + cyl_bessel_i0(0.0) +
                   sin(v) * 0.0 + rnorm3d(0.0, 3.0, 4.0); // + 2.2
}

// Per-thread scratch on the device heap, a report through printf, and an
// assert that holds for the inputs the tests pass.
extern "C" __global__ void device_heap_printf(const int *counts, int *sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n = counts[i];
  assert(n >= 0 && n < 1024);
  int *scratch = static_cast<int *>(malloc(n * sizeof(int) + 1));
  if (scratch == nullptr) {
    printf("thread %d: device malloc of %d ints failed\n", i, n);
    sums[i] = -1;
    return;
  }
  int acc = 0;
  for (int k = 0; k < n; ++k)
    scratch[k] = k;
  for (int k = 0; k < n; ++k)
    acc += scratch[k];
  free(scratch);
  sums[i] = acc;
  if (i == 0)
    printf("device_heap_printf: block %d of %d, sum[0] = %d, %f\n",
           blockIdx.x, gridDim.x, acc, 0.5);
}
