// A CUDA C++ program compiled by nvcc (host and device code, -rdc=true) and
// linked by `fatlink cc` with no `nvcc -dlink` step: its <<<>>> launch finds
// nv_square_all in fatlink's fatbin through the
// __cudaRegisterLinkedBinary_<module id> function fatlink cc defines.
// Without a GPU the launch fails and the program says so and exits 2;
// with one it checks the results and exits 0.
#include <cstdio>

extern "C" __global__ void nv_square_all(float *p, unsigned n);
extern "C" __device__ unsigned nv_calls;

int main() {
  const unsigned N = 256;
  float *P = nullptr;
  cudaError_t E = cudaMalloc(&P, N * sizeof(float));
  if (E != cudaSuccess) {
    std::printf("no GPU: %s (%d)\n", cudaGetErrorName(E), (int)E);
    return 2;
  }
  float H[N];
  for (unsigned I = 0; I < N; ++I)
    H[I] = float(I);
  cudaMemcpy(P, H, sizeof(H), cudaMemcpyHostToDevice);
  nv_square_all<<<(N + 127) / 128, 128>>>(P, N);
  E = cudaDeviceSynchronize();
  if (E != cudaSuccess) {
    std::printf("launch failed: %s\n", cudaGetErrorName(E));
    return 1;
  }
  cudaMemcpy(H, P, sizeof(H), cudaMemcpyDeviceToHost);
  unsigned Calls = 0;
  cudaMemcpyFromSymbol(&Calls, nv_calls, sizeof(Calls));
  for (unsigned I = 0; I < N; ++I)
    if (H[I] != float(I) * float(I)) {
      std::printf("wrong result at %u: %g\n", I, H[I]);
      return 1;
    }
  std::printf("ok: %u squares, nv_calls %u\n", N, Calls);
  return Calls == 1 ? 0 : 1;
}
