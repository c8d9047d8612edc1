#!/usr/bin/env bash
# cuda_idioms_test.sh: CUDA C++ idioms that real programs use and that a
# device linker must accept (issue #13), each built by clang-22 from
# testdata/cuda/ and linked for sm_75, sm_80, sm_90, sm_100, sm_120 and
# compute_120, the cubins assembled by the real ptxas:
#   - dynamic shared memory (`extern __shared__`) in two translation units
#     with different element types: one .extern .shared, 16-byte aligned;
#   - cooperative groups at -O0: clang's extern_weak threadIdx & co.;
#   - inline PTX needing a newer PTX ISA than sm_75's minimum (bmsk: 7.6);
#   - kernels compiled out for the bitcode's arch: a warning, and -v/--json
#     say which arch each input was compiled for;
#   - --error-limit.
source "$(dirname "$0")/testlib.sh"
need_tool "$CLANG"
D="$WORK/dev"
mkdir -p "$D"
ARCHS=sm_75,sm_80,sm_90,sm_100,sm_120,compute_120

# CUDA C++ to device bitcode for sm_75 at -O$3: bc FILE OUT OPT.
bc() {
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    -I"$CUDA/include/cccl" --cuda-device-only --offload-arch=sm_75 -fgpu-rdc \
    -O"$3" -emit-llvm -c "$TESTDATA/cuda/$1" -o "$2"
}

