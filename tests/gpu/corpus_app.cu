// corpus_app.cu: the GPU check of the corpus (testdata/cuda/corpus,
// docs/corpus.md), run by tests/gpu/run.sh. A CUDA C++ host that launches
// corpus kernels defined in other translation units with <<<>>> through the
// CUDA runtime (registered by libfatlink_rt.a from the device link fatlink
// made of every corpus TU and the Rust crate corpus_rs), and the Rust
// kernel rust_corpus_mix by name through fatlink's C++ API; each result is
// compared with the same computation on the host.
// Prints "PASS"/"FAIL" per check; exits 1 if anything failed.
#include "fatlink/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <vector>

// The kernels, as a project header would declare them (their definitions
// and host stubs are in the corpus TUs).
extern "C" {
__global__ void block_scan_dyn(const float *in, float *out, int n);
__global__ void histogram_dyn(const unsigned *values, int n, unsigned *bins,
                              int nbins);
__global__ void warp_reduce_shfl(const float *x, const unsigned *u,
                                 float *fsum, unsigned *usum);
__global__ void warp_vote_match(const unsigned *keys, unsigned *peers,
                                unsigned *flags, unsigned *red);
__global__ void cg_block_reduce(const int *x, int *out, int n);
__global__ void atomic_scopes(unsigned *block_counts, unsigned *device_count,
                              unsigned long long *system_count);
__global__ void cub_block_sort_scan(const unsigned *in, unsigned *sorted,
                                    unsigned *prefix, unsigned *totals);
__global__ void thrust_seq_sort(float *data, int segments);
__global__ void wmma_gemm_f16(const half *a, const half *b, float *c, int m,
                              int n, int k);
__global__ void math_float(const float *x, float *out, int n);
__global__ void device_heap_printf(const int *counts, int *sums);
__global__ void constant_filter(const float *in, float *out, int n);
__global__ void apply_ops(const int *ops, const float *a, const float *b,
                          float *out, int n);
__global__ void shapes_virtual(const float *params, float *area, float *perim,
                               int n);
}
extern __constant__ float filter_taps[9]; // texsurf.cu
extern __constant__ int lookup[16];

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

// Device copies of host vectors, freed at exit (the process is short).
template <typename T> static T *dev(const std::vector<T> &H) {
  T *P = nullptr;
  if (cudaMalloc(&P, H.size() * sizeof(T)) != cudaSuccess)
    return nullptr;
  cudaMemcpy(P, H.data(), H.size() * sizeof(T), cudaMemcpyHostToDevice);
  return P;
}
template <typename T> static T *zeros(size_t N) {
  T *P = nullptr;
  if (cudaMalloc(&P, N * sizeof(T)) != cudaSuccess)
    return nullptr;
  cudaMemset(P, 0, N * sizeof(T));
  return P;
}
template <typename T> static std::vector<T> host(const T *P, size_t N) {
  std::vector<T> H(N);
  cudaMemcpy(H.data(), P, N * sizeof(T), cudaMemcpyDeviceToHost);
  return H;
}

// The launch and the kernel ran: prints the CUDA error otherwise.
static bool ran(const char *What) {
  cudaError_t E = cudaGetLastError();
  if (E == cudaSuccess)
    E = cudaDeviceSynchronize();
  if (E != cudaSuccess) {
    printf("FAIL: %s: %s: %s\n", What, cudaGetErrorName(E), cudaGetErrorString(E));
    ++Failures;
  }
  return E == cudaSuccess;
}

static void sharedMemory() {
  const int N = 1024, B = 256;
  std::vector<float> X(N);
  for (int I = 0; I < N; ++I)
    X[I] = (float)(I % 7) - 2.0f;
  float *DX = dev(X), *DY = zeros<float>(N);
  block_scan_dyn<<<N / B, B, 2 * B * sizeof(float)>>>(DX, DY, N);
  if (ran("block_scan_dyn")) {
    std::vector<float> Y = host(DY, N);
    bool Ok = true;
    for (int Blk = 0; Blk < N / B; ++Blk) {
      float Acc = 0;
      for (int T = 0; T < B; ++T)
        Ok &= close(Y[Blk * B + T], Acc += X[Blk * B + T], 1e-5);
    }
    report(Ok, "block_scan_dyn: inclusive scan in dynamic shared memory");
  }
  const int NB = 64;
  std::vector<unsigned> V(N * 8), Ref(NB);
  for (size_t I = 0; I < V.size(); ++I)
    ++Ref[(V[I] = (unsigned)(I * 2654435761u >> 7)) % NB];
  unsigned *DV = dev(V), *DBins = zeros<unsigned>(NB);
  histogram_dyn<<<16, 256, NB * sizeof(unsigned)>>>(DV, (int)V.size(), DBins, NB);
  if (ran("histogram_dyn"))
    report(host(DBins, NB) == Ref,
           "histogram_dyn: bins in a second TU's extern __shared__ array");
}

