#!/usr/bin/env bash
# fatbin_sizes.sh [FATLINK]: prints the figures of docs/packager.md's
# "Compression choices": the sizes of one sm_80 cubin and its PTX, built
# from unittests/packager/testdata/scale.ll by llc-22 and ptxas, and of the
# fatbins CUDA's fatbinary (each --compress-mode) and `fatlink package`
# (uncompressed, zstd at levels 1 to 22) make of them. A measurement, not a
# test: it checks nothing (the byte-for-byte comparisons with fatbinary are
# in //unittests/packager:fatbinary_compare_test).
#   bazel build //tools/fatlink && bench/fatbin_sizes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FATLINK="${1:-bazel-bin/tools/fatlink/fatlink}"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
[ -x "$FATLINK" ] || { echo "fatbin_sizes: no fatlink at $FATLINK: bazel build //tools/fatlink" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

llc-22 -march=nvptx64 -mcpu=sm_80 unittests/packager/testdata/scale.ll -o "$dir/scale.ptx"
"$CUDA/bin/ptxas" -arch=sm_80 "$dir/scale.ptx" -o "$dir/scale.cubin"
size() { wc -c <"$1" | tr -d ' '; }

"$FATLINK" package --compress=none "$dir/scale.cubin" "$dir/scale.ptx" -o "$dir/none.fatbin"
# The size column of the PTX row: the minified text fatlink stores.
minified=$("$FATLINK" inspect "$dir/none.fatbin" | awk '$3 == "ptx" { print $7 }')
echo "images: cubin $(size "$dir/scale.cubin") B, ptx $(size "$dir/scale.ptx") B (minified $minified B)"
for mode in none default speed balance size; do
  "$CUDA/bin/fatbinary" -64 --create "$dir/fb-$mode.fatbin" --compress-mode=$mode \
    --image3=kind=elf,sm=80,file="$dir/scale.cubin" --image3=kind=ptx,sm=80,file="$dir/scale.ptx"
  echo "fatbinary --compress-mode=$mode: $(size "$dir/fb-$mode.fatbin") B"
done
echo "fatlink none: $(size "$dir/none.fatbin") B"
for level in 1 3 9 15 19 22; do
  "$FATLINK" package --compress=zstd-$level "$dir/scale.cubin" "$dir/scale.ptx" -o "$dir/z$level.fatbin"
  echo "fatlink zstd -$level: $(size "$dir/z$level.fatbin") B"
done
