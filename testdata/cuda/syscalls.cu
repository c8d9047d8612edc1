// syscalls.cu: kernels that call what the driver provides (printf, malloc,
// free, assert) and share a device global, for partitioned code generation:
// a and c must stay in one partition (they touch `counter`), and every
// partition's relocatable cubin calls the driver's functions.
#include <cassert>
#include <cstdio>

__device__ int counter;

extern "C" __global__ void sys_a(int *p) {
  printf("a %d\n", p[0]);
  atomicAdd(&counter, 1);
}

extern "C" __global__ void sys_b(int *p) {
  printf("b %d\n", p[1]);
  int *q = (int *)malloc(8);
  q[0] = p[1];
  p[4] = q[0];
  free(q);
  assert(p[2] == 0);
}

extern "C" __global__ void sys_c(int *p) { p[3] = counter; }
