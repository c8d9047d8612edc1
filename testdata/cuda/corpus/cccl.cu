// cccl.cu: the CUDA C++ Core Libraries (CCCL, shipped with CUDA 13.0) in
// device code, the way most CUDA projects use them today:
//
// - CUB block primitives: BlockLoad/BlockStore, BlockReduce, BlockScan,
//   BlockRadixSort (whose digit extraction, cuda::bitfield_extract, is on
//   sm_70+ a shift and cuda::bitmask: inline PTX `bmsk`, which needs PTX
//   ISA 7.6 where sm_75's minimum is 6.3);
// - a CUB warp primitive: WarpReduce;
// - a thrust algorithm compiled as device code (thrust::seq in a thread).
//
// Kernels: cub_block_sort_scan, cub_warp_sum, thrust_seq_sort.
#include "corpus_common.cuh"
#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cuda/bit>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

constexpr int kThreads = 128;
constexpr int kItems = 4;

// Per block of kThreads * kItems keys: sorted keys, their exclusive prefix
// sum, and the block's total (totals[block]).
extern "C" __global__ void cub_block_sort_scan(const unsigned *in,
                                               unsigned *sorted,
                                               unsigned *prefix,
                                               unsigned *totals) {
  using Load = cub::BlockLoad<unsigned, kThreads, kItems, cub::BLOCK_LOAD_TRANSPOSE>;
  using Sort = cub::BlockRadixSort<unsigned, kThreads, kItems>;
  using Scan = cub::BlockScan<unsigned, kThreads>;
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  using Store = cub::BlockStore<unsigned, kThreads, kItems, cub::BLOCK_STORE_DIRECT>;
  __shared__ union {
    typename Load::TempStorage load;
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } temp;

  const int base = blockIdx.x * kThreads * kItems;
  unsigned keys[kItems];
  Load(temp.load).Load(in + base, keys);
  __syncthreads();
  Sort(temp.sort).Sort(keys);
  __syncthreads();
  Store().Store(sorted + base, keys); // direct: needs no temp storage
  unsigned scanned[kItems];
  Scan(temp.scan).ExclusiveSum(keys, scanned);
  __syncthreads();
  Store().Store(prefix + base, scanned);
  unsigned total = Reduce(temp.reduce).Sum(keys);
  if (threadIdx.x == 0)
    totals[blockIdx.x] = total;
}

// Per warp: the sum of its 32 values, and the low `bits` bits of each
// value kept with cuda::bitmask (bmsk on sm_70+).
extern "C" __global__ void cub_warp_sum(const int *in, int *warp_sums,
                                       unsigned *masked, int bits) {
  using WarpReduce = cub::WarpReduce<int>;
  __shared__ typename WarpReduce::TempStorage temp[kThreads / 32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int warp = threadIdx.x / 32;
  int s = WarpReduce(temp[warp]).Sum(in[i]);
  if (threadIdx.x % 32 == 0)
    warp_sums[i / 32] = s;
  masked[i] = (unsigned)in[i] & cuda::bitmask<unsigned>(0, bits);
}

// Each thread sorts its own segment of 16 floats with thrust::sort under
// the sequential policy (no launch, no allocation: plain device code).
extern "C" __global__ void thrust_seq_sort(float *data, int segments) {
  int seg = blockIdx.x * blockDim.x + threadIdx.x;
  if (seg < segments)
    thrust::sort(thrust::seq, data + seg * 16, data + seg * 16 + 16);
}
