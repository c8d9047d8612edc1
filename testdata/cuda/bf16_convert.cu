// bf16_convert.cu: two kernels, one whose code the NVPTX backend writes
// differently per arch (float -> bf16: emulated before sm_80, one cvt
// instruction from sm_80 on) and one it writes the same for every arch.
// fatlink's shared PTX must reuse the second's code across arches and not
// the first's.
extern "C" __global__ void to_bf16(__bf16 *out, const float *in) {
  out[threadIdx.x] = (__bf16)in[threadIdx.x];
}

extern "C" __global__ void scale_add(float *out, const float *in, float k) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = out[i] * k + in[i];
}