static void warps() {
  const int N = 256;
  std::vector<float> X(N);
  std::vector<unsigned> U(N), Keys(N);
  for (int I = 0; I < N; ++I) {
    X[I] = 0.25f * (float)(I % 13);
    U[I] = (unsigned)(I * 7 % 101);
    Keys[I] = (unsigned)(I % 3 + (I / 32) * 8);
  }
  float *DX = dev(X), *DF = zeros<float>(N / 32);
  unsigned *DU = dev(U), *DS = zeros<unsigned>(N / 32);
  warp_reduce_shfl<<<N / 128, 128>>>(DX, DU, DF, DS);
  if (ran("warp_reduce_shfl")) {
    std::vector<float> F = host(DF, N / 32);
    std::vector<unsigned> S = host(DS, N / 32);
    bool Ok = true;
    for (int W = 0; W < N / 32; ++W) {
      float Fs = 0;
      unsigned Us = 0;
      for (int L = 0; L < 32; ++L) {
        Fs += X[W * 32 + L];
        Us += U[W * 32 + L];
      }
      Ok &= close(F[W], Fs, 1e-5) && S[W] == Us;
    }
    report(Ok, "warp_reduce_shfl: shuffle and __reduce_add_sync sums");
  }
  unsigned *DK = dev(Keys), *DP = zeros<unsigned>(N), *DFl = zeros<unsigned>(N),
           *DR = zeros<unsigned>(5 * N);
  warp_vote_match<<<N / 64, 64>>>(DK, DP, DFl, DR);
  if (ran("warp_vote_match")) {
    std::vector<unsigned> P = host(DP, N), Fl = host(DFl, N), R = host(DR, 5 * N);
    bool Ok = true;
    for (int I = 0; I < N; ++I) {
      int W = I / 32;
      unsigned Same = 0, Odd = 0, Mn = ~0u, Mx = 0, A = ~0u, O = 0, Xr = 0;
      bool Seven = false, AllNz = true;
      for (int L = 0; L < 32; ++L) {
        unsigned K = Keys[W * 32 + L];
        Same += K == Keys[I];
        Odd += K & 1;
        Mn = std::min(Mn, K);
        Mx = std::max(Mx, K);
        A &= K;
        O |= K;
        Xr ^= K;
        Seven |= K == 7;
        AllNz &= K != 0;
      }
      unsigned Flags = (AllNz ? 2u : 0u) | (Seven ? 4u : 0u) | (Odd << 8);
      Ok &= P[I] == Same && Fl[I] == Flags && R[5 * I] == Mn &&
            R[5 * I + 1] == Mx && R[5 * I + 2] == A && R[5 * I + 3] == O &&
            R[5 * I + 4] == Xr;
    }
    report(Ok, "warp_vote_match: match.any, votes and warp min/max/and/or/xor");
  }
  std::vector<int> Xi(1000);
  for (int I = 0; I < 1000; ++I)
    Xi[I] = I % 17 - 3;
  int *DXi = dev(Xi), *DOut = zeros<int>(5);
  cg_block_reduce<<<4, 256>>>(DXi, DOut, 1000);
  if (ran("cg_block_reduce")) {
    std::vector<int> Out = host(DOut, 5);
    bool Ok = true;
    int Neg = 0;
    for (int Blk = 0; Blk < 4; ++Blk) {
      int S = 0;
      for (int T = 0; T < 256 && Blk * 256 + T < 1000; ++T)
        S += Xi[Blk * 256 + T];
      Ok &= Out[Blk] == S;
    }
    for (int V : Xi)
      Neg += V < 0;
    report(Ok && Out[4] == Neg,
           "cg_block_reduce: cooperative groups tiles, cg::reduce, coalesced_threads");
  }
}

static void atomics() {
  const int Blocks = 8, Threads = 128;
  unsigned *DB = zeros<unsigned>(2 * Blocks), *DD = zeros<unsigned>(1);
  unsigned long long *DS = zeros<unsigned long long>(2);
  atomic_scopes<<<Blocks, Threads>>>(DB, DD, DS);
  if (ran("atomic_scopes")) {
    std::vector<unsigned> B = host(DB, 2 * Blocks);
    bool Ok = host(DD, 1)[0] == Blocks * Threads &&
              host(DS, 1)[0] == Blocks * Threads;
    for (int I = 0; I < Blocks; ++I)
      Ok &= B[I] == Threads && B[Blocks + I] >= 1 && B[Blocks + I] <= Threads;
    report(Ok, "atomic_scopes: block, device and system scope counts");
  }
}

