// util.cc: compiled as CUDA too (cuda_gpu_library passes -x cuda); shares
// its stem with util.cu.
extern "C" __global__ void util_cc(float *Out) { *Out = 4.0f; }
