//! device_ops: one kernel per group of fatlink-device operations that
//! every target (sm_75 and newer) has, for test/device/ops.test, which
//! checks the PTX instruction each compiles to. Written `#![no_core]`, so
//! that it builds over the minicore (no nvptx `core` here) and over core.
#![feature(no_core, abi_ptx)]
#![no_core]
use fatlink_device::atomic::{Ordering, Scope};
use fatlink_device::prelude::*;

shared_array! {
    /// A block's tile: `.shared .align 16 .b8 TILE[1024]`.
    static TILE: [f32; 256];
}

/// Every index and size of the thread, its block and the grid.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_index(out: *mut u32) {
    let t = thread::idx();
    let b = block::idx();
    let d = block::dim();
    let g = grid::dim();
    let o = slice::from_raw_parts_mut(out, 13);
    o[0] = t.x;
    o[1] = t.y;
    o[2] = t.z;
    o[3] = b.x;
    o[4] = b.y;
    o[5] = b.z;
    o[6] = d.x;
    o[7] = d.y;
    o[8] = d.z;
    o[9] = g.x;
    o[10] = g.y;
    o[11] = g.z;
    o[12] = thread::lane();
}

/// y[i] = 2 * x[i] for i < n: the bounds check of the slices is the
/// `if`'s, so no trap remains.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_bounds(x: *const f32, y: *mut f32, n: usize) {
    let i = grid::global_x() as usize;
    let xs = slice::from_raw_parts(x, n);
    let ys = slice::from_raw_parts_mut(y, n);
    if i < n {
        ys[i] = xs[i] * 2.0;
    }
}

/// Integer and float operators, comparisons, casts, loops over a range.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_arith(y: *mut f32, u: *mut u32, n: u32, d: i32) {
    let mut acc = 0.0f32;
    for i in 0..n {
        if i % 2 == 0 && i != 6 {
            acc += i as f32;
        } else {
            acc -= -(i as f32) / 4.0;
        }
    }
    let mut bits = n ^ 0xff;
    bits <<= 3;
    bits |= n >> 1;
    bits &= !7;
    *y = acc;
    *u = bits + (d / 3 % 5) as u32;
}

/// A static shared array, written, synchronized, read back reversed.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_shared_static(x: *const f32, y: *mut f32) {
    let mut tile = TILE();
    let t = thread::idx_x() as usize;
    tile[t] = *x.add(t);
    block::sync();
    *y.add(t) = tile[tile.len() - 1 - t];
}

/// The dynamic shared area, its size, and the area as a slice.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_shared_dynamic(y: *mut f32) {
    let d = shared::dynamic::<f32>();
    *d = 1.0;
    block::sync();
    *y = *d + shared::dynamic_size() as f32;
    let s = shared::dynamic_slice::<u32>();
    let t = thread::idx_x() as usize;
    if t < s.len() {
        s[t] = t as u32;
    }
}

/// Named barriers, for all the block's threads and for 64 of them.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_named_barrier(y: *mut u32) {
    sync::barrier(1);
    *y = 1;
    sync::barrier_count(2, 64);
}

/// Atomics at each scope (but the cluster's, sm_90) and each ordering.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_atomics(p: *mut u32, q: *mut u64, f: *mut f32, i: *mut i32, g: *mut f64) {
    let a = atomic::fetch_add_u32(p, 1, Scope::Device, Ordering::Relaxed);
    let b = atomic::fetch_add_u32(p, a, Scope::Block, Ordering::Acquire);
    let c = atomic::fetch_max_u32(p, b, Scope::System, Ordering::Release);
    let c = atomic::fetch_min_u32(p, c, Scope::Device, Ordering::Relaxed);
    let d = atomic::fetch_min_i32(i, 3, Scope::Device, Ordering::AcqRel);
    let d = atomic::fetch_max_i32(i, d, Scope::Block, Ordering::Relaxed);
    let c = atomic::fetch_and_u32(p, c, Scope::Device, Ordering::Relaxed);
    let c = atomic::fetch_or_u32(p, c, Scope::Device, Ordering::Relaxed);
    let c = atomic::fetch_xor_u32(p, c, Scope::Device, Ordering::Relaxed);
    let e = atomic::swap_u32(p, c, Scope::Device, Ordering::Relaxed);
    let e = atomic::compare_swap_u32(p, e, 7, Scope::Device, Ordering::AcqRel);
    let h = atomic::fetch_add_u64(q, e as u64, Scope::Device, Ordering::Relaxed);
    let h = atomic::swap_u64(q, h, Scope::Device, Ordering::Relaxed);
    let j = atomic::compare_swap_u64(q, h, 9, Scope::System, Ordering::Relaxed);
    atomic::fetch_add_f32(f, j as f32 + d as f32, Scope::Device, Ordering::Relaxed);
    atomic::fetch_add_f64(g, 1.0, Scope::Device, Ordering::Release);
    sync::fence(Scope::Block);
    sync::fence(Scope::Device);
    sync::fence(Scope::System);
}

/// Shuffles, votes, matches and the warp barrier.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_warp(p: *mut u32, f: *mut f32) {
    let v = *p;
    let a = warp::shfl_idx(warp::FULL, v, 0);
    let b = warp::shfl_up(warp::FULL, a, 1);
    let c = warp::shfl_down(warp::FULL, b, 2);
    let d = warp::shfl_xor(warp::FULL, c, 4);
    let x = warp::shfl_xor_f32(warp::FULL, *f, 16);
    let x = warp::shfl_down_f32(warp::FULL, x, 8);
    let all = warp::all(warp::FULL, d > 3);
    let any = warp::any(warp::FULL, d > 4);
    let bal = warp::ballot(warp::FULL, all || any);
    let m = warp::match_any(warp::FULL, bal);
    let ma = warp::match_all(warp::FULL, m).unwrap_or(0);
    warp::sync(warp::FULL);
    *p = ma;
    *f = x;
}

/// libdevice math, linked and inlined by the device link.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_math(x: *mut f32, d: *mut f64) {
    let v = *x;
    *x = math::sqrtf(v) + math::fmaf(v, v, 1.0) + math::fabsf(v) + math::expf(v) + math::floorf(v);
    *d = math::sqrt(*d) + math::fma(*d, *d, 2.0);
}
