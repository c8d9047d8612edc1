//! kernels: Rust kernels linked with CUDA C++ that nvcc compiled
//! (cuda/nv_ops.cu), calls crossing the boundary both ways: the Rust kernel
//! `rust_affine` calls nvcc's `nv_affine`, and nvcc's kernel `nv_cube_all`
//! calls `rust_cube`, defined here.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::kernel;
use fatlink_device::prelude::*;

extern "C" {
    /// a * x + b, defined in nv_ops.cu (nvcc).
    fn nv_affine(a: f32, x: f32, b: f32) -> f32;
}

/// x * x * x, called by nvcc's kernel nv_cube_all.
#[no_mangle]
pub extern "C" fn rust_cube(x: f32) -> f32 {
    x * x * x
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
