"""Bazel rules for GPU programs with device code in Rust and CUDA C++.

    load("@fatlink//rules:defs.bzl", "cuda_gpu_library", "gpu_device_link", "rust_gpu_library")

rust_gpu_library and cuda_gpu_library compile device code to bitcode;
gpu_device_link links all of it into one program, optimizes it as a whole
and compiles it for every GPU target, giving a CcInfo that cc_binary (or
rules_rust's rust_binary) depends on. See docs/bazel.md.
"""

load(":device_link.bzl", _DEFAULT_ARCHS = "DEFAULT_ARCHS", _gpu_device_link = "gpu_device_link")
load(":library.bzl", _cuda_gpu_library = "cuda_gpu_library", _rust_gpu_library = "rust_gpu_library")
load(":providers.bzl", _GpuLibraryInfo = "GpuLibraryInfo")
load(":toolchain.bzl", _FatlinkToolchainInfo = "FatlinkToolchainInfo", _fatlink_toolchain = "fatlink_toolchain")

rust_gpu_library = _rust_gpu_library
cuda_gpu_library = _cuda_gpu_library
gpu_device_link = _gpu_device_link
fatlink_toolchain = _fatlink_toolchain
GpuLibraryInfo = _GpuLibraryInfo
FatlinkToolchainInfo = _FatlinkToolchainInfo
DEFAULT_ARCHS = _DEFAULT_ARCHS
