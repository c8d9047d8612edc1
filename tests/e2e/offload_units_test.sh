#!/usr/bin/env bash
# offload_units_test.sh: objects whose `.llvm.offloading` section holds
# several translation units, each compiled for its own set of arches (`ld -r`
# of clang --offload-new-driver objects, `fatlink embed` of such objects).
# Each unit's images are alternatives of one another; another unit's are
# not: every kernel of every unit must reach every target, or the link must
# fail saying which target a unit cannot serve. An image for an arch fatlink
# does not know is refused, never left out.
source "$(dirname "$0")/testlib.sh"
need_tool "$CLANG"
need_tool ld
export FATLINK_CACHE_DIR=off
unset FATLINK_ARCH FATLINK_CONFIG FATLINK_VERBOSE
mkdir -p "$WORK/dev"
D="$WORK/dev"

cuda_obj unit_a.cu sm_75,sm_90 "$D/a.o" &&
  cuda_obj unit_b.cu sm_80 "$D/b.o" &&
  ld -r "$D/a.o" "$D/b.o" -o "$D/ab.o" &&
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=sm_75,sm_90 \
    -O3 -DVARIANT=1 -c "$TESTDATA/cuda/unit_variant.cu" -o "$D/v1.o" &&
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=sm_75,sm_90 \
    -O3 -DVARIANT=2 -c "$TESTDATA/cuda/unit_variant.cu" -o "$D/v2.o" &&
  ld -r "$D/v1.o" "$D/v2.o" -o "$D/v12.o" || {
    echo "FAIL: building the test objects failed"; exit 1; }

# The merged object really holds three images in one section, for sm_75,
# sm_90 (unit_a) and sm_80 (unit_b): the case under test.
check "ld -r merges both units' images into one section" \
  test "$(llvm-objdump-22 --offloading "$D/ab.o" | grep -c '^arch')" -eq 3

# has_kernels FILE NAME...: FILE (a cubin or PTX) defines every kernel NAME.
has_kernels() {
  local file="$1" name; shift
  [ -s "$file" ] || { echo "missing $file"; return 1; }
  for name in "$@"; do
    grep -aq "$name" "$file" || { echo "$file lacks $name"; return 1; }
  done
}

# every_target DIR TARGETS NAME...: each target's output in DIR has every
# kernel.
every_target() {
  local dir="$1" targets="$2" t f; shift 2
  for t in ${targets//,/ }; do
    case $t in compute_*) f="$dir/$t.ptx" ;; *) f="$dir/$t.cubin" ;; esac
    has_kernels "$f" "$@" || return 1
  done
}

# 1. ld -r of units compiled for different arch sets: sm_80 takes unit_a's
#    sm_75 image and unit_b's sm_80 one; sm_90 unit_a's sm_90 and unit_b's
#    sm_80. (Before: sm_80 got unit_b only, sm_90 unit_a only.)
T=sm_80,sm_90,compute_80,sm_100
OUT="$WORK/ab"
"$FATLINK" device-link --arch=$T "$D/ab.o" -o "$OUT/" &&
  check "ld -r: every kernel of both units in every target ($T)" \
    every_target "$OUT" $T unit_a_kernel unit_b_kernel ||
  fail "ld -r: device-link failed"

# The same object as a fatbin: one link, both kernels in its interface.
"$FATLINK" device-link --arch=sm_80,sm_90 "$D/ab.o" --json="$WORK/ab.json" \
  -o "$WORK/ab.fatbin" &&
  check "ld -r: both kernels in the link's kernel list" \
    has_kernels "$WORK/ab.json" '"unit_a_kernel"' '"unit_b_kernel"' ||
  fail "ld -r: device-link to a fatbin failed"

# A target one unit cannot serve is an error naming that unit's arches, not
# a target without that unit's kernels.
OUT="$WORK/err.fatbin"
expect_error "ld -r: a unit without code for a target is refused" \
  "device code was compiled for sm_80 only, which cannot run on target sm_75" \
  device-link --arch=sm_75,sm_90 "$D/ab.o" -o "$OUT"

