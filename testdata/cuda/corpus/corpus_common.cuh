// corpus_common.cuh: what the corpus programs share, as a project header
// would: constants, and the C ABI of the device functions that other
// translation units and the Rust crate (testdata/rust/corpus_rs.rs) call.
#pragma once

namespace corpus {
constexpr int kStencilRadius = 3;
} // namespace corpus

// Device functions with C linkage, defined in one TU each and called from
// others (and from Rust through `extern "C"`).
extern "C" {
__device__ float corpus_warp_sum(float v);            // warp_coop.cu
__device__ unsigned corpus_warp_vote(int pred);       // warp_coop.cu
__device__ float corpus_half_fma(float a, float b, float c); // numerics.cu
__device__ double corpus_special(double x);           // numerics.cu
__device__ void corpus_count_system(unsigned long long *counter,
                                    unsigned long long v); // atomics.cu
__device__ float corpus_apply_op(int op, float a, float b); // dispatch.cu
}
