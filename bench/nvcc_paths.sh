#!/usr/bin/env bash
# nvcc_paths.sh [FATLINK]: the figures of docs/nvcc.md. One program, the
# CUDA C++ of testdata/nvcc (nv_math.cu, nv_extra.cu) plus a twin of
# testdata/rust/nvcc_calls.rs in CUDA C++ (square.cu, below), linked for
# sm_80 five ways:
#   nvcc-rdc      nvcc -dc, then nvlink (what nvcc -dlink runs): NVIDIA's
#                 reference
#   nvcc-dlto     nvcc -dc -dlto, then nvlink -lto (what nvcc -dlink -dlto
#                 runs: link-time optimization by libnvvm)
#   fatlink-rdc   clang bitcode of square.cu + nvcc -dc cubins (nvlink)
#   fatlink-lto   clang bitcode of square.cu + nvcc LTO-IR (nvJitLink)
#   fatlink-rust  the Rust crate + nvcc LTO-IR (nvJitLink)
# For each: the link's wall time (best of 3) and, per kernel, registers,
# SASS instructions (not counting NOP padding) and calls left, read by
# NVIDIA's cuobjdump and nvdisasm (scripts/setup.sh installs both). A
# measurement, not a test: it checks nothing.
#   bazel build //tools/fatlink && bench/nvcc_paths.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FATLINK="$(realpath "${1:-bazel-bin/tools/fatlink/fatlink}")"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
CUOBJDUMP="${CUOBJDUMP:-${FATLINK_DEPS_DIR:-$HOME/.cache/fatlink/deps}/cuobjdump/bin/cuobjdump}"
# cuobjdump -sass runs the nvdisasm beside it.
export PATH="$(dirname "$CUOBJDUMP"):$PATH"
T="$PWD/testdata"
[ -x "$FATLINK" ] || { echo "nvcc_paths: no fatlink at $FATLINK: bazel build //tools/fatlink" >&2; exit 1; }
[ -x "$CUOBJDUMP" ] || { echo "nvcc_paths: no cuobjdump at $CUOBJDUMP: run scripts/setup.sh" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
NVCC="$CUDA/bin/nvcc"
cat > square.cu <<'CU'
extern "C" __device__ float nv_scale(float x);
extern "C" __device__ unsigned nv_calls;
extern "C" __device__ float rust_square(float x) { return x * x; }
extern "C" __global__ void rust_scale_all(float *p) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  p[i] = nv_scale(p[i]);
}
extern "C" __global__ void rust_read_calls(unsigned *out) { *out = nv_calls; }
CU
# nvlink -lto looks for libnvvm under <cuda>/nvvm/lib64, which this CUDA
# 13.0 install leaves out: give it one.
mkdir -p nvvm/lib64 && ln -s "$CUDA/lib64/libnvvm.so.4" nvvm/lib64/libnvvm.so
RUSTC_BOOTSTRAP=1 rustc --target nvptx64-nvidia-cuda --edition 2021 -O --crate-type rlib \
  --crate-name fatlink_device "$T/../cargo/fatlink-device/src/lib.rs" -o libfatlink_device.rlib
RUSTC_BOOTSTRAP=1 rustc --target nvptx64-nvidia-cuda --edition 2021 -O --crate-type rlib \
  --crate-name nvcc_calls "$T/rust/nvcc_calls.rs" --extern fatlink_device=libfatlink_device.rlib -o libnvcc_calls.rlib
for f in square nv_math nv_extra; do
  src="$T/nvcc/$f.cu"; [ "$f" = square ] && src=square.cu
  "$NVCC" -dc -arch=sm_80 "$src" -o "$f.rdc.o"
  "$NVCC" -dc -dlto -arch=sm_80 "$src" -o "$f.lto.o"
done
clang++-22 -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only -fgpu-rdc -O3 \
  -emit-llvm -c --offload-arch=sm_80 square.cu -o square.bc

best() { # best of three wall times of "$@", in ms
  local b=999999 t
  for _ in 1 2 3; do
    local s=$(date +%s%N); "$@" >/dev/null 2>&1; t=$(( ($(date +%s%N) - s) / 1000000 ))
    (( t < b )) && b=$t
  done
  echo "$b"
}
report() { # NAME FILE-WITH-SM_80-CODE MS
  local name="$1" file="$2" ms="$3"
  "$CUOBJDUMP" -res-usage "$file" 2>/dev/null | awk -v n="$name" -v ms="$ms" '
    /Function/ { fn=$2; sub(":", "", fn) } /REG:/ { for (i=1;i<=NF;i++) if ($i ~ /^REG:/) { r=$i; sub("REG:","",r); regs[fn]=r } }
    END { for (f in regs) printf "%s\t%s\t%s\tregs %s\n", n, ms, f, regs[f] }' | sort
  "$CUOBJDUMP" -sass "$file" 2>/dev/null | awk -v n="$name" '
    /Function :/ { fn=$3 } /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// && !/ NOP/ { ins[fn]++; if ($0 ~ / CALL/) calls[fn]++ }
    END { for (f in ins) printf "%s\t\t%s\tsass %d\tcalls %d\n", n, f, ins[f], calls[f] }' | sort
}
NVLINK=("$CUDA/bin/nvlink" -arch=sm_80)
ms=$(best "${NVLINK[@]}" square.rdc.o nv_math.rdc.o nv_extra.rdc.o -o nvcc-rdc.cubin)
report nvcc-rdc nvcc-rdc.cubin "$ms"
ms=$(best "${NVLINK[@]}" -lto -nvvmpath="$dir/nvvm" square.lto.o nv_math.lto.o nv_extra.lto.o -o nvcc-dlto.cubin)
report nvcc-dlto nvcc-dlto.cubin "$ms"
FL=("$FATLINK" device-link --cache-dir= --arch=sm_80)
ms=$(best "${FL[@]}" square.bc nv_math.rdc.o nv_extra.rdc.o -o fatlink-rdc.fatbin)
report fatlink-rdc fatlink-rdc.fatbin "$ms"
ms=$(best "${FL[@]}" square.bc nv_math.lto.o nv_extra.lto.o -o fatlink-lto.fatbin)
report fatlink-lto fatlink-lto.fatbin "$ms"
ms=$(best "${FL[@]}" libnvcc_calls.rlib nv_math.lto.o nv_extra.lto.o -o fatlink-rust.fatbin)
report fatlink-rust fatlink-rust.fatbin "$ms"
