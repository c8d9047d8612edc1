// smem_histogram.cu: the second translation unit with dynamic shared
// memory (see smem_scan.cu). It declares the project-wide `corpus_smem`
// again, and a second `extern __shared__` array of its own; in CUDA every
// `extern __shared__` array of a kernel starts at the same address, the
// start of the dynamic shared memory given at launch.
//
// Kernels: histogram_dyn (privatized histogram: per-block bins in dynamic
// shared memory, merged with global atomics), stencil_dyn (1-D stencil
// with a halo staged through shared memory).
#include "corpus_common.cuh"

extern __shared__ float4 corpus_smem[];
extern __shared__ unsigned int hist_bins[];

// bins[v % nbins] += 1 for every value; launch with nbins * 4 bytes.
extern "C" __global__ void histogram_dyn(const unsigned *values, int n,
                                         unsigned *bins, int nbins) {
  for (int b = threadIdx.x; b < nbins; b += blockDim.x)
    hist_bins[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    atomicAdd(&hist_bins[values[i] % nbins], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x)
    if (hist_bins[b])
      atomicAdd(&bins[b], hist_bins[b]);
}

// out[i] = sum of in[i-R..i+R] (zero outside); launch with
// (blockDim.x + 2 * R) * 4 bytes.
extern "C" __global__ void stencil_dyn(const float *in, float *out, int n) {
  constexpr int R = corpus::kStencilRadius;
  float *s = reinterpret_cast<float *>(corpus_smem);
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int l = threadIdx.x + R;
  s[l] = g < n ? in[g] : 0.0f;
  if (threadIdx.x < R) {
    int left = g - R, right = g + blockDim.x;
    s[l - R] = left >= 0 && left < n ? in[left] : 0.0f;
    s[l + blockDim.x] = right < n ? in[right] : 0.0f;
  }
  __syncthreads();
  float acc = 0.0f;
#pragma unroll
  for (int k = -R; k <= R; ++k)
    acc += s[l + k];
  if (g < n)
    out[g] = acc;
}
