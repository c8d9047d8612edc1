//! Where a thread is: its index in the block, the block's in the grid,
//! and their sizes (PTX special registers `%tid`, `%ntid`, `%ctaid`,
//! `%nctaid`, `%laneid`, read with `mov.u32`). Every GPU has them.

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

/// The calling thread.
pub mod thread {
    use super::*;

    /// The thread's index in its block, x (`%tid.x`).
    #[inline(always)]
    pub fn idx_x() -> u32 {
        unsafe { tid_x() }
    }
    /// The thread's index in its block, y (`%tid.y`).
    #[inline(always)]
    pub fn idx_y() -> u32 {
        unsafe { tid_y() }
    }
    /// The thread's index in its block, z (`%tid.z`).
    #[inline(always)]
    pub fn idx_z() -> u32 {
        unsafe { tid_z() }
    }
    /// The thread's index in its block (`%tid`).
    #[inline(always)]
    pub fn idx() -> Dim3 {
        Dim3 {
            x: idx_x(),
            y: idx_y(),
            z: idx_z(),
        }
    }
    /// The thread's lane in its warp, 0 to 31 (`%laneid`).
    #[inline(always)]
    pub fn lane() -> u32 {
        unsafe { laneid() }
    }
}

/// The calling thread's block.
pub mod block {
    use super::*;

    /// The block's index in the grid, x (`%ctaid.x`).
    #[inline(always)]
    pub fn idx_x() -> u32 {
        unsafe { ctaid_x() }
    }
    /// The block's index in the grid, y (`%ctaid.y`).
    #[inline(always)]
    pub fn idx_y() -> u32 {
        unsafe { ctaid_y() }
    }
    /// The block's index in the grid, z (`%ctaid.z`).
    #[inline(always)]
    pub fn idx_z() -> u32 {
        unsafe { ctaid_z() }
    }
    /// The block's index in the grid (`%ctaid`).
    #[inline(always)]
    pub fn idx() -> Dim3 {
        Dim3 {
            x: idx_x(),
            y: idx_y(),
            z: idx_z(),
        }
    }
    /// Threads per block, x (`%ntid.x`).
    #[inline(always)]
    pub fn dim_x() -> u32 {
        unsafe { ntid_x() }
    }
    /// Threads per block, y (`%ntid.y`).
    #[inline(always)]
    pub fn dim_y() -> u32 {
        unsafe { ntid_y() }
    }
    /// Threads per block, z (`%ntid.z`).
    #[inline(always)]
    pub fn dim_z() -> u32 {
        unsafe { ntid_z() }
    }
    /// Threads per block (`%ntid`).
    #[inline(always)]
    pub fn dim() -> Dim3 {
        Dim3 {
            x: dim_x(),
            y: dim_y(),
            z: dim_z(),
        }
    }
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

    /// Blocks in the grid, x (`%nctaid.x`).
    #[inline(always)]
    pub fn dim_x() -> u32 {
        unsafe { nctaid_x() }
    }
    /// Blocks in the grid, y (`%nctaid.y`).
    #[inline(always)]
    pub fn dim_y() -> u32 {
        unsafe { nctaid_y() }
    }
    /// Blocks in the grid, z (`%nctaid.z`).
    #[inline(always)]
    pub fn dim_z() -> u32 {
        unsafe { nctaid_z() }
    }
    /// Blocks in the grid (`%nctaid`).
    #[inline(always)]
    pub fn dim() -> Dim3 {
        Dim3 {
            x: dim_x(),
            y: dim_y(),
            z: dim_z(),
        }
    }
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
