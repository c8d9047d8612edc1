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
//! | `FATLINK_VERBOSE` | off | `1`: a `cargo:warning` naming the device code's kernels |
//!
//! The build script also reruns when a `fatlink-cc` setting changes
//! (every `FATLINK_<KEY>`, and the file `FATLINK_CONFIG` names): the link
//! reads them, and this script's rerun is what relinks the host crate.
//!
//! Device code without a kernel (a kernel declared `extern "C"` instead of
//! `extern "ptx-kernel"`) is a `cargo:warning` naming the inputs: rustc
//! hides the linker's messages, a build script's warnings cargo shows
//! (docs/cargo.md, "Diagnostics").
//!
//! Rebuilds: the build script asks cargo to rerun exactly when something
//! the device build read changes: each source in the nested build's
//! dep-info files, the crates' and the device workspace's Cargo.toml and
//! Cargo.lock, the CUDA C++ sources and every header the compiler read
//! (`-MD`), and the variables above. Only the rlibs the nested build
//! reported (its JSON `compiler-artifact` messages) are embedded, as
//! `OUT_DIR/device-rlibs/<crate>-<version>.rlib` (docs/cargo.md).
//!
//! Device crates use `#![no_core]` over a small lang-item crate here; on a
//! nightly toolchain with the nvptx target installed, a real `core` works
//! the same way: set `DeviceOptions::build_std` (`-Zbuild-std=core`).

