//! minicore: the lang items and core traits a `#![no_core]` device crate
//! needs.
//!
//! No nvptx `core` is installed on the build machines (rustup's
//! `nvptx64-nvidia-cuda` target or `-Zbuild-std=core` would provide it), so
//! device crates depend on this one the way real crates depend on `core`.
//! It is used two ways: included as a module by `fatlink-device`
//! (cargo/fatlink-device, docs/device-rust.md) when no `core` is installed,
//! which is how the kernels under testdata/rust/ and examples/ build here;
//! and as a crate of its own (the minimal examples of docs/cargo.md and
//! docs/bazel.md, the benchmark's generated crates). The crate-level attributes below are ignored in
//! the second use. Never link both: the lang items would be defined twice.
//!
//! What kernels can write over it: integer and float arithmetic with
//! `+ - * / % -x` and their `op=` forms, bit operations and shifts,
//! comparisons (`== != < <= > >=`), `as` casts, `Copy` and `Clone`,
//! slices made from raw pointers (`slice::from_raw_parts`) and indexed with
//! bounds checks, `Option`, and `for i in a..b` loops. A failed check
//! (index out of bounds, division by zero, overflow in debug builds) runs
//! `trap`: the kernel stops with an error the host sees at its next
//! synchronization. There is no formatting, no `panic!` message, no
//! `a..=b`, no `derive`.
//!
//! At the end, two helpers for crates that use this one directly (the
//! minimal examples of docs/cargo.md and docs/bazel.md, the benchmark's
//! generated crates): `offset`, `gpu::global_index`. Kernels use
//! fatlink-device's typed API instead (`grid::global_x`, `ptr.add(i)`).
#![feature(no_core, lang_items, intrinsics, rustc_attrs, auto_traits, decl_macro, link_llvm_intrinsics, cfg_version)]
#![no_core]
#![allow(internal_features)]

// ---- Marker traits -------------------------------------------------------

#[lang = "pointee_sized"]
pub trait PointeeSized {}

#[lang = "meta_sized"]
pub trait MetaSized: PointeeSized {}

#[lang = "sized"]
pub trait Sized: MetaSized {}

#[lang = "copy"]
pub trait Copy: Clone {}

/// Types that can be shared between threads; statics must be `Sync`.
#[lang = "sync"]
pub unsafe auto trait Sync {}

/// Every type is `Freeze` here (there is no `UnsafeCell`).
#[lang = "freeze"]
pub unsafe auto trait Freeze {}

/// Every type may be moved once pinned here (there is no `Pin`); rustc asks
/// for the trait when it optimizes a `&mut self` method (opt-level 1, `s`,
/// or with debug info).
#[lang = "unpin"]
pub auto trait Unpin {}

/// The same question for what a `&mut` may alias (no `UnsafePinned` here).
#[lang = "unsafe_unpin"]
pub unsafe auto trait UnsafeUnpin {}

/// Drop glue: rustc's own code for dropping a value, which a `static`
/// needs (it checks that the value has none to run) and so does a value
/// dropped by a generic function. No type here has a `Drop` impl, so it
/// does nothing. The lang item is `drop_in_place` (taking `*mut T`) up to
/// rustc 1.95 and `drop_glue` (taking `&mut T`) from 1.96 on
/// (rust-lang/rust#154327).
#[cfg(not(version("1.96")))]
#[lang = "drop_in_place"]
#[allow(unconditional_recursion)]
pub unsafe fn drop_in_place<T: PointeeSized>(to_drop: *mut T) {
    unsafe { drop_in_place(to_drop) }
}
#[cfg(version("1.96"))]
#[lang = "drop_glue"]
#[allow(unconditional_recursion)]
pub unsafe fn drop_glue<T: PointeeSized>(to_drop: &mut T) {
    unsafe { drop_glue(to_drop) }
}

/// `&self` and `&mut self` receivers.
#[lang = "legacy_receiver"]
pub trait LegacyReceiver {}
impl<T: PointeeSized> LegacyReceiver for &T {}
impl<T: PointeeSized> LegacyReceiver for &mut T {}

#[lang = "clone"]
pub trait Clone: Sized {
    fn clone(&self) -> Self;
}

macro_rules! copy_clone {
    ($($t:ty)*) => {$(
        impl Copy for $t {}
        impl Clone for $t {
            #[inline(always)]
            fn clone(&self) -> Self {
                *self
            }
        }
    )*};
}
copy_clone!(bool char u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64);

