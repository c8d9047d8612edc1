/* fake_cuda.c: a stand-in for libcuda.so.1, loaded through
 * FATLINK_RT_LIBCUDA, so that the runtime's driver path (device queries,
 * module loading and its failure explanations, launches, memory) runs on
 * machines without a GPU. "Device memory" is host memory, and a few kernels
 * are emulated on the CPU (vec_add and saxpy of testdata/rust, scale of
 * docs/cargo.md's minimal project, axpy and iota of
 * test/runtime/rust-typed.test), so a test can check that arguments
 * reach the kernel in order. Kernels run at once, when launched; streams
 * and events are numbers (1, 2, ...) that the trace names, and the time
 * between two events is 1.5 ms per launch between their records.
 *
 * Configured by the environment:
 *   FAKE_CUDA_INIT      CUresult of cuInit (default 0)
 *   FAKE_CUDA_CC        compute capability as "86" (default 80)
 *   FAKE_CUDA_VERSION   cuDriverGetVersion (default 12080)
 *   FAKE_CUDA_DEVICES   device count (default 1)
 *   FAKE_CUDA_LOAD      CUresult of cuModuleLoadDataEx (default 0)
 *   FAKE_CUDA_JIT_LOG   text written to the JIT error log on a failed load
 *   FAKE_CUDA_TRACE     file that receives one line per module load, per
 *                       launch (naming its stream unless it is the
 *                       default one) and per stream or event call */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

static int env(const char *Name, int Default) {
  const char *V = getenv(Name);
  return V && *V ? atoi(V) : Default;
}

CUresult cuInit(unsigned Flags) {
  (void)Flags;
  return env("FAKE_CUDA_INIT", 0);
}
CUresult cuDriverGetVersion(int *V) {
  *V = env("FAKE_CUDA_VERSION", 12080);
  return 0;
}
CUresult cuDeviceGetCount(int *N) {
  *N = env("FAKE_CUDA_DEVICES", 1);
  return 0;
}
CUresult cuDeviceGet(int *D, int Ordinal) {
  *D = Ordinal;
  return 0;
}
CUresult cuDeviceGetName(char *Name, int Len, int D) {
  snprintf(Name, (size_t)Len, "Fake GPU %d", D);
  return 0;
}
CUresult cuDeviceGetAttribute(int *V, int Attr, int D) {
  (void)D;
  int CC = env("FAKE_CUDA_CC", 80);
  if (Attr == 75)
    *V = CC / 10;
  else if (Attr == 76)
    *V = CC % 10;
  else if (Attr == 97) /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: an A100's */
    *V = env("FAKE_CUDA_SMEM_OPTIN", 166912);
  else if (Attr == 16) /* MULTIPROCESSOR_COUNT: an A100's */
    *V = env("FAKE_CUDA_SMS", 108);
  else if (Attr == 95) /* COOPERATIVE_LAUNCH */
    *V = env("FAKE_CUDA_COOPERATIVE", 1);
  else
    *V = 0;
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *Bytes, int D) {
  (void)D;
  *Bytes = (size_t)1 << 30;
  return 0;
}
static int Ctx;
CUresult cuDevicePrimaryCtxRetain(void **C, int D) {
  (void)D;
  *C = &Ctx;
  return 0;
}
CUresult cuCtxSetCurrent(void *C) {
  (void)C;
  return 0;
}
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuModuleLoadDataEx(void **M, const void *Image, unsigned N,
                            int *Opts, void **Vals) {
  int R = env("FAKE_CUDA_LOAD", 0);
  uint32_t Magic;
  memcpy(&Magic, Image, 4);
  if (!R && Magic != 0xba55ed50u)
    R = 200; /* CUDA_ERROR_INVALID_IMAGE */
  if (R) {
    const char *Log = getenv("FAKE_CUDA_JIT_LOG");
    for (unsigned I = 0; Log && I < N; ++I)
      if (Opts[I] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
        snprintf((char *)Vals[I], 256, "%s", Log);
    return R;
  }
  const char *Trace = getenv("FAKE_CUDA_TRACE");
  FILE *T = Trace ? fopen(Trace, "a") : NULL;
  if (T) {
    fprintf(T, "load\n");
    fclose(T);
  }
  *M = (void *)Image;
  return 0;
}
/* A function handle is its kernel's name, kept by the driver (here in a
 * table, as a real driver keeps its functions until the module unloads). */
CUresult cuModuleGetFunction(void **F, void *M, const char *Name) {
  (void)M;
  static char Names[64][256];
  static int NumNames;
  static pthread_mutex_t Lock = PTHREAD_MUTEX_INITIALIZER;
  CUresult R = 0;
  pthread_mutex_lock(&Lock);
  int I = 0;
  while (I < NumNames && strcmp(Names[I], Name) != 0)
    ++I;
  if (I == NumNames && (NumNames == 64 || strlen(Name) >= sizeof(Names[0])))
    R = 500; /* CUDA_ERROR_NOT_FOUND */
  else if (I == NumNames)
    snprintf(Names[NumNames++], sizeof(Names[0]), "%s", Name);
  pthread_mutex_unlock(&Lock);
  *F = R ? NULL : Names[I];
  return R;
}
static void trace(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));
/* Each function's dynamic shared memory allowance (48 KB until raised),
 * by handle. */