use std::collections::BTreeSet;
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
        let mut read = Tracked::default();
        let artifacts = self.build_crate(&crate_dir, &out_dir, &mut read)?;
        let mut inputs = stage_rlibs(&artifacts, &out_dir)?;
        let mut nvcc_objects = Vec::new();
        for (i, source) in self.cuda.iter().enumerate() {
            let source = manifest_dir.join(source);
            read.files.insert(source.clone());
            match compiler {
                CudaCompiler::Clang => inputs.push(self.build_cuda(&source, &out_dir, &mut read)?),
                CudaCompiler::Nvcc => nvcc_objects.push(self.build_nvcc(&source, i, &out_dir, &mut read)?),
            }
        }

        let object = out_dir.join(format!("{}.o", self.lib_name));
        let mut embed = Command::new(&fatlink);
        embed.arg("embed").args(&inputs).arg("-o").arg(&object);
        // The embedded bitcode is all of the program's device code unless
        // nvcc objects (whose kernels embed does not see) go beside it.
        if nvcc_objects.is_empty() {
            embed.arg("--expect-kernels");
        }
        let verbose = env::var("FATLINK_VERBOSE").map_or(false, |v| !matches!(v.as_str(), "" | "0" | "false" | "no"));
        if verbose {
            embed.arg("-v");
        }
        let (_, diagnostics) = run_with_stderr(&mut embed, "fatlink embed", "set FATLINK to the fatlink executable")?;
        // rustc hides the linker's messages, so this is where a cargo user
        // hears of a device build without kernels (docs/cargo.md
        // "Diagnostics"); with FATLINK_VERBOSE, also which kernels it has.
        for line in cargo_warnings(&diagnostics, verbose) {
            println!("cargo:warning={}", line);
        }
        // nvcc's objects are members beside the embedded bitcode: fatlink-cc
        // reads the device code of every member.
        let archive = out_dir.join(format!("lib{}.a", self.lib_name));
        let _ = fs::remove_file(&archive);
        let ar = env::var("AR").unwrap_or_else(|_| "ar".to_string());
        run(Command::new(ar).arg("crs").arg(&archive).arg(&object).args(&nvcc_objects), "ar", "set AR to the archiver")?;

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
        read.env.extend(BUILD_ENV.iter().chain(FATLINK_CC_SETTINGS).map(|v| v.to_string()));
        // fatlink-cc reads its settings from the environment (cargo's [env])
        // and from the file FATLINK_CONFIG names: a change to either must
        // relink. A rerun of this script relinks the crate that uses it.
        if let Some(config) = fatlink_config_file(&manifest_dir)? {
            read.files.insert(config);
        }
        // Sorted and without duplicates: the same lines for any build order.
        for var in &read.env {
            println!("cargo:rerun-if-env-changed={}", var);
        }
        for file in &read.files {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        Ok(())
    }

    /// `cargo build --target nvptx64-nvidia-cuda` of the device crate, in a
    /// target directory of its own (the outer build holds the main one).
    /// Returns the rlibs this build produced (cargo's `compiler-artifact`
    /// messages: never a stale rlib of an earlier build left in `deps/`),
    /// and adds to `read` every file the build read: the sources in each
    /// crate's dep-info, each crate's Cargo.toml, the workspace's Cargo.toml
    /// and Cargo.lock.
    fn build_crate(&self, crate_dir: &Path, out_dir: &Path, read: &mut Tracked) -> Result<Vec<Artifact>, Error> {
        let target_dir = out_dir.join("device-target");
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let manifest = crate_dir.join("Cargo.toml");
        let mut cmd = Command::new(&cargo);
        cmd.arg("build")
            .arg("--release")
            .arg("--offline")
            .arg("--target")
            .arg("nvptx64-nvidia-cuda")
            .arg("--manifest-path")
            .arg(&manifest)
            // JSON messages on stdout; rustc's diagnostics rendered as usual
            // on stderr, which a failed build shows.
            .arg("--message-format=json-render-diagnostics")
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
        let messages = run(&mut cmd, "cargo build --target nvptx64-nvidia-cuda", "cargo runs from PATH or $CARGO")?;

        // rustc runs in the workspace's root and names the sources of its
        // members relative to it in the dep-info.
        let ws_root = workspace_root(&manifest)?;
        read.files.insert(ws_root.join("Cargo.toml"));
        let lock = ws_root.join("Cargo.lock");
        if lock.is_file() {
            read.files.insert(lock);
        }

        let mut artifacts = Vec::new();
        for line in messages.lines().filter(|l| l.starts_with('{')) {
            let msg = parse_json(line).map_err(|e| Error(format!("cargo's JSON message {}: {}", line, e)))?;
            if msg.get("reason").and_then(Json::as_str) != Some("compiler-artifact") {
                continue;
            }
            let files: Vec<PathBuf> = msg
                .get("filenames")
                .and_then(Json::as_array)
                .unwrap_or(&[])
                .iter()
                .filter_map(Json::as_str)
                .map(PathBuf::from)
                .collect();
            if let Some(m) = msg.get("manifest_path").and_then(Json::as_str) {
                read.files.insert(PathBuf::from(m));
            }
            if let Some(d) = dep_info_of(&files) {
                let text = fs::read_to_string(&d).map_err(|e| Error(format!("{}: {}", d.display(), e)))?;
                let (deps, env) = parse_dep_info(&text);
                read.files.extend(deps.into_iter().map(|p| ws_root.join(p)));
                read.env.extend(env);
            } else if let Some(src) = msg.get("target").and_then(|t| t.get("src_path")).and_then(Json::as_str) {
                // No dep-info (a cargo that writes none): the folder of the
                // crate's root source, which cargo scans as a whole.
                read.files.insert(Path::new(src).parent().unwrap_or(Path::new(src)).to_path_buf());
            }
            let Some(rlib) = files.iter().find(|f| f.extension().is_some_and(|x| x == "rlib")) else {
                continue; // build scripts, proc macros: not device code
            };
            let name = msg
                .get("target")
                .and_then(|t| t.get("name"))
                .and_then(Json::as_str)
                .unwrap_or("crate")
                .replace('-', "_");
            let version = msg.get("package_id").and_then(Json::as_str).map(package_version).unwrap_or_default();
            artifacts.push(Artifact { name, version, rlib: rlib.clone() });
        }
        if artifacts.is_empty() {
            return err(format!("{}: the device build produced no rlib", manifest.display()));
        }
        Ok(artifacts)
    }

    /// CUDA C++ to device bitcode for the oldest target sm.
    fn build_cuda(&self, source: &Path, out_dir: &Path, read: &mut Tracked) -> Result<PathBuf, Error> {
        let clang = env::var("FATLINK_CLANG").unwrap_or_else(|_| "clang++-22".to_string());
        let cuda = cuda_toolkit()?;
        let cuda = cuda.display();
        let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let out = out_dir.join(format!("{}.bc", stem));
        let deps = out_dir.join(format!("{}.bc.d", stem));
        let arch_list = env::var("FATLINK_ARCH").unwrap_or_default();
        let sm = oldest_sm(&arch_list)?;
        let mut cmd = Command::new(clang);
        cmd.args(["-x", "cuda", "--cuda-device-only", "-fgpu-rdc", "-O3", "-emit-llvm", "-c"])
            .arg(format!("--cuda-path={}", cuda))
            .arg("-Wno-unknown-cuda-version")
            .arg(format!("--offload-arch={}", sm));
        // A target clang does not know fails here first: say where it came from.
        compile_tracked(
            &mut cmd,
            source,
            &out,
            &deps,
            read,
            &format!("clang (CUDA C++ device code for {})", offload_arch_origin(&arch_list, &sm)),
            "set FATLINK_CLANG to clang++ 22 or newer",
        )?;
        Ok(out)
    }
}

