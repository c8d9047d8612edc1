//! Barriers and memory fences.
//!
//! | function | PTX | GPUs |
//! |---|---|---|
//! | `barrier(id)` (`block::sync()` is `barrier(0)`) | `bar.sync id` | all |
//! | `barrier_count(id, n)` | `bar.sync id, n` | all |
//! | `fence(scope)` | `fence.acq_rel.{cta,cluster,gpu,sys}` | sm_70 (cluster: sm_90) |
use crate::atomic::Scope;
use crate::base::asm;

extern "C" {
    #[link_name = "llvm.nvvm.barrier.cta.sync.aligned.all"]
    fn bar_sync_all(id: u32);
    #[link_name = "llvm.nvvm.barrier.cta.sync.aligned.count"]
    fn bar_sync_count(id: u32, count: u32);
}

/// Named barrier `id` (0 to 15) for every thread of the block
/// (`bar.sync id`): waits until all have arrived and orders their memory
/// accesses. Barrier 0 is `block::sync()`.
#[inline(always)]
pub fn barrier(id: u32) {
    unsafe { bar_sync_all(id) }
}

/// Named barrier `id` (0 to 15) for `count` threads, a multiple of 32
/// (`bar.sync id, count`): lets some warps of a block synchronize among
/// themselves (producer and consumer warps) while the others go on.
#[inline(always)]
pub fn barrier_count(id: u32, count: u32) {
    unsafe { bar_sync_count(id, count) }
}

/// A memory fence at `scope` (`fence.acq_rel.<scope>`, sm_70; the cluster
/// scope needs sm_90): this thread's memory accesses before it are seen
/// before those after it by every thread in the scope.
#[inline(always)]
pub fn fence(scope: Scope) {
    unsafe {
        match scope {
            Scope::Block => asm!("fence.acq_rel.cta;"),
            Scope::Cluster => asm!("fence.acq_rel.cluster;"),
            Scope::Device => asm!("fence.acq_rel.gpu;"),
            Scope::System => asm!("fence.acq_rel.sys;"),
        }
    }
}
