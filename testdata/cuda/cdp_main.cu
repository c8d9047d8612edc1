// The host side of dynamic_parallelism.cu: launches the parent kernel,
// which launches one child grid per block. Exits 0 when the data was scaled
// (on a GPU), 2 when the CUDA runtime reports an error (no GPU here).
#include <cstdio>

__global__ void cdp_parent(float *data, int per_block, float scale,
                           int *errors);

int main() {
  const int Blocks = 2, PerBlock = 32, N = Blocks * PerBlock;
  float Host[N];
  for (int I = 0; I < N; ++I)
    Host[I] = float(I);
  float *Data = nullptr;
  int *Errors = nullptr;
  if (cudaMalloc(&Data, sizeof Host) != cudaSuccess ||
      cudaMalloc(&Errors, sizeof(int)) != cudaSuccess) {
    std::printf("cuda: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  cudaMemcpy(Data, Host, sizeof Host, cudaMemcpyHostToDevice);
  cudaMemset(Errors, 0, sizeof(int));
  cdp_parent<<<Blocks, 1>>>(Data, PerBlock, 2.0f, Errors);
  cudaError_t E = cudaDeviceSynchronize();
  if (E != cudaSuccess) {
    std::printf("cuda: %s\n", cudaGetErrorString(E));
    return 2;
  }
  cudaMemcpy(Host, Data, sizeof Host, cudaMemcpyDeviceToHost);
  for (int I = 0; I < N; ++I)
    if (Host[I] != 2.0f * float(I)) {
      std::printf("data[%d] = %g, expected %g\n", I, Host[I], 2.0f * float(I));
      return 1;
    }
  std::printf("ok\n");
  return 0;
}
