// texsurf.cu: the memory spaces the host sets up for the device:
//
// - texture objects (cudaTextureObject_t): tex2D<float> with hardware
//   filtering and tex1Dfetch<float4> from a linear buffer;
// - surface objects (cudaSurfaceObject_t): surf2Dread / surf2Dwrite;
// - __constant__ memory the host fills with cudaMemcpyToSymbol (filter
//   taps, a small lookup table);
// - unified (managed) memory the host reads after the kernel without a
//   copy. clang-22 accepts `__managed__` only for HIP: in CUDA mode it
//   warns "'managed' attribute ignored" and the variable becomes host-only,
//   so code built with clang allocates it with cudaMallocManaged, as here.
//
// Kernels: tex_sample, surf_blur, constant_filter, managed_accumulate.
#include "corpus_common.cuh"
#include <cuda_runtime.h>

__constant__ float filter_taps[9];
__constant__ int lookup[16];

// The unified-memory block managed_accumulate updates (cudaMallocManaged).
struct ManagedCounters {
  unsigned long long total;
  int flags[4];
};

// out[y * w + x] = texture value at the centre of texel (x, y), plus the
// linear-buffer texel x (its .x + .w).
extern "C" __global__ void tex_sample(cudaTextureObject_t image,
                                      cudaTextureObject_t linear, float *out,
                                      int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h)
    return;
  float v = tex2D<float>(image, x + 0.5f, y + 0.5f);
  float4 l = tex1Dfetch<float4>(linear, x);
  out[y * w + x] = v + l.x + l.w;
}

// 3x3 box blur from one surface into another (borders clamp).
extern "C" __global__ void surf_blur(cudaSurfaceObject_t src,
                                     cudaSurfaceObject_t dst, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h)
    return;
  float acc = 0.0f;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
      float v;
      surf2Dread(&v, src, (x + dx) * (int)sizeof(float), y + dy,
                 cudaBoundaryModeClamp);
      acc += v;
    }
  surf2Dwrite(acc / 9.0f, dst, x * (int)sizeof(float), y);
}

// out[i] = sum_k taps[k] * in[i + k - 4] + lookup[in-index % 16], the
// coefficients from __constant__ memory (broadcast reads).
extern "C" __global__ void constant_filter(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < 9; ++k) {
    int j = i + k - 4;
    acc += filter_taps[k] * (j >= 0 && j < n ? in[j] : 0.0f);
  }
  out[i] = acc + (float)lookup[i % 16];
}

// Adds into managed memory with system-scope atomics (the host may read
// it while the kernel runs); the host reads the result directly after
// cudaDeviceSynchronize.
extern "C" __global__ void managed_accumulate(ManagedCounters *m, const int *x,
                                              int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd_system(&m->total, (unsigned long long)x[i]);
    atomicOr_system(&m->flags[i % 4], 1 << (i % 31));
  }
}
