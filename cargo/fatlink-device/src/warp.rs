//! Warp-level operations: the 32 threads of a warp exchange values without
//! memory. Each takes `mask`, the lanes taking part (every one of them
//! must call it with the same mask; `FULL` for the whole warp).
//!
//! | function | PTX | GPUs |
//! |---|---|---|
//! | `shfl_idx`, `shfl_up`, `shfl_down`, `shfl_xor` (u32 and `_f32`) | `shfl.sync.{idx,up,down,bfly}.b32` | sm_70 |
//! | `all`, `any`, `ballot` | `vote.sync.{all,any,ballot}` | sm_70 |
//! | `match_any` | `match.any.sync.b32` | sm_70 |
//! | `match_all` | `match.all.sync.b32` | sm_70 |
//! | `reduce_add`, `reduce_min/max` (u32 and `_i32`), `reduce_and/or/xor` | `redux.sync.{add,min,max,and,or,xor}` | sm_80 |
//! | `sync(mask)` | `bar.warp.sync` | sm_70 |
use crate::base::{asm, None, Option, Some};

/// Every lane of the warp.
pub const FULL: u32 = 0xffff_ffff;

/// Threads in a warp.
pub const SIZE: u32 = 32;

extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_idx_i32(mask: u32, val: u32, lane: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn shfl_up_i32(mask: u32, val: u32, delta: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_down_i32(mask: u32, val: u32, delta: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn shfl_bfly_i32(mask: u32, val: u32, lanemask: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.f32"]
    fn nv_shfl_idx_f32(mask: u32, val: f32, lane: u32, c: u32) -> f32;
    #[link_name = "llvm.nvvm.shfl.sync.up.f32"]
    fn nv_shfl_up_f32(mask: u32, val: f32, delta: u32, c: u32) -> f32;
    #[link_name = "llvm.nvvm.shfl.sync.down.f32"]
    fn nv_shfl_down_f32(mask: u32, val: f32, delta: u32, c: u32) -> f32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.f32"]
    fn nv_shfl_bfly_f32(mask: u32, val: f32, lanemask: u32, c: u32) -> f32;
    #[link_name = "llvm.nvvm.vote.all.sync"]
    fn vote_all(mask: u32, pred: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.any.sync"]
    fn vote_any(mask: u32, pred: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn vote_ballot(mask: u32, pred: bool) -> u32;
    #[link_name = "llvm.nvvm.match.any.sync.i32"]
    fn match_any_i32(mask: u32, val: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.add"]
    fn redux_add(val: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.umin"]
    fn redux_umin(val: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.umax"]
    fn redux_umax(val: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.min"]
    fn redux_min(val: i32, mask: u32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.max"]
    fn redux_max(val: i32, mask: u32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.and"]
    fn redux_and(val: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.or"]
    fn redux_or(val: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.xor"]
    fn redux_xor(val: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
}

// The `c` operand of shfl.sync: the segment mask (0: the whole warp) and
// the clamp lane (31 for idx, down and bfly; 0 for up).
const CLAMP: u32 = 0x1f;

/// The value of `val` in lane `lane` (`shfl.sync.idx.b32`).
#[inline(always)]
pub fn shfl_idx(mask: u32, val: u32, lane: u32) -> u32 {
    unsafe { shfl_idx_i32(mask, val, lane, CLAMP) }
}
/// The value of `val` in lane `lane_id - delta`, or its own below that
/// (`shfl.sync.up.b32`).
#[inline(always)]
pub fn shfl_up(mask: u32, val: u32, delta: u32) -> u32 {
    unsafe { shfl_up_i32(mask, val, delta, 0) }
}
/// The value of `val` in lane `lane_id + delta`, or its own past the end
/// (`shfl.sync.down.b32`).
#[inline(always)]
pub fn shfl_down(mask: u32, val: u32, delta: u32) -> u32 {
    unsafe { shfl_down_i32(mask, val, delta, CLAMP) }
}
/// The value of `val` in lane `lane_id ^ lane_mask` (`shfl.sync.bfly.b32`):
/// the butterfly step of a warp reduction.
#[inline(always)]
pub fn shfl_xor(mask: u32, val: u32, lane_mask: u32) -> u32 {
    unsafe { shfl_bfly_i32(mask, val, lane_mask, CLAMP) }
}
/// `shfl_idx` for f32 (`shfl.sync.idx.b32`).
#[inline(always)]
pub fn shfl_idx_f32(mask: u32, val: f32, lane: u32) -> f32 {
    unsafe { nv_shfl_idx_f32(mask, val, lane, CLAMP) }
}
/// `shfl_up` for f32 (`shfl.sync.up.b32`).
#[inline(always)]
pub fn shfl_up_f32(mask: u32, val: f32, delta: u32) -> f32 {
    unsafe { nv_shfl_up_f32(mask, val, delta, 0) }
}
/// `shfl_down` for f32 (`shfl.sync.down.b32`).
#[inline(always)]
pub fn shfl_down_f32(mask: u32, val: f32, delta: u32) -> f32 {
    unsafe { nv_shfl_down_f32(mask, val, delta, CLAMP) }
}
/// `shfl_xor` for f32 (`shfl.sync.bfly.b32`).
#[inline(always)]
pub fn shfl_xor_f32(mask: u32, val: f32, lane_mask: u32) -> f32 {
    unsafe { nv_shfl_bfly_f32(mask, val, lane_mask, CLAMP) }
}

/// Whether `pred` holds in every lane of `mask` (`vote.sync.all.pred`).
#[inline(always)]
pub fn all(mask: u32, pred: bool) -> bool {
    unsafe { vote_all(mask, pred) }
}
/// Whether `pred` holds in some lane of `mask` (`vote.sync.any.pred`).
#[inline(always)]
pub fn any(mask: u32, pred: bool) -> bool {
    unsafe { vote_any(mask, pred) }
}
/// Bit `i` set where `pred` holds in lane `i` (`vote.sync.ballot.b32`).
#[inline(always)]
pub fn ballot(mask: u32, pred: bool) -> u32 {
    unsafe { vote_ballot(mask, pred) }
}

/// The lanes of `mask` whose `val` equals this lane's
/// (`match.any.sync.b32`).
#[inline(always)]
pub fn match_any(mask: u32, val: u32) -> u32 {
    unsafe { match_any_i32(mask, val) }
}
/// `Some(mask)` when every lane of `mask` has the same `val`, else `None`
/// (`match.all.sync.b32`).
#[inline(always)]
pub fn match_all(mask: u32, val: u32) -> Option<u32> {
    let (lanes, same): (u32, u32);
    unsafe {
        asm!(
            "{{ .reg .pred p; match.all.sync.b32 {0}|p, {2}, {3}; selp.u32 {1}, 1, 0, p; }}",
            out(reg32) lanes, out(reg32) same, in(reg32) val, in(reg32) mask,
            options(nomem, nostack),
        );
    }
    if same != 0 {
        Some(lanes)
    } else {
        None
    }
}

/// The sum of `val` over the lanes of `mask` (`redux.sync.add.u32`, sm_80).
#[inline(always)]
pub fn reduce_add(mask: u32, val: u32) -> u32 {
    unsafe { redux_add(val, mask) }
}
/// The minimum of `val` over `mask` (`redux.sync.min.u32`, sm_80).
#[inline(always)]
pub fn reduce_min(mask: u32, val: u32) -> u32 {
    unsafe { redux_umin(val, mask) }
}
/// The maximum of `val` over `mask` (`redux.sync.max.u32`, sm_80).
#[inline(always)]
pub fn reduce_max(mask: u32, val: u32) -> u32 {
    unsafe { redux_umax(val, mask) }
}
/// The signed minimum over `mask` (`redux.sync.min.s32`, sm_80).
#[inline(always)]
pub fn reduce_min_i32(mask: u32, val: i32) -> i32 {
    unsafe { redux_min(val, mask) }
}
/// The signed maximum over `mask` (`redux.sync.max.s32`, sm_80).
#[inline(always)]
pub fn reduce_max_i32(mask: u32, val: i32) -> i32 {
    unsafe { redux_max(val, mask) }
}
/// The bitwise and over `mask` (`redux.sync.and.b32`, sm_80).
#[inline(always)]
pub fn reduce_and(mask: u32, val: u32) -> u32 {
    unsafe { redux_and(val, mask) }
}
/// The bitwise or over `mask` (`redux.sync.or.b32`, sm_80).
#[inline(always)]
pub fn reduce_or(mask: u32, val: u32) -> u32 {
    unsafe { redux_or(val, mask) }
}
/// The bitwise xor over `mask` (`redux.sync.xor.b32`, sm_80).
#[inline(always)]
pub fn reduce_xor(mask: u32, val: u32) -> u32 {
    unsafe { redux_xor(val, mask) }
}

/// Waits until every lane of `mask` has arrived, and orders their memory
/// accesses (`bar.warp.sync`, CUDA's `__syncwarp`).
#[inline(always)]
pub fn sync(mask: u32) {
    unsafe { bar_warp_sync(mask) }
}