impl Device {
    /// CUDA C++ to an nvcc relocatable-device-code object (host code and
    /// `__nv_relfatbin`) for every target of `FATLINK_ARCH`.
    fn build_nvcc(&self, source: &Path, index: usize, out_dir: &Path, read: &mut Tracked) -> Result<PathBuf, Error> {
        let nvcc = nvcc_path()?;
        let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let out = out_dir.join(format!("nvcc-{}-{}.o", index, stem));
        let deps = out_dir.join(format!("nvcc-{}-{}.o.d", index, stem));
        let mut cmd = Command::new(&nvcc);
        cmd.args(["-rdc=true", "-c", "-Xcompiler", "-fPIC"])
            .args(nvcc_gencode(&env::var("FATLINK_ARCH").unwrap_or_default(), self.lto()?)?)
            .args(&self.nvcc_flags);
        compile_tracked(
            &mut cmd,
            source,
            &out,
            &deps,
            read,
            "nvcc",
            "set FATLINK_NVCC to the nvcc executable, or CUDA_PATH to the toolkit",
        )?;
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

/// The environment variables that change what `build()` produces: this
/// crate's settings, the archiver, and the nested cargo's own settings for
/// the device target (the host's RUSTFLAGS are removed from it).
const BUILD_ENV: &[&str] = &[
    "FATLINK",
    "FATLINK_CLANG",
    "FATLINK_CUDA_COMPILER",
    "FATLINK_NVCC",
    "FATLINK_NVCC_LTO",
    "CUDA_PATH",
    "FATLINK_ARCH",
    "FATLINK_RT_LIB_DIR",
    "FATLINK_VERBOSE",
    "AR",
    "CARGO_TARGET_NVPTX64_NVIDIA_CUDA_RUSTFLAGS",
    "CARGO_TARGET_NVPTX64_NVIDIA_CUDA_LINKER",
];

/// fatlink-cc's settings as environment variables (FATLINK_<KEY>: every key
/// of hostlink/Settings.cpp's table, as `fatlink cc --fatlink-help` lists
/// them; test/cargo/rebuild-settings.test fails when the two differ). The
/// link reads them, not this script, but cargo relinks a crate only when
/// something it tracks changes: this script's rerun, which relinks the
/// crate whose build script it is, is how a changed setting relinks.
const FATLINK_CC_SETTINGS: &[&str] = &[
    "FATLINK_ARCH",
    "FATLINK_OPT",
    "FATLINK_PTX_VERSION",
    "FATLINK_COMPRESS",
    "FATLINK_MIN_DRIVER",
    "FATLINK_JOBS",
    "FATLINK_CUDA_PATH",
    "FATLINK_PTXAS",
    "FATLINK_LINKER",
    "FATLINK_VERBOSE",
    "FATLINK_QUIET",
    "FATLINK_ALLOW_NO_KERNELS",
    "FATLINK_ALLOW_ABI_MISMATCH",
    "FATLINK_LOG_FILE",
    "FATLINK_DRY_RUN",
    "FATLINK_SAVE_TEMPS",
    "FATLINK_TIME_TRACE",
    "FATLINK_CONFIG",
    "FATLINK_HOST_ARCH",
    "FATLINK_CACHE_DIR",
    "FATLINK_PARTITIONS",
    "FATLINK_PARTITION_FIRST",
    "FATLINK_PTX_PER_ARCH",
    "FATLINK_PTXAS_PER_PARTITION",
    "FATLINK_WARN_SPILLS",
    "FATLINK_CACHE_POLICY",
];

/// The config file FATLINK_CONFIG names, for `rerun-if-changed`, found
/// where fatlink-cc will look for it. fatlink-cc runs in rustc's directory,
/// which for a workspace member is the workspace's root, not this crate's
/// directory (where the build script runs): a relative path is taken from
/// the root. A relative path that names a file only in this crate's
/// directory is an error, naming both places and the fix, rather than a
/// build that tracks one file and links with none. None when it is unset
/// or names no file (fatlink-cc then fails, naming it).
fn fatlink_config_file(manifest_dir: &Path) -> Result<Option<PathBuf>, Error> {
    let Some(path) = env::var_os("FATLINK_CONFIG").filter(|p| !p.is_empty()).map(PathBuf::from) else {
        return Ok(None);
    };
    if path.is_absolute() {
        return Ok(path.is_file().then_some(path));
    }
    let root = workspace_root(&manifest_dir.join("Cargo.toml"))?;
    let at_root = root.join(&path);
    if at_root.is_file() {
        return Ok(Some(at_root));
    }
    let here = manifest_dir.join(&path);
    if here.is_file() {
        return err(format!(
            "FATLINK_CONFIG={} is relative: fatlink-cc reads it from the directory rustc links in, \
             the workspace's root {}, which has no such file (it is {}, beside this crate). \
             Name it {} (from the workspace's root), or by an absolute path, or in .cargo/config.toml \
             as FATLINK_CONFIG = {{ value = \"...\", relative = true }} (from the directory holding .cargo)",
            path.display(),
            root.display(),
            here.display(),
            here.strip_prefix(&root).unwrap_or(&here).display()
        ));
    }
    Ok(None)
}

/// The root directory of the workspace the manifest belongs to (`cargo
/// locate-project --workspace`).
fn workspace_root(manifest: &Path) -> Result<PathBuf, Error> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut locate = Command::new(&cargo);
    locate
        .args(["locate-project", "--workspace", "--message-format", "plain", "--offline", "--manifest-path"])
        .arg(manifest);
    let ws_manifest = PathBuf::from(run(&mut locate, "cargo locate-project", "cargo runs from PATH or $CARGO")?.trim());
    Ok(ws_manifest.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// What the device build read: cargo reruns the build script when one of
/// these files or variables changes, and only then.
#[derive(Default)]
struct Tracked {
    files: BTreeSet<PathBuf>,
    env: BTreeSet<String>,
}

impl Tracked {
    /// Adds the prerequisites of a compiler's dep-info file (clang and
    /// nvcc `-MD -MF`: absolute paths, or relative to this process's
    /// directory, which is theirs).
    fn add_dep_info(&mut self, file: &Path) -> Result<(), Error> {
        let text = fs::read_to_string(file).map_err(|e| Error(format!("{}: {}", file.display(), e)))?;
        let cwd = env::current_dir().unwrap_or_default();
        let (deps, env) = parse_dep_info(&text);
        self.files.extend(deps.into_iter().map(|p| cwd.join(p)));
        self.env.extend(env);
        Ok(())
    }
}

/// One rlib of the nested device build.
struct Artifact {
    /// The crate's name (`gpu_kernels`).
    name: String,
    /// Its package's version (`0.1.0`), empty when cargo's package id has none.
    version: String,
    rlib: PathBuf,
}

/// Links (or copies) every rlib into `OUT_DIR/device-rlibs` under
/// `<crate>-<version>.rlib`, the name fatlink's diagnostics show for its
/// device code, and returns those paths sorted by name, so that the
/// embedded order does not depend on the order cargo finished the crates.
fn stage_rlibs(artifacts: &[Artifact], out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let dir = out_dir.join("device-rlibs");
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| Error(format!("{}: {}", dir.display(), e)))?;
    }
    fs::create_dir_all(&dir).map_err(|e| Error(format!("{}: {}", dir.display(), e)))?;
    let mut sorted: Vec<&Artifact> = artifacts.iter().collect();
    sorted.sort_by(|a, b| (&a.name, &a.version, &a.rlib).cmp(&(&b.name, &b.version, &b.rlib)));
    let mut staged = Vec::new();
    let mut taken = BTreeSet::new();
    for a in sorted {
        let base = if a.version.is_empty() { a.name.clone() } else { format!("{}-{}", a.name, a.version) };
        // Two rlibs of one crate and version (a crate built twice with
        // different features): the second gets a number.
        let mut stem = base.clone();
        let mut n = 2;
        while !taken.insert(stem.clone()) {
            stem = format!("{}.{}", base, n);
            n += 1;
        }
        let to = dir.join(format!("{}.rlib", stem));
        if fs::hard_link(&a.rlib, &to).is_err() {
            fs::copy(&a.rlib, &to)
                .map_err(|e| Error(format!("copying {} to {}: {}", a.rlib.display(), to.display(), e)))?;
        }
        staged.push(to);
    }
    Ok(staged)
}

/// rustc's dep-info for an artifact: `deps/<crate>-<hash>.d` beside the
/// file in `deps/` (`lib<crate>-<hash>.rlib` or `.rmeta`; the rlib of the
/// crate cargo was asked for is a copy outside `deps/`).
fn dep_info_of(files: &[PathBuf]) -> Option<PathBuf> {
    files.iter().find_map(|f| {
        let dir = f.parent()?;
        if dir.file_name()? != "deps" {
            return None;
        }
        let stem = f.file_stem()?.to_str()?;
        let d = dir.join(format!("{}.d", stem.strip_prefix("lib").unwrap_or(stem)));
        d.is_file().then_some(d)
    })
}

/// The prerequisites of a make-style dep-info file (`target: dep dep ...`,
/// lines continued by a trailing backslash, `\ ` a space in a name, `$$` a
/// dollar), and the variables of rustc's `# env-dep:NAME=value` lines.
pub fn parse_dep_info(text: &str) -> (Vec<String>, Vec<String>) {
    let mut deps = Vec::new();
    let mut env = Vec::new();
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    for line in joined.lines() {
        if let Some(var) = line.strip_prefix("# env-dep:") {
            env.push(var.split('=').next().unwrap_or(var).to_string());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        // Split into words at unescaped blanks; the first word that ends
        // with an unescaped ':' ends the targets.
        let mut words = Vec::new();
        let mut word = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some(' ') | Some('#') | Some('\\') | Some(':')) => {
                    word.push(chars.next().unwrap_or(c))
                }
                '$' if chars.peek() == Some(&'$') => {
                    chars.next();
                    word.push('$');
                }
                ' ' | '\t' => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                ':' if matches!(chars.peek(), None | Some(' ') | Some('\t')) && !words.contains(&":".to_string()) => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    words.push(":".to_string());
                }
                _ => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        if let Some(colon) = words.iter().position(|w| w == ":") {
            deps.extend(words.into_iter().skip(colon + 1));
        }
    }
    deps.sort();
    deps.dedup();
    (deps, env)
}

