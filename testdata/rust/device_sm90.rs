//! device_sm90: the fatlink-device operations of newer GPUs, for
//! test/device/ops-sm90.test: warp reductions (`redux.sync`, sm_80) and
//! clusters with distributed shared memory (sm_90).
#![feature(no_core, abi_ptx)]
#![no_core]
use fatlink_device::atomic::{Ordering, Scope};
use fatlink_device::prelude::*;

shared_array! {
    /// Each block's slot, read by its neighbour in the cluster.
    static SLOT: [f32; 32];
}

/// Warp reductions (sm_80).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_redux(p: *mut u32, i: *mut i32) {
    let v = *p;
    let a = warp::reduce_add(warp::FULL, v);
    let b = warp::reduce_max(warp::FULL, a);
    let b = warp::reduce_min(warp::FULL, b);
    let b = warp::reduce_and(warp::FULL, b);
    let b = warp::reduce_or(warp::FULL, b);
    let c = warp::reduce_min_i32(warp::FULL, *i);
    let c = warp::reduce_max_i32(warp::FULL, c);
    *p = warp::reduce_xor(warp::FULL, b);
    *i = c;
}

/// Each block reads its neighbour's shared slot (sm_90).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_cluster(out: *mut u32) {
    let mut slot = SLOT();
    slot[0] = cluster::block_rank() as f32;
    cluster::sync();
    let peer = (cluster::block_rank() + 1) % cluster::block_count();
    let remote = cluster::map_shared(slot.as_mut_ptr(), peer);
    *out = *remote as u32 + cluster::idx_x() + cluster::dim_x() + cluster::block_idx_x() + cluster::block_dim_x();
    atomic::fetch_add_u32(out, 1, Scope::Cluster, Ordering::Relaxed);
    sync::fence(Scope::Cluster);
    cluster::sync();
}
