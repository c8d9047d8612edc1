//! twin_macro: a proc-macro built twice under one crate name (macro_a,
//! macro_b; --cfg=twin_b tells them apart).
extern crate proc_macro;
use proc_macro::TokenStream;

/// A float literal: 10.0 (macro_a) or 20.0 (macro_b).
#[proc_macro]
pub fn offset(_input: TokenStream) -> TokenStream {
    if cfg!(twin_b) { "20.0" } else { "10.0" }.parse().unwrap()
}