# 2. Two units of one source file (compiled twice, different macros) with the
#    same arches: each arch repeats, so they are two units. (This passed
#    before too; it guards the rule that tells units apart.)
T=sm_75,sm_90,compute_90
OUT="$WORK/v12"
"$FATLINK" device-link --arch=$T "$D/v12.o" -o "$OUT/" &&
  check "ld -r of one file compiled twice: both kernels in every target" \
    every_target "$OUT" $T variant_kernel_1 variant_kernel_2 ||
  fail "ld -r of one file compiled twice: device-link failed"

# 3. fatlink embed of the two objects writes their images into one section
#    too, in input order.
"$FATLINK" embed "$D/a.o" "$D/b.o" -o "$D/embedded.o" || fail "embed failed"
T=sm_80,sm_90
OUT="$WORK/emb"
"$FATLINK" device-link --arch=$T "$D/embedded.o" -o "$OUT/" &&
  check "embed: every kernel of both units in every target" \
    every_target "$OUT" $T unit_a_kernel unit_b_kernel ||
  fail "embed: device-link failed"

# 4. The same for relocatable cubins (no -foffload-lto: nvlink links them):
#    each unit needs a cubin of every target's arch. unit_a has sm_75 and
#    sm_90, unit_b sm_80: no target can be served, and the link says so.
#    (Before: sm_80 linked unit_b's cubin alone, sm_90 unit_a's, exit 0.)
cuda_obj_nolto unit_a.cu sm_75,sm_90 "$D/an.o" &&
  cuda_obj_nolto unit_b.cu sm_80 "$D/bn.o" &&
  ld -r "$D/an.o" "$D/bn.o" -o "$D/abn.o" ||
  fail "building the relocatable-cubin objects failed"
OUT="$WORK/abn.fatbin"
expect_error "ld -r, cubins: a unit without a cubin for a target is refused" \
  "abn.o: holds relocatable device code (cubins) for sm_75, sm_90 only, which cannot serve target sm_80" \
  device-link --arch=sm_80,sm_90 "$D/abn.o" -o "$OUT"
# Units with a cubin for each target: both kernels in each.
cuda_obj_nolto unit_a.cu sm_80,sm_90 "$D/an2.o" &&
  cuda_obj_nolto unit_b.cu sm_90,sm_80 "$D/bn2.o" &&
  ld -r "$D/an2.o" "$D/bn2.o" -o "$D/abn2.o" ||
  fail "building the relocatable-cubin objects failed"
T=sm_80,sm_90
OUT="$WORK/abn2"
"$FATLINK" device-link --arch=$T "$D/abn2.o" -o "$OUT/" &&
  check "ld -r, cubins: every kernel of both units in every target" \
    every_target "$OUT" $T unit_a_kernel unit_b_kernel ||
  fail "ld -r, cubins: device-link failed"

# 5. An image for an arch fatlink does not know ("compute_80" is a virtual
#    arch, not what an image is compiled for) beside a good one of another
#    unit: refused, naming the image and the arch. (Before: left out
#    without a word, the link succeeded without unit_a_kernel.)
"$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
  --cuda-device-only --offload-arch=sm_80 -fgpu-rdc -O3 -emit-llvm -c \
  "$TESTDATA/cuda/unit_a.cu" -o "$D/a.bc" &&
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --cuda-device-only --offload-arch=sm_80 -fgpu-rdc -O3 -emit-llvm -c \
    "$TESTDATA/cuda/unit_b.cu" -o "$D/b.bc" &&
  clang-offload-packager-22 -o "$D/odd.pkg" \
    --image=file="$D/b.bc",triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda \
    --image=file="$D/a.bc",triple=nvptx64-nvidia-cuda,arch=compute_80,kind=cuda &&
  "$CLANG_C" -c -x c /dev/null -o "$D/odd.o" \
    -Xclang -fembed-offload-object="$D/odd.pkg" ||
  fail "building the object with an unknown arch failed"
OUT="$WORK/odd.fatbin"
expect_error "an image for an unknown arch is refused" \
  "odd.o(.llvm.offloading[1]): image for unknown GPU arch 'compute_80'" \
  device-link --arch=sm_80 "$D/odd.o" -o "$OUT"

finish
