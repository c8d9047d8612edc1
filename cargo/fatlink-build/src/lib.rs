//! fatlink-build: device code for a host crate, from its build script.
//!
//! A host crate's `build.rs` names its device crate (a Cargo package built
//! for `nvptx64-nvidia-cuda`) and any CUDA C++ sources:
//!
//! ```no_run
//! fn main() {
//!     fatlink_build::Device::new("../device/gpu_kernels")
//!         .cuda("../device/cuda/activation.cu")
//!         .build()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! `build()` compiles the device crate and its dependencies with a nested
//! `cargo build --target nvptx64-nvidia-cuda` (rlibs of LLVM bitcode), the
//! CUDA C++ sources with clang to device bitcode, wraps all of it with
//! `fatlink embed` into a static library, and tells cargo to link that
//! library. The device link itself (whole-program LTO across the crates and
//! the CUDA C++ code, one cubin per GPU generation) happens when the host
//! executable is linked by `fatlink-cc`, which finds the embedded bitcode in
//! the library. Nothing is downloaded; every tool is found through
//! environment variables:
//!
//! | variable | default | what |
//! |---|---|---|
//! | `FATLINK` | `fatlink` in `PATH` | the fatlink executable |
//! | `FATLINK_CLANG` | `clang++-22` | clang for CUDA C++ |
//! | `CUDA_PATH` | `/usr/local/cuda` | the CUDA toolkit |
//! | `FATLINK_ARCH` | `all-major` | targets; the oldest sm is what CUDA C++ is compiled for |
//! | `FATLINK_RT_LIB_DIR` | none | where `libfatlink_rt.a` is, added to the link search path |
//!
//! Device crates use `#![no_core]` over a small lang-item crate here; on a
//! nightly toolchain with the nvptx target installed, a real `core` works
//! the same way: set `DeviceOptions::build_std` (`-Zbuild-std=core`).

use std::env;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A failed step, with the command and its output.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fatlink-build: {}", self.0)
    }
}

impl std::error::Error for Error {}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// Device code for one host crate.
pub struct Device {
    crate_dir: PathBuf,
    cuda: Vec<PathBuf>,
    lib_name: String,
    build_std: bool,
}

impl Device {
    /// The device crate at `crate_dir` (relative to the host crate).
    pub fn new(crate_dir: impl AsRef<Path>) -> Device {
        Device {
            crate_dir: crate_dir.as_ref().to_path_buf(),
            cuda: Vec::new(),
            lib_name: "fatlink_device".to_string(),
            build_std: false,
        }
    }

    /// A CUDA C++ source whose device functions join the link.
    pub fn cuda(mut self, source: impl AsRef<Path>) -> Device {
        self.cuda.push(source.as_ref().to_path_buf());
        self
    }

    /// The name of the static library to produce (default fatlink_device).
    pub fn lib_name(mut self, name: &str) -> Device {
        self.lib_name = name.to_string();
        self
    }

    /// Build `core` for nvptx64 (`-Zbuild-std=core`, nightly with the
    /// rust-src component) instead of relying on `#![no_core]` crates.
    pub fn build_std(mut self, yes: bool) -> Device {
        self.build_std = yes;
        self
    }

    /// Compiles, embeds and tells cargo to link the result.
    pub fn build(self) -> Result<(), Error> {
        let out_dir = PathBuf::from(env::var("OUT_DIR").or_else(|_| err("OUT_DIR not set: call from build.rs"))?);
        let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
        let crate_dir = manifest_dir.join(&self.crate_dir);
        let fatlink = env::var("FATLINK").unwrap_or_else(|_| "fatlink".to_string());

        let mut inputs = self.build_crate(&crate_dir, &out_dir)?;
        for source in &self.cuda {
            inputs.push(self.build_cuda(&manifest_dir.join(source), &out_dir)?);
        }

        let object = out_dir.join(format!("{}.o", self.lib_name));
        let mut embed = Command::new(&fatlink);
        embed.arg("embed").args(&inputs).arg("-o").arg(&object);
        run(&mut embed, "fatlink embed (set FATLINK to the fatlink executable)")?;
        let archive = out_dir.join(format!("lib{}.a", self.lib_name));
        let _ = fs::remove_file(&archive);
        let ar = env::var("AR").unwrap_or_else(|_| "ar".to_string());
        run(Command::new(ar).arg("crs").arg(&archive).arg(&object), "ar")?;

        println!("cargo:rustc-link-search=native={}", out_dir.display());
        println!("cargo:rustc-link-lib=static={}", self.lib_name);
        if let Ok(dir) = env::var("FATLINK_RT_LIB_DIR") {
            println!("cargo:rustc-link-search=native={}", dir);
        }
        for var in ["FATLINK", "FATLINK_CLANG", "CUDA_PATH", "FATLINK_ARCH", "FATLINK_RT_LIB_DIR"] {
            println!("cargo:rerun-if-env-changed={}", var);
        }
        println!("cargo:rerun-if-changed={}", crate_dir.display());
        for source in &self.cuda {
            println!("cargo:rerun-if-changed={}", manifest_dir.join(source).display());
        }
        Ok(())
    }

