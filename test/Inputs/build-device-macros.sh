#!/usr/bin/env bash
# build-device-macros.sh SRC_ROOT DIR: builds into DIR the proc-macro crate
# fatlink-macros (cargo/fatlink-device/macros, for the host:
# libfatlink_macros.so) and fatlink-device with its `macros` feature over
# it (libfatlink_device.rlib, for nvptx64 over the minicore), for the tests
# of `#[fatlink_device::kernel]`. Kernel crates built against this rlib
# need `-L DIR`, where rustc finds the proc-macro crate. (%build_testdata
# builds the same two into %t.dev; scripts/example.sh, fuzz/seeds.sh and
# tests/gpu/run.sh use this script for theirs.)
set -euo pipefail
SRC="$1" DIR="$2"
RUSTC="${FATLINK_RUSTC:-rustc}"
mkdir -p "$DIR"
"$RUSTC" --edition 2021 --crate-type proc-macro --crate-name fatlink_macros \
  -C linker="${FATLINK_HOST_CC:-cc}" \
  "$SRC/cargo/fatlink-device/macros/src/lib.rs" -o "$DIR/libfatlink_macros.so"
RUSTC_BOOTSTRAP=1 "$RUSTC" --target nvptx64-nvidia-cuda --edition 2021 -O \
  --crate-type rlib --crate-name fatlink_device \
  "$SRC/cargo/fatlink-device/src/lib.rs" --cfg 'feature="macros"' \
  --extern fatlink_macros="$DIR/libfatlink_macros.so" -o "$DIR/libfatlink_device.rlib"
