//! fatlink-device: what a Rust kernel needs from the GPU, typed and
//! documented (docs/device-rust.md has the table of every operation, the
//! PTX instruction it compiles to and the oldest GPU that has it).
//!
//! ```ignore
//! #![feature(no_core, abi_ptx)]
//! #![no_core] // or #![no_std] where the target's core is installed
//! use fatlink_device::prelude::*;
//!
//! /// y[i] = a * x[i] + y[i] for i < n
//! #[no_mangle]
//! pub unsafe extern "ptx-kernel" fn axpy(a: f32, x: *const f32, y: *mut f32, n: usize) {
//!     let x = slice::from_raw_parts(x, n);
//!     let y = slice::from_raw_parts_mut(y, n);
//!     let i = grid::global_x() as usize;
//!     if i < n {
//!         y[i] = a * x[i] + y[i];
//!     }
//! }
//! ```
//!
//! Two foundations, one API. Over the target's `core` (rustup's
//! `nvptx64-nvidia-cuda` target on a nightly toolchain, or
//! `-Zbuild-std=core` with the `core` feature) the crate is `#![no_std]`.
//! Without it (machines without rust-src or the target, as this
//! repository's build machines) the crate is `#![no_core]` and includes the
//! minicore (testdata/rust/minicore.rs) as its module `minicore`: the lang
//! items, operators, comparisons, `Option`, range loops and slices a kernel
//! uses. build.rs picks one (cfg `fatlink_device_core`). Kernel crates
//! written `#![no_core]` with `use fatlink_device::prelude::*` build over
//! either.
//!
//! The operations are LLVM NVVM intrinsics where LLVM has one, so the
//! optimizer knows what they do (barriers and warp operations are
//! convergent), and inline PTX otherwise (scoped atomics, `match.all`,
//! fences, shared memory declarations).
#![cfg_attr(not(fatlink_device_core), feature(no_core))]
#![cfg_attr(not(fatlink_device_core), no_core)]
#![cfg_attr(fatlink_device_core, no_std)]
#![cfg_attr(fatlink_device_core, feature(core_intrinsics))]
#![feature(abi_ptx, link_llvm_intrinsics, asm_experimental_arch, allow_internal_unstable)]
#![cfg_attr(
    not(fatlink_device_core),
    feature(lang_items, intrinsics, rustc_attrs, auto_traits, decl_macro, cfg_version)
)]
#![allow(internal_features)]

#[cfg(not(fatlink_device_core))]
#[allow(unused_attributes)]
#[path = "../../../testdata/rust/minicore.rs"]
pub mod minicore;

/// What the rest of the crate takes from `core` or from the minicore.
mod base {
    #[cfg(not(fatlink_device_core))]
    pub use crate::minicore::{
        abort, asm, compile_error, concat, global_asm, size_of, slice, stringify, Clone, Copy, Index, IndexMut, None,
        Option, Some,
    };
    #[cfg(fatlink_device_core)]
    pub use core::{
        arch::{asm, global_asm},
        clone::Clone,
        compile_error, concat,
        intrinsics::abort,
        marker::Copy,
        mem::size_of,
        ops::{Index, IndexMut},
        option::Option::{self, None, Some},
        slice, stringify,
    };
}

/// `Copy` and `Clone` for a plain type (no `derive` over the minicore).
macro_rules! impl_copy {
    ($($t:ty),*) => {$(
        impl crate::base::Copy for $t {}
        impl crate::base::Clone for $t {
            #[inline(always)]
            fn clone(&self) -> $t {
                *self
            }
        }
    )*};
}

/// Over core, a failed check (a bounds check, `unwrap` of `None`) calls
/// the panic handler, which a GPU program must define once: this one traps,
/// as the minicore's checks do. Turn off the default feature
/// `panic-handler` to define your own.
#[cfg(all(fatlink_device_core, feature = "panic-handler"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::intrinsics::abort()
}

pub mod atomic;
pub mod cluster;
pub mod index;
pub mod math;
pub mod shared;
pub mod sync;
pub mod warp;

pub use index::{block, grid, thread, Dim3};

/// `#[fatlink_device::kernel]` (or `use fatlink_device::kernel;` and
/// `#[kernel]`) on a `#[no_mangle] pub unsafe extern "ptx-kernel" fn`:
/// checks at compile time that every argument is `Copy` and no reference,
/// slice or owned host type, and records the kernel's Rust signature in
/// its bitcode for fatlink's kernel manifest and signature checks
/// (docs/device-rust.md, "Kernel signatures"). From the proc-macro crate
/// `fatlink-macros` (the default feature `macros`; by hand, `rustc --cfg
/// 'feature="macros"' --extern fatlink_macros=libfatlink_macros.so`).
#[cfg(feature = "macros")]
pub use fatlink_macros::kernel;

/// What `#[kernel]`'s expansion calls: every argument type goes through
/// `arg::<T>()`, which rustc accepts only for `Copy` types.
/// What `#[kernel]`'s expansion calls to write the signature record: one
/// line of module-level assembly, a PTX comment (docs/abi.md "The kernel
/// signature record").
#[doc(hidden)]
#[macro_export]
#[allow_internal_unstable(asm_experimental_arch)]
macro_rules! __kernel_record {
    ($record:literal) => {
        $crate::__global_asm!($record, options(raw));
    };
}

#[doc(hidden)]
pub mod __kernel {
    #[diagnostic::on_unimplemented(
        message = "kernel argument type `{Self}` is not `Copy`",
        label = "not `Copy`: a kernel argument is copied to the GPU as bytes",
        note = "pass `Copy` values (integers, floats, `Copy` structs) and raw pointers (`*const T`, `*mut T`) to device memory"
    )]
    pub trait KernelArg {}
    impl<T: crate::base::Copy> KernelArg for T {}
    #[inline(always)]
    pub fn arg<T: KernelArg>() {}
}

// For the expansion of `shared_array!` and `#[kernel]` in kernel crates.
#[doc(hidden)]
pub use base::{
    asm as __asm, compile_error as __compile_error, concat as __concat, global_asm as __global_asm, size_of as __size_of, stringify as __stringify,
};

/// Everything a kernel crate needs in one import: the API's modules and,
/// over the minicore, the core items a `#![no_core]` crate has no prelude
/// for (over `core`, `#![no_std]` crates get them from core's prelude).
pub mod prelude {
    pub use crate::index::{block, grid, thread, Dim3};
    #[cfg(not(fatlink_device_core))]
    pub use crate::minicore::{
        slice, Add, AddAssign, BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Clone, Copy, Div,
        DivAssign, Index, IndexMut, IntoIterator, Iterator, Mul, MulAssign, Neg, None, Not, Option, PartialEq,
        PartialOrd, PtrExt, Range, Rem, RemAssign, Shl, ShlAssign, Shr, ShrAssign, SliceExt, Some, Sub, SubAssign,
    };
    pub use crate::{atomic, cluster, math, shared, shared_array, sync, warp};
    #[cfg(fatlink_device_core)]
    pub use core::slice;
}