/// The version in a cargo package id: `path+file:///d/gpu_math#0.1.0`,
/// `registry+https://...#serde@1.0.0`, or the older
/// `gpu_math 0.1.0 (path+file:///d/gpu_math)`.
pub fn package_version(id: &str) -> String {
    if let Some((_, frag)) = id.rsplit_once('#') {
        return frag.rsplit_once('@').map_or(frag, |(_, v)| v).to_string();
    }
    id.split_whitespace().nth(1).unwrap_or("").to_string()
}

/// A JSON value, for cargo's messages (this crate has no dependencies).
#[derive(Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }
}

/// Parses one JSON document.
pub fn parse_json(text: &str) -> Result<Json, String> {
    let mut p = JsonParser { s: text.as_bytes(), i: 0 };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("text after the value at byte {}", p.i));
    }
    Ok(v)
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.s.get(self.i) {
            None => Err("unexpected end".to_string()),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(Json::Object(members));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(":") {
                        return Err(format!("':' expected at byte {}", self.i));
                    }
                    members.push((key, self.value()?));
                    self.ws();
                    if self.eat("}") {
                        return Ok(Json::Object(members));
                    }
                    if !self.eat(",") {
                        return Err(format!("',' or '}}' expected at byte {}", self.i));
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    if self.eat("]") {
                        return Ok(Json::Array(items));
                    }
                    if !self.eat(",") {
                        return Err(format!("',' or ']' expected at byte {}", self.i));
                    }
                }
            }
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(_) if self.eat("null") => Ok(Json::Null),
            Some(_) if self.eat("true") => Ok(Json::Bool(true)),
            Some(_) if self.eat("false") => Ok(Json::Bool(false)),
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                Ok(Json::Number(String::from_utf8_lossy(&self.s[start..self.i]).into_owned()))
            }
            Some(_) => Err(format!("unexpected character at byte {}", self.i)),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        let v = u32::from_str_radix(std::str::from_utf8(digits).map_err(|e| e.to_string())?, 16)
            .map_err(|_| format!("bad \\u escape at byte {}", self.i))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        if !self.eat("\"") {
            return Err(format!("string expected at byte {}", self.i));
        }
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.i).ok_or("unterminated string")?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let e = *self.s.get(self.i).ok_or("unterminated string")?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.eat("\\u") {
                                let lo = self.hex4()?;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                            }
                            char::from_u32(cp).unwrap_or('\u{FFFD}')
                        }
                        _ => return Err(format!("bad escape at byte {}", self.i)),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => out.push(c),
            }
        }
    }
}

