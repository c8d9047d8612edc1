//! Where a thread is: its index in the block, the block's in the grid,
//! and their sizes (PTX special registers `%tid`, `%ntid`, `%ctaid`,
//! `%nctaid`, `%laneid`, read with `mov.u32`). Every GPU has them.

use crate::base::concat;

/// A three-dimensional index or size, as CUDA's `dim3`.
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}
impl_copy!(Dim3);

extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.x"]
    fn tid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.y"]
    fn tid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.z"]
    fn tid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.x"]
    fn ntid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.y"]
    fn ntid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.z"]
    fn ntid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.x"]
    fn ctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.y"]
    fn ctaid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.z"]
    fn ctaid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.x"]
    fn nctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.y"]
    fn nctaid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.z"]
    fn nctaid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
    fn laneid() -> u32;
}

/// Defines, in the module it is used in, the reads of one special register
/// (`mov.u32 %r, %REG.x`): `$x()`, `$y()`, `$z()` (each from the intrinsic
/// named after it) and `$all()` as a `Dim3`. `$what` starts each function's
/// documentation.
macro_rules! dim3_reads {
    ($what:literal, $reg:literal, $all:ident: $x:ident = $ix:ident, $y:ident = $iy:ident, $z:ident = $iz:ident) => {
        #[doc = concat!($what, ", x (`", $reg, ".x`).")]
        #[inline(always)]
        pub fn $x() -> u32 {
            unsafe { $ix() }
        }
        #[doc = concat!($what, ", y (`", $reg, ".y`).")]
        #[inline(always)]
        pub fn $y() -> u32 {
            unsafe { $iy() }
        }
        #[doc = concat!($what, ", z (`", $reg, ".z`).")]
        #[inline(always)]
        pub fn $z() -> u32 {
            unsafe { $iz() }
        }
        #[doc = concat!($what, " (`", $reg, "`).")]
        #[inline(always)]
        pub fn $all() -> Dim3 {
            Dim3 {
                x: $x(),
                y: $y(),
                z: $z(),
            }
        }
    };
}

/// The calling thread.
pub mod thread {
    use super::*;

    dim3_reads!("The thread's index in its block", "%tid",
                idx: idx_x = tid_x, idx_y = tid_y, idx_z = tid_z);

    /// The thread's lane in its warp, 0 to 31 (`%laneid`).
    #[inline(always)]
    pub fn lane() -> u32 {
        unsafe { laneid() }
    }
}

/// The calling thread's block.
pub mod block {
    use super::*;

    dim3_reads!("The block's index in the grid", "%ctaid",
                idx: idx_x = ctaid_x, idx_y = ctaid_y, idx_z = ctaid_z);
    dim3_reads!("Threads per block", "%ntid",
                dim: dim_x = ntid_x, dim_y = ntid_y, dim_z = ntid_z);

    /// Waits until every thread of the block has arrived, and makes their
    /// shared and global memory writes visible to each other (`bar.sync 0`,
    /// CUDA's `__syncthreads()`). Every thread of the block must call it.
    #[inline(always)]
    pub fn sync() {
        crate::sync::barrier(0)
    }
}

/// The grid of blocks.
pub mod grid {
    use super::*;

    dim3_reads!("Blocks in the grid", "%nctaid",
                dim: dim_x = nctaid_x, dim_y = nctaid_y, dim_z = nctaid_z);

    /// The thread's index in the whole grid, x: `%ctaid.x * %ntid.x +
    /// %tid.x` (one `mad.lo`).
    #[inline(always)]
    pub fn global_x() -> u32 {
        block::idx_x() * block::dim_x() + thread::idx_x()
    }
    /// The thread's index in the whole grid, y.
    #[inline(always)]
    pub fn global_y() -> u32 {
        block::idx_y() * block::dim_y() + thread::idx_y()
    }
    /// Threads in the whole grid along x (`%nctaid.x * %ntid.x`): the
    /// stride of a grid-stride loop.
    #[inline(always)]
    pub fn threads_x() -> u32 {
        dim_x() * block::dim_x()
    }
}
