// gpu_app.cu: the GPU check of the runtime (tests/gpu/run.sh). One CUDA C++
// host program that
//  - launches its own kernel with <<<>>> through the CUDA runtime (the
//    fatbin, kernel and __device__ global registered by libfatlink_rt.a,
//    no clang-linker-wrapper), and
//  - launches Rust kernels (testdata/rust) and a CUDA C++ kernel without a
//    host stub (testdata/cuda/softplus.cu) by name through fatlink's C++
//    API, including rust_softplus, whose Rust code calls the CUDA C++
//    device function cuda_softplus,
// and checks every result against the same computation on the host.
// Prints "PASS"/"FAIL" per check and the runtime's message on any error;
// exits 1 if anything failed.
#include "fatlink/runtime.hpp"

#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

__device__ float bias;

__global__ void square_plus_bias(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] * x[i] + bias;
}

// Sums n floats staged in dynamic shared memory by one block: n * 4
// bytes, past the 48 KB a launch gets without asking (the runtime asks).
extern "C" __global__ void smem_big_sum(const float *x, float *out,
                                        unsigned n) {
  extern __shared__ float stage[];
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
    stage[i] = x[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (unsigned i = 0; i < n; ++i)
      s += stage[i];
    *out = s;
  }
}

namespace rt = fatlink::rt;

static int Failures = 0;

static void report(bool Ok, const char *What) {
  printf("%s: %s\n", Ok ? "PASS" : "FAIL", What);
  if (!Ok)
    ++Failures;
}

static bool close(double A, double B, double Tol) {
  return std::fabs(A - B) <= Tol * (1.0 + std::fabs(B));
}

static bool fail(const rt::Status &S, const char *What) {
  printf("FAIL: %s: %s: %s\n", What, S.name(), S.message().c_str());
  ++Failures;
  return false;
}

static const int N = 1024;

static void cudaRuntimeKernel() {
  std::vector<float> X(N), Y(N);
  for (int I = 0; I < N; ++I)
    X[I] = 0.01f * (float)I - 3.0f;
  float *DX, *DY;
  const float Bias = 0.25f;
  cudaError_t E = cudaMalloc(&DX, N * sizeof(float));
  if (E == cudaSuccess)
    E = cudaMalloc(&DY, N * sizeof(float));
  if (E == cudaSuccess)
    E = cudaMemcpy(DX, X.data(), N * sizeof(float), cudaMemcpyHostToDevice);
  if (E == cudaSuccess)
    E = cudaMemcpyToSymbol(bias, &Bias, sizeof(Bias));
  if (E == cudaSuccess) {
    square_plus_bias<<<N / 128, 128>>>(DX, DY, N);
    E = cudaGetLastError();
  }
  if (E == cudaSuccess)
    E = cudaMemcpy(Y.data(), DY, N * sizeof(float), cudaMemcpyDeviceToHost);
  if (E != cudaSuccess) {
    printf("FAIL: CUDA runtime <<<>>> launch: %s (%d): %s\n",
           cudaGetErrorName(E), (int)E, cudaGetErrorString(E));
    ++Failures;
    return;
  }
  bool Ok = true;
  for (int I = 0; I < N; ++I)
    Ok &= close(Y[I], X[I] * X[I] + Bias, 1e-6);
  report(Ok, "CUDA runtime: square_plus_bias<<<>>> with a __device__ global "
             "set by cudaMemcpyToSymbol");
  cudaFree(DX);
  cudaFree(DY);
}

