// cuda_host.cu: a CUDA C++ program that launches its kernel with <<<>>>
// through the CUDA runtime, compiled by clang's new offload driver and
// linked WITHOUT clang-linker-wrapper: its device code goes through
// `fatlink device-link`, and libfatlink_rt.a registers the fatbin, the
// kernel and the device global with the CUDA runtime. Exits 0 if the
// results are right, or if the first CUDA call fails cleanly (no GPU);
// exits 1 on a failed launch or a wrong result.
#include <cstdio>
#include <cuda_runtime.h>

__device__ float scale_by = 3.0f;

__global__ void scale(float *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    v[i] *= scale_by;
}

int main() {
  const int N = 256;
  float Host[N];
  for (int I = 0; I < N; ++I)
    Host[I] = (float)I;
  float *Dev = nullptr;
  cudaError_t E = cudaMalloc(&Dev, sizeof(Host));
  if (E != cudaSuccess) {
    printf("cudaMalloc: %s (%d): %s\n", cudaGetErrorName(E), (int)E,
           cudaGetErrorString(E));
    return 0;
  }
  cudaMemcpy(Dev, Host, sizeof(Host), cudaMemcpyHostToDevice);
  scale<<<N / 64, 64>>>(Dev, N);
  E = cudaGetLastError();
  if (E == cudaSuccess)
    E = cudaMemcpy(Host, Dev, sizeof(Host), cudaMemcpyDeviceToHost);
  if (E != cudaSuccess) {
    printf("launch: %s (%d): %s\n", cudaGetErrorName(E), (int)E,
           cudaGetErrorString(E));
    return 1;
  }
  for (int I = 0; I < N; ++I)
    if (Host[I] != 3.0f * I) {
      printf("wrong result at %d: %g\n", I, Host[I]);
      return 1;
    }
  printf("scale<<<>>> ok\n");
  return 0;
}
