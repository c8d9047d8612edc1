// Cooperative groups, as CUDA samples use them. Built at -O0, clang keeps
// `&threadIdx` alive (thread_block's dim3(threadIdx) under optnone), and
// clang declares threadIdx, blockIdx, blockDim and gridDim as extern_weak
// globals: weak references that nothing defines, which must link.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void tile_sum(const int *in, int *out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int v = in[block.group_index().x * block.size() + block.thread_rank()];
  for (int offset = tile.size() / 2; offset > 0; offset /= 2)
    v += tile.shfl_down(v, offset);
  if (tile.thread_rank() == 0)
    atomicAdd(out, v);
  block.sync();
}