impl<T: PointeeSized> Copy for *const T {}
impl<T: PointeeSized> Clone for *const T {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: PointeeSized> Copy for *mut T {}
impl<T: PointeeSized> Clone for *mut T {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: PointeeSized> Copy for &T {}
impl<T: PointeeSized> Clone for &T {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy, const N: usize> Copy for [T; N] {}
impl<T: Copy, const N: usize> Clone for [T; N] {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

// ---- Operators -----------------------------------------------------------
// The compiler lowers these operators on primitive types itself; the trait
// impls exist because type checking asks for them. `self + rhs` inside an
// impl is that built-in operation, not a recursive call.

macro_rules! binop_trait {
    ($($lang:literal $Trait:ident $method:ident, $alang:literal $ATrait:ident $amethod:ident;)*) => {$(
        #[lang = $lang]
        pub trait $Trait<Rhs = Self> {
            type Output;
            fn $method(self, rhs: Rhs) -> Self::Output;
        }
        #[lang = $alang]
        pub trait $ATrait<Rhs = Self> {
            fn $amethod(&mut self, rhs: Rhs);
        }
    )*};
}
binop_trait! {
    "add" Add add, "add_assign" AddAssign add_assign;
    "sub" Sub sub, "sub_assign" SubAssign sub_assign;
    "mul" Mul mul, "mul_assign" MulAssign mul_assign;
    "div" Div div, "div_assign" DivAssign div_assign;
    "rem" Rem rem, "rem_assign" RemAssign rem_assign;
    "bitand" BitAnd bitand, "bitand_assign" BitAndAssign bitand_assign;
    "bitor" BitOr bitor, "bitor_assign" BitOrAssign bitor_assign;
    "bitxor" BitXor bitxor, "bitxor_assign" BitXorAssign bitxor_assign;
    "shl" Shl shl, "shl_assign" ShlAssign shl_assign;
    "shr" Shr shr, "shr_assign" ShrAssign shr_assign;
}

#[lang = "neg"]
pub trait Neg {
    type Output;
    fn neg(self) -> Self::Output;
}

#[lang = "not"]
pub trait Not {
    type Output;
    fn not(self) -> Self::Output;
}

macro_rules! binop_impl {
    ($Trait:ident $method:ident $ATrait:ident $amethod:ident $op:tt $aop:tt; $($t:ty)*) => {$(
        impl $Trait for $t {
            type Output = $t;
            #[inline(always)]
            fn $method(self, rhs: $t) -> $t {
                self $op rhs
            }
        }
        impl $ATrait for $t {
            #[inline(always)]
            fn $amethod(&mut self, rhs: $t) {
                *self $aop rhs
            }
        }
    )*};
}
macro_rules! arith_impls {
    ($($t:ty)*) => {
        binop_impl!(Add add AddAssign add_assign + +=; $($t)*);
        binop_impl!(Sub sub SubAssign sub_assign - -=; $($t)*);
        binop_impl!(Mul mul MulAssign mul_assign * *=; $($t)*);
        binop_impl!(Div div DivAssign div_assign / /=; $($t)*);
        binop_impl!(Rem rem RemAssign rem_assign % %=; $($t)*);
    };
}
macro_rules! bit_impls {
    ($($t:ty)*) => {
        binop_impl!(BitAnd bitand BitAndAssign bitand_assign & &=; $($t)*);
        binop_impl!(BitOr bitor BitOrAssign bitor_assign | |=; $($t)*);
        binop_impl!(BitXor bitxor BitXorAssign bitxor_assign ^ ^=; $($t)*);
    };
}
macro_rules! shift_impls {
    ($($t:ty)*) => {
        binop_impl!(Shl shl ShlAssign shl_assign << <<=; $($t)*);
        binop_impl!(Shr shr ShrAssign shr_assign >> >>=; $($t)*);
        // Shifts by a u32 amount, as core allows for every integer type.
        shift_by_u32!($($t)*);
    };
}
macro_rules! shift_by_u32 {
    ($($t:ty)*) => {$(
        impl Shl<u32> for $t {
            type Output = $t;
            #[inline(always)]
            fn shl(self, rhs: u32) -> $t {
                self << rhs
            }
        }
        impl Shr<u32> for $t {
            type Output = $t;
            #[inline(always)]
            fn shr(self, rhs: u32) -> $t {
                self >> rhs
            }
        }
    )*};
}
macro_rules! neg_impls {
    ($($t:ty)*) => {$(
        impl Neg for $t {
            type Output = $t;
            #[inline(always)]
            fn neg(self) -> $t {
                -self
            }
        }
    )*};
}
macro_rules! not_impls {
    ($($t:ty)*) => {$(
        impl Not for $t {
            type Output = $t;
            #[inline(always)]
            fn not(self) -> $t {
                !self
            }
        }
    )*};
}
arith_impls!(u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64);
bit_impls!(bool u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize);
shift_impls!(u8 u16 u64 u128 usize i8 i16 i32 i64 i128 isize);
binop_impl!(Shl shl ShlAssign shl_assign << <<=; u32);
binop_impl!(Shr shr ShrAssign shr_assign >> >>=; u32);
neg_impls!(i8 i16 i32 i64 i128 isize f32 f64);
not_impls!(bool u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize);

// ---- Comparisons ---------------------------------------------------------

#[lang = "eq"]
pub trait PartialEq<Rhs: PointeeSized = Self>: PointeeSized {
    fn eq(&self, other: &Rhs) -> bool;
    #[inline(always)]
    fn ne(&self, other: &Rhs) -> bool {
        !self.eq(other)
    }
}

/// `< <= > >=`. A subset of core's trait: no `partial_cmp` (there is no
/// `Ordering`).
#[lang = "partial_ord"]
pub trait PartialOrd<Rhs: PointeeSized = Self>: PartialEq<Rhs> + PointeeSized {
    fn lt(&self, other: &Rhs) -> bool;
    fn le(&self, other: &Rhs) -> bool;
    fn gt(&self, other: &Rhs) -> bool;
    fn ge(&self, other: &Rhs) -> bool;
}

macro_rules! cmp_impls {
    ($($t:ty)*) => {$(
        impl PartialEq for $t {
            #[inline(always)]
            fn eq(&self, other: &$t) -> bool {
                *self == *other
            }
            #[inline(always)]
            fn ne(&self, other: &$t) -> bool {
                *self != *other
            }
        }
        impl PartialOrd for $t {
            #[inline(always)]
            fn lt(&self, other: &$t) -> bool {
                *self < *other
            }
            #[inline(always)]
            fn le(&self, other: &$t) -> bool {
                *self <= *other
            }
            #[inline(always)]
            fn gt(&self, other: &$t) -> bool {
                *self > *other
            }
            #[inline(always)]
            fn ge(&self, other: &$t) -> bool {
                *self >= *other
            }
        }
    )*};
}
cmp_impls!(bool char u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64);

impl<T> PartialEq for *const T {
    #[inline(always)]
    fn eq(&self, other: &*const T) -> bool {
        *self == *other
    }
}
impl<T> PartialEq for *mut T {
    #[inline(always)]
    fn eq(&self, other: &*mut T) -> bool {
        *self == *other
    }
}

// ---- Option --------------------------------------------------------------

#[lang = "Option"]
pub enum Option<T> {
    #[lang = "None"]
    None,
    #[lang = "Some"]
    Some(T),
}
pub use Option::{None, Some};

impl<T: Copy> Copy for Option<T> {}
impl<T: Copy> Clone for Option<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Option<T> {
    /// Whether this is `Some`.
    #[inline(always)]
    pub fn is_some(&self) -> bool {
        match self {
            Some(_) => true,
            None => false,
        }
    }
    /// Whether this is `None`.
    #[inline(always)]
    pub fn is_none(&self) -> bool {
        !self.is_some()
    }
}

// Methods that drop a value (`unwrap_or`'s unused default) need drop glue,
// whose lang item differs between rustc versions (`drop_in_place` in
// 1.95, `drop_glue` later): the minicore has none, so they are for `Copy`
// values, which need none. The same holds for generic kernel code: a type
// parameter taken by value needs a `Copy` bound.
impl<T: Copy> Option<T> {
    /// The value, or `default` for `None`.
    #[inline(always)]
    pub fn unwrap_or(self, default: T) -> T {
        match self {
            Some(x) => x,
            None => default,
        }
    }
    /// The value; `None` traps (the kernel stops with an error).
    #[inline(always)]
    pub fn unwrap(self) -> T {
        match self {
            Some(x) => x,
            None => abort(),
        }
    }
}

// ---- Ranges and iteration ------------------------------------------------

/// `a..b`: the half-open range, as in core.
#[lang = "Range"]
pub struct Range<Idx> {
    pub start: Idx,
    pub end: Idx,
}

#[lang = "iterator"]
pub trait Iterator {
    type Item;
    #[lang = "next"]
    fn next(&mut self) -> Option<Self::Item>;
}

pub trait IntoIterator {
    type Item;
    type IntoIter: Iterator<Item = Self::Item>;
    #[lang = "into_iter"]
    fn into_iter(self) -> Self::IntoIter;
}

impl<I: Iterator> IntoIterator for I {
    type Item = I::Item;
    type IntoIter = I;
    #[inline(always)]
    fn into_iter(self) -> I {
        self
    }
}

macro_rules! range_iter {
    ($($t:ty)*) => {$(
        impl Iterator for Range<$t> {
            type Item = $t;
            #[inline(always)]
            fn next(&mut self) -> Option<$t> {
                if self.start < self.end {
                    let n = self.start;
                    self.start = n + 1;
                    Some(n)
                } else {
                    None
                }
            }
        }
    )*};
}
range_iter!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);

// ---- Slices --------------------------------------------------------------

/// The layout of a slice reference: data pointer, then length.
#[repr(C)]
struct RawSlice<T> {
    ptr: *const T,
    len: usize,
}

/// Slices from raw pointers, as core::slice.
pub mod slice {
    use super::{transmute, RawSlice};

