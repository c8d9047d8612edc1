//! Decides whether fatlink-device builds over the target's `core` or over
//! the minicore: `core` when the `core` feature is on (`-Zbuild-std=core`),
//! or when the sysroot of the rustc that builds the crate has a prebuilt
//! `core` for the target (`rustup target add nvptx64-nvidia-cuda`);
//! the minicore otherwise. The choice is the cfg `fatlink_device_core`.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(fatlink_device_core)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    let forced = env::var_os("CARGO_FEATURE_CORE").is_some();
    if forced || target_has_core() {
        println!("cargo:rustc-cfg=fatlink_device_core");
    }
}

/// Whether `$RUSTC --print sysroot`/lib/rustlib/$TARGET/lib holds a
/// `libcore-*.rlib`.
fn target_has_core() -> bool {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let target = env::var("TARGET").unwrap_or_default();
    let Ok(out) = Command::new(&rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    if !out.status.success() {
        return false;
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let rustlib = sysroot.join("lib").join("rustlib");
    // Installing the target adds a folder here (a path that does not
    // exist would rerun this script on every build).
    if rustlib.is_dir() {
        println!("cargo:rerun-if-changed={}", rustlib.display());
    }
    let lib = rustlib.join(&target).join("lib");
    let Ok(entries) = fs::read_dir(&lib) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with("libcore-") && name.ends_with(".rlib")
    })
}