    /// `cargo build --target nvptx64-nvidia-cuda` of the device crate, in a
    /// target directory of its own (the outer build holds the main one).
    fn build_crate(&self, crate_dir: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
        let target_dir = out_dir.join("device-target");
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let mut cmd = Command::new(cargo);
        cmd.arg("build")
            .arg("--release")
            .arg("--offline")
            .arg("--target")
            .arg("nvptx64-nvidia-cuda")
            .arg("--manifest-path")
            .arg(crate_dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target_dir)
            // #![no_core] and the ptx-kernel ABI are unstable features.
            .env("RUSTC_BOOTSTRAP", "1")
            // The host build's flags and wrappers are not for the device.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("RUSTC_WRAPPER");
        if self.build_std {
            cmd.arg("-Zbuild-std=core");
        }
        run(&mut cmd, "cargo build --target nvptx64-nvidia-cuda")?;

        let deps = target_dir.join("nvptx64-nvidia-cuda/release/deps");
        let mut rlibs: Vec<PathBuf> = fs::read_dir(&deps)
            .map_err(|e| Error(format!("{}: {}", deps.display(), e)))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().map_or(false, |x| x == "rlib"))
            .collect();
        rlibs.sort();
        if rlibs.is_empty() {
            return err(format!("{}: the device build produced no rlib", deps.display()));
        }
        Ok(rlibs)
    }

    /// CUDA C++ to device bitcode for the oldest target sm.
    fn build_cuda(&self, source: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
        let clang = env::var("FATLINK_CLANG").unwrap_or_else(|_| "clang++-22".to_string());
        let cuda = env::var("CUDA_PATH").unwrap_or_else(|_| "/usr/local/cuda".to_string());
        let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let out = out_dir.join(format!("{}.bc", stem));
        let mut cmd = Command::new(clang);
        cmd.args(["-x", "cuda", "--cuda-device-only", "-fgpu-rdc", "-O3", "-emit-llvm", "-c"])
            .arg(format!("--cuda-path={}", cuda))
            .arg("-Wno-unknown-cuda-version")
            .arg(format!("--offload-arch={}", oldest_sm(&env::var("FATLINK_ARCH").unwrap_or_default())))
            .arg(source)
            .arg("-o")
            .arg(&out);
        run(&mut cmd, "clang (CUDA C++ device code; set FATLINK_CLANG)")?;
        Ok(out)
    }
}

/// The oldest plain sm_XX in a target list ("sm_80,compute_90" -> sm_80);
/// sm_75 when the list names none (presets start there).
pub fn oldest_sm(arch_list: &str) -> String {
    arch_list
        .split(',')
        .filter_map(|a| {
            let a = a.trim();
            let digits = a.strip_prefix("sm_").or_else(|| a.strip_prefix("compute_"))?;
            let n: u32 = digits.trim_end_matches(|c| c == 'a' || c == 'f').parse().ok()?;
            Some(n)
        })
        .min()
        .map(|n| format!("sm_{}", n))
        .unwrap_or_else(|| "sm_75".to_string())
}

fn run(cmd: &mut Command, what: &str) -> Result<(), Error> {
    let output = cmd
        .output()
        .map_err(|e| Error(format!("cannot run {} ({:?}): {}", what, cmd.get_program(), e)))?;
    if !output.status.success() {
        return err(format!(
            "{} failed ({}):\n{}{}",
            what,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::oldest_sm;

    #[test]
    fn oldest_sm_of_a_list() {
        assert_eq!(oldest_sm("sm_90,sm_80,compute_100"), "sm_80");
        assert_eq!(oldest_sm("compute_90a"), "sm_90");
        assert_eq!(oldest_sm("all-major"), "sm_75");
        assert_eq!(oldest_sm(""), "sm_75");
    }
}
