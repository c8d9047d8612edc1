//! vecmath: a plain device library crate with one kernel and helpers that
//! other crates call across the crate boundary.
#![feature(no_core, abi_ptx)]
#![no_core]

extern crate minicore;
use minicore::*;

/// Twice its argument; called from the `saxpy` crate, inlined at device link.
pub fn twice(x: f32) -> f32 {
    x * 2.0
}

/// Never called by anything: the device link must remove it.
#[no_mangle]
#[inline(never)]
pub fn vecmath_unused_helper(x: f32) -> f32 {
    x * 3.0 + 1.0
}

/// out[i] = a[i] + b[i]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vec_add(a: *const f32, b: *const f32, out: *mut f32) {
    let i = gpu::global_index() as usize;
    *offset(out, i) = *offset(a, i) + *offset(b, i);
}
