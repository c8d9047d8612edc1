// main.cc: the host side of the Bazel example. It lists what the program
// carries through fatlink's runtime (every device module, its GPU images and
// its kernels with their parameter sizes), checks the typed bindings that
// gpu_bindings generated from the device link's kernel manifests against the
// program (no driver needed), then looks for a GPU. Without one it says so
// and exits 0; with one it runs the Rust `saxpy` kernel through its typed
// launch function and checks the result.
#include "fatlink/runtime.h"
#include "kernels_api.h" // gpu_bindings(name = "kernels_api", namespace = "example")

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

// Every typed launch function of kernels_api.h against the program's
// manifests: a header generated from another build of the kernels fails.
int checkBindings() {
  fatlink::rt::Status S = example::check_all();
  if (!S) {
    std::printf("typed bindings: error: %s\n", S.message().c_str());
    return 1;
  }
  std::printf("typed bindings: every kernel matches its manifest\n");
  return 0;
}

// y = 2a * x + y on the GPU (saxpy doubles a through vecmath::twice),
// launched through the typed function: saxpy(a: f32, x: *const f32,
// y: *mut f32) takes a float and two float buffers, and nothing else
// compiles.
int runSaxpy() {
  const uint32_t N = 256;
  std::vector<float> X(N), Y(N);
  for (uint32_t I = 0; I < N; ++I) {
    X[I] = float(I);
    Y[I] = 1.0f;
  }
  const float A = 1.5f;
  fatlink::rt::Expected<fatlink::rt::DeviceBuffer<float>> DX =
      fatlink::rt::DeviceBuffer<float>::from(X);
  fatlink::rt::Expected<fatlink::rt::DeviceBuffer<float>> DY =
      fatlink::rt::DeviceBuffer<float>::from(Y);
  fatlink::rt::Status S = !DX ? DX.status() : !DY ? DY.status() : fatlink::rt::Status();
  if (S)
    S = example::saxpy({1, N}, A, *DX, *DY);
  if (S)
    S = fatlink::rt::synchronize();
  if (S)
    S = DY->copyTo(Y);
  if (!S) {
    std::printf("saxpy: error: %s\n", S.message().c_str());
    return 1;
  }
  for (uint32_t I = 0; I < N; ++I)
    if (Y[I] != 2 * A * X[I] + 1.0f) {
      std::printf("saxpy: wrong result at %u: %g\n", I, Y[I]);
      return 1;
    }
  std::printf("saxpy: %u results correct\n", N);
  return 0;
}

} // namespace

int main() {
  if (int RC = listModules())
    return RC;
  if (int RC = checkBindings())
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