    /// A slice of `len` elements at `data`: the caller guarantees they are
    /// valid for the slice's lifetime, as for core's `from_raw_parts`.
    #[inline(always)]
    pub unsafe fn from_raw_parts<'a, T>(data: *const T, len: usize) -> &'a [T] {
        transmute(RawSlice { ptr: data, len })
    }

    /// A mutable slice of `len` elements at `data` (see `from_raw_parts`).
    #[inline(always)]
    pub unsafe fn from_raw_parts_mut<'a, T>(data: *mut T, len: usize) -> &'a mut [T] {
        transmute(RawSlice { ptr: data as *const T, len })
    }
}

/// `a[i]`: indexing a slice (bounds-checked).
#[lang = "index"]
pub trait Index<Idx> {
    type Output: PointeeSized;
    fn index(&self, index: Idx) -> &Self::Output;
}

/// `a[i] = x`: indexing a slice for writing (bounds-checked).
#[lang = "index_mut"]
pub trait IndexMut<Idx>: Index<Idx> {
    fn index_mut(&mut self, index: Idx) -> &mut Self::Output;
}

impl<T> Index<usize> for [T] {
    type Output = T;
    #[inline(always)]
    fn index(&self, index: usize) -> &T {
        &self[index]
    }
}

impl<T> IndexMut<usize> for [T] {
    #[inline(always)]
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self[index]
    }
}

impl<T, const N: usize> Index<usize> for [T; N] {
    type Output = T;
    #[inline(always)]
    fn index(&self, index: usize) -> &T {
        &self[index]
    }
}

impl<T, const N: usize> IndexMut<usize> for [T; N] {
    #[inline(always)]
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self[index]
    }
}

/// The slice methods kernels use (core has them as inherent methods).
pub trait SliceExt<T> {
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether the slice has no elements.
    fn is_empty(&self) -> bool;
    /// The first element's address.
    fn as_ptr(&self) -> *const T;
    /// The first element's address, for writing.
    fn as_mut_ptr(&mut self) -> *mut T;
}

impl<T> SliceExt<T> for [T] {
    #[inline(always)]
    fn len(&self) -> usize {
        unsafe { transmute::<&[T], RawSlice<T>>(self).len }
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline(always)]
    fn as_ptr(&self) -> *const T {
        self as *const [T] as *const T
    }
    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut T {
        self as *mut [T] as *mut T
    }
}

/// Raw pointer arithmetic (core has it as inherent methods).
pub trait PtrExt: Sized {
    /// The pointer `count` elements further; it stays inside the same
    /// allocation.
    unsafe fn add(self, count: usize) -> Self;
    /// The pointer `count` elements further, with no requirement.
    fn wrapping_add(self, count: usize) -> Self;
}

impl<T> PtrExt for *const T {
    #[inline(always)]
    unsafe fn add(self, count: usize) -> *const T {
        offset(self, count)
    }
    #[inline(always)]
    fn wrapping_add(self, count: usize) -> *const T {
        (self as usize + count * size_of::<T>()) as *const T
    }
}

impl<T> PtrExt for *mut T {
    #[inline(always)]
    unsafe fn add(self, count: usize) -> *mut T {
        offset(self, count)
    }
    #[inline(always)]
    fn wrapping_add(self, count: usize) -> *mut T {
        (self as usize + count * size_of::<T>()) as *mut T
    }
}

// ---- Intrinsics ----------------------------------------------------------

/// Offsets a raw pointer by `count` elements.
#[rustc_intrinsic]
pub unsafe fn offset<Ptr, Delta>(ptr: Ptr, count: Delta) -> Ptr;

/// Reinterprets the bits of a value as another type of the same size.
#[rustc_intrinsic]
pub unsafe fn transmute<Src, Dst>(src: Src) -> Dst;

mod intrinsics {
    // Nullary intrinsics: only callable in a const block.
    #[rustc_intrinsic]
    pub const fn size_of<T>() -> usize;
    #[rustc_intrinsic]
    pub const fn align_of<T>() -> usize;
}

/// The size of a type in bytes.
#[inline(always)]
pub const fn size_of<T>() -> usize {
    const { intrinsics::size_of::<T>() }
}

/// The alignment of a type in bytes.
#[inline(always)]
pub const fn align_of<T>() -> usize {
    const { intrinsics::align_of::<T>() }
}

/// Inline PTX (`core::arch::asm!`; on nvptx it needs
/// `#![feature(asm_experimental_arch)]`).
#[rustc_builtin_macro]
pub macro asm("assembly template", $(operands,)* $(options($(option),*))?) {
    /* compiler built-in */
}

/// Module-level PTX (`core::arch::global_asm!`).
#[rustc_builtin_macro]
pub macro global_asm("assembly template", $(operands,)* $(options($(option),*))?) {
    /* compiler built-in */
}

/// Concatenates literals into one string literal (`core::concat!`).
#[rustc_builtin_macro]
pub macro concat($($arg:tt)*) {
    /* compiler built-in */
}

/// The tokens as a string literal (`core::stringify!`).
#[rustc_builtin_macro]
pub macro stringify($($t:tt)*) {
    /* compiler built-in */
}

/// A compile-time error with a message (`core::compile_error!`; what
/// `#[fatlink_device::kernel]` reports with).
#[rustc_builtin_macro]
pub macro compile_error($msg:expr $(,)?) {
    /* compiler built-in */
}

/// Stops the kernel (PTX `trap`).
#[rustc_intrinsic]
pub fn abort() -> !;

// ---- Failed checks -------------------------------------------------------
// The compiler calls these for its own checks (bounds, division by zero,
// overflow in debug builds), with the caller's location, which a GPU
// cannot print: each one traps.

/// A source location, as the compiler builds it for the checks below.
#[lang = "panic_location"]
#[allow(dead_code)]
pub struct Location<'a> {
    file: &'a str,
    line: u32,
    col: u32,
}

