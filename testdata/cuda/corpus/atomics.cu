// atomics.cu: atomics of every width and scope, as counters, locks and
// lock-free accumulators use them.
//
// - widths: 16-bit CAS (sm_70+), 32-bit int/unsigned/float, 64-bit
//   unsigned long long/long long/double, __half2 and __nv_bfloat16 adds;
// - operations: add, sub, exch, min, max, inc, dec, and, or, xor, CAS;
// - scopes: the default (device), _block (CTA) and _system (host and peer
//   GPUs see it: atom.sys), the last one on __managed__-style memory;
// - libcu++: cuda::atomic_ref with thread_scope_system / _device / _block
//   and explicit memory orders (atom.acq_rel, ld.acquire, st.release),
//   and a spin lock built on it.
//
// Kernels: atomic_widths, atomic_scopes, atomic_ref_orders, spinlock_sum.
#include "corpus_common.cuh"
#include <cuda/atomic>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct Counters {
  int i32;
  unsigned u32;
  float f32;
  unsigned long long u64;
  long long i64;
  double f64;
  unsigned short u16;
  unsigned short pad;
  __half2 h2;
  __nv_bfloat16 bf16;
};

extern "C" __device__ void corpus_count_system(unsigned long long *counter,
                                               unsigned long long v) {
  atomicAdd_system(counter, v);
}

// Every thread hits every field of *c once.
extern "C" __global__ void atomic_widths(Counters *c, const int *x) {
  int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  atomicAdd(&c->i32, v);
  atomicSub(&c->i32, 1);
  atomicAdd(&c->u32, 1u);
  atomicInc(&c->u32, 0xffffffffu);
  atomicDec(&c->u32, 0xffffffffu);
  atomicAnd(&c->u32, ~0u);
  atomicOr(&c->u32, 0u);
  atomicXor(&c->u32, 0u);
  atomicAdd(&c->f32, 0.5f);
  atomicAdd(&c->u64, 1ull << 33);
  atomicMax(&c->i64, (long long)v);
  atomicMin(&c->i64, -(long long)v);
  atomicAdd(&c->f64, 0.25);
  atomicExch(&c->u64, atomicAdd(&c->u64, 0ull));
  // 16-bit CAS loop (sm_70+): increment a ushort.
  unsigned short old = c->u16, assumed;
  do {
    assumed = old;
    old = atomicCAS(&c->u16, assumed, (unsigned short)(assumed + 1));
  } while (old != assumed);
  atomicAdd(&c->h2, __floats2half2_rn(1.0f, 2.0f));
#if __CUDA_ARCH__ >= 800
  atomicAdd(&c->bf16, __float2bfloat16(1.0f));
#endif
}

// The same counter at three scopes: block-local partials, a device total,
// and a system-wide total the host may poll while the kernel runs.
extern "C" __global__ void atomic_scopes(unsigned *block_counts,
                                         unsigned *device_count,
                                         unsigned long long *system_count) {
  atomicAdd_block(&block_counts[blockIdx.x], 1u);
  atomicAdd(device_count, 1u);
  corpus_count_system(system_count, 1ull);
  atomicExch_system(reinterpret_cast<unsigned *>(system_count) + 2, blockIdx.x);
  atomicCAS_block(&block_counts[gridDim.x + blockIdx.x], 0u, threadIdx.x + 1);
}

// cuda::atomic_ref at each scope with explicit orders: a producer
// publishes data with a release store, consumers acquire it.
extern "C" __global__ void atomic_ref_orders(int *data, int *flag,
                                             unsigned long long *sys_total,
                                             double *dev_sum) {
  cuda::atomic_ref<int, cuda::thread_scope_device> f(*flag);
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> total(*sys_total);
  cuda::atomic_ref<double, cuda::thread_scope_device> sum(*dev_sum);
  __shared__ int block_hits;
  cuda::atomic_ref<int, cuda::thread_scope_block> hits(block_hits);
  if (threadIdx.x == 0)
    hits.store(0, cuda::memory_order_relaxed);
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    data[0] = 42;
    f.store(1, cuda::memory_order_release);
  }
  total.fetch_add(1, cuda::memory_order_acq_rel);
  sum.fetch_add(0.5, cuda::memory_order_relaxed);
  hits.fetch_add(1, cuda::memory_order_relaxed);
  int expected = 0;
  f.compare_exchange_strong(expected, 0, cuda::memory_order_acq_rel,
                            cuda::memory_order_acquire);
  __syncthreads();
  if (threadIdx.x == 0 && f.load(cuda::memory_order_acquire) == 1)
    data[1 + blockIdx.x] = data[0] + hits.load(cuda::memory_order_relaxed);
}

// A global spin lock (one thread per block takes it) guarding a
// non-atomic read-modify-write of a double.
extern "C" __global__ void spinlock_sum(int *lock, double *acc, const double *x) {
  cuda::atomic_ref<int, cuda::thread_scope_device> l(*lock);
  if (threadIdx.x == 0) {
    while (l.exchange(1, cuda::memory_order_acquire) != 0) {
    }
    *acc += x[blockIdx.x];
    l.store(0, cuda::memory_order_release);
  }
}