static void cccl() {
  const int Blocks = 4, Tile = 128 * 4, N = Blocks * Tile;
  std::vector<unsigned> In(N);
  for (int I = 0; I < N; ++I)
    In[I] = (unsigned)(I * 2654435761u) >> 20;
  unsigned *DI = dev(In), *DS = zeros<unsigned>(N), *DP = zeros<unsigned>(N),
           *DT = zeros<unsigned>(Blocks);
  cub_block_sort_scan<<<Blocks, 128>>>(DI, DS, DP, DT);
  if (ran("cub_block_sort_scan")) {
    std::vector<unsigned> S = host(DS, N), P = host(DP, N), T = host(DT, Blocks);
    bool Ok = true;
    for (int Blk = 0; Blk < Blocks; ++Blk) {
      std::vector<unsigned> Ref(In.begin() + Blk * Tile, In.begin() + (Blk + 1) * Tile);
      std::sort(Ref.begin(), Ref.end());
      unsigned Acc = 0;
      for (int I = 0; I < Tile; ++I) {
        // BlockStore direct: thread t holds items t*4 .. t*4+3 (blocked).
        Ok &= S[Blk * Tile + I] == Ref[I] && P[Blk * Tile + I] == Acc;
        Acc += Ref[I];
      }
      Ok &= T[Blk] == Acc;
    }
    report(Ok, "cub_block_sort_scan: CUB radix sort, exclusive scan, reduce");
  }
  const int Segs = 64;
  std::vector<float> D(Segs * 16);
  for (size_t I = 0; I < D.size(); ++I)
    D[I] = std::sin((float)I * 1.7f);
  float *DD = dev(D);
  thrust_seq_sort<<<1, Segs>>>(DD, Segs);
  if (ran("thrust_seq_sort")) {
    std::vector<float> R = host(DD, D.size());
    for (int G = 0; G < Segs; ++G)
      std::sort(D.begin() + G * 16, D.begin() + G * 16 + 16);
    report(R == D, "thrust_seq_sort: thrust::sort(thrust::seq) in device code");
  }
}

static void tensorCores() {
  const int M = 16, N = 16, K = 32;
  std::vector<half> A(M * K), B(N * K);
  std::vector<float> Af(M * K), Bf(N * K);
  for (int I = 0; I < M * K; ++I)
    A[I] = __float2half(Af[I] = (float)((I % 5) - 2) * 0.5f);
  for (int I = 0; I < N * K; ++I)
    B[I] = __float2half(Bf[I] = (float)((I % 3) - 1));
  half *DA = dev(A), *DB = dev(B);
  float *DC = zeros<float>(M * N);
  wmma_gemm_f16<<<dim3(N / 16, M / 16), 32>>>(DA, DB, DC, M, N, K);
  if (ran("wmma_gemm_f16")) {
    std::vector<float> C = host(DC, M * N);
    bool Ok = true;
    for (int R = 0; R < M; ++R)
      for (int Col = 0; Col < N; ++Col) {
        float Acc = 0;
        for (int Kk = 0; Kk < K; ++Kk)
          Acc += Af[R * K + Kk] * Bf[Col * K + Kk]; // B is column major
        Ok &= close(C[R * N + Col], Acc, 1e-3);
      }
    report(Ok, "wmma_gemm_f16: tensor-core GEMM matches the host");
  }
}

static void numerics() {
  const int N = 256;
  std::vector<float> X(N);
  for (int I = 0; I < N; ++I)
    X[I] = 0.01f * (float)I - 1.0f;
  float *DX = dev(X), *DO = zeros<float>(4 * N);
  math_float<<<N / 128, 128>>>(DX, DO, N);
  if (ran("math_float")) {
    std::vector<float> O = host(DO, 4 * N);
    bool Ok = true;
    for (int I = 0; I < N; ++I)
      Ok &= close(O[4 * I], 1.0, 1e-5) && close(O[4 * I + 1], X[I], 1e-4) &&
            close(O[4 * I + 2], std::erf(X[I]), 1e-4) &&
            close(O[4 * I + 3], M_PI / 2 + 2.0, 1e-4);
    report(Ok, "math_float: libdevice sincosf, expf/logf, erff, cbrtf, gamma");
  }
  std::vector<int> Counts(128);
  for (int I = 0; I < 128; ++I)
    Counts[I] = I * 3 % 100;
  int *DC = dev(Counts), *DS = zeros<int>(128);
  device_heap_printf<<<2, 64>>>(DC, DS);
  if (ran("device_heap_printf")) {
    std::vector<int> S = host(DS, 128);
    bool Ok = true;
    for (int I = 0; I < 128; ++I)
      Ok &= S[I] == Counts[I] * (Counts[I] - 1) / 2;
    report(Ok, "device_heap_printf: device malloc/free, printf, assert");
  }
}