fn cuda_path() -> PathBuf {
    PathBuf::from(env::var("CUDA_PATH").unwrap_or_else(|_| "/usr/local/cuda".to_string()))
}

/// The CUDA toolkit clang compiles against: CUDA_PATH or /usr/local/cuda,
/// checked to be one, so that a wrong CUDA_PATH is named as such rather
/// than surfacing as a clang error.
fn cuda_toolkit() -> Result<PathBuf, Error> {
    let cuda = cuda_path();
    let header = cuda.join("include").join("cuda_runtime.h");
    if !header.is_file() {
        let from = if env::var("CUDA_PATH").is_ok() { "CUDA_PATH is" } else { "CUDA_PATH is not set; the default" };
        return err(format!(
            "{} {}, which is not a CUDA toolkit (no {}): set CUDA_PATH to the toolkit's directory \
             (the one with bin/ptxas and include/cuda_runtime.h)",
            from,
            cuda.display(),
            header.display()
        ));
    }
    Ok(cuda)
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
/// sm_75 when the list is empty or names a preset (presets start there). A
/// name that is no target (`sm90`, `gfx90a`) is an error naming
/// FATLINK_ARCH, as in `nvcc_gencode`; whether clang and fatlink know the
/// sm is theirs to say.
pub fn oldest_sm(arch_list: &str) -> Result<String, Error> {
    let mut oldest: Option<u32> = None;
    for a in arch_list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let n = if a == "all" || a == "all-major" {
            Some(75)
        } else {
            a.strip_prefix("sm_")
                .or_else(|| a.strip_prefix("compute_"))
                .and_then(|d| d.trim_end_matches(|c| c == 'a' || c == 'f').parse::<u32>().ok())
        };
        let Some(n) = n else {
            return err(format!("FATLINK_ARCH: {} is no sm_XX, compute_XX, all or all-major target", a));
        };
        oldest = Some(oldest.map_or(n, |o| o.min(n)));
    }
    Ok(format!("sm_{}", oldest.unwrap_or(75)))
}

