//! bad_name: a kernel whose exported name is not a PTX identifier. rustc
//! accepts `#[export_name = "scale-by-two"]`; LLVM's NVPTX printer aborts on
//! it ("Symbol name with unsupported characters"); fatlink must refuse it,
//! naming the kernel and this crate.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::prelude::*;

#[export_name = "scale-by-two"]
pub unsafe extern "ptx-kernel" fn scale_by_two(p: *mut f32) {
    let i = grid::global_x() as usize;
    *p.add(i) = *p.add(i) * 2.0;
}