static void constantsAndDispatch() {
  const int N = 64;
  float Taps[9];
  int Lut[16];
  for (int K = 0; K < 9; ++K)
    Taps[K] = 0.1f * (float)(K + 1);
  for (int K = 0; K < 16; ++K)
    Lut[K] = K * K;
  std::vector<float> X(N);
  for (int I = 0; I < N; ++I)
    X[I] = (float)(I % 9);
  float *DX = dev(X), *DY = zeros<float>(N);
  cudaError_t E = cudaMemcpyToSymbol(filter_taps, Taps, sizeof(Taps));
  if (E == cudaSuccess)
    E = cudaMemcpyToSymbol(lookup, Lut, sizeof(Lut));
  if (E != cudaSuccess) {
    printf("FAIL: cudaMemcpyToSymbol: %s\n", cudaGetErrorString(E));
    ++Failures;
  } else {
    constant_filter<<<1, N>>>(DX, DY, N);
    if (ran("constant_filter")) {
      std::vector<float> Y = host(DY, N);
      bool Ok = true;
      for (int I = 0; I < N; ++I) {
        float Acc = 0;
        for (int K = 0; K < 9; ++K) {
          int J = I + K - 4;
          Acc += Taps[K] * (J >= 0 && J < N ? X[J] : 0.0f);
        }
        Ok &= close(Y[I], Acc + (float)Lut[I % 16], 1e-5);
      }
      report(Ok, "constant_filter: __constant__ memory written by the host");
    }
  }
  std::vector<int> Ops(N);
  std::vector<float> A(N), B(N);
  for (int I = 0; I < N; ++I) {
    Ops[I] = I % 3;
    A[I] = (float)I * 0.5f;
    B[I] = 3.0f - (float)I;
  }
  int *DOps = dev(Ops);
  float *DA = dev(A), *DB = dev(B), *DO = zeros<float>(N);
  apply_ops<<<1, N>>>(DOps, DA, DB, DO, N);
  if (ran("apply_ops")) {
    std::vector<float> O = host(DO, N);
    bool Ok = true;
    for (int I = 0; I < N; ++I) {
      float R = Ops[I] == 0 ? A[I] + B[I] : Ops[I] == 1 ? A[I] * B[I] : std::max(A[I], B[I]);
      Ok &= close(O[I], R, 1e-6);
    }
    report(Ok, "apply_ops: device function pointers from another TU");
  }
  float *DAr = zeros<float>(N), *DPe = zeros<float>(N);
  shapes_virtual<<<1, N>>>(DA, DAr, DPe, N);
  if (ran("shapes_virtual")) {
    std::vector<float> Ar = host(DAr, N), Pe = host(DPe, N);
    bool Ok = true;
    for (int I = 0; I < N; ++I) {
      float P = A[I];
      bool Circle = I % 2;
      Ok &= close(Ar[I], Circle ? 3.14159265f * P * P : P * 2.0f, 1e-5) &&
            close(Pe[I], Circle ? 2.0f * 3.14159265f * P : 2.0f * (P + 2.0f), 1e-5);
    }
    report(Ok, "shapes_virtual: virtual calls, vtables from another TU");
  }
}

