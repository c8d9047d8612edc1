//! benchcore: the lang items the benchmark's Rust device crates need on top
//! of testdata/rust/minicore.rs: comparisons (`<` on u32) for their loops.
//! `&self` methods need the `legacy_receiver` lang item too.
#![feature(no_core, lang_items)]
#![no_core]
#![allow(internal_features)]

extern crate minicore;
use minicore::*;

#[lang = "legacy_receiver"]
pub trait LegacyReceiver: PointeeSized {}
impl<T: PointeeSized> LegacyReceiver for &T {}

#[lang = "partial_ord"]
pub trait PartialOrd<Rhs: PointeeSized = Self>: PointeeSized {
    fn lt(&self, other: &Rhs) -> bool;
}

impl PartialOrd for u32 {
    fn lt(&self, other: &u32) -> bool {
        *self < *other
    }
}
