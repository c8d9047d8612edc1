//! The host program: lists the device code fatlink embedded (read from the
//! descriptors in the `fatlink_modules` section).
fn main() {
    println!("placeholder");
}
