//! scale: a device crate that nothing else in the test graph depends on, so
//! that rules_test.sh can check that editing another crate leaves it alone.
#![feature(no_core, abi_ptx)]
#![no_core]

use fatlink_device::prelude::*;

/// v[i] = v[i] * s
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scale(s: f32, v: *mut f32) {
    let i = grid::global_x() as usize;
    *v.add(i) = *v.add(i) * s;
}
