// A second nvcc translation unit, for archives (nvcc -lib, ar) of
// relocatable device code: a kernel with a C++ (mangled) name that calls
// nv_scale in the other unit, nv_math.cu.
extern "C" __device__ float nv_scale(float x);

__global__ void nv_scale_twice(float *p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = nv_scale(nv_scale(p[i]));
}
