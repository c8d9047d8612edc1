//! top: depends on user_a and user_b, and so on both twin crates (and both
//! twin_macro crates): 11 + 22 = 33.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::prelude::*;

#[no_mangle]
pub unsafe extern "ptx-kernel" fn twins(out: *mut f32) {
    *out = user_a::value() + user_b::value();
}
