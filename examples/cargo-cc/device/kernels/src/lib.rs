//! kernels: a Rust kernel that calls CUDA C++ device code compiled by nvcc
//! through the cc crate (cuda/nv_ops.cu, app/build.rs).
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::kernel;
use fatlink_device::prelude::*;

extern "C" {
    /// a * x + b, defined in nv_ops.cu (nvcc).
    fn nv_affine(a: f32, x: f32, b: f32) -> f32;
}

/// y[i] = a * x[i] + b for i < n, through nvcc's device function.
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn rust_affine(a: f32, b: f32, x: *const f32, y: *mut f32, n: u32) {
    let x = slice::from_raw_parts(x, n as usize);
    let y = slice::from_raw_parts_mut(y, n as usize);
    let i = grid::global_x() as usize;
    if i < x.len() {
        y[i] = nv_affine(a, x[i], b);
    }
}