static struct {
  void *F;
  int Bytes;
} Allowances[64];
static int NumAllowances;
static int *allowance(void *F) {
  for (int I = 0; I < NumAllowances; ++I)
    if (Allowances[I].F == F)
      return &Allowances[I].Bytes;
  if (NumAllowances == 64)
    abort();
  Allowances[NumAllowances].F = F;
  Allowances[NumAllowances].Bytes = 48 * 1024;
  return &Allowances[NumAllowances++].Bytes;
}
static pthread_mutex_t AllowanceLock = PTHREAD_MUTEX_INITIALIZER;
CUresult cuFuncGetAttribute(int *V, int Attr, void *F) {
  if (Attr == 0) /* MAX_THREADS_PER_BLOCK */
    *V = 1024;
  else if (Attr == 1) /* SHARED_SIZE_BYTES */
    *V = env("FAKE_CUDA_STATIC_SMEM", 0);
  else if (Attr == 8) { /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    pthread_mutex_lock(&AllowanceLock);
    *V = *allowance(F);
    pthread_mutex_unlock(&AllowanceLock);
  } else
    *V = env("FAKE_CUDA_CC", 80);
  return 0;
}
CUresult cuFuncSetAttribute(void *F, int Attr, int V) {
  if (Attr != 8)
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  if (env("FAKE_CUDA_SET_ATTRIBUTE", 0))
    return env("FAKE_CUDA_SET_ATTRIBUTE", 0);
  trace("allow %s dynamic shared %d", (const char *)F, V);
  pthread_mutex_lock(&AllowanceLock);
  *allowance(F) = V;
  pthread_mutex_unlock(&AllowanceLock);
  return 0;
}
static void trace(const char *Fmt, ...) {
  const char *Trace = getenv("FAKE_CUDA_TRACE");
  FILE *T = Trace ? fopen(Trace, "a") : NULL;
  if (!T)
    return;
  va_list Ap;
  va_start(Ap, Fmt);
  vfprintf(T, Fmt, Ap);
  va_end(Ap);
  fputc('\n', T);
  fclose(T);
}

/* Streams and events are numbered from 1 (the handle is the number); an
 * event remembers how many launches came before its record. */
static pthread_mutex_t Lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long NextStream = 1, NextEvent = 1, Launches;
static unsigned long EventLaunches[256];

CUresult cuStreamCreate(void **S, unsigned Flags) {
  pthread_mutex_lock(&Lock);
  unsigned long N = NextStream++;
  pthread_mutex_unlock(&Lock);
  *S = (void *)N;
  trace("stream %lu create flags %u", N, Flags);
  return 0;
}
CUresult cuStreamDestroy_v2(void *S) {
  if (!S)
    return 400; /* CUDA_ERROR_INVALID_HANDLE */
  trace("stream %lu destroy", (unsigned long)S);
  return 0;
}
CUresult cuStreamSynchronize(void *S) {
  trace("stream %lu sync", (unsigned long)S);
  return 0;
}
CUresult cuStreamWaitEvent(void *S, void *E, unsigned Flags) {
  (void)Flags;
  trace("stream %lu wait event %lu", (unsigned long)S, (unsigned long)E);
  return 0;
}
CUresult cuEventCreate(void **E, unsigned Flags) {
  pthread_mutex_lock(&Lock);
  unsigned long N = NextEvent < 256 ? NextEvent++ : 0;
  pthread_mutex_unlock(&Lock);
  if (!N)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *E = (void *)N;
  trace("event %lu create flags %u", N, Flags);
  return 0;
}
CUresult cuEventDestroy_v2(void *E) {
  trace("event %lu destroy", (unsigned long)E);
  return 0;
}
CUresult cuEventRecord(void *E, void *S) {
  unsigned long N = (unsigned long)E;
  if (N == 0 || N >= 256)
    return 400;
  pthread_mutex_lock(&Lock);
  EventLaunches[N] = Launches + 1; /* 0: never recorded */
  pthread_mutex_unlock(&Lock);
  trace("event %lu record on stream %lu", N, (unsigned long)S);
  return 0;
}
CUresult cuEventSynchronize(void *E) {
  trace("event %lu sync", (unsigned long)E);
  return 0;
}
CUresult cuEventElapsedTime_v2(float *Ms, void *Start, void *End) {
  unsigned long A = (unsigned long)Start, B = (unsigned long)End;
  if (A == 0 || A >= 256 || B == 0 || B >= 256)
    return 400;
  if (!EventLaunches[A] || !EventLaunches[B])
    return 600; /* CUDA_ERROR_NOT_READY */
  *Ms = 1.5f * (float)((long)EventLaunches[B] - (long)EventLaunches[A]);
  return 0;
}

