"""Bazel rules for GPU programs with device code in Rust and CUDA C++.

    load("@fatlink//rules:defs.bzl", "cuda_gpu_library", "gpu_device_link", "rust_gpu_library")
    load("@fatlink//rules:defs.bzl", "rust_gpu_proc_macro", "gpu_bindings")

rust_gpu_library and cuda_gpu_library compile device code to bitcode
(rust_gpu_proc_macro builds a proc-macro crate, such as fatlink-macros, for
the rustc that compiles Rust device crates);
gpu_device_link links all of it into one program, optimizes it as a whole
and compiles it for every GPU target, giving a CcInfo that cc_binary (or
rules_rust's rust_binary) depends on; gpu_bindings generates typed host
launch functions (C++) or handles (Rust) from the link's kernel manifests.
See docs/bazel.md.
"""

load(":bindings.bzl", _gpu_bindings = "gpu_bindings")
load(":device_link.bzl", _DEFAULT_ARCHS = "DEFAULT_ARCHS", _gpu_device_link = "gpu_device_link")
load(
    ":library.bzl",
    _RustProcMacroInfo = "RustProcMacroInfo",
    _cuda_gpu_library = "cuda_gpu_library",
    _rust_gpu_library = "rust_gpu_library",
    _rust_gpu_proc_macro = "rust_gpu_proc_macro",
)
load(":providers.bzl", _GpuDeviceLinkInfo = "GpuDeviceLinkInfo", _GpuLibraryInfo = "GpuLibraryInfo")
load(":toolchain.bzl", _FatlinkToolchainInfo = "FatlinkToolchainInfo", _fatlink_toolchain = "fatlink_toolchain")

rust_gpu_library = _rust_gpu_library
rust_gpu_proc_macro = _rust_gpu_proc_macro
cuda_gpu_library = _cuda_gpu_library
gpu_device_link = _gpu_device_link
gpu_bindings = _gpu_bindings
fatlink_toolchain = _fatlink_toolchain
GpuLibraryInfo = _GpuLibraryInfo
GpuDeviceLinkInfo = _GpuDeviceLinkInfo
RustProcMacroInfo = _RustProcMacroInfo
FatlinkToolchainInfo = _FatlinkToolchainInfo
DEFAULT_ARCHS = _DEFAULT_ARCHS
