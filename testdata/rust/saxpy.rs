//! saxpy: a kernel crate that depends on `vecmath` (Rust) and calls
//! `cuda_softplus`, a device function written in CUDA C++ (`softplus.cu`),
//! which itself calls libdevice's `expf` and `logf`. After the device link no
//! call of either kind may remain in the PTX. The kernels carry
//! `#[fatlink_device::kernel]`: the kernel manifest has their Rust
//! signatures (what each pointer points to, `*const` or `*mut`), so typed
//! launches check them (docs/device-rust.md "Kernel signatures").
#![feature(no_core, abi_ptx)]
#![no_core]

extern crate vecmath;
use fatlink_device::kernel;
use fatlink_device::prelude::*;

extern "C" {
    fn cuda_softplus(x: f32) -> f32;
}

/// y[i] = a * x[i] + y[i]
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn saxpy(a: f32, x: *const f32, y: *mut f32) {
    let i = grid::global_x() as usize;
    *y.add(i) = vecmath::twice(a) * *x.add(i) + *y.add(i);
}

/// y[i] = softplus(x[i]) through CUDA C++
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn rust_softplus(x: *const f32, y: *mut f32) {
    let i = grid::global_x() as usize;
    *y.add(i) = cuda_softplus(*x.add(i));
}