/// Where the `--offload-arch` of the CUDA C++ compile came from, for its
/// failure: "sm_999, the oldest target in FATLINK_ARCH=sm_999,compute_120".
pub fn offload_arch_origin(arch_list: &str, sm: &str) -> String {
    if arch_list.trim().is_empty() {
        format!("{}, the oldest target of all-major: FATLINK_ARCH is not set", sm)
    } else {
        format!(
            "{}, the oldest target in FATLINK_ARCH={}; `fatlink device-link --list-targets` lists the targets",
            sm, arch_list
        )
    }
}

/// Finishes a compiler command line (`-MD -MF deps source -o out`, which
/// clang and nvcc both take), runs it, and tracks every file the compiler
/// read (the dep-info file it wrote).
fn compile_tracked(
    cmd: &mut Command,
    source: &Path,
    out: &Path,
    deps: &Path,
    read: &mut Tracked,
    what: &str,
    hint: &str,
) -> Result<(), Error> {
    cmd.arg("-MD").arg("-MF").arg(deps).arg(source).arg("-o").arg(out);
    run(cmd, what, hint)?;
    read.add_dep_info(deps)
}

/// Runs `cmd`; `what` names it in messages, `hint` says what to set when it
/// cannot be started at all (a failed run shows its output instead, which
/// says what went wrong better than any guess here).
/// Returns its standard output.
fn run(cmd: &mut Command, what: &str, hint: &str) -> Result<String, Error> {
    run_with_stderr(cmd, what, hint).map(|(stdout, _)| stdout)
}

