//! gpu_kernels: Rust kernels that call a Rust device crate (gpu_math) and
//! CUDA C++ device code (cuda/activation.cu) across the language boundary.
#![feature(no_core, abi_ptx)]
#![no_core]

use minicore::*;

extern "C" {
    /// Defined in CUDA C++ (activation.cu); inlined into the kernel below.
    fn cuda_gelu(x: f32) -> f32;
}

/// y[i] = gelu(a * x[i] + b)
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gelu_affine(a: f32, b: f32, x: *const f32, y: *mut f32) {
    let i = gpu::global_index() as usize;
    *offset(y, i) = cuda_gelu(gpu_math::affine(a, *offset(x, i), b));
}
