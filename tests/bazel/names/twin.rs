//! twin: built twice under one crate name (twin_a, twin_b; --cfg=twin_b
//! tells them apart), so that top's rustc finds two libtwin.rlib.
#![feature(no_core)]
#![no_core]

// The lang items (fatlink-device's minicore).
extern crate fatlink_device as _;

#[cfg(not(twin_b))]
pub fn value() -> f32 {
    1.0
}

#[cfg(twin_b)]
pub fn value() -> f32 {
    2.0
}
