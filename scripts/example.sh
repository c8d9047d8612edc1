#!/usr/bin/env bash
# example.sh: fatlink's main job on the bundled example.
#
# Two Rust device crates (vecmath, saxpy; #![no_core] over fatlink-device)
# and CUDA C++ device code (softplus.cu) are compiled to bitcode, linked as
# one program with whole-program LTO (the Rust kernel's call into CUDA C++,
# and libdevice's expf/logf under it, are inlined), compiled for five GPU
# generations plus PTX for future GPUs, packed into one fatbin inside a host
# object, and linked into a host program that lists what it carries.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
bazel build -c opt //tools/fatlink >/dev/null 2>&1 || bazel build //tools/fatlink
FATLINK="$ROOT/bazel-bin/tools/fatlink/fatlink"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
OUT="${1:-$ROOT/build/example}"
ARCHS="${ARCHS:-sm_75,sm_80,sm_90,sm_100,sm_120,compute_120}"
mkdir -p "$OUT"
cd "$OUT"

echo "== compiling the Rust device crates (rustc --target nvptx64-nvidia-cuda)"
# rust NAME SRC [RUSTC ARGS...]
rust() {
  RUSTC_BOOTSTRAP=1 rustc --target nvptx64-nvidia-cuda --edition 2021 -O \
    --crate-type rlib --crate-name "$1" "$2" -L . -o "lib$1.rlib" "${@:3}"
}
# fatlink-device with #[fatlink_device::kernel] (its proc-macro crate
# fatlink_macros, for the host, lands here too; -L . finds it).
bash "$ROOT/test/Inputs/build-device-macros.sh" "$ROOT" .
rust vecmath "$ROOT/testdata/rust/vecmath.rs" --extern fatlink_device=libfatlink_device.rlib
rust saxpy "$ROOT/testdata/rust/saxpy.rs" --extern fatlink_device=libfatlink_device.rlib --extern vecmath=libvecmath.rlib

echo "== compiling the CUDA C++ device code (clang-22 -x cuda)"
clang++-22 -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
  --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c "$ROOT/testdata/cuda/softplus.cu" -o softplus.bc

echo "== fatlink device-link --arch=$ARCHS"
time "$FATLINK" device-link --arch="$ARCHS" libsaxpy.rlib libvecmath.rlib libfatlink_device.rlib \
  softplus.bc -o kernels.o --json=kernels.json

echo "== linking the host program"
cc -O2 -I"$ROOT" "$ROOT/examples/mixed/main.c" kernels.o -o app
./app
echo "== $OUT/app carries $(stat -c %s kernels.o) bytes of device code"
