// The other translation unit of dynamic_smem_a.cu: the same dynamic shared
// array, declared as float4 (16-byte aligned), used to reverse a block.
extern __shared__ float4 dyn_smem[];

extern "C" __global__ void block_reverse4(float4 *data) {
  unsigned t = threadIdx.x;
  dyn_smem[t] = data[blockIdx.x * blockDim.x + t];
  __syncthreads();
  data[blockIdx.x * blockDim.x + t] = dyn_smem[blockDim.x - 1 - t];
}