# Every entry of a fatbin (five cubins and a PTX) defines each kernel:
# has_kernels FATBIN K... (cubins: an ELF symbol; PTX: an .entry).
has_kernels() {
  local fatbin="$1" dir="$WORK/extract"; shift
  rm -rf "$dir"
  "$FATLINK" inspect --extract="$dir" "$fatbin" >/dev/null || return 1
  local n
  n=$(ls "$dir" | wc -l)
  [ "$n" -eq 6 ] || { echo "expected 6 entries, found $n: $(ls "$dir")"; return 1; }
  local f k
  for f in "$dir"/*; do
    for k in "$@"; do
      case "$f" in
        *.cubin) readelf -sW "$f" | grep -qE " FUNC .* $k\$" ;;
        *.ptx) grep -qE "\.entry $k\(" "$f" ;;
        *) false ;;
      esac || { echo "$k missing in $f"; return 1; }
    done
  done
}

for O in 0 3; do
  # Dynamic shared memory across translation units.
  bc dynamic_smem_a.cu "$D/smem_a$O.bc" $O && bc dynamic_smem_b.cu "$D/smem_b$O.bc" $O ||
    { fail "-O$O: compiling dynamic_smem"; continue; }
  check "-O$O: extern __shared__ in two units links for every target" \
    "$FATLINK" device-link --arch=$ARCHS "$D/smem_a$O.bc" "$D/smem_b$O.bc" -o "$WORK/smem$O.fatbin"
  check "-O$O: both dynamic-shared-memory kernels in every entry" \
    has_kernels "$WORK/smem$O.fatbin" block_sum block_reverse4
  for order in "a b" "b a"; do
    set -- $order
    "$FATLINK" device-link --arch=sm_80 "$D/smem_$1$O.bc" "$D/smem_$2$O.bc" -o "$WORK/smem.ptx"
    check "-O$O ($order): one .extern .shared, with the larger alignment" \
      test "$(grep -c '^\.extern \.shared \.align 16 \.b8 dyn_smem\[\];$' "$WORK/smem.ptx")" -eq 1
  done

  # Cooperative groups: threadIdx & co. are weak references.
  bc coop_groups.cu "$D/cg$O.bc" $O || { fail "-O$O: compiling coop_groups.cu"; continue; }
  [ "$O" = 0 ] && check "-O0: clang's bitcode declares threadIdx extern_weak" \
    grep -q '@threadIdx = extern_weak' <("${LLVM_DIS:-llvm-dis-22}" "$D/cg0.bc" -o -)
  check "-O$O: cooperative groups link for every target" \
    "$FATLINK" device-link --arch=$ARCHS "$D/cg$O.bc" -o "$WORK/cg$O.fatbin"
  check "-O$O: tile_sum in every entry" has_kernels "$WORK/cg$O.fatbin" tile_sum
  check "-O$O: cooperative groups, partitioned (relocatable cubins, nvlink)" \
    "$FATLINK" device-link -O$O --partitions=2 --arch=sm_75,sm_90 "$D/cg$O.bc" "$D/smem_a$O.bc" \
      -o "$WORK/cgp$O.fatbin"

  # Inline PTX that needs PTX ISA 7.6 on sm_75.
  bc inline_ptx_isa.cu "$D/isa$O.bc" $O || { fail "-O$O: compiling inline_ptx_isa.cu"; continue; }
  check "-O$O: inline bmsk links for every target" \
    "$FATLINK" device-link --arch=$ARCHS "$D/isa$O.bc" -o "$WORK/isa$O.fatbin"
  check "-O$O: low_bits_mask in every entry" has_kernels "$WORK/isa$O.fatbin" low_bits_mask
done

# The PTX ISA: the inputs' +ptxNN raises sm_75's 6.3; -v says so.
"$FATLINK" device-link -v --arch=sm_75 "$D/isa3.bc" -o "$WORK/isa75.ptx" 2>"$WORK/isa.log"
check "sm_75 PTX is generated for the inputs' ISA (8.8 from clang's CUDA 12.9)" \
  grep -qx '\.version 8\.8' "$WORK/isa75.ptx"
check "sm_75 PTX keeps the bmsk instruction" grep -q 'bmsk.clamp.b32' "$WORK/isa75.ptx"
check "-v says the ISA was raised" \
  grep -qF "target sm_75: PTX ISA raised to 8.8, the newest its inputs were compiled for" "$WORK/isa.log"
# --ptx-version is the override: 6.3 is the user's choice, and ptxas then
# rejects bmsk, naming the target.
OUT="$WORK/isa63.cubin"
expect_error "--ptx-version overrides the inputs' ISA" "ptxas for sm_75 failed" \
  device-link --ptx-version=6.3 --arch=sm_75 "$D/isa3.bc" -o "$OUT"
# A PTX ISA above what this ptxas takes is refused before any work, naming
# the input (bitcode whose +ptx99 no CUDA toolkit accepts).
sed 's/+ptx88/+ptx99/g' <("${LLVM_DIS:-llvm-dis-22}" "$D/isa3.bc" -o -) > "$WORK/isa99.ll"
"${LLVM_AS:-llvm-as-22}" "$WORK/isa99.ll" -o "$D/isa99.bc"
OUT="$WORK/isa99.cubin"
expect_error "input compiled for a PTX ISA ptxas does not take" \
  "$D/isa99.bc: compiled for PTX ISA 9.9 (+ptx99), but ptxas from CUDA" \
  device-link --arch=sm_80 "$D/isa99.bc" -o "$OUT"

# Code compiled out for the bitcode's arch: ampere_only's body is under
# __CUDA_ARCH__ >= 800, and arch_gated.bc is compiled for sm_75. Linked
# for sm_80 it is empty: a warning names the input, kernel and targets, and
# -v and --json say which arch each input was compiled for and serves.
bc arch_gated.cu "$D/gated.bc" 3
OUT="$WORK/gated"
"$FATLINK" device-link -v --arch=sm_75,sm_80,sm_90 "$D/gated.bc" -o "$OUT" \
  --json="$WORK/gated.json" 2>"$WORK/gated.log"
check "empty kernel from arch-gated code: still links" test -s "$OUT/sm_80.cubin"
check "empty kernel from arch-gated code: warned" grep -qF \
  "fatlink: warning: $D/gated.bc: kernel ampere_only is empty for sm_80, sm_90: the input was compiled for sm_75" \
  "$WORK/gated.log"
check "-v: what each input was compiled for and serves" grep -qF \
  "input $D/gated.bc: compiled for sm_75, serves sm_75, sm_80, sm_90" "$WORK/gated.log"
check "--json: inputs with compiled_for and targets" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
[u] = j["inputs"]
assert u["origin"] == sys.argv[2] and u["compiled_for"] == "sm_75", u
assert u["targets"] == ["sm_75", "sm_80", "sm_90"], u
assert len(j["warnings"]) == 1 and "ampere_only" in j["warnings"][0], j["warnings"]
' "$WORK/gated.json" "$D/gated.bc"
"$FATLINK" device-link --arch=sm_75 "$D/gated.bc" -o "$WORK/gated75.cubin" 2>"$WORK/gated75.log"
check "no warning where the input's arch is the target's" test ! -s "$WORK/gated75.log"
"$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
  --offload-arch=sm_80 -fgpu-rdc -O3 -emit-llvm -c "$TESTDATA/cuda/arch_gated.cu" -o "$D/gated80.bc"
"$FATLINK" device-link --arch=sm_80 "$D/gated80.bc" -o "$WORK/gated80.cubin" 2>"$WORK/gated80.log"
check "no warning when compiled for the target" test ! -s "$WORK/gated80.log"

# No warning where the kernel is empty by design (no parameters: CUB's
# EmptyKernel) or where the unit was compiled for the target's arch too,
# even when an equal image of another arch serves it (sm_100's for sm_120).
printf '%s\n' 'extern "C" __global__ void empty_by_design() {}' \
  '#if __CUDA_ARCH__ >= 1000' 'extern "C" __global__ void work(float *p) {}' \
  '#else' 'extern "C" __global__ void work(float *p) { p[threadIdx.x] *= 2.0f; }' \
  '#endif' > "$WORK/e.cu"
"$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --offload-new-driver \
  -fgpu-rdc -foffload-lto --offload-arch=sm_75,sm_100,sm_120 -O3 -c "$WORK/e.cu" -o "$D/e.o"
"$FATLINK" device-link --arch=sm_75,sm_100,sm_120 "$D/e.o" -o "$WORK/e.fatbin" 2>"$WORK/e.log"
check "no warning for units compiled for every target, nor for parameterless kernels" \
  test ! -s "$WORK/e.log"
"$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
  --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c "$WORK/e.cu" -o "$D/e75.bc"
"$FATLINK" device-link --arch=sm_75,sm_80 "$D/e75.bc" -o "$WORK/e75.fatbin" 2>"$WORK/e75.log"
check "a parameterless empty kernel is empty by design" test ! -s "$WORK/e75.log"

# --error-limit: 25 duplicate kernels, 20 shown by default, all with 0.
for i in $(seq 1 25); do echo "extern \"C\" __global__ void dup$i(int *p) { *p = $i; }"; done > "$WORK/dups.cu"
for n in 1 2; do
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
    --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c "$WORK/dups.cu" -o "$D/dups$n.bc"
done
OUT="$WORK/dups.cubin"
"$FATLINK" device-link --arch=sm_80 "$D/dups1.bc" "$D/dups2.bc" -o "$OUT" 2>"$WORK/dups.log"
check "20 duplicate symbols shown by default" \
  test "$(grep -c 'error: duplicate device symbol' "$WORK/dups.log")" -eq 20
check "the cap names --error-limit" \
  grep -qF "too many errors (25), the first 20 shown: --error-limit=0 shows all" "$WORK/dups.log"
"$FATLINK" device-link --error-limit=0 --arch=sm_80 "$D/dups1.bc" "$D/dups2.bc" -o "$OUT" 2>"$WORK/dups.log"
check "--error-limit=0 shows all 25" \
  test "$(grep -c 'error: duplicate device symbol' "$WORK/dups.log")" -eq 25
expect_error "--error-limit takes a number" "invalid value for --error-limit" \
  device-link --error-limit=many --arch=sm_80 "$D/dups1.bc" -o "$OUT"

finish
