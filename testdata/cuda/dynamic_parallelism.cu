// Dynamic parallelism: a kernel that launches a kernel. Each parent thread
// block launches one child grid over its slice of the data. On the device,
// `child<<<...>>>` becomes calls into CUDA's device runtime
// (__cudaCDP2GetParameterBuffer, __cudaCDP2LaunchDevice), which ships only as
// nvcc relocatable code in libcudadevrt.a: the device link must link it with
// nvlink. cudaGetLastError on the device is the runtime's too.

__global__ void cdp_child(float *data, int offset, float scale) {
  data[offset + threadIdx.x] *= scale;
}

__global__ void cdp_parent(float *data, int per_block, float scale,
                           int *errors) {
  if (threadIdx.x != 0)
    return;
  cdp_child<<<1, per_block>>>(data, blockIdx.x * per_block, scale);
  if (cudaGetLastError() != cudaSuccess)
    atomicAdd(errors, 1);
}
