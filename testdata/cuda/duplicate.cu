// duplicate.cu: defines cuda_softplus a second time, with external linkage,
// so linking it with softplus.cu must fail naming both files.
extern "C" __device__ float cuda_softplus(float x) { return x; }