#[lang = "panic_bounds_check"]
#[track_caller]
#[inline(always)]
fn panic_bounds_check(_index: usize, _len: usize) -> ! {
    abort()
}

/// `panic` with a fixed message (used by a few compiler-generated checks).
#[lang = "panic"]
#[track_caller]
#[inline(always)]
pub fn panic(_expr: &'static str) -> ! {
    abort()
}

macro_rules! panic_const {
    ($($lang:literal $name:ident)*) => {$(
        #[lang = $lang]
        #[track_caller]
        #[inline(always)]
        pub fn $name() -> ! {
            abort()
        }
    )*};
}
panic_const! {
    "panic_const_add_overflow" panic_const_add_overflow
    "panic_const_sub_overflow" panic_const_sub_overflow
    "panic_const_mul_overflow" panic_const_mul_overflow
    "panic_const_div_overflow" panic_const_div_overflow
    "panic_const_rem_overflow" panic_const_rem_overflow
    "panic_const_neg_overflow" panic_const_neg_overflow
    "panic_const_shr_overflow" panic_const_shr_overflow
    "panic_const_shl_overflow" panic_const_shl_overflow
    "panic_const_div_by_zero" panic_const_div_by_zero
    "panic_const_rem_by_zero" panic_const_rem_by_zero
}

// ---- Helpers of crates that use the minicore directly --------------------

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
