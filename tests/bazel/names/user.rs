//! user_a (--cfg=user_a) and user_b: each adds its twin's value and its
//! twin_macro's offset, so that the program shows which ones it got:
//! user_a 1 + 10 = 11, user_b 2 + 20 = 22.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::prelude::*;

pub fn value() -> f32 {
    twin::value() + twin_macro::offset!()
}

#[cfg(user_a)]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn user_a(out: *mut f32) {
    *out = value();
}

#[cfg(not(user_a))]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn user_b(out: *mut f32) {
    *out = value();
}
