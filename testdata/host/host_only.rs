//! host_only: an ordinary host crate. Its rlib has x86-64 objects and no
//! device bitcode, so giving it to the device link is an error.
pub fn host_function(x: u32) -> u32 {
    x + 1
}
