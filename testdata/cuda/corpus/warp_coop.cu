// warp_coop.cu: warp-level programming and cooperative groups.
//
// - cooperative groups: thread_block, tiled_partition<32>, cg::reduce, coalesced_threads, and a grid-wide
//   grid.sync() in a kernel that must be launched cooperatively
//   (cudaLaunchCooperativeKernel);
// - warp intrinsics: __shfl_*_sync, __ballot_sync/__all_sync/__any_sync,
//   __match_any_sync/__match_all_sync (sm_70+, every target here), and
//   __reduce_*_sync (sm_80+, guarded as real code guards it: sm_75 gets
//   the shuffle version).
//
// Kernels: warp_reduce_shfl, warp_vote_match, cg_block_reduce,
// grid_sync_normalize.
#include "corpus_common.cuh"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

// Sum over the warp with butterfly shuffles; every lane gets the total.
extern "C" __device__ float corpus_warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// How many lanes of the warp have pred set.
extern "C" __device__ unsigned corpus_warp_vote(int pred) {
  return __popc(__ballot_sync(0xffffffffu, pred));
}

// Integer warp sum: redux.sync on sm_80+, shuffles before.
__device__ unsigned warp_sum_u32(unsigned v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_add_sync(0xffffffffu, v);
#else
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  return __shfl_sync(0xffffffffu, v, 0);
#endif
}

// out[warp] = sum of the warp's floats (shuffles) and of its ints (redux).
extern "C" __global__ void warp_reduce_shfl(const float *x, const unsigned *u,
                                            float *fsum, unsigned *usum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float f = corpus_warp_sum(x[i]);
  unsigned s = warp_sum_u32(u[i]);
  if ((threadIdx.x & 31) == 0) {
    fsum[i / 32] = f;
    usum[i / 32] = s;
  }
}

// Per thread: how many lanes hold the same key (match.any), whether the
// whole warp agrees (match.all), the votes, and min/max/and/or/xor of the
// keys across the warp (redux.sync on sm_80+, shuffles before):
// red[5 * i + 0..4].
extern "C" __global__ void warp_vote_match(const unsigned *keys,
                                           unsigned *peers, unsigned *flags,
                                           unsigned *red) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned key = keys[i];
  unsigned same = __match_any_sync(0xffffffffu, key);
  int all_pred = 0;
  __match_all_sync(0xffffffffu, key, &all_pred);
  unsigned active = __activemask();
  peers[i] = __popc(same);
  flags[i] = (all_pred ? 1u : 0u) | (__all_sync(active, key != 0) ? 2u : 0u) |
             (__any_sync(active, key == 7) ? 4u : 0u) |
             (corpus_warp_vote(key & 1) << 8);
  unsigned *r = red + 5 * i;
#if __CUDA_ARCH__ >= 800
  r[0] = __reduce_min_sync(0xffffffffu, key);
  r[1] = __reduce_max_sync(0xffffffffu, key);
  r[2] = __reduce_and_sync(0xffffffffu, key);
  r[3] = __reduce_or_sync(0xffffffffu, key);
  r[4] = __reduce_xor_sync(0xffffffffu, key);
#else
  unsigned lo = key, hi = key, a = key, o = key, x = key;
  for (int offset = 16; offset > 0; offset >>= 1) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
    a &= __shfl_xor_sync(0xffffffffu, a, offset);
    o |= __shfl_xor_sync(0xffffffffu, o, offset);
    x ^= __shfl_xor_sync(0xffffffffu, x, offset);
  }
  r[0] = lo;
  r[1] = hi;
  r[2] = a;
  r[3] = o;
  r[4] = x;
#endif
}

// Block sum with cooperative groups: tiles of 32 reduce with cg::reduce,
// the tile leaders combine through shared memory. out[block] = sum, and
// out[gridDim.x] counts the negative inputs, one atomic per group of
// lanes that took the branch together (coalesced_threads).
extern "C" __global__ void cg_block_reduce(const int *x, int *out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  __shared__ int partial[32];
  int i = block.group_index().x * block.size() + block.thread_rank();
  int v = i < n ? x[i] : 0;
  int s = cg::reduce(warp, v, cg::plus<int>());
  if (warp.thread_rank() == 0)
    partial[warp.meta_group_rank()] = s;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    int w = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0;
    // A smaller static tile for the last step, as libraries do.
    w = cg::reduce(warp, w, cg::plus<int>());
    if (block.thread_rank() == 0)
      out[block.group_index().x] = w;
  }
  // Lanes that took a branch together.
  if (v < 0) {
    cg::coalesced_group active = cg::coalesced_threads();
    if (active.thread_rank() == 0)
      atomicAdd(&out[gridDim.x], (int)active.size());
  }
}

// Two phases separated by a grid-wide barrier: first every block writes
// its partial maximum, then every thread divides by the global maximum.
// Needs a cooperative launch with every block resident.
extern "C" __global__ void grid_sync_normalize(float *x, float *block_max, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  __shared__ float bmax;
  if (block.thread_rank() == 0)
    bmax = 0.0f;
  block.sync();
  for (int i = grid.thread_rank(); i < n; i += grid.size())
    atomicMax(reinterpret_cast<int *>(&bmax), __float_as_int(fabsf(x[i])));
  block.sync();
  if (block.thread_rank() == 0)
    block_max[blockIdx.x] = bmax;
  grid.sync();
  float m = 0.0f;
  for (int b = 0; b < gridDim.x; ++b)
    m = fmaxf(m, block_max[b]);
  for (int i = grid.thread_rank(); i < n; i += grid.size())
    x[i] = m > 0.0f ? x[i] / m : 0.0f;
}