/* Blocks of F resident per SM: FAKE_CUDA_OCCUPANCY, 2 by default. */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *N, void *F,
                                                     int Threads,
                                                     size_t Shared) {
  (void)F;
  (void)Shared;
  *N = Threads > 1024 ? 0 : env("FAKE_CUDA_OCCUPANCY", 2);
  return env("FAKE_CUDA_OCCUPANCY_ERROR", 0);
}
CUresult cuLaunchKernel(void *F, unsigned GX, unsigned GY, unsigned GZ,
                        unsigned BX, unsigned BY, unsigned BZ, unsigned Shared,
                        void *Stream, void **Args, void **Extra);
CUresult cuLaunchCooperativeKernel(void *F, unsigned GX, unsigned GY,
                                   unsigned GZ, unsigned BX, unsigned BY,
                                   unsigned BZ, unsigned Shared, void *Stream,
                                   void **Args) {
  trace("cooperative:");
  return cuLaunchKernel(F, GX, GY, GZ, BX, BY, BZ, Shared, Stream, Args, NULL);
}
CUresult cuLaunchKernel(void *F, unsigned GX, unsigned GY, unsigned GZ,
                        unsigned BX, unsigned BY, unsigned BZ, unsigned Shared,
                        void *Stream, void **Args, void **Extra) {
  (void)Stream;
  (void)Extra;
  if ((unsigned long long)BX * BY * BZ > 1024)
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  int Allowed;
  cuFuncGetAttribute(&Allowed, 8, F);
  if (Shared > (unsigned)Allowed)
    return 1; /* CUDA_ERROR_INVALID_VALUE, as the driver returns */
  const char *Name = F;
  char On[32] = "";
  if (Stream)
    snprintf(On, sizeof(On), " stream %lu", (unsigned long)Stream);
  trace("launch %s grid %u,%u,%u block %u,%u,%u shared %u%s", Name, GX, GY,
        GZ, BX, BY, BZ, Shared, On);
  pthread_mutex_lock(&Lock);
  ++Launches;
  pthread_mutex_unlock(&Lock);
  size_t N = (size_t)GX * BX;
  if (strcmp(Name, "vec_add") == 0) {
    float *A = *(float **)Args[0], *B = *(float **)Args[1],
          *Out = *(float **)Args[2];
    for (size_t I = 0; A && B && Out && I < N; ++I)
      Out[I] = A[I] + B[I];
  } else if (strcmp(Name, "saxpy") == 0) {
    float Alpha = *(float *)Args[0];
    float *X = *(float **)Args[1], *Y = *(float **)Args[2];
    for (size_t I = 0; X && Y && I < N; ++I)
      Y[I] = 2 * Alpha * X[I] + Y[I];
  } else if (strcmp(Name, "_Z4axpyfPKfPfj") == 0) {
    /* axpy(float a, const float *x, float *y, unsigned n) */
    float A = *(float *)Args[0];
    const float *X = *(const float **)Args[1];
    float *Y = *(float **)Args[2];
    unsigned Count = *(unsigned *)Args[3];
    for (size_t I = 0; X && Y && I < N && I < Count; ++I)
      Y[I] = A * X[I] + Y[I];
  } else if (strcmp(Name, "_Z4iotaPxxi") == 0) {
    /* iota(long long *out, long long start, int step) */
    long long *Out = *(long long **)Args[0];
    long long Start = *(long long *)Args[1];
    int Step = *(int *)Args[2];
    for (size_t I = 0; Out && I < N; ++I)
      Out[I] = Start + (long long)I * Step;
  } else if (strcmp(Name, "scale") == 0) {
    float A = *(float *)Args[0];
    float *X = *(float **)Args[1];
    for (size_t I = 0; X && I < N; ++I)
      X[I] = A * X[I];
  }
  return 0;
}
CUresult cuMemAlloc_v2(unsigned long long *P, size_t Bytes) {
  if (Bytes > ((size_t)1 << 30))
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *P = (unsigned long long)(uintptr_t)malloc(Bytes);
  return 0;
}
CUresult cuMemFree_v2(unsigned long long P) {
  free((void *)(uintptr_t)P);
  return 0;
}
CUresult cuMemsetD8_v2(unsigned long long P, unsigned char V, size_t N) {
  memset((void *)(uintptr_t)P, V, N);
  return 0;
}
CUresult cuMemcpyHtoD_v2(unsigned long long D, const void *S, size_t N) {
  memcpy((void *)(uintptr_t)D, S, N);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *D, unsigned long long S, size_t N) {
  memcpy(D, (const void *)(uintptr_t)S, N);
  return 0;
}
CUresult cuMemGetInfo_v2(size_t *Free, size_t *Total) {
  *Free = (size_t)1 << 29;
  *Total = (size_t)1 << 30;
  return 0;
}
CUresult cuGetErrorName(CUresult R, const char **S) {
  (void)R;
  *S = "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuGetErrorString(CUresult R, const char **S) {
  *S = R == 209 ? "no kernel image is available for execution on the device"
                : "fake driver error";
  return 0;
}
