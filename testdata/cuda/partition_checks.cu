// partition_checks.cu: four kernels that share nothing, so that a
// partition-first link of --partitions=4 puts each in a partition of its
// own (test/device-link/partition-first-parallel.test). Each calls a
// different libdevice function; with -DUNDEFINED each also calls a device
// function that no input defines.
#ifdef UNDEFINED
#define MISSING(name) +missing_##name(v[threadIdx.x])
extern "C" __device__ float missing_exp(float);
extern "C" __device__ float missing_sin(float);
extern "C" __device__ float missing_log(float);
extern "C" __device__ float missing_tanh(float);
#else
#define MISSING(name)
#endif

extern "C" __global__ void pc_exp(float *v) {
  v[threadIdx.x] = expf(v[threadIdx.x]) MISSING(exp);
}

extern "C" __global__ void pc_sin(float *v) {
  v[threadIdx.x] = sinf(v[threadIdx.x]) MISSING(sin);
}

extern "C" __global__ void pc_log(float *v) {
  v[threadIdx.x] = logf(v[threadIdx.x]) MISSING(log);
}

extern "C" __global__ void pc_tanh(float *v) {
  v[threadIdx.x] = tanhf(v[threadIdx.x]) MISSING(tanh);
}
