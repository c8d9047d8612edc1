//! Atomic read-modify-write operations with an explicit scope and memory
//! ordering: PTX `atom.<sem>.<scope>.<op>.<type>` (sm_70 and newer; the
//! `Cluster` scope needs sm_90).
//!
//! The scope says which threads the operation is atomic with respect to
//! and whose accesses its ordering applies to: `Block` (`.cta`, the threads
//! of one block), `Cluster` (`.cluster`), `Device` (`.gpu`, every thread of
//! the GPU: the usual choice for global memory), `System` (`.sys`, also the
//! host and other GPUs, for mapped or managed memory). The ordering is
//! `Relaxed` (`.relaxed`), `Acquire` (`.acquire`), `Release` (`.release`)
//! or `AcqRel` (`.acq_rel`), as C++'s.
//!
//! Each function returns the value before the operation. The pointer is a
//! generic address (global or shared memory), naturally aligned.
//!
//! | function | PTX |
//! |---|---|
//! | `fetch_add_u32/_u64/_f32/_f64` | `atom.<sem>.<scope>.add.{u32,u64,f32,f64}` |
//! | `fetch_min_u32/_i32`, `fetch_max_u32/_i32` | `atom.<sem>.<scope>.{min,max}.{u32,s32}` |
//! | `fetch_and_u32`, `fetch_or_u32`, `fetch_xor_u32` | `atom.<sem>.<scope>.{and,or,xor}.b32` |
//! | `swap_u32/_u64` | `atom.<sem>.<scope>.exch.{b32,b64}` |
//! | `compare_swap_u32/_u64` | `atom.<sem>.<scope>.cas.{b32,b64}` |
use crate::base::{asm, concat};

/// Which threads an atomic operation or fence is atomic and ordered with.
pub enum Scope {
    /// The threads of the calling block (`.cta`).
    Block,
    /// The threads of the calling block's cluster (`.cluster`, sm_90).
    Cluster,
    /// Every thread of the GPU (`.gpu`).
    Device,
    /// Every thread of the GPU, the host and other GPUs (`.sys`).
    System,
}

impl_copy!(Scope);

/// The memory ordering of an atomic operation, as C++'s.
pub enum Ordering {
    /// Atomic, no ordering of other accesses (`.relaxed`).
    Relaxed,
    /// Later accesses stay after it (`.acquire`).
    Acquire,
    /// Earlier accesses stay before it (`.release`).
    Release,
    /// Both (`.acq_rel`).
    AcqRel,
}
impl_copy!(Ordering);

/// One `asm!` per (scope, ordering); with both known at the call site (the
/// usual case), the optimizer keeps only one.
macro_rules! atom_dispatch {
    ($scope:expr, $order:expr, [$($tail:tt)*], $($operands:tt)*) => {
        match ($scope, $order) {
            (Scope::Block, Ordering::Relaxed) => asm!(concat!("atom.relaxed.cta", $($tail)*), $($operands)*),
            (Scope::Block, Ordering::Acquire) => asm!(concat!("atom.acquire.cta", $($tail)*), $($operands)*),
            (Scope::Block, Ordering::Release) => asm!(concat!("atom.release.cta", $($tail)*), $($operands)*),
            (Scope::Block, Ordering::AcqRel) => asm!(concat!("atom.acq_rel.cta", $($tail)*), $($operands)*),
            (Scope::Cluster, Ordering::Relaxed) => asm!(concat!("atom.relaxed.cluster", $($tail)*), $($operands)*),
            (Scope::Cluster, Ordering::Acquire) => asm!(concat!("atom.acquire.cluster", $($tail)*), $($operands)*),
            (Scope::Cluster, Ordering::Release) => asm!(concat!("atom.release.cluster", $($tail)*), $($operands)*),
            (Scope::Cluster, Ordering::AcqRel) => asm!(concat!("atom.acq_rel.cluster", $($tail)*), $($operands)*),
            (Scope::Device, Ordering::Relaxed) => asm!(concat!("atom.relaxed.gpu", $($tail)*), $($operands)*),
            (Scope::Device, Ordering::Acquire) => asm!(concat!("atom.acquire.gpu", $($tail)*), $($operands)*),
            (Scope::Device, Ordering::Release) => asm!(concat!("atom.release.gpu", $($tail)*), $($operands)*),
            (Scope::Device, Ordering::AcqRel) => asm!(concat!("atom.acq_rel.gpu", $($tail)*), $($operands)*),
            (Scope::System, Ordering::Relaxed) => asm!(concat!("atom.relaxed.sys", $($tail)*), $($operands)*),
            (Scope::System, Ordering::Acquire) => asm!(concat!("atom.acquire.sys", $($tail)*), $($operands)*),
            (Scope::System, Ordering::Release) => asm!(concat!("atom.release.sys", $($tail)*), $($operands)*),
            (Scope::System, Ordering::AcqRel) => asm!(concat!("atom.acq_rel.sys", $($tail)*), $($operands)*),
        }
    };
}

