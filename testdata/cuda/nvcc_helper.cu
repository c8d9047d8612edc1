// A device function compiled by nvcc (-dc: relocatable device code in
// __nv_relfatbin), which fatlink does not read. calls_nvcc.cu calls it.
extern "C" __device__ float nvcc_scale(float x) { return 3.0f * x; }
