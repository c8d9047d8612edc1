// Dynamic shared memory, as most reductions and tiled kernels size it: an
// `extern __shared__` array that the launch sizes (the third <<<>>>
// argument). In IR it is a declaration in the shared address space that
// nothing defines, by design. dynamic_smem_b.cu declares the same array
// with another element type and a larger alignment: the program has one
// .extern .shared symbol, aligned for both (16).
extern __shared__ float dyn_smem[];

extern "C" __global__ void block_sum(const float *in, float *out, int n) {
  unsigned t = threadIdx.x;
  dyn_smem[t] = t < n ? in[blockIdx.x * blockDim.x + t] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      dyn_smem[t] += dyn_smem[t + s];
    __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = dyn_smem[0];
}
