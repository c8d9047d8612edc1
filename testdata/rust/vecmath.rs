//! vecmath: a plain device library crate with one kernel and helpers that
//! other crates call across the crate boundary. Its kernels carry
//! `#[fatlink_device::kernel]` (their Rust signatures in the manifest).
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::kernel;
use fatlink_device::prelude::*;

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

extern "C" {
    // libdevice, linked lazily by the device link: only these two (and what
    // they call) may end up in the program.
    fn __nv_sqrtf(x: f32) -> f32;
    fn __nv_sin(x: f64) -> f64;
}

/// out[i] = sqrt(a[i]) + sin(b[i]) through libdevice
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vec_sqrt_sin(a: *const f32, b: *const f64, out: *mut f64) {
    let i = grid::global_x() as usize;
    *out.add(i) = __nv_sqrtf(*a.add(i)) as f64 + __nv_sin(*b.add(i));
}

/// out[i] = a[i] + b[i]
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vec_add(a: *const f32, b: *const f32, out: *mut f32) {
    let i = grid::global_x() as usize;
    *out.add(i) = *a.add(i) + *b.add(i);
}
