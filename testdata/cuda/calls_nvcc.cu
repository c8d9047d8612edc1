// A kernel (compiled by clang to bitcode) that calls a device function
// defined only in nvcc device code (nvcc_helper.cu): the link cannot resolve
// it, and the message must name the nvcc object that defines it.
extern "C" __device__ float nvcc_scale(float x);

__global__ void calls_nvcc(float *p) {
  p[threadIdx.x] = nvcc_scale(p[threadIdx.x]);
}
