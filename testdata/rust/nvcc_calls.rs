//! nvcc_calls: Rust device code linked with nvcc-compiled CUDA C++
//! (testdata/nvcc/nv_math.cu) in both directions: the kernel
//! `rust_scale_all` calls nvcc's `nv_scale`, `rust_read_calls` reads nvcc's
//! device global `nv_calls`, and nvcc's kernel `nv_square_all` calls
//! `rust_square`.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::prelude::*;

extern "C" {
    fn nv_scale(x: f32) -> f32;
    static mut nv_calls: u32;
}

/// x * x, called by nvcc's kernel nv_square_all.
#[no_mangle]
pub extern "C" fn rust_square(x: f32) -> f32 {
    x * x
}

/// p[i] = nv_scale(p[i]) through nvcc's device function.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn rust_scale_all(p: *mut f32) {
    let i = grid::global_x() as usize;
    *p.add(i) = nv_scale(*p.add(i));
}

/// *out = nv_calls, nvcc's device global.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn rust_read_calls(out: *mut u32) {
    *out = nv_calls;
}
