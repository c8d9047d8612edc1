// smem_scan.cu: shared memory as real kernels use it, first of two
// translation units (with smem_histogram.cu) that both declare dynamic
// shared memory.
//
// - `extern __shared__` arrays sized at launch (the third <<<>>> argument):
//   `corpus_smem` is declared with the same name in both files, as a project
//   header would (`extern __shared__ unsigned char smem[]` in many TUs); the
//   scan below views it as floats.
// - a statically sized `__shared__` tile with a padding column, the classic
//   bank-conflict-free transpose.
//
// Kernels: block_scan_dyn, transpose_tiled (and, in the other file,
// histogram_dyn, stencil_dyn).
#include "corpus_common.cuh"

extern __shared__ float4 corpus_smem[];

// Inclusive Hillis-Steele scan of one block's values in dynamic shared
// memory (blockDim.x floats, double-buffered: launch with
// 2 * blockDim.x * sizeof(float) bytes).
extern "C" __global__ void block_scan_dyn(const float *in, float *out, int n) {
  float *buf = reinterpret_cast<float *>(corpus_smem);
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int cur = 0;
  buf[tid] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset <<= 1) {
    int nxt = 1 - cur;
    float v = buf[cur * blockDim.x + tid];
    if (tid >= offset)
      v += buf[cur * blockDim.x + tid - offset];
    buf[nxt * blockDim.x + tid] = v;
    __syncthreads();
    cur = nxt;
  }
  if (i < n)
    out[i] = buf[cur * blockDim.x + tid];
}

constexpr int kTile = 32;
constexpr int kRows = 8;

// out = transpose(in), in is height x width. Launch with blocks of
// (32, 8) threads and a grid of ceil(width/32) x ceil(height/32).
extern "C" __global__ void transpose_tiled(const float *in, float *out,
                                           int width, int height) {
  __shared__ float tile[kTile][kTile + 1]; // +1: no bank conflicts
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows)
    if (x < width && y + j < height)
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows)
    if (x < height && y + j < width)
      out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
