//! gpu_math: device functions shared by kernel crates.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::kernel;
use fatlink_device::prelude::*;

/// a * x + b: called from gpu_kernels, inlined by the device link.
pub fn affine(a: f32, x: f32, b: f32) -> f32 {
    a * x + b
}

/// y[i] = a * x[i] + y[i] for i < n
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn axpy(a: f32, x: *const f32, y: *mut f32, n: usize) {
    let x = slice::from_raw_parts(x, n);
    let y = slice::from_raw_parts_mut(y, n);
    let i = grid::global_x() as usize;
    if i < n {
        y[i] = affine(a, x[i], y[i]);
    }
}
