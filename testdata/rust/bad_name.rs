//! bad_name: a kernel whose exported name is not a PTX identifier. rustc
//! accepts `#[export_name = "scale-by-two"]`; LLVM's NVPTX printer aborts on
//! it ("Symbol name with unsupported characters"); fatlink must refuse it,
//! naming the kernel and this crate.
#![feature(no_core, abi_ptx)]
#![no_core]

extern crate minicore;
use minicore::*;

#[export_name = "scale-by-two"]
pub unsafe extern "ptx-kernel" fn scale_by_two(p: *mut f32) {
    let i = gpu::global_index() as usize;
    *offset(p, i) = *offset(p, i) * 2.0;
}
