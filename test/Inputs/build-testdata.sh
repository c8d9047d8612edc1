#!/usr/bin/env bash
# build-testdata.sh TESTDATA DIR: builds the device code most lit tests
# link into DIR, with the real rustc and clang-22: the Rust crates
# fatlink_device (cargo/fatlink-device, over the minicore it includes: no
# nvptx `core` here) with its `macros` feature over the proc-macro crate
# fatlink_macros (cargo/fatlink-device/macros, built for the host:
# libfatlink_macros.so), vecmath and saxpy (rlibs, their kernels under
# #[fatlink_device::kernel]), and softplus.cu as sm_75 bitcode
# (softplus.bc) and as a host object carrying sm_75 and sm_90 bitcode
# (softplus.o). The lit substitution %build_testdata runs it, or, under
# Bazel, copies what //test:testdata_dev built with it (test/testdata.bzl).
# FATLINK_RUSTC and FATLINK_CLANG name the compilers (default: rustc and
# clang++-22 in PATH), as for the GPU rules. A crate built against DIR's
# libfatlink_device.rlib needs `-L dependency=DIR`, where rustc finds
# fatlink_macros (lit's %rustc_nvptx passes `-L dependency=%t.dev`).
set -euo pipefail
if [ "$1" = --copy ]; then
  # build-testdata.sh --copy PREBUILT DIR: a writable copy of a build's output.
  rm -rf "$3"
  mkdir -p "$3"
  cp "$2"/* "$3"/
  chmod -R u+w "$3"
  exit 0
fi
TESTDATA="$1" DIR="$2"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
RUSTC="${FATLINK_RUSTC:-rustc}"
CLANGXX="${FATLINK_CLANG:-clang++-22}"
rm -rf "$DIR"
mkdir -p "$DIR"
# rust_crate NAME SRC [RUSTC ARGS...]
rust_crate() {
  local name="$1" src="$2"; shift 2
  RUSTC_BOOTSTRAP=1 "$RUSTC" --target nvptx64-nvidia-cuda --edition 2021 -O \
    --crate-type rlib --crate-name "$name" "$src" \
    -L "$DIR" -o "$DIR/lib$name.rlib" "$@"
}
# fatlink-device lies beside testdata/ (its lib.rs includes
# testdata/rust/minicore.rs by a relative #[path]).
# fatlink-macros is a proc-macro: rustc builds it for the host (a shared
# library that rustc loads when it expands #[fatlink_device::kernel]).
# FATLINK_HOST_CC (default: cc) is the C compiler driver rustc links it with.
"$RUSTC" --edition 2021 --crate-type proc-macro --crate-name fatlink_macros \
  -C linker="${FATLINK_HOST_CC:-cc}" \
  "$TESTDATA/../cargo/fatlink-device/macros/src/lib.rs" -o "$DIR/libfatlink_macros.so"
rust_crate fatlink_device "$TESTDATA/../cargo/fatlink-device/src/lib.rs" \
  --cfg 'feature="macros"' --extern fatlink_macros="$DIR/libfatlink_macros.so"
DEVICE=(--extern fatlink_device="$DIR/libfatlink_device.rlib")
rust_crate vecmath "$TESTDATA/rust/vecmath.rs" "${DEVICE[@]}"
rust_crate saxpy "$TESTDATA/rust/saxpy.rs" "${DEVICE[@]}" --extern vecmath="$DIR/libvecmath.rlib"
CUDA_FLAGS=(-x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version -fgpu-rdc -O3)
"$CLANGXX" "${CUDA_FLAGS[@]}" --cuda-device-only --offload-arch=sm_75 -emit-llvm -c \
  "$TESTDATA/cuda/softplus.cu" -o "$DIR/softplus.bc"
"$CLANGXX" "${CUDA_FLAGS[@]}" --offload-new-driver -foffload-lto --offload-arch=sm_75,sm_90 -c \
  "$TESTDATA/cuda/softplus.cu" -o "$DIR/softplus.o"
