//! Thread block clusters and distributed shared memory (sm_90 and newer:
//! a kernel that uses these must be linked for sm_90+ only; ptxas rejects
//! them for older targets). Blocks of a cluster run at the same time on
//! one GPU processing cluster and can read and write each other's shared
//! memory.
//!
//! | function | PTX |
//! |---|---|
//! | `idx_x/y/z`, `dim_x/y/z` (clusters in the grid) | `%clusterid`, `%nclusterid` |
//! | `block_idx_x/y/z`, `block_dim_x/y/z` (blocks in the cluster) | `%cluster_ctaid`, `%cluster_nctaid` |
//! | `block_rank`, `block_count` | `%cluster_ctarank`, `%cluster_nctarank` |
//! | `sync()` | `barrier.cluster.arrive` + `barrier.cluster.wait` |
//! | `map_shared(ptr, rank)` | `mapa.u64` |

extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.clusterid.x"]
    fn clusterid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.clusterid.y"]
    fn clusterid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.clusterid.z"]
    fn clusterid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nclusterid.x"]
    fn nclusterid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nclusterid.y"]
    fn nclusterid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nclusterid.z"]
    fn nclusterid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.ctaid.x"]
    fn cluster_ctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.ctaid.y"]
    fn cluster_ctaid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.ctaid.z"]
    fn cluster_ctaid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.nctaid.x"]
    fn cluster_nctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.nctaid.y"]
    fn cluster_nctaid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.nctaid.z"]
    fn cluster_nctaid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.ctarank"]
    fn cluster_ctarank() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.cluster.nctarank"]
    fn cluster_nctarank() -> u32;
    #[link_name = "llvm.nvvm.barrier.cluster.arrive"]
    fn barrier_cluster_arrive();
    #[link_name = "llvm.nvvm.barrier.cluster.wait"]
    fn barrier_cluster_wait();
    #[link_name = "llvm.nvvm.mapa"]
    fn mapa(ptr: *mut u8, rank: u32) -> *mut u8;
}

macro_rules! sreg_fns {
    ($($(#[$doc:meta])* $name:ident => $f:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            unsafe { $f() }
        }
    )*};
}

sreg_fns! {
    /// The cluster's index in the grid, x (`%clusterid.x`).
    idx_x => clusterid_x;
    /// The cluster's index in the grid, y (`%clusterid.y`).
    idx_y => clusterid_y;
    /// The cluster's index in the grid, z (`%clusterid.z`).
    idx_z => clusterid_z;
    /// Clusters in the grid, x (`%nclusterid.x`).
    dim_x => nclusterid_x;
    /// Clusters in the grid, y (`%nclusterid.y`).
    dim_y => nclusterid_y;
    /// Clusters in the grid, z (`%nclusterid.z`).
    dim_z => nclusterid_z;
    /// The block's index in its cluster, x (`%cluster_ctaid.x`).
    block_idx_x => cluster_ctaid_x;
    /// The block's index in its cluster, y (`%cluster_ctaid.y`).
    block_idx_y => cluster_ctaid_y;
    /// The block's index in its cluster, z (`%cluster_ctaid.z`).
    block_idx_z => cluster_ctaid_z;
    /// Blocks in the cluster, x (`%cluster_nctaid.x`).
    block_dim_x => cluster_nctaid_x;
    /// Blocks in the cluster, y (`%cluster_nctaid.y`).
    block_dim_y => cluster_nctaid_y;
    /// Blocks in the cluster, z (`%cluster_nctaid.z`).
    block_dim_z => cluster_nctaid_z;
    /// The block's rank in its cluster, 0 to `block_count() - 1`
    /// (`%cluster_ctarank`).
    block_rank => cluster_ctarank;
    /// Blocks in the cluster (`%cluster_nctarank`).
    block_count => cluster_nctarank;
}

/// Waits until every thread of every block of the cluster has arrived and
/// orders their memory accesses (`barrier.cluster.arrive` then
/// `barrier.cluster.wait`). Call it before reading another block's shared
/// memory, and before a block exits while others may still read its.
#[inline(always)]
pub fn sync() {
    unsafe {
        barrier_cluster_arrive();
        barrier_cluster_wait();
    }
}

/// The address of the same shared-memory location in the block of rank
/// `rank` of this cluster (`mapa.u64`): distributed shared memory. `ptr`
/// is this block's shared memory (a `shared_array!` element or
/// `shared::dynamic`); the result is a generic address any thread of the
/// cluster may load from and store to.
///
/// # Safety
/// `ptr` points into shared memory; `rank < block_count()`.
#[inline(always)]
pub unsafe fn map_shared<T>(ptr: *mut T, rank: u32) -> *mut T {
    mapa(ptr as *mut u8, rank) as *mut T
}