// Rust kernel calling CUDA C++ through extern "C", launched by name.
static void rustMix() {
  auto K = rt::Kernel::get("rust_corpus_mix");
  if (!K) {
    printf("FAIL: get kernel rust_corpus_mix: %s\n", K.status().message().c_str());
    ++Failures;
    return;
  }
  const int N = 64;
  std::vector<float> X(N);
  std::vector<int> Ops(N), Flags(N);
  for (int I = 0; I < N; ++I) {
    X[I] = 0.125f * (float)(I % 8);
    Ops[I] = I % 3;
    Flags[I] = I % 4 == 0;
  }
  auto DX = rt::DeviceBuffer<float>::from(X);
  auto DOps = rt::DeviceBuffer<int>::from(Ops);
  auto DFl = rt::DeviceBuffer<int>::from(Flags);
  auto DOut = rt::DeviceBuffer<float>::zeroed(N);
  auto DD = rt::DeviceBuffer<double>::zeroed(N);
  auto DCnt = rt::DeviceBuffer<unsigned long long>::zeroed(1);
  if (!DX || !DOps || !DFl || !DOut || !DD || !DCnt) {
    printf("FAIL: rust_corpus_mix buffers\n");
    ++Failures;
    return;
  }
  rt::Status S = K->launch({N / 32}, {32}, DX->get(), DOps->get(), DFl->get(),
                           DOut->get(), DD->get(), DCnt->get());
  if (S)
    S = rt::synchronize();
  std::vector<float> Out;
  std::vector<double> D;
  std::vector<unsigned long long> Cnt;
  if (S)
    S = DOut->copyTo(Out);
  if (S)
    S = DD->copyTo(D);
  if (S)
    S = DCnt->copyTo(Cnt);
  if (!S) {
    printf("FAIL: rust_corpus_mix: %s\n", S.message().c_str());
    ++Failures;
    return;
  }
  bool Ok = true;
  unsigned long long Votes = 0;
  for (int W = 0; W < N / 32; ++W) {
    float Sum = 0;
    unsigned V = 0;
    for (int L = 0; L < 32; ++L) {
      Sum += X[W * 32 + L];
      V += Flags[W * 32 + L] != 0;
    }
    Votes += 32ull * V;
    for (int L = 0; L < 32; ++L) {
      int I = W * 32 + L;
      float O = Ops[I] == 0 ? X[I] + Sum : Ops[I] == 1 ? X[I] * Sum : std::max(X[I], Sum);
      float H = __half2float(__float2half(O)) + 0.5f; // half fma, a*1 + 0.5
      Ok &= close(Out[I], H, 2e-3);
      double Xd = X[I];
      Ok &= close(D[I], std::erfc(Xd) + std::lgamma(Xd + 1.0) + std::cbrt(Xd), 1e-12);
    }
  }
  Ok &= Cnt[0] == Votes;
  report(Ok, "Rust rust_corpus_mix calling CUDA C++ shuffles, votes, half, "
             "libdevice, atom.sys and a function-pointer table");
}

// grid_sync_normalize (warp_coop.cu) synchronizes its whole grid
// (cg::this_grid().sync()): launched cooperatively through fatlink's API,
// every value is divided by the largest magnitude; a grid too large to be
// resident at once is refused before the driver sees it.
static void gridSync() {
  auto K = rt::Kernel::get("grid_sync_normalize");
  if (!K) {
    printf("FAIL: get grid_sync_normalize: %s\n", K.status().message().c_str());
    ++Failures;
    return;
  }
  const int N = 8192, Blocks = 16;
  std::vector<float> X(N);
  float Max = 0;
  for (int I = 0; I < N; ++I) {
    X[I] = (float)((I * 37) % 1001) - 500.0f;
    Max = std::max(Max, std::fabs(X[I]));
  }
  auto DX = rt::DeviceBuffer<float>::from(X);
  auto DMax = rt::DeviceBuffer<float>::zeroed(Blocks);
  rt::Status S = !DX ? DX.status() : !DMax ? DMax.status() : rt::Status();
  if (S)
    S = K->launchCooperative({Blocks}, {256}, 0, nullptr, *DX, *DMax, N);
  std::vector<float> Out(N);
  if (S)
    S = rt::synchronize();
  if (S)
    S = DX->copyTo(Out);
  if (!S) {
    printf("FAIL: grid_sync_normalize: %s\n", S.message().c_str());
    ++Failures;
    return;
  }
  bool Ok = true;
  for (int I = 0; I < N; ++I)
    Ok &= close(Out[I], X[I] / Max, 1e-6);
  report(Ok, "grid_sync_normalize: grid.sync() in a cooperative launch "
             "through fatlink's API");
  S = K->launchCooperative({1u << 20}, {256}, 0, nullptr, *DX, *DMax, N);
  report(!S && S.code() == FATLINK_RT_ERROR_INVALID_VALUE &&
             S.message().find("that can be resident at once") !=
                 std::string::npos,
         "a cooperative grid too large to be resident is refused");
  if (!S)
    printf("  message: %s\n", S.message().c_str());
}

int main() {
  int Devices = 0;
  cudaError_t E = cudaGetDeviceCount(&Devices);
  if (E != cudaSuccess || Devices == 0) {
    printf("FAIL: no CUDA device: %s\n", cudaGetErrorString(E));
    return 1;
  }
  sharedMemory();
  warps();
  atomics();
  cccl();
  tensorCores();
  numerics();
  constantsAndDispatch();
  rustMix();
  gridSync();
  printf("%s\n", Failures ? "corpus_app: FAILED" : "corpus_app: all checks passed");
  return Failures ? 1 : 0;
}
