// CUDA C++ idioms whose relocatable cubins carry symbols other than plain
// global definitions and references (test/device-link/nvcc-idioms.test):
//  - every sm_90-and-newer cubin references __UDT, __UFT and
//    .nv.reservedSmem.offset0 weakly, and nothing defines them;
//  - `extern __shared__` is the block's dynamic shared memory, an
//    undefined symbol in shared memory;
//  - `static` and anonymous-namespace kernels are local symbols
//    (__nv_static_...), which nvcc's host code registers like any other.

__device__ int nv_idioms_seed = 7;

extern __shared__ float nv_dynamic_smem[];

__global__ void nv_reverse_block(float *Data) {
  unsigned I = threadIdx.x, N = blockDim.x;
  nv_dynamic_smem[I] = Data[blockIdx.x * N + I];
  __syncthreads();
  Data[blockIdx.x * N + I] = nv_dynamic_smem[N - 1 - I] + nv_idioms_seed;
}

static __global__ void nv_static_fill(int *Out) { Out[threadIdx.x] = 1; }

namespace {
__global__ void nv_anonymous_fill(int *Out) { Out[threadIdx.x] = 2; }
} // namespace

void nv_idioms_launch(int *Out) {
  nv_static_fill<<<1, 32>>>(Out);
  nv_anonymous_fill<<<1, 32>>>(Out);
}
