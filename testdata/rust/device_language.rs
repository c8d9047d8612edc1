//! device_language: Rust a kernel writes that needs more of the language
//! than operators (test/device/language.test): a `static` lookup table, a
//! `static` inside a function, and a struct with a `&mut self` method. Over
//! the minicore, the statics need its drop-glue lang item and the method,
//! at opt-level 1, `s` or `z` or with debug info, its `unpin` ones.
#![feature(no_core, abi_ptx)]
#![no_core]
use fatlink_device::prelude::*;

/// Weights of a 4-tap filter: a read-only table in global memory.
static WEIGHTS: [f32; 4] = [0.125, 0.375, 0.375, 0.125];

/// A running sum with its count.
struct Acc {
    sum: f32,
    n: u32,
}

impl Acc {
    fn push(&mut self, v: f32) {
        self.sum += v;
        self.n += 1;
    }
}

/// y[i] = the filter over x[i..i+4]; n[i] = how many taps were summed.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_filter(x: *const f32, y: *mut f32, n: *mut u32) {
    static SCALE: f32 = 2.0;
    let i = grid::global_x() as usize;
    let mut acc = Acc { sum: 0.0, n: 0 };
    for t in 0usize..4 {
        acc.push(WEIGHTS[t] * *x.add(i + t));
    }
    *y.add(i) = acc.sum * SCALE;
    *n.add(i) = acc.n;
}
