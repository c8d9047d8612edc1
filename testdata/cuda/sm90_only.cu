// sm90_only.cu: compiled for sm_90 alone in the tests, so that linking it for
// an older target must fail with "compiled for sm_90 only".
extern "C" __global__ void sm90_kernel(float *v) { v[threadIdx.x] *= 2.0f; }