/// `run`, returning the standard error of a successful run too.
fn run_with_stderr(cmd: &mut Command, what: &str, hint: &str) -> Result<(String, String), Error> {
    let output = cmd.output().map_err(|e| {
        Error(format!("cannot run {} ({:?}): {}: {}", what, cmd.get_program(), e, hint))
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        // cargo's JSON messages are for this crate, not for the user: its
        // diagnostics are rendered on stderr.
        let text: String = stdout.lines().filter(|l| !l.starts_with('{')).map(|l| format!("{}\n", l)).collect();
        let stderr = String::from_utf8_lossy(&output.stderr);
        return err(format!("{} failed ({}):\n{}{}", what, output.status, text, stderr));
    }
    Ok((stdout, String::from_utf8_lossy(&output.stderr).into_owned()))
}

/// The `cargo:warning=` lines for fatlink's stderr: each `fatlink:
/// warning:` with the `>>> ` lines that follow it (one cargo line each:
/// cargo's warnings are one line long), and with `verbose` the `kernels:`
/// summary of `fatlink embed -v`. Everything else -v prints is left out.
pub fn cargo_warnings(stderr: &str, verbose: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_warning = false;
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("fatlink: warning: ") {
            lines.push(format!("fatlink: {}", rest));
            in_warning = true;
        } else if in_warning && line.starts_with(">>> ") {
            lines.push(line.to_string());
        } else {
            in_warning = false;
            if verbose && line.starts_with("kernels: ") {
                lines.push(format!("fatlink: device code {}", line));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::{
        cargo_warnings, compiler_from_env, nvcc_gencode, offload_arch_origin, oldest_sm, package_version,
        parse_dep_info, parse_json, CudaCompiler, Json,
    };

    #[test]
    fn warnings_for_cargo() {
        let stderr = "embed a.rlib(a.o) [sm_80]\nkernels: none\nfatlink: warning: no kernels in the device code: x\n>>> a.rlib(a.o)\n>>> b.bc\nembed b.bc\n";
        assert_eq!(
            cargo_warnings(stderr, false),
            vec!["fatlink: no kernels in the device code: x", ">>> a.rlib(a.o)", ">>> b.bc"]
        );
        assert_eq!(cargo_warnings(stderr, true)[0], "fatlink: device code kernels: none");
        assert!(cargo_warnings("embed a.bc\nkernels: k\n", false).is_empty());
    }

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
        assert_eq!(oldest_sm("sm_90,sm_80,compute_100").unwrap(), "sm_80");
        assert_eq!(oldest_sm("compute_90a").unwrap(), "sm_90");
        assert_eq!(oldest_sm("all-major").unwrap(), "sm_75");
        assert_eq!(oldest_sm("sm_90,all-major").unwrap(), "sm_75");
        assert_eq!(oldest_sm("").unwrap(), "sm_75");
        assert_eq!(
            oldest_sm("sm_80,sm90").unwrap_err().to_string(),
            "fatlink-build: FATLINK_ARCH: sm90 is no sm_XX, compute_XX, all or all-major target"
        );
        assert!(offload_arch_origin("sm_999", "sm_999").starts_with("sm_999, the oldest target in FATLINK_ARCH=sm_999;"));
    }

    #[test]
    fn dep_info_of_rustc_and_clang() {
        let rustc = "/t/deps/k-1.d: k/src/lib.rs k/src/my\\ mod.rs /abs/minicore.rs\n\n\
                     k/src/lib.rs:\nk/src/my\\ mod.rs:\n/abs/minicore.rs:\n\n# env-dep:KERNEL_SCALE=2\n";
        let (deps, env) = parse_dep_info(rustc);
        assert_eq!(deps, ["/abs/minicore.rs", "k/src/lib.rs", "k/src/my mod.rs"]);
        assert_eq!(env, ["KERNEL_SCALE"]);
        let clang = "/o/act.bc: /d/cuda/act.cu \\\n  /d/cuda/act.h /cuda/include/cuda_runtime.h \\\n  /d/a$$b.h\n";
        let (deps, env) = parse_dep_info(clang);
        assert_eq!(deps, ["/cuda/include/cuda_runtime.h", "/d/a$b.h", "/d/cuda/act.cu", "/d/cuda/act.h"]);
        assert!(env.is_empty());
    }

    #[test]
    fn package_id_versions() {
        assert_eq!(package_version("path+file:///d/gpu_math#0.1.0"), "0.1.0");
        assert_eq!(package_version("path+file:///d/math#gpu_math@0.2.0"), "0.2.0");
        assert_eq!(package_version("registry+https://github.com/rust-lang/crates.io-index#serde@1.0.1"), "1.0.1");
        assert_eq!(package_version("gpu_math 0.3.0 (path+file:///d/gpu_math)"), "0.3.0");
    }

    #[test]
    fn cargo_json_messages() {
        let line = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"gpu_math","kind":["lib"]},"#,
            r#""filenames":["/t/deps/libgpu_math-1.rlib","/t/a \"q\" \u00e9\ud83d\ude00"],"#,
            r#""fresh":false,"n":-1.5e3,"x":null}"#
        );
        let v = parse_json(line).unwrap();
        assert_eq!(v.get("reason").and_then(Json::as_str), Some("compiler-artifact"));
        assert_eq!(v.get("target").and_then(|t| t.get("name")).and_then(Json::as_str), Some("gpu_math"));
        let files = v.get("filenames").and_then(Json::as_array).unwrap();
        assert_eq!(files[1].as_str(), Some("/t/a \"q\" \u{e9}\u{1F600}"));
        assert_eq!(v.get("fresh"), Some(&Json::Bool(false)));
        assert_eq!(v.get("n"), Some(&Json::Number("-1.5e3".to_string())));
        assert!(parse_json("{\"a\":1,}").is_err());
        assert!(parse_json("[1] x").is_err());
    }
}
