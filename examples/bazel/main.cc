// main.cc: the host side of the Bazel example. It lists what the program
// carries through fatlink's runtime (every device module, its GPU images and
// its kernels with their parameter sizes), then looks for a GPU. Without one
// it says so and exits 0; with one it runs the Rust `saxpy` kernel and checks
// the result.
#include "fatlink/runtime.h"

#include <cstdio>
#include <vector>

namespace {

int listModules() {
  uint32_t Modules = fatlink_rt_module_count();
  std::printf("modules: %u\n", Modules);
  for (uint32_t M = 0; M < Modules; ++M) {
    fatlink_rt_module_info Info;
    if (fatlink_rt_get_module_info(M, &Info) != FATLINK_RT_SUCCESS) {
      std::printf("error: %s\n", fatlink_rt_last_error());
      return 1;
    }
    std::printf("module %u: %llu-byte fatbin, %u images, %u kernels\n", M,
                (unsigned long long)Info.fatbin_size, Info.num_images,
                Info.num_kernels);
    for (uint32_t I = 0; I < Info.num_images; ++I) {
      fatlink_rt_image Image;
      char Buf[128];
      if (fatlink_rt_module_image(M, I, &Image) == FATLINK_RT_SUCCESS)
        std::printf("  image %s\n",
                    fatlink_rt_image_string(&Image, Buf, sizeof(Buf)));
    }
    for (uint32_t K = 0; K < Info.num_kernels; ++K) {
      fatlink_rt_kernel_info Kernel;
      if (fatlink_rt_module_kernel(M, K, &Kernel) != FATLINK_RT_SUCCESS)
        continue;
      std::printf("  kernel %s(", Kernel.name);
      for (uint32_t P = 0; P < Kernel.num_params; ++P)
        std::printf("%s%u", P ? ", " : "", Kernel.param_sizes[P]);
      std::printf(")\n");
    }
  }
  return 0;
}

// y = 2a * x + y on the GPU (saxpy doubles a through vecmath::twice).
int runSaxpy() {
  const uint32_t N = 256;
  std::vector<float> X(N), Y(N);
  for (uint32_t I = 0; I < N; ++I) {
    X[I] = float(I);
    Y[I] = 1.0f;
  }
  fatlink_rt_kernel Kernel;
  fatlink_rt_devptr DX = 0, DY = 0;
  float A = 1.5f;
  void *Args[] = {&A, &DX, &DY};
  size_t Sizes[] = {sizeof(A), sizeof(DX), sizeof(DY)};
  if (fatlink_rt_get_kernel("saxpy", &Kernel) ||
      fatlink_rt_malloc(&DX, N * sizeof(float)) ||
      fatlink_rt_malloc(&DY, N * sizeof(float)) ||
      fatlink_rt_memcpy_htod(DX, X.data(), N * sizeof(float)) ||
      fatlink_rt_memcpy_htod(DY, Y.data(), N * sizeof(float)) ||
      fatlink_rt_launch(Kernel, {1, 1, 1}, {N, 1, 1}, 0, nullptr, Args, Sizes,
                        3) ||
      fatlink_rt_synchronize() ||
      fatlink_rt_memcpy_dtoh(Y.data(), DY, N * sizeof(float))) {
    std::printf("saxpy: error: %s\n", fatlink_rt_last_error());
    return 1;
  }
  for (uint32_t I = 0; I < N; ++I)
    if (Y[I] != 2 * A * X[I] + 1.0f) {
      std::printf("saxpy: wrong result at %u: %g\n", I, Y[I]);
      return 1;
    }
  std::printf("saxpy: %u results correct\n", N);
  return fatlink_rt_free(DX) || fatlink_rt_free(DY);
}

} // namespace

int main() {
  if (int RC = listModules())
    return RC;
  int Devices = 0;
  fatlink_rt_status S = fatlink_rt_init();
  if (S == FATLINK_RT_SUCCESS)
    S = fatlink_rt_device_count(&Devices);
  if (S != FATLINK_RT_SUCCESS || Devices == 0) {
    std::printf("no GPU: %s: %s\n", fatlink_rt_status_name(S),
                S != FATLINK_RT_SUCCESS ? fatlink_rt_last_error()
                                        : "no CUDA device");
    return 0;
  }
  fatlink_rt_device_info Info;
  if (fatlink_rt_get_device_info(0, &Info) == FATLINK_RT_SUCCESS)
    std::printf("GPU 0: %s (sm_%d%d)\n", Info.name, Info.cc_major,
                Info.cc_minor);
  return runSaxpy();
}
