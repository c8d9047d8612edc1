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
//! library.
//!
//! With `.nvcc()` (or `FATLINK_CUDA_COMPILER=nvcc`) the CUDA C++ sources
//! are compiled by nvcc instead, as relocatable device code (`nvcc
//! -rdc=true -c`, one `-gencode` per target: cubins for each `sm_XX`, PTX
//! for `compute_XX`, LTO-IR instead of cubins with `.nvcc_lto(true)`), and
//! the objects go into the same static library. `fatlink-cc` links their
//! device code with the Rust code per target (nvlink, nvJitLink) and
//! registers their host code's kernels with its fatbin (docs/nvcc.md). The device link itself (whole-program LTO across the crates and
//! the CUDA C++ code, one cubin per GPU generation) happens when the host
//! executable is linked by `fatlink-cc`, which finds the embedded bitcode in
//! the library. Nothing is downloaded; every tool is found through
//! environment variables:
//!
//! | variable | default | what |
//! |---|---|---|
//! | `FATLINK` | `fatlink` in `PATH` | the fatlink executable |
//! | `FATLINK_CLANG` | `clang++-22` | clang for CUDA C++ |
//! | `FATLINK_CUDA_COMPILER` | `clang` | `clang` or `nvcc`, when the build script does not call `.nvcc()` |
//! | `FATLINK_NVCC` | `$CUDA_PATH/bin/nvcc` | nvcc, in nvcc mode |
//! | `FATLINK_NVCC_LTO` | `0` | `1`: LTO-IR instead of cubins, when the build script does not call `.nvcc_lto()` |
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

/// Which compiler turns the CUDA C++ sources into device code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudaCompiler {
    /// clang++-22, to device bitcode that joins fatlink's LTO (the default).
    Clang,
    /// nvcc, to relocatable device code (`-rdc=true`): cubins, PTX or
    /// LTO-IR that fatlink links with nvlink or nvJitLink.
    Nvcc,
}

/// Device code for one host crate.
pub struct Device {
    crate_dir: PathBuf,
    cuda: Vec<PathBuf>,
    lib_name: String,
    build_std: bool,
    compiler: Option<CudaCompiler>,
    nvcc_lto: Option<bool>,
    nvcc_flags: Vec<String>,
    cudart: Option<String>,
}

impl Device {
    /// The device crate at `crate_dir` (relative to the host crate).
    pub fn new(crate_dir: impl AsRef<Path>) -> Device {
        Device {
            crate_dir: crate_dir.as_ref().to_path_buf(),
            cuda: Vec::new(),
            lib_name: "fatlink_device".to_string(),
            build_std: false,
            compiler: None,
            nvcc_lto: None,
            nvcc_flags: Vec::new(),
            cudart: None,
        }
    }

    /// Compile the CUDA C++ sources with nvcc (`nvcc -rdc=true -c`) instead
    /// of clang; the same as `FATLINK_CUDA_COMPILER=nvcc`.
    pub fn nvcc(self) -> Device {
        self.cuda_compiler(CudaCompiler::Nvcc)
    }

    /// The compiler for the CUDA C++ sources; without this call,
    /// `FATLINK_CUDA_COMPILER` (`clang` or `nvcc`) decides, else clang.
    pub fn cuda_compiler(mut self, compiler: CudaCompiler) -> Device {
        self.compiler = Some(compiler);
        self
    }

    /// nvcc mode: LTO-IR (`code=lto_XX`) instead of cubins for each `sm_XX`
    /// target, linked by nvJitLink with link-time optimization across the
    /// nvcc code. Without this call, `FATLINK_NVCC_LTO=1` asks for it.
    pub fn nvcc_lto(mut self, yes: bool) -> Device {
        self.nvcc_lto = Some(yes);
        self
    }

    /// nvcc mode: one more argument for every nvcc command (`-O3`,
    /// `--use_fast_math`, `-I...`).
    pub fn nvcc_flag(mut self, flag: &str) -> Device {
        self.nvcc_flags.push(flag.to_string());
        self
    }