static void fatlinkKernels() {
  auto Saxpy = rt::Kernel::get("saxpy");
  if (!Saxpy) {
    fail(Saxpy.status(), "get kernel saxpy");
    return;
  }
  std::vector<float> X(N), Y(N), Out;
  for (int I = 0; I < N; ++I) {
    X[I] = 0.5f * (float)I;
    Y[I] = 1.0f - (float)I;
  }
  auto DX = rt::DeviceBuffer<float>::from(X);
  auto DY = rt::DeviceBuffer<float>::from(Y);
  if (!DX || !DY) {
    fail(!DX ? DX.status() : DY.status(), "device buffers");
    return;
  }
  const float A = 1.5f;
  rt::Status S = Saxpy->launch({N / 256}, {256}, A, DX->get(), DY->get());
  if (S)
    S = rt::synchronize();
  if (S)
    S = DY->copyTo(Out);
  if (!S) {
    fail(S, "saxpy");
    return;
  }
  bool Ok = true;
  for (int I = 0; I < N; ++I)
    Ok &= close(Out[I], 2 * A * X[I] + Y[I], 1e-6);
  report(Ok, "Rust saxpy (calls vecmath::twice across crates)");

  // rust_softplus: Rust -> CUDA C++ cuda_softplus -> libdevice expf/logf.
  auto Softplus = rt::Kernel::get("rust_softplus");
  if (!Softplus) {
    fail(Softplus.status(), "get kernel rust_softplus");
    return;
  }
  std::vector<float> In(N);
  for (int I = 0; I < N; ++I)
    In[I] = 0.02f * (float)I - 10.0f;
  auto DIn = rt::DeviceBuffer<float>::from(In);
  auto DOut = rt::DeviceBuffer<float>::zeroed(N);
  if (!DIn || !DOut) {
    fail(!DIn ? DIn.status() : DOut.status(), "device buffers");
    return;
  }
  S = Softplus->launch({N / 256}, {256}, DIn->get(), DOut->get());
  if (S)
    S = DOut->copyTo(Out);
  if (!S) {
    fail(S, "rust_softplus");
    return;
  }
  Ok = true;
  for (int I = 0; I < N; ++I)
    Ok &= close(Out[I], std::log(1.0 + std::exp((double)In[I])), 1e-5);
  report(Ok, "Rust rust_softplus calling CUDA C++ cuda_softplus (expf/logf)");

  // vec_sqrt_sin: libdevice __nv_sqrtf and __nv_sin from Rust, f32 and f64.
  auto SqrtSin = rt::Kernel::get("vec_sqrt_sin");
  if (!SqrtSin) {
    fail(SqrtSin.status(), "get kernel vec_sqrt_sin");
    return;
  }
  std::vector<double> B(N), D;
  for (int I = 0; I < N; ++I)
    B[I] = 0.001 * I;
  auto DA = rt::DeviceBuffer<float>::from(X);
  auto DB = rt::DeviceBuffer<double>::from(B);
  auto DD = rt::DeviceBuffer<double>::zeroed(N);
  if (!DA || !DB || !DD) {
    fail(rt::Status(FATLINK_RT_ERROR_OUT_OF_MEMORY, "allocation"), "buffers");
    return;
  }
  S = SqrtSin->launch({N / 256}, {256}, DA->get(), DB->get(), DD->get());
  if (S)
    S = DD->copyTo(D);
  if (!S) {
    fail(S, "vec_sqrt_sin");
    return;
  }
  Ok = true;
  for (int I = 0; I < N; ++I)
    Ok &= close(D[I], std::sqrt((double)X[I]) + std::sin(B[I]), 1e-6);
  report(Ok, "Rust vec_sqrt_sin (libdevice sqrtf and sin)");

  // cuda_scale: a CUDA C++ kernel with no host stub, launched by name.
  auto Scale = rt::Kernel::get("cuda_scale");
  if (!Scale) {
    fail(Scale.status(), "get kernel cuda_scale");
    return;
  }
  auto DV = rt::DeviceBuffer<float>::from(In);
  if (!DV) {
    fail(DV.status(), "buffer");
    return;
  }
  S = Scale->launch({N / 256}, {256}, DV->get(), N);
  if (S)
    S = DV->copyTo(Out);
  if (!S) {
    fail(S, "cuda_scale");
    return;
  }
  Ok = true;
  for (int I = 0; I < N; ++I)
    Ok &= close(Out[I], 0.5 * std::log(1.0 + std::exp((double)In[I])), 1e-5);
  report(Ok, "CUDA C++ cuda_scale by name (reads the __device__ scale_factor)");

  // 100 KB of dynamic shared memory (allowed by the runtime for the
  // launch), then more than any block may have (refused, with the limit).
  auto BigSum = rt::Kernel::get("smem_big_sum");
  if (!BigSum) {
    fail(BigSum.status(), "get kernel smem_big_sum");
    return;
  }
  const unsigned Big = 25600;
  std::vector<float> Values(Big), Sum(1);
  double Expected = 0;
  for (unsigned I = 0; I < Big; ++I)
    Expected += Values[I] = (float)(I % 7);
  auto DValues = rt::DeviceBuffer<float>::from(Values);
  auto DSum = rt::DeviceBuffer<float>::from(Sum);
  S = !DValues ? DValues.status() : !DSum ? DSum.status() : rt::Status();
  if (S)
    S = BigSum->launchOn({1}, {256}, Big * sizeof(float), nullptr, *DValues,
                         *DSum, Big);
  if (S)
    S = DSum->copyTo(Sum);
  if (!S) {
    fail(S, "smem_big_sum with 100 KB of dynamic shared memory");
    return;
  }
  report(Sum[0] == Expected,
         "smem_big_sum: 100 KB of dynamic shared memory (the runtime allows "
         "it)");
  S = BigSum->launchOn({1}, {256}, 300 * 1024, nullptr, *DValues, *DSum, Big);
  report(!S && S.code() == FATLINK_RT_ERROR_INVALID_VALUE &&
             S.message().find("exceed the") != std::string::npos,
         "300 KB of dynamic shared memory is refused with the device's limit");
  if (!S)
    printf("  message: %s\n", S.message().c_str());

  // A wrong launch is refused with the kernel's parameter sizes.
  S = Saxpy->launch({1}, {32}, 1.5, DX->get(), DY->get());
  report(!S && S.code() == FATLINK_RT_ERROR_ARGUMENTS,
         "a double where saxpy takes a float is refused");
  if (!S)
    printf("  message: %s\n", S.message().c_str());
}

int main() {
  int Count = 0;
  rt::Status S = rt::Status::fromLast(fatlink_rt_device_count(&Count));
  if (!S)
    return fail(S, "driver"), 1;
  fatlink_rt_device_info Info;
  if (fatlink_rt_get_device_info(0, &Info) == FATLINK_RT_SUCCESS)
    printf("device 0: %s, sm_%d%d, driver CUDA %d.%d\n", Info.name,
           Info.cc_major, Info.cc_minor, Info.driver_version / 1000,
           (Info.driver_version % 1000) / 10);
  // The fatlink API first: on a GPU without an image its message is the
  // one to check, before the CUDA runtime's own error.
  fatlinkKernels();
  cudaRuntimeKernel();
  printf("%s\n", Failures ? "gpu_app: FAILED" : "gpu_app: all checks passed");
  return Failures ? 1 : 0;
}
