//! typed_kernels: kernels that carry `#[fatlink_device::kernel]`, so that
//! the device link knows their Rust signatures (the sign of each integer,
//! what each pointer points to and whether it is `*const`), not only the
//! IR's (docs/device-rust.md "Kernel signatures", docs/abi.md "The kernel
//! signature record").
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::kernel;
use fatlink_device::prelude::*;

/// A by-value argument: any `Copy` type may be one.
#[repr(C)]
pub struct Pair {
    pub lo: u32,
    pub hi: f32,
}
impl Clone for Pair {
    fn clone(&self) -> Pair {
        *self
    }
}
impl Copy for Pair {}

/// y[i] = a * x[i] + y[i] for i < n
#[kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn typed_axpy(a: f32, x: *const f32, y: *mut f32, n: u32) {
    let i = grid::global_x();
    if i < n {
        *y.add(i as usize) = a * *x.add(i as usize) + *y.add(i as usize);
    }
}

/// out[i] = (in[i] >> shift) + bias, written through the full path.
#[fatlink_device::kernel]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn typed_shift(input: *const i64, out: *mut u8, shift: i32, bias: u64, p: Pair) {
    let i = grid::global_x() as usize;
    *out.add(i) = ((*input.add(i) >> shift as u32) as u64 + bias + p.lo as u64) as u8;
}
