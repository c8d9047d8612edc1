// dynpar.cu: dynamic parallelism (CUDA Dynamic Parallelism, CDP2): kernels
// launching kernels with the device runtime (libcudadevrt.a, linked by
// nvlink). A parent kernel walks a work list and launches one child grid
// per item sized to the item, fire-and-forget, and a tail launch runs the
// final pass after every child has finished (CUDA 12+ has no device-side
// cudaDeviceSynchronize).
//
// Kernels: dp_parent, dp_child_scale, dp_finish.
#include "corpus_common.cuh"
#include <cstdio>
#include <cuda_runtime.h>

struct WorkItem {
  float *data;
  int n;
  float factor;
};

extern "C" __global__ void dp_child_scale(float *data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= factor;
}

// Runs after the parent grid and all its fire-and-forget children.
extern "C" __global__ void dp_finish(const WorkItem *items, int count, int *done) {
  int total = 0;
  for (int k = 0; k < count; ++k)
    total += items[k].n;
  *done = total;
}

extern "C" __global__ void dp_parent(const WorkItem *items, int count, int *done) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < count) {
    const WorkItem &w = items[k];
    int blocks = (w.n + 127) / 128;
    dp_child_scale<<<blocks, 128, 0, cudaStreamFireAndForget>>>(w.data, w.n, w.factor);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
      printf("dp_parent: item %d: launch failed: %d\n", k, (int)err);
  }
  if (k == 0)
    dp_finish<<<1, 1, 0, cudaStreamTailLaunch>>>(items, count, done);
}
