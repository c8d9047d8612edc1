/* fake_cudart.c: a stand-in for libcudart.so that prints every registration
 * call a CUDA program makes, so a test can check the sequence without a GPU
 * (the real library records registrations silently). Build it as a shared
 * library named libcudart.so and link the program with -L DIR -lcudart:
 *
 *   register fatbin N: wrapper magic 0x466243b1 version 1, container of S bytes
 *   function NAME (handle N)
 *   variable NAME, S bytes (handle N)
 *   end (handle N)
 *   unregister (handle N)
 *
 * S is the fatbin container's size from its header (16 + the u64 at offset
 * 8), for comparison with the program's .nv_fatbin section. Every other
 * runtime call the test programs make fails with cudaErrorNoDevice (100),
 * as on a machine without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct Wrapper {
  uint32_t magic, version;
  const unsigned char *data;
  void *rest;
};

static void *Handles[16];
static int NumHandles;

static int id(void **H) { return H ? (int)(H - Handles) + 1 : 0; }

__attribute__((format(printf, 1, 2)))
static void say(const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  vprintf(Fmt, Ap);
  va_end(Ap);
  fflush(stdout);
}

void **__cudaRegisterFatBinary(void *W) {
  const struct Wrapper *Wr = W;
  uint64_t Size = 0;
  uint32_t Magic = 0;
  memcpy(&Magic, Wr->data, 4);
  memcpy(&Size, Wr->data + 8, 8);
  void **H = &Handles[NumHandles++ % 16];
  say("register fatbin %d: wrapper magic %#x version %u, container magic "
      "%#x of %#llx bytes\n",
      id(H), Wr->magic, Wr->version, Magic, (unsigned long long)(16 + Size));
  return H;
}
void __cudaRegisterFatBinaryEnd(void **H) { say("end (handle %d)\n", id(H)); }
void __cudaUnregisterFatBinary(void **H) {
  say("unregister (handle %d)\n", id(H));
}
void __cudaRegisterFunction(void **H, const char *Stub, char *DevFun,
                            const char *Name, int Limit, void *Tid, void *Bid,
                            void *BDim, void *GDim, int *WSize) {
  say("function %s (handle %d)\n", Name, id(H));
}
void __cudaRegisterVar(void **H, char *Host, char *Dev, const char *Name,
                       int Ext, size_t Size, int Constant, int Global) {
  say("variable %s, %zu bytes (handle %d)\n", Name, Size, id(H));
}
void __cudaRegisterManagedVar(void **H, void **Host, char *Dev,
                              const char *Name, int Ext, size_t Size,
                              int Constant, int Global) {
  say("managed variable %s, %zu bytes (handle %d)\n", Name, Size, id(H));
}
char __cudaInitModule(void **H) { return 0; }

int cudaMalloc(void **P, size_t N) { return 100; }
int cudaFree(void *P) { return 100; }
int cudaMemcpy(void *D, const void *S, size_t N, int K) { return 100; }
int cudaMemcpyFromSymbol(void *D, const void *S, size_t N, size_t Off, int K) {
  return 100;
}
int cudaMemcpyToSymbol(const void *D, const void *S, size_t N, size_t Off,
                       int K) {
  return 100;
}
int cudaDeviceSynchronize(void) { return 100; }
int cudaGetLastError(void) { return 100; }
const char *cudaGetErrorName(int E) {
  return E == 100 ? "cudaErrorNoDevice" : "cudaErrorUnknown";
}
const char *cudaGetErrorString(int E) { return "no CUDA-capable device"; }
unsigned __cudaPushCallConfiguration(/* dim3, dim3, size_t, void * */) {
  return 0;
}
int __cudaPopCallConfiguration(void *G, void *B, size_t *S, void *St) {
  return 100;
}
int __cudaGetKernel(void **K, const void *F) { return 100; }
int __cudaLaunchKernel(/* ... */) { return 100; }
int __cudaLaunchKernel_ptsz(/* ... */) { return 100; }
int cudaLaunchKernel(/* ... */) { return 100; }
