//! gpu_math: device functions shared by kernel crates.
#![feature(no_core, abi_ptx)]
#![no_core]

use minicore::*;

/// a * x + b: called from gpu_kernels, inlined by the device link.
pub fn affine(a: f32, x: f32, b: f32) -> f32 {
    a * x + b
}

/// scale[i] = a * x[i] + y[i]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn axpy(a: f32, x: *const f32, y: *mut f32) {
    let i = gpu::global_index() as usize;
    *offset(y, i) = affine(a, *offset(x, i), *offset(y, i));
}
