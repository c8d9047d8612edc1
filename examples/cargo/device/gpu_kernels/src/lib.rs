//! gpu_kernels: Rust kernels that call a Rust device crate (gpu_math) and
//! CUDA C++ device code (cuda/activation.cu) across the language boundary,
//! written with fatlink-device (docs/device-rust.md). `#[kernel]` records
//! each kernel's Rust signature for the kernel manifest, against which the
//! host's typed handles (fatlink_rt::Kernel) are checked.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::kernel;
use fatlink_device::prelude::*;

extern "C" {
    /// Defined in CUDA C++ (activation.cu); inlined into the kernel below.
    fn cuda_gelu(x: f32) -> f32;
}

/// y[i] = gelu(a * x[i] + b) for i < n, in a grid-stride loop: any grid
/// size covers any n.
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gelu_affine(a: f32, b: f32, x: *const f32, y: *mut f32, n: usize) {
    let x = slice::from_raw_parts(x, n);
    let y = slice::from_raw_parts_mut(y, n);
    let stride = grid::threads_x() as usize;
    let mut i = grid::global_x() as usize;
    while i < n {
        y[i] = cuda_gelu(gpu_math::affine(a, x[i], b));
        i += stride;
    }
}
