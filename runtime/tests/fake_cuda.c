/* fake_cuda.c: a stand-in for libcuda.so.1, loaded through
 * FATLINK_RT_LIBCUDA, so that the runtime's driver path (device queries,
 * module loading and its failure explanations, launches, memory) runs on
 * machines without a GPU. "Device memory" is host memory, and three kernels
 * are emulated on the CPU (vec_add and saxpy of testdata/rust, scale of
 * docs/cargo.md's minimal project), so a test can check that arguments
 * reach the kernel in order.
 *
 * Configured by the environment:
 *   FAKE_CUDA_INIT      CUresult of cuInit (default 0)
 *   FAKE_CUDA_CC        compute capability as "86" (default 80)
 *   FAKE_CUDA_VERSION   cuDriverGetVersion (default 12080)
 *   FAKE_CUDA_DEVICES   device count (default 1)
 *   FAKE_CUDA_LOAD      CUresult of cuModuleLoadDataEx (default 0)
 *   FAKE_CUDA_JIT_LOG   text written to the JIT error log on a failed load
 *   FAKE_CUDA_TRACE     file that receives one line per module load and
 *                       per launch */
#include <pthread.h>
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
CUresult cuFuncGetAttribute(int *V, int Attr, void *F) {
  (void)F;
  *V = Attr == 0 ? 1024 : env("FAKE_CUDA_CC", 80);
  return 0;
}
CUresult cuLaunchKernel(void *F, unsigned GX, unsigned GY, unsigned GZ,
                        unsigned BX, unsigned BY, unsigned BZ, unsigned Shared,
                        void *Stream, void **Args, void **Extra) {
  (void)Stream;
  (void)Extra;
  if ((unsigned long long)BX * BY * BZ > 1024)
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  const char *Name = F;
  const char *Trace = getenv("FAKE_CUDA_TRACE");
  if (Trace) {
    FILE *T = fopen(Trace, "a");
    if (T) {
      fprintf(T, "launch %s grid %u,%u,%u block %u,%u,%u shared %u\n", Name,
              GX, GY, GZ, BX, BY, BZ, Shared);
      fclose(T);
    }
  }
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
