// CUDA C++ whose device code needs no other device code, so that
// `nvcc --device-link` links it on its own, as the `cc` crate does for
// every archive it builds with .cuda(true) (adding <lib>_dlink.o to it) and
// as CMake does for a target with CUDA_SEPARABLE_COMPILATION
// (cmake_device_link.o). fatlink cc leaves such objects out of the link
// and registers the kernel with its own fatbin.
#include <cstdio>

extern "C" __device__ unsigned nv_self_calls;
__device__ unsigned nv_self_calls;

extern "C" __global__ void nv_double_all(float *p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = 2.0f * p[i];
  if (i == 0)
    atomicAdd(&nv_self_calls, 1u);
}

// Launches nv_double_all on 256 floats through <<<>>> and checks them.
// Returns 0 on success, 2 without a GPU, 1 on a wrong result.
extern "C" int nv_self_run(void) {
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
  nv_double_all<<<(N + 127) / 128, 128>>>(P, N);
  E = cudaDeviceSynchronize();
  if (E != cudaSuccess) {
    std::printf("launch failed: %s\n", cudaGetErrorName(E));
    return 1;
  }
  cudaMemcpy(H, P, sizeof(H), cudaMemcpyDeviceToHost);
  cudaFree(P);
  for (unsigned I = 0; I < N; ++I)
    if (H[I] != 2.0f * float(I)) {
      std::printf("nv_double_all: p[%u] = %g, expected %g\n", I, H[I],
                  2.0f * float(I));
      return 1;
    }
  std::printf("nv_double_all: ok\n");
  return 0;
}
