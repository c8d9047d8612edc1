//! minicore: the few lang items a `#![no_core]` device crate needs.
//!
//! No nvptx `core` is installed on the build machines, so the test crates
//! depend on this crate the way real crates depend on `core`. It defines the
//! marker traits the compiler requires, `Copy` for the scalar types the
//! kernels use, and the handful of intrinsics and operators they call.
#![feature(no_core, lang_items, intrinsics, rustc_attrs, link_llvm_intrinsics)]
#![no_core]
#![allow(internal_features)]

#[lang = "pointee_sized"]
pub trait PointeeSized {}

#[lang = "meta_sized"]
pub trait MetaSized: PointeeSized {}

#[lang = "sized"]
pub trait Sized: MetaSized {}

#[lang = "copy"]
pub trait Copy {}

impl Copy for bool {}
impl Copy for u32 {}
impl Copy for i32 {}
impl Copy for u64 {}
impl Copy for usize {}
impl Copy for f32 {}
impl Copy for f64 {}
impl<T: ?Sized> Copy for *const T {}
impl<T: ?Sized> Copy for *mut T {}

#[lang = "add"]
pub trait Add<Rhs = Self> {
    type Output;
    fn add(self, rhs: Rhs) -> Self::Output;
}

#[lang = "mul"]
pub trait Mul<Rhs = Self> {
    type Output;
    fn mul(self, rhs: Rhs) -> Self::Output;
}

impl Add for f32 {
    type Output = f32;
    fn add(self, rhs: f32) -> f32 {
        self + rhs
    }
}

impl Mul for f32 {
    type Output = f32;
    fn mul(self, rhs: f32) -> f32 {
        self * rhs
    }
}

impl Add for f64 {
    type Output = f64;
    fn add(self, rhs: f64) -> f64 {
        self + rhs
    }
}

impl Add for u32 {
    type Output = u32;
    fn add(self, rhs: u32) -> u32 {
        self + rhs
    }
}

impl Mul for u32 {
    type Output = u32;
    fn mul(self, rhs: u32) -> u32 {
        self * rhs
    }
}

/// Offsets a raw pointer by `count` elements.
#[rustc_intrinsic]
pub unsafe fn offset<Ptr, Delta>(ptr: Ptr, count: Delta) -> Ptr;

/// The thread's position in the grid (x dimension).
pub mod gpu {
    #[allow(improper_ctypes)]
    extern "C" {
        #[link_name = "llvm.nvvm.read.ptx.sreg.tid.x"]
        fn tid_x() -> u32;
        #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.x"]
        fn ntid_x() -> u32;
        #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.x"]
        fn ctaid_x() -> u32;
    }

    #[inline(always)]
    pub fn global_index() -> u32 {
        unsafe { ctaid_x() * ntid_x() + tid_x() }
    }
}