    /// Link the CUDA runtime library for nvcc host code that calls it
    /// (`<<<>>>` launches, cudaMalloc): `"static"` (cudart_static) or
    /// `"shared"` (cudart), from `$CUDA_PATH/lib64`. Default: none, for
    /// programs that launch through the fatlink runtime.
    pub fn cudart(mut self, kind: &str) -> Device {
        self.cudart = Some(kind.to_string());
        self
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

        let compiler = match self.compiler {
            Some(c) => c,
            None => compiler_from_env(&env::var("FATLINK_CUDA_COMPILER").unwrap_or_default())?,
        };
        let mut inputs = self.build_crate(&crate_dir, &out_dir)?;
        let mut nvcc_objects = Vec::new();
        for (i, source) in self.cuda.iter().enumerate() {
            let source = manifest_dir.join(source);
            match compiler {
                CudaCompiler::Clang => inputs.push(self.build_cuda(&source, &out_dir)?),
                CudaCompiler::Nvcc => nvcc_objects.push(self.build_nvcc(&source, i, &out_dir)?),
            }
        }

        let object = out_dir.join(format!("{}.o", self.lib_name));
        let mut embed = Command::new(&fatlink);
        embed.arg("embed").args(&inputs).arg("-o").arg(&object);
        run(&mut embed, "fatlink embed (set FATLINK to the fatlink executable)")?;
        // nvcc's objects are members beside the embedded bitcode: fatlink-cc
        // reads the device code of every member.
        let archive = out_dir.join(format!("lib{}.a", self.lib_name));
        let _ = fs::remove_file(&archive);
        let ar = env::var("AR").unwrap_or_else(|_| "ar".to_string());
        run(Command::new(ar).arg("crs").arg(&archive).arg(&object).args(&nvcc_objects), "ar")?;

        println!("cargo:rustc-link-search=native={}", out_dir.display());
        println!("cargo:rustc-link-lib=static={}", self.lib_name);
        if let Ok(dir) = env::var("FATLINK_RT_LIB_DIR") {
            println!("cargo:rustc-link-search=native={}", dir);
        }
        match self.cudart.as_deref() {
            None | Some("none") => {}
            Some(kind @ ("static" | "shared")) => {
                println!("cargo:rustc-link-search=native={}", cuda_path().join("lib64").display());
                if kind == "static" {
                    println!("cargo:rustc-link-lib=static=cudart_static");
                    for lib in ["dl", "rt", "pthread"] {
                        println!("cargo:rustc-link-lib={}", lib);
                    }
                } else {
                    println!("cargo:rustc-link-lib=cudart");
                }
            }
            Some(other) => return err(format!("cudart(\"{}\"): use \"static\", \"shared\" or \"none\"", other)),
        }
        for var in [
            "FATLINK",
            "FATLINK_CLANG",
            "FATLINK_CUDA_COMPILER",
            "FATLINK_NVCC",
            "FATLINK_NVCC_LTO",
            "CUDA_PATH",
            "FATLINK_ARCH",
            "FATLINK_RT_LIB_DIR",
        ] {
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

impl Device {
    /// CUDA C++ to an nvcc relocatable-device-code object (host code and
    /// `__nv_relfatbin`) for every target of `FATLINK_ARCH`.
    fn build_nvcc(&self, source: &Path, index: usize, out_dir: &Path) -> Result<PathBuf, Error> {
        let nvcc = nvcc_path()?;
        let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let out = out_dir.join(format!("nvcc-{}-{}.o", index, stem));
        let mut cmd = Command::new(&nvcc);
        cmd.args(["-rdc=true", "-c", "-Xcompiler", "-fPIC"])
            .args(nvcc_gencode(&env::var("FATLINK_ARCH").unwrap_or_default(), self.lto()?)?)
            .args(&self.nvcc_flags)
            .arg(source)
            .arg("-o")
            .arg(&out);
        run(&mut cmd, "nvcc")?;
        Ok(out)
    }
}

impl Device {
    fn lto(&self) -> Result<bool, Error> {
        match (self.nvcc_lto, env::var("FATLINK_NVCC_LTO").unwrap_or_default().trim()) {
            (Some(yes), _) => Ok(yes),
            (None, "" | "0") => Ok(false),
            (None, "1") => Ok(true),
            (None, other) => err(format!("FATLINK_NVCC_LTO={}: use 1 (LTO-IR) or 0 (cubins)", other)),
        }
    }
}

fn cuda_path() -> PathBuf {
    PathBuf::from(env::var("CUDA_PATH").unwrap_or_else(|_| "/usr/local/cuda".to_string()))
}

/// `FATLINK_NVCC`, else `$CUDA_PATH/bin/nvcc`, which must exist.
fn nvcc_path() -> Result<PathBuf, Error> {
    if let Ok(nvcc) = env::var("FATLINK_NVCC") {
        return Ok(PathBuf::from(nvcc));
    }
    let cuda = cuda_path();
    let nvcc = cuda.join("bin").join("nvcc");
    if !nvcc.is_file() {
        let from = if env::var("CUDA_PATH").is_ok() { "CUDA_PATH" } else { "CUDA_PATH is not set: the default" };
        return err(format!(
            "nvcc not found at {} ({} {}): install the CUDA toolkit, or set CUDA_PATH to a toolkit's \
             directory (or FATLINK_NVCC to the nvcc executable), or compile the CUDA C++ with clang \
             (FATLINK_CUDA_COMPILER=clang, no .nvcc())",
            nvcc.display(),
            from,
            cuda.display()
        ));
    }
    Ok(nvcc)
}

fn compiler_from_env(value: &str) -> Result<CudaCompiler, Error> {
    match value.trim() {
        "" | "clang" => Ok(CudaCompiler::Clang),
        "nvcc" => Ok(CudaCompiler::Nvcc),
        other => err(format!("FATLINK_CUDA_COMPILER={}: use clang or nvcc", other)),
    }
}

/// nvcc's target arguments for a fatlink target list: `sm_XX` gives
/// `-gencode arch=compute_XX,code=sm_XX` (`code=lto_XX` with `lto`),
/// `compute_XX` gives `-gencode arch=compute_XX,code=compute_XX` (PTX). A
/// preset (`all`, `all-major`, or an empty list: fatlink's default) is
/// nvcc's preset of the same name.
pub fn nvcc_gencode(arch_list: &str, lto: bool) -> Result<Vec<String>, Error> {
    let mut args = Vec::new();
    for a in arch_list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if a == "all" || a == "all-major" {
            args.push(format!("-arch={}", a));
            continue;
        }
        let (digits, code) = if let Some(d) = a.strip_prefix("sm_") {
            (d, if lto { format!("lto_{}", d) } else { a.to_string() })
        } else if let Some(d) = a.strip_prefix("compute_") {
            (d, a.to_string())
        } else {
            return err(format!("FATLINK_ARCH: {} is no sm_XX, compute_XX, all or all-major target", a));
        };
        if digits.trim_end_matches(|c| c == 'a' || c == 'f').parse::<u32>().is_err() {
            return err(format!("FATLINK_ARCH: {} is no sm_XX, compute_XX, all or all-major target", a));
        }
        args.push("-gencode".to_string());
        args.push(format!("arch=compute_{},code={}", digits, code));
    }
    if args.is_empty() {
        args.push("-arch=all-major".to_string());
    }
    Ok(args)
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
    use super::{compiler_from_env, nvcc_gencode, oldest_sm, CudaCompiler};

    #[test]
    fn nvcc_gencode_of_a_list() {
        let got = nvcc_gencode("sm_80, sm_90a,compute_120", false).unwrap();
        assert_eq!(
            got,
            [
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90a,code=sm_90a",
                "-gencode",
                "arch=compute_120,code=compute_120"
            ]
        );
        assert_eq!(nvcc_gencode("sm_80", true).unwrap(), ["-gencode", "arch=compute_80,code=lto_80"]);
        assert_eq!(nvcc_gencode("all-major", false).unwrap(), ["-arch=all-major"]);
        assert_eq!(nvcc_gencode("", false).unwrap(), ["-arch=all-major"]);
        assert!(nvcc_gencode("sm_8x", false).is_err());
        assert!(nvcc_gencode("gfx90a", false).is_err());
    }

    #[test]
    fn cuda_compiler_setting() {
        assert_eq!(compiler_from_env("").unwrap(), CudaCompiler::Clang);
        assert_eq!(compiler_from_env("nvcc").unwrap(), CudaCompiler::Nvcc);
        assert!(compiler_from_env("gcc").is_err());
    }

    #[test]
    fn oldest_sm_of_a_list() {
        assert_eq!(oldest_sm("sm_90,sm_80,compute_100"), "sm_80");
        assert_eq!(oldest_sm("compute_90a"), "sm_90");
        assert_eq!(oldest_sm("all-major"), "sm_75");
        assert_eq!(oldest_sm(""), "sm_75");
    }
}
