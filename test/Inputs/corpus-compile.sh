#!/usr/bin/env bash
# corpus-compile.sh CORPUS OBJ: compiles the corpus of realistic CUDA C++
# programs (testdata/cuda/corpus, docs/corpus.md) into OBJ, each translation
# unit at -O0 and -O3, by clang-22's new offload driver, two at a time
# (what lit's shell cannot say; cccl.cu, CUB and thrust, dominates). A TU
# whose code depends on __CUDA_ARCH__ (its own guards, or cuda_bf16.h's) is
# compiled for sm_75, sm_80 and sm_90 (sm_100 and sm_120 take the sm_90
# images), cccl.cu for all five sm targets (CUB's EmptyKernel is empty by
# design: compiled for fewer arches than the targets, fatlink warns that it
# may have lost arch-gated code), the others for sm_75 only (one image
# serves every target), to keep the compile time down.
#
# Writes OBJ/TU.OPT.o and OBJ/TU.OPT.log (clang's diagnostics), then prints
# one line per object, "TU.OPT.o: SIZE bytes" (or "TU.OPT.o: missing"),
# followed by every non-empty log as "TU.OPT.log: LINE": the test checks
# this listing.
set -uo pipefail
CORPUS="$1" OBJ="$2"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
TUS="cccl smem_scan smem_histogram warp_coop atomics tensor_async numerics
  texsurf dispatch_a dispatch_b dynpar"
mkdir -p "$OBJ"

offload_archs() {
  case "$1" in
  cccl) echo sm_75,sm_80,sm_90,sm_100,sm_120 ;;
  warp_coop | atomics | tensor_async | numerics) echo sm_75,sm_80,sm_90 ;;
  *) echo sm_75 ;;
  esac
}

# CCCL, which cooperative_groups needs too, lives in include/cccl in CUDA 13.
compile() {
  clang++-22 -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version -std=c++17 \
    -I"$CUDA/include/cccl" --offload-new-driver -fgpu-rdc -foffload-lto \
    --offload-arch="$(offload_archs "$1")" "-$2" -c "$CORPUS/$1.cu" \
    -o "$OBJ/$1.$2.o" 2>"$OBJ/$1.$2.log"
}

running=0
for opt in O0 O3; do
  for tu in $TUS; do
    compile "$tu" "$opt" &
    running=$((running + 1))
    if [ $running -ge 2 ]; then wait -n; running=$((running - 1)); fi
  done
done
wait

for opt in O0 O3; do
  for tu in $TUS; do
    if [ -s "$OBJ/$tu.$opt.o" ]; then
      echo "$tu.$opt.o: $(stat -c %s "$OBJ/$tu.$opt.o") bytes"
    else
      echo "$tu.$opt.o: missing"
    fi
  done
done
for opt in O0 O3; do
  for tu in $TUS; do
    [ -s "$OBJ/$tu.$opt.log" ] && sed "s/^/$tu.$opt.log: /" "$OBJ/$tu.$opt.log"
  done
done
exit 0
