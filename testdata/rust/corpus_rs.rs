//! corpus_rs: a Rust kernel crate that calls into the CUDA C++ corpus
//! (testdata/cuda/corpus) through `extern "C"`, as a Rust project wrapping
//! an existing CUDA library would (fatlink-device gives only the thread's
//! index). Each callee exercises something of the CUDA C++ side: warp
//! shuffles and votes (warp_coop.cu), half precision and libdevice double
//! functions (numerics.cu), a system-scope
//! atomic (atomics.cu) and a call through a device function-pointer table
//! (dispatch_a.cu). After the device link all of it is inlined into the
//! Rust kernel except the indirect call.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::prelude::*;

extern "C" {
    /// Butterfly-shuffle sum over the warp (shfl.sync).
    fn corpus_warp_sum(v: f32) -> f32;
    /// Number of lanes with `pred` set (vote.sync.ballot + popc).
    fn corpus_warp_vote(pred: i32) -> u32;
    /// a * b + c in half precision (fma.rn.f16).
    fn corpus_half_fma(a: f32, b: f32, c: f32) -> f32;
    /// erfc(x) + lgamma(x + 1) + cbrt(x), libdevice double functions.
    fn corpus_special(x: f64) -> f64;
    /// atomicAdd_system on a 64-bit counter (atom.sys).
    fn corpus_count_system(counter: *mut u64, v: u64);
    /// op_table[op](a, b): an indirect call.
    fn corpus_apply_op(op: i32, a: f32, b: f32) -> f32;
}

/// Per thread i (launch whole warps):
///   out[i]  = half_fma(op_table[ops[i]](x[i], warp_sum(x)), 1, 0.5)
///   d[i]    = special(x[i])
///   *counter += number of lanes of the warp with flags[i] != 0 (each lane
///   adds it, so the total is that times 32 per warp).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn rust_corpus_mix(
    x: *const f32,
    ops: *const i32,
    flags: *const i32,
    out: *mut f32,
    d: *mut f64,
    counter: *mut u64,
) {
    let i = grid::global_x() as usize;
    let v = *x.add(i);
    let s = corpus_warp_sum(v);
    let o = corpus_apply_op(*ops.add(i), v, s);
    *out.add(i) = corpus_half_fma(o, 1.0, 0.5);
    *d.add(i) = corpus_special(v as f64);
    let votes = corpus_warp_vote(*flags.add(i));
    corpus_count_system(counter, votes as u64);
}