macro_rules! atom_rmw {
    ($(#[$doc:meta])* $name:ident, $t:ty, $ptx:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` is a valid, aligned address of global or shared memory.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, val: $t, scope: Scope, order: Ordering) -> $t {
            let old: $t;
            atom_dispatch!(scope, order, [$ptx, " {0}, [{1}], {2};"],
                out(reg32) old, in(reg64) ptr, in(reg32) val);
            old
        }
    };
    ($(#[$doc:meta])* $name:ident, $t:ty, $ptx:literal, 64) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` is a valid, aligned address of global or shared memory.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, val: $t, scope: Scope, order: Ordering) -> $t {
            let old: $t;
            atom_dispatch!(scope, order, [$ptx, " {0}, [{1}], {2};"],
                out(reg64) old, in(reg64) ptr, in(reg64) val);
            old
        }
    };
}

atom_rmw!(/// `*ptr += val` (`atom.add.u32`).
    fetch_add_u32, u32, ".add.u32");
atom_rmw!(/// `*ptr += val` (`atom.add.u64`).
    fetch_add_u64, u64, ".add.u64", 64);
atom_rmw!(/// `*ptr += val` (`atom.add.f32`).
    fetch_add_f32, f32, ".add.f32");
atom_rmw!(/// `*ptr += val` (`atom.add.f64`).
    fetch_add_f64, f64, ".add.f64", 64);
atom_rmw!(/// `*ptr = min(*ptr, val)` (`atom.min.u32`).
    fetch_min_u32, u32, ".min.u32");
atom_rmw!(/// `*ptr = max(*ptr, val)` (`atom.max.u32`).
    fetch_max_u32, u32, ".max.u32");
atom_rmw!(/// `*ptr = min(*ptr, val)`, signed (`atom.min.s32`).
    fetch_min_i32, i32, ".min.s32");
atom_rmw!(/// `*ptr = max(*ptr, val)`, signed (`atom.max.s32`).
    fetch_max_i32, i32, ".max.s32");
atom_rmw!(/// `*ptr &= val` (`atom.and.b32`).
    fetch_and_u32, u32, ".and.b32");
atom_rmw!(/// `*ptr |= val` (`atom.or.b32`).
    fetch_or_u32, u32, ".or.b32");
atom_rmw!(/// `*ptr ^= val` (`atom.xor.b32`).
    fetch_xor_u32, u32, ".xor.b32");
atom_rmw!(/// `*ptr = val` (`atom.exch.b32`).
    swap_u32, u32, ".exch.b32");
atom_rmw!(/// `*ptr = val` (`atom.exch.b64`).
    swap_u64, u64, ".exch.b64", 64);

/// `*ptr = new` if `*ptr == current` (`atom.cas.b32`); returns the old
/// value, which equals `current` when the swap happened.
///
/// # Safety
/// `ptr` is a valid, aligned address of global or shared memory.
#[inline(always)]
pub unsafe fn compare_swap_u32(ptr: *mut u32, current: u32, new: u32, scope: Scope, order: Ordering) -> u32 {
    let old: u32;
    atom_dispatch!(scope, order, [".cas.b32 {0}, [{1}], {2}, {3};"],
        out(reg32) old, in(reg64) ptr, in(reg32) current, in(reg32) new);
    old
}

/// `*ptr = new` if `*ptr == current` (`atom.cas.b64`); returns the old
/// value.
///
/// # Safety
/// `ptr` is a valid, aligned address of global or shared memory.
#[inline(always)]
pub unsafe fn compare_swap_u64(ptr: *mut u64, current: u64, new: u64, scope: Scope, order: Ordering) -> u64 {
    let old: u64;
    atom_dispatch!(scope, order, [".cas.b64 {0}, [{1}], {2}, {3};"],
        out(reg64) old, in(reg64) ptr, in(reg64) current, in(reg64) new);
    old
}
