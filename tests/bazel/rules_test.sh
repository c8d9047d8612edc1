#!/usr/bin/env bash
# rules_test.sh: rule-level tests of rules/ (docs/bazel.md). They drive
# `bazel build` itself, so they run OUTSIDE Bazel (from .ci/run), on the
# graph in tests/bazel/BUILD.bazel:
#   1. editing one Rust device crate re-runs exactly that crate, the crates
#      that depend on it, the device link and the host link; nothing else
#      (counted in --execution_log_json_file); in the link split into
#      partitions (kernels_split, partitions = 4), only the code generation
#      of the partitions whose bitcode changed, and the joins; the joined
#      cubins equal the one-step `--codegen-only --partitions=4`;
#   2. --//rules:archs changes the targets of the build without recompiling
#      any library;
#   3. the same tree builds to the same bytes: again after an edit is undone,
#      and from scratch in another working directory (standalone instead of
#      the sandbox); no output holds an absolute path;
#   4. outputs that used to collide (tests/bazel/names/BUILD.bazel) build,
#      and each piece reaches the program: one cuda_gpu_library's sources
#      with one base name or one stem, two crates (and two proc-macros) of
#      one name in one package, a library named like a device link's
#      archive. (The rules' analysis errors are analysis tests:
#      tests/bazel/analysis, run by `bazel test //...`.)
# Usage: tests/bazel/rules_test.sh   (from anywhere; BAZEL= picks the binary)
set -uo pipefail
cd "$(dirname "$0")/../.."
BAZEL="${BAZEL:-bazel}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PKG=tests/bazel
TARGETS=(//tests/bazel:app //tests/bazel:kernels_fatbin //tests/bazel:kernels_split //tests/bazel:kernels_split_fatbin)
PASSED=0 FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() {
  local name="$1"; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}

# build LOG FLAGS...: builds the test graph, logging every executed spawn.
build() {
  local log="$1"; shift
  local start=$SECONDS
  if ! "$BAZEL" build "$@" --execution_log_json_file="$WORK/$log.json" "${TARGETS[@]}" \
      > "$WORK/$log.out" 2>&1; then
    cat "$WORK/$log.out"; fail "bazel build $* failed"; echo "$PASSED passed, $FAILED failed"; exit 1
  fi
  echo "build $log: $((SECONDS - start)) s, $(grep -o '[0-9]* processes' "$WORK/$log.out" | tail -1)"
}

# spawns LOG: the executed spawns as sorted "Mnemonic: progress message" lines.
spawns() {
  python3 - "$WORK/$1.json" <<'PY'
import json, sys
text, dec, i, out = open(sys.argv[1]).read(), json.JSONDecoder(), 0, []
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    # Only the test graph's actions: fatlink itself may be rebuilt too.
    if any("/tests/bazel/" in o for o in obj.get("listedOutputs", [])):
        out.append("%s: %s" % (obj.get("mnemonic", "?"), obj.get("progressMessage", "")))
print("\n".join(sorted(out)))
PY
}

# expect_spawns NAME LOG EXPECTED: the executed spawns are exactly EXPECTED.
expect_spawns() {
  local got
  got=$(spawns "$2")
  if [ "$got" = "$3" ]; then pass "$1 ($(wc -l <<<"$got") actions)"
  else fail "$1"; diff <(echo "$3") <(echo "$got") | sed 's/^/    /'; fi
}

# Every file the GPU rules and the host link write for the test graph
# (relative to bazel-bin/tests/bazel; fails if one is missing).
OUTPUTS=(libfatlink_device.rlib libvecmath.rlib libsaxpy.rlib libscale.rlib
  _objs/softplus/testdata/cuda/softplus.cu.o _objs/softplus/libsoftplus.a kernels.bc kernels/sm_75.cubin kernels/sm_90.cubin kernels/compute_90.ptx
  kernels.o kernels.fatbin libkernels_device.a app
  kernels_split.bc kernels_split/parts/part-{0,1,2,3}.bc kernels_split/sm_{75,90}/part-{0,1,2,3}.cubin
  kernels_split/sm_75.cubin kernels_split/sm_90.cubin kernels_split/compute_90.ptx
  kernels_split.o kernels_split.fatbin)
hashes() { (cd "bazel-bin/$PKG" && sha256sum "${OUTPUTS[@]}"); }

FATLINK=bazel-bin/tools/fatlink/fatlink
"$BAZEL" build //tools/fatlink >/dev/null 2>&1 || { echo "FAIL: cannot build fatlink"; exit 1; }

# 0. Baseline.
build base
hashes > "$WORK/base.sha" || { echo "FAIL: an output is missing"; exit 1; }
check "baseline: fatbin has sm_75, sm_90 and compute_90" bash -c \
  "$FATLINK inspect bazel-bin/$PKG/kernels.fatbin | awk 'NR>1{print \$3,\$4}' | tr '\n' ' ' | grep -qx 'cubin sm_75 cubin sm_90 ptx compute_90 '"

# The split link: every cubin target's code equals the one-step
# `--codegen-only --partitions=4` of the same program; one bucket is empty.
split_equals_one_step() {
  local d="bazel-bin/$PKG" t
  "$FATLINK" device-link --codegen-only --partitions=4 --arch=sm_75,sm_90,compute_90 \
    "$d/kernels_split.bc" -o "$WORK/one.fatbin" || return 1
  cmp "$WORK/one.fatbin" "$d/kernels_split.fatbin" || return 1
  for t in sm_75 sm_90; do
    "$FATLINK" device-link --codegen-only --partitions=4 --arch=$t "$d/kernels_split.bc" \
      -o "$WORK/one_$t.cubin" && cmp "$WORK/one_$t.cubin" "$d/kernels_split/$t.cubin" || return 1
  done
}
check "partitions = 4: the joined cubins and the fatbin equal the one-step --codegen-only --partitions=4" \
  split_equals_one_step
check "partitions = 4: one of the 4 buckets has no code (an empty cubin per target)" \
  bash -c "[ \$(find bazel-bin/$PKG/kernels_split/sm_75 bazel-bin/$PKG/kernels_split/sm_90 -name 'part-*.cubin' -size 0 | wc -l) = 2 ]"
(cd "bazel-bin/$PKG/kernels_split/parts" && sha256sum part-*.bc) > "$WORK/parts.sha"

# 1. Edit the vecmath crate (its source goes through a genrule).
build edit --define=fatlink_rules_test=edited
# The partitions whose bitcode the edit changed, and those compiled again.
changed_parts() {
  (cd "bazel-bin/$PKG/kernels_split/parts" && sha256sum part-*.bc) \
    | diff - "$WORK/parts.sha" | sed -n 's/^< .*part-\([0-9]*\)\.bc$/\1/p' | sort -u | tr '\n' ' '
}
recompiled_parts() {
  spawns edit | sed -n 's/^GpuCodegen: Generating sm_[0-9]* code for partition \([0-9]*\) .*/\1/p' \
    | sort -u | tr '\n' ' '
}
check "partitions = 4: the edit changed some partitions, not all ($(changed_parts))" \
  bash -c "[ -n '$(changed_parts)' ] && [ '$(changed_parts)' != '0 1 2 3 ' ]"
check "partitions = 4: exactly the changed partitions were compiled again ($(recompiled_parts))" \
  test "$(changed_parts)" = "$(recompiled_parts)"
check "partitions = 4: after the edit, the joined cubins still equal the one-step link" \
  split_equals_one_step
expect_spawns "editing vecmath re-runs vecmath, saxpy (its dependent), the device links, the bindings and the host link only" edit \
"CppLink: Linking tests/bazel/app
Genrule: Executing genrule //tests/bazel:vecmath_rs
GpuArchive: Archiving tests/bazel/libkernels_device.a
GpuBindgen: Generating c++ bindings tests/bazel/kernels_api.h
GpuCodegen: Generating compute_90 code for //tests/bazel:kernels
GpuCodegen: Generating compute_90 code for //tests/bazel:kernels_split
GpuCodegen: Generating sm_75 code for //tests/bazel:kernels
GpuCodegen: Generating sm_75 code for partition 3 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_90 code for //tests/bazel:kernels
GpuCodegen: Generating sm_90 code for partition 3 of //tests/bazel:kernels_split
GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_75,sm_90,compute_90
GpuDeviceLink: Device-linking //tests/bazel:kernels_split for sm_75,sm_90,compute_90
GpuJoin: Joining 4 partitions of //tests/bazel:kernels_split for sm_75
GpuJoin: Joining 4 partitions of //tests/bazel:kernels_split for sm_90
GpuPackage: Packaging tests/bazel/kernels.fatbin
GpuPackage: Packaging tests/bazel/kernels.o
GpuPackage: Packaging tests/bazel/kernels_split.fatbin
GpuPackage: Packaging tests/bazel/kernels_split.o
GpuSplit: Splitting //tests/bazel:kernels_split into 4 partitions
RustGpuCompile: Compiling Rust device crate saxpy (//tests/bazel:saxpy)
RustGpuCompile: Compiling Rust device crate vecmath (//tests/bazel:vecmath)"
check "the edit reached the program (fatbin changed)" \
  bash -c "! grep -q \"\$(sha256sum < bazel-bin/$PKG/kernels.fatbin | cut -d' ' -f1)\" '$WORK/base.sha'"

# 2. Undo the edit: the same tree gives the same bytes, rebuilt in new sandboxes.
build undo
check "after undoing the edit every output equals the baseline, byte for byte" \
  cmp "$WORK/base.sha" <(hashes)

# 3. --//rules:archs overrides the targets' archs; no library is recompiled.
# An earlier run's sm_80 and compute_80 outputs (files of their own, which
# the other builds leave alone) would come from Bazel's action cache: gone
# first, so that a second run in the same output base sees the same spawns.
find "bazel-bin/$PKG" \( -name '*sm_80*' -o -name '*compute_80*' \) -prune \
  -exec chmod -R u+w {} + -exec rm -rf {} +
build archs --//rules:archs=sm_80,compute_80
expect_spawns "--//rules:archs re-runs the device links, the bindings and the host link only" archs \
"CppLink: Linking tests/bazel/app
GpuArchive: Archiving tests/bazel/libkernels_device.a
GpuBindgen: Generating c++ bindings tests/bazel/kernels_api.h
GpuCodegen: Generating compute_80 code for //tests/bazel:kernels
GpuCodegen: Generating compute_80 code for //tests/bazel:kernels_split
GpuCodegen: Generating sm_80 code for //tests/bazel:kernels
GpuCodegen: Generating sm_80 code for partition 0 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_80 code for partition 1 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_80 code for partition 2 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_80 code for partition 3 of //tests/bazel:kernels_split
GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_80,compute_80
GpuDeviceLink: Device-linking //tests/bazel:kernels_split for sm_80,compute_80
GpuJoin: Joining 4 partitions of //tests/bazel:kernels_split for sm_80
GpuPackage: Packaging tests/bazel/kernels.fatbin
GpuPackage: Packaging tests/bazel/kernels.o
GpuPackage: Packaging tests/bazel/kernels_split.fatbin
GpuPackage: Packaging tests/bazel/kernels_split.o
GpuSplit: Splitting //tests/bazel:kernels_split into 4 partitions"
check "--//rules:archs=sm_80,compute_80: the program carries exactly sm_80 and compute_80" bash -c \
  "$FATLINK inspect bazel-bin/$PKG/app | awk 'NR>1{print \$3,\$4}' | tr '\n' ' ' | grep -qx 'cubin sm_80 ptx compute_80 '"

# 4. From scratch in another working directory: delete every output and
# build without the sandbox (actions run in the execroot, not in
# sandbox/linux-sandbox/N/): identical bytes, so no path and no time leaks.
(cd "bazel-bin/$PKG" && rm -f "${OUTPUTS[@]}")
build scratch --spawn_strategy=standalone
expect_spawns "from scratch, unsandboxed: every action whose output was deleted ran again" scratch \
"CppLink: Linking tests/bazel/app
CudaGpuCompile: Compiling CUDA C++ testdata/cuda/softplus.cu (//tests/bazel:softplus)
GpuArchive: Archiving tests/bazel/_objs/softplus/libsoftplus.a
GpuArchive: Archiving tests/bazel/libkernels_device.a
GpuBindgen: Generating c++ bindings tests/bazel/kernels_api.h
GpuCodegen: Generating compute_90 code for //tests/bazel:kernels
GpuCodegen: Generating compute_90 code for //tests/bazel:kernels_split
GpuCodegen: Generating sm_75 code for //tests/bazel:kernels
GpuCodegen: Generating sm_75 code for partition 0 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_75 code for partition 1 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_75 code for partition 2 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_75 code for partition 3 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_90 code for //tests/bazel:kernels
GpuCodegen: Generating sm_90 code for partition 0 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_90 code for partition 1 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_90 code for partition 2 of //tests/bazel:kernels_split
GpuCodegen: Generating sm_90 code for partition 3 of //tests/bazel:kernels_split
GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_75,sm_90,compute_90
GpuDeviceLink: Device-linking //tests/bazel:kernels_split for sm_75,sm_90,compute_90
GpuJoin: Joining 4 partitions of //tests/bazel:kernels_split for sm_75
GpuJoin: Joining 4 partitions of //tests/bazel:kernels_split for sm_90
GpuPackage: Packaging tests/bazel/kernels.fatbin
GpuPackage: Packaging tests/bazel/kernels.o
GpuPackage: Packaging tests/bazel/kernels_split.fatbin
GpuPackage: Packaging tests/bazel/kernels_split.o
GpuSplit: Splitting //tests/bazel:kernels_split into 4 partitions
RustGpuCompile: Compiling Rust device crate fatlink_device (//tests/bazel:fatlink_device)
RustGpuCompile: Compiling Rust device crate saxpy (//tests/bazel:saxpy)
RustGpuCompile: Compiling Rust device crate scale (//tests/bazel:scale)
RustGpuCompile: Compiling Rust device crate vecmath (//tests/bazel:vecmath)"
check "from scratch, unsandboxed: every output equals the baseline, byte for byte" \
  cmp "$WORK/base.sha" <(hashes)
EXECROOT=$("$BAZEL" info execution_root 2>/dev/null)
check "no output holds an absolute path (execroot, output base, sandbox, HOME)" bash -c \
  "cd bazel-bin/$PKG && ! strings -a ${OUTPUTS[*]} | grep -E '$EXECROOT|$(dirname "$(dirname "$EXECROOT")")|/sandbox/|$HOME/'"

# 5. Outputs that used to collide, in one program (tests/bazel/names): built
# from scratch each time (an earlier run's outputs deleted first), so that
# every action runs and writes its own file.
NAMES="bazel-bin/$PKG/names"
find "bazel-bin/$PKG/names" bazel-out/*-exec-*/bin/"$PKG"/names -prune -exec chmod -R u+w {} + \
  -exec rm -rf {} + 2>/dev/null
TARGETS=(//tests/bazel/names:app)
build names
expect_spawns "one base name, one stem, one crate name twice, a library named <link>_device: every action of //$PKG/names:app runs" names \
"CppCompile: Compiling tests/bazel/names/main.cc
CppLink: Linking tests/bazel/names/app
CudaGpuCompile: Compiling CUDA C++ tests/bazel/names/a/util.cu (//tests/bazel/names:kernels_device)
CudaGpuCompile: Compiling CUDA C++ tests/bazel/names/util.cc (//tests/bazel/names:kernels_device)
CudaGpuCompile: Compiling CUDA C++ tests/bazel/names/util.cu (//tests/bazel/names:kernels_device)
GpuArchive: Archiving tests/bazel/names/_objs/kernels_device/libkernels_device.a
GpuArchive: Archiving tests/bazel/names/libkernels_device.a
GpuCodegen: Generating compute_75 code for //tests/bazel/names:kernels
GpuCodegen: Generating sm_75 code for //tests/bazel/names:kernels
GpuDeviceLink: Device-linking //tests/bazel/names:kernels for sm_75,compute_75
GpuPackage: Packaging tests/bazel/names/kernels.o
RustGpuCompile: Compiling Rust device crate top (//tests/bazel/names:top)
RustGpuCompile: Compiling Rust device crate twin (//tests/bazel/names:twin_a)
RustGpuCompile: Compiling Rust device crate twin (//tests/bazel/names:twin_b)
RustGpuCompile: Compiling Rust device crate user_a (//tests/bazel/names:user_a)
RustGpuCompile: Compiling Rust device crate user_b (//tests/bazel/names:user_b)
RustProcMacro: Compiling Rust proc-macro crate twin_macro (//tests/bazel/names:macro_a)
RustProcMacro: Compiling Rust proc-macro crate twin_macro (//tests/bazel/names:macro_b)"
check "names: an object per source (a/util.cu.o, util.cc.o, util.cu.o), all three in the library's archive in its _objs" \
  bash -c "cd '$NAMES/_objs/kernels_device' && ls a/util.cu.o util.cc.o util.cu.o >/dev/null &&
    [ \"\$(ar t libkernels_device.a | tr '\n' ' ')\" = 'util.cu.o util.cc.o util.cu.o ' ]"
check "names: the device link's own archive holds its host object" \
  bash -c "[ \"\$(ar t '$NAMES/libkernels_device.a')\" = kernels.o ]"
check "names: two crates named twin, each in its _rust/<target>/" \
  test -f "$NAMES/_rust/twin_a/libtwin.rlib" -a -f "$NAMES/_rust/twin_b/libtwin.rlib"
check "names: two proc-macros named twin_macro (exec configuration), each in its _rust/<target>/" \
  bash -c "ls bazel-out/*-exec-*/bin/$PKG/names/_rust/macro_a/libtwin_macro.so \
    bazel-out/*-exec-*/bin/$PKG/names/_rust/macro_b/libtwin_macro.so >/dev/null"
# Each kernel's store: the CUDA C++ kernels 3.0, 4.0, 5.0 (one per source);
# user_a 1 + 10 = 11 and user_b 2 + 20 = 22 (its own twin and twin_macro
# each); top's twins 11 + 22 = 33 (both users, so both twins, in one rustc).
kernel_stores() {
  awk '/\.entry/ { k = $3; sub(/\(.*/, "", k) }
       /st\.global/ && k { v = $NF; sub(/;$/, "", v); print k, v; k = "" }' "$NAMES/kernels/compute_75.ptx" |
    sort | tr '\n' ' '
}
f32() { python3 -c "import struct, sys; print(*[struct.unpack('<I', struct.pack('<f', float(x)))[0] for x in sys.argv[1:]])" "$@"; }
read -r F3 F4 F5 F11 F22 F33 <<<"$(f32 3 4 5 11 22 33)"
WANT="a_util_cu $F5 twins $F33 user_a $F11 user_b $F22 util_cc $F4 util_cu $F3 "
check "names: every kernel in the program, each with its own crate's and source's value ($(kernel_stores))" \
  test "$(kernel_stores)" = "$WANT"

echo "$PASSED passed, $FAILED failed ($SECONDS s)"
[ "$FAILED" -eq 0 ]
