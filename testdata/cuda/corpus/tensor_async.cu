// tensor_async.cu: tensor cores and asynchronous copies, with the
// __CUDA_ARCH__ guards real code needs to build one source for sm_75 to
// sm_120:
//
// - nvcuda::wmma 16x16x16 half -> float (sm_70+: every target here);
// - wmma bf16 -> float and wmma double 8x8x4 (DMMA), sm_80+;
// - a raw `mma.sync.aligned.m16n8k16` bf16 instruction in inline PTX, as
//   CUTLASS writes it, sm_80+;
// - cp.async global -> shared copies through the pipeline primitives
//   (__pipeline_memcpy_async; a plain copy before sm_80), a __nanosleep
//   back-off loop (sm_70+);
// - a thread-block cluster barrier in inline PTX (sm_90+; the kernel is
//   launched with a cluster dimension by cudaLaunchKernelEx).
//
// Kernels: wmma_gemm_f16, wmma_gemm_bf16, dmma_gemm_f64, mma_bf16_tile,
// cp_async_stage, cluster_exchange.
#include "corpus_common.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

using namespace nvcuda;

// C (16x16, float) = A (16x16 half, row major) * B (16x16 half, col major);
// one warp per 16x16 tile of C, K a multiple of 16.
extern "C" __global__ void wmma_gemm_f16(const half *a, const half *b,
                                         float *c, int m, int n, int k) {
  int tile_m = blockIdx.y, tile_n = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tile_m * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, b + tile_n * 16 * k + kk, k);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + tile_m * 16 * n + tile_n * 16, fc, n,
                          wmma::mem_row_major);
}

// The same with bf16 inputs: tensor cores from sm_80, a scalar loop on
// sm_75 (one warp per tile, each lane computes 8 of the 256 outputs).
extern "C" __global__ void wmma_gemm_bf16(const __nv_bfloat16 *a,
                                          const __nv_bfloat16 *b, float *c,
                                          int m, int n, int k) {
  int tile_m = blockIdx.y, tile_n = blockIdx.x;
#if __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tile_m * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, b + tile_n * 16 * k + kk, k);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + tile_m * 16 * n + tile_n * 16, fc, n,
                          wmma::mem_row_major);
#else
  for (int e = threadIdx.x; e < 256; e += 32) {
    int r = tile_m * 16 + e / 16, col = tile_n * 16 + e % 16;
    float acc = 0.0f;
    for (int kk = 0; kk < k; ++kk)
      acc += __bfloat162float(a[r * k + kk]) * __bfloat162float(b[col * k + kk]);
    c[r * n + col] = acc;
  }
#endif
}

// C (8x8 double) = A (8x4) * B (4x8) per warp, through DMMA on sm_80+.
extern "C" __global__ void dmma_gemm_f64(const double *a, const double *b,
                                         double *c) {
#if __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
  wmma::fill_fragment(fc, 0.0);
  wmma::load_matrix_sync(fa, a, 4);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 8, wmma::mem_row_major);
#else
  for (int e = threadIdx.x; e < 64; e += 32) {
    double acc = 0.0;
    for (int kk = 0; kk < 4; ++kk)
      acc += a[(e / 8) * 4 + kk] * b[kk * 8 + e % 8];
    c[e] = acc;
  }
#endif
}

// One m16n8k16 bf16 MMA per warp in inline PTX: each lane passes its
// fragment registers (4 x b32 of A, 2 of B, 4 floats of C) as the PTX ISA
// lays them out; d = a * b + c.
extern "C" __global__ void mma_bf16_tile(const unsigned *a_frag,
                                         const unsigned *b_frag,
                                         const float *c_frag, float *d_frag) {
  int lane = threadIdx.x & 31;
  const unsigned *a = a_frag + lane * 4;
  const unsigned *b = b_frag + lane * 2;
  const float *c = c_frag + lane * 4;
  float d[4] = {c[0], c[1], c[2], c[3]};
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%10, %11, %12, %13};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
  for (int j = 0; j < 4; ++j)
    d_frag[lane * 4 + j] = d[j];
}

// Stage a block's float4s into shared memory with cp.async (sm_80+), wait
// for them, then out[i] = sum of the 4 components of in[i] and its right
// neighbour in the block. A producer/consumer flag shows the __nanosleep
// back-off: thread 0 waits until the last warp has published.
extern "C" __global__ void cp_async_stage(const float4 *in, float *out,
                                          volatile int *ready) {
  __shared__ float4 stage[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  __pipeline_memcpy_async(&stage[t], &in[i], sizeof(float4));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  float4 v = stage[t], w = stage[(t + 1) % blockDim.x];
  out[i] = v.x + v.y + v.z + v.w + w.x + w.y + w.z + w.w;
  if (t == blockDim.x - 1) {
    __threadfence();
    ready[blockIdx.x] = 1;
  }
  if (t == 0) {
    unsigned ns = 32;
    while (ready[blockIdx.x] == 0) {
      __nanosleep(ns);
      ns = ns < 1024 ? ns * 2 : ns;
    }
  }
}

// Blocks of a cluster exchange a value through distributed shared memory
// (sm_90+): each block reads its peer's shared variable after a cluster
// barrier. Before sm_90 a cluster is one block and it reads its own.
extern "C" __global__ void cluster_exchange(int *out) {
  __shared__ int mine;
  if (threadIdx.x == 0)
    mine = blockIdx.x * 10;
  __syncthreads();
  int peer_value = mine;
#if __CUDA_ARCH__ >= 900
  unsigned rank, nblocks;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nblocks));
  asm volatile("barrier.cluster.arrive.release;\n\t"
               "barrier.cluster.wait.acquire;" ::: "memory");
  unsigned local = (unsigned)__cvta_generic_to_shared(&mine), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote) : "r"(local), "r"((rank + 1) % nblocks));
  asm volatile("ld.shared::cluster.u32 %0, [%1];"
               : "=r"(peer_value) : "r"(remote) : "memory");
  asm volatile("barrier.cluster.arrive.release;\n\t"
               "barrier.cluster.wait.acquire;" ::: "memory");
#endif
  if (threadIdx.x == 0)
    out[blockIdx.x] = peer_value;
}
