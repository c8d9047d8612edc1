//! Shared memory: per-block memory that the threads of a block share.
//!
//! Static arrays are declared with [`shared_array!`](crate::shared_array)
//! (a module-scope `.shared` variable, as CUDA's `__shared__ T a[N]`), the
//! dynamic area sized at launch with [`dynamic`] (`.extern .shared`, as
//! CUDA's `extern __shared__ T a[]`). Rust has no address spaces, so both
//! hand out generic pointers (`cvta.shared.u64`): accesses are generic
//! `ld`/`st`, which the GPU routes to shared memory.
//!
//! Shared memory is written by many threads at once: order conflicting
//! accesses with `block::sync()` (or atomics), which is why the accessors
//! are `unsafe`.
use crate::base::{abort, asm, global_asm, Index, IndexMut};
#[cfg(not(fatlink_device_core))]
use crate::minicore::PtrExt;

/// A block's static shared array of `N` elements of `T`, made by
/// [`shared_array!`](crate::shared_array). Indexing is bounds-checked
/// (a bad index traps).
pub struct SharedArray<T, const N: usize> {
    ptr: *mut T,
}

impl<T, const N: usize> SharedArray<T, N> {
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn from_raw(ptr: *mut T) -> Self {
        SharedArray { ptr }
    }
    /// The number of elements, `N`.
    #[inline(always)]
    pub fn len(&self) -> usize {
        N
    }
    /// Whether `N` is 0.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        N == 0
    }
    /// The first element's generic address.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

impl<T, const N: usize> Index<usize> for SharedArray<T, N> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        if i >= N {
            abort()
        }
        unsafe { &*(self.ptr as *const T).wrapping_add(i) }
    }
}

impl<T, const N: usize> IndexMut<usize> for SharedArray<T, N> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        if i >= N {
            abort()
        }
        unsafe { &mut *self.ptr.wrapping_add(i) }
    }
}

/// Declares a block's static shared array and a function that returns it:
///
/// ```ignore
/// shared_array! {
///     /// One tile of the input.
///     static TILE: [f32; 256];
/// }
/// // in the kernel:
/// let mut tile = unsafe { TILE() };
/// tile[thread::idx_x() as usize] = x;
/// block::sync();
/// ```
///
/// The PTX is `.shared .align 16 .b8 TILE[1024];` at module scope and
/// `cvta.shared.u64` where the function is called. The name is the PTX
/// symbol: it must be unique in the program (two crates declaring `TILE`
/// are a duplicate device symbol at the device link, naming both). Every
/// GPU has it.
///
/// # Safety of the function
/// The memory is uninitialized at kernel start and shared by the block's
/// threads: order conflicting accesses with `block::sync()`.
#[macro_export]
#[allow_internal_unstable(asm_experimental_arch)]
macro_rules! shared_array {
    ($(#[$attr:meta])* $vis:vis static $name:ident: [$t:ty; $n:expr];) => {
        $crate::__global_asm!(
            $crate::__concat!(".shared .align 16 .b8 ", $crate::__stringify!($name), "[{size}];"),
            size = const $crate::__size_of::<$t>() * $n,
        );
        $(#[$attr])*
        #[allow(non_snake_case)]
        #[inline(always)]
        $vis unsafe fn $name() -> $crate::shared::SharedArray<$t, { $n }> {
            let p: u64;
            $crate::__asm!(
                $crate::__concat!("cvta.shared.u64 {0}, ", $crate::__stringify!($name), ";"),
                out(reg64) p,
                options(pure, nomem, nostack),
            );
            $crate::shared::SharedArray::from_raw(p as *mut $t)
        }
    };
}

// The dynamic area: its size is the launch's shared memory bytes.
global_asm!(".extern .shared .align 16 .b8 fatlink_dynamic_shared[];");

extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.dynamic_smem_size"]
    fn dynamic_smem_size() -> u32;
}

/// The start of the block's dynamic shared memory, as `T` (`.extern
/// .shared` and `cvta.shared.u64`): the bytes the launch asked for
/// ([`dynamic_size`]). Every GPU has it.
///
/// # Safety
/// As for static arrays; the caller stays within [`dynamic_size`] bytes.
#[inline(always)]
pub unsafe fn dynamic<T>() -> *mut T {
    let p: u64;
    asm!("cvta.shared.u64 {0}, fatlink_dynamic_shared;", out(reg64) p, options(pure, nomem, nostack));
    p as *mut T
}

/// The block's dynamic shared memory as a slice of `T`: as many whole
/// elements as the launch's bytes hold ([`dynamic`], [`dynamic_size`]).
///
/// # Safety
/// As for static arrays: the memory is uninitialized at kernel start and
/// shared by the block's threads; the returned slice must not be held
/// twice at once by one thread.
#[inline(always)]
pub unsafe fn dynamic_slice<'a, T>() -> &'a mut [T] {
    let len = dynamic_size() as usize / crate::base::size_of::<T>();
    crate::base::slice::from_raw_parts_mut(dynamic::<T>(), len)
}

/// The size of the block's dynamic shared memory in bytes
/// (`%dynamic_smem_size`).
#[inline(always)]
pub fn dynamic_size() -> u32 {
    unsafe { dynamic_smem_size() }
}
