#!/usr/bin/env bash
# rules_test.sh: rule-level tests of rules/ (docs/bazel.md). They drive
# `bazel build` itself, so they run OUTSIDE Bazel (from .ci/run), on the
# graph in tests/bazel/BUILD.bazel:
#   1. editing one Rust device crate re-runs exactly that crate, the crates
#      that depend on it, the device link and the host link; nothing else
#      (counted in --execution_log_json_file);
#   2. --//rules:archs changes the targets of the build without recompiling
#      any library;
#   3. the same tree builds to the same bytes: again after an edit is undone,
#      and from scratch in another working directory (standalone instead of
#      the sandbox); no output holds an absolute path.
# Usage: tests/bazel/rules_test.sh   (from anywhere; BAZEL= picks the binary)
set -uo pipefail
cd "$(dirname "$0")/../.."
BAZEL="${BAZEL:-bazel}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PKG=tests/bazel
TARGETS=(//tests/bazel:app //tests/bazel:kernels_fatbin)
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
OUTPUTS=(libfatlink_device.rlib libvecmath.rlib libsaxpy.rlib libscale.rlib _objs/softplus/softplus.o
  libsoftplus.a kernels.bc kernels/sm_75.cubin kernels/sm_90.cubin kernels/compute_90.ptx
  kernels.o kernels.fatbin libkernels_device.a app)
hashes() { (cd "bazel-bin/$PKG" && sha256sum "${OUTPUTS[@]}"); }

FATLINK=bazel-bin/tools/fatlink/fatlink
"$BAZEL" build //tools/fatlink >/dev/null 2>&1 || { echo "FAIL: cannot build fatlink"; exit 1; }

# 0. Baseline.
build base
hashes > "$WORK/base.sha" || { echo "FAIL: an output is missing"; exit 1; }
check "baseline: fatbin has sm_75, sm_90 and compute_90" bash -c \
  "$FATLINK inspect bazel-bin/$PKG/kernels.fatbin | awk 'NR>1{print \$3,\$4}' | tr '\n' ' ' | grep -qx 'cubin sm_75 cubin sm_90 ptx compute_90 '"

# 1. Edit the vecmath crate (its source goes through a genrule).
build edit --define=fatlink_rules_test=edited
expect_spawns "editing vecmath re-runs vecmath, saxpy (its dependent), the device link and the host link only" edit \
"CppLink: Linking tests/bazel/app
Genrule: Executing genrule //tests/bazel:vecmath_rs
GpuArchive: Archiving tests/bazel/libkernels_device.a
GpuCodegen: Generating compute_90 code for //tests/bazel:kernels
GpuCodegen: Generating sm_75 code for //tests/bazel:kernels
GpuCodegen: Generating sm_90 code for //tests/bazel:kernels
GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_75,sm_90,compute_90
GpuPackage: Packaging tests/bazel/kernels.fatbin
GpuPackage: Packaging tests/bazel/kernels.o
RustGpuCompile: Compiling Rust device crate saxpy (//tests/bazel:saxpy)
RustGpuCompile: Compiling Rust device crate vecmath (//tests/bazel:vecmath)"
check "the edit reached the program (fatbin changed)" \
  bash -c "! grep -q \"\$(sha256sum < bazel-bin/$PKG/kernels.fatbin | cut -d' ' -f1)\" '$WORK/base.sha'"

# 2. Undo the edit: the same tree gives the same bytes, rebuilt in new sandboxes.
build undo
check "after undoing the edit every output equals the baseline, byte for byte" \
  cmp "$WORK/base.sha" <(hashes)

# 3. --//rules:archs overrides the targets' archs; no library is recompiled.
build archs --//rules:archs=sm_80,compute_80
expect_spawns "--//rules:archs re-runs the device link and the host link only" archs \
"CppLink: Linking tests/bazel/app
GpuArchive: Archiving tests/bazel/libkernels_device.a
GpuCodegen: Generating compute_80 code for //tests/bazel:kernels
GpuCodegen: Generating sm_80 code for //tests/bazel:kernels
GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_80,compute_80
GpuPackage: Packaging tests/bazel/kernels.fatbin
GpuPackage: Packaging tests/bazel/kernels.o"
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
GpuArchive: Archiving tests/bazel/libkernels_device.a
GpuArchive: Archiving tests/bazel/libsoftplus.a
GpuCodegen: Generating compute_90 code for //tests/bazel:kernels
GpuCodegen: Generating sm_75 code for //tests/bazel:kernels
GpuCodegen: Generating sm_90 code for //tests/bazel:kernels
GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_75,sm_90,compute_90
GpuPackage: Packaging tests/bazel/kernels.fatbin
GpuPackage: Packaging tests/bazel/kernels.o
RustGpuCompile: Compiling Rust device crate fatlink_device (//tests/bazel:fatlink_device)
RustGpuCompile: Compiling Rust device crate saxpy (//tests/bazel:saxpy)
RustGpuCompile: Compiling Rust device crate scale (//tests/bazel:scale)
RustGpuCompile: Compiling Rust device crate vecmath (//tests/bazel:vecmath)"
check "from scratch, unsandboxed: every output equals the baseline, byte for byte" \
  cmp "$WORK/base.sha" <(hashes)
EXECROOT=$("$BAZEL" info execution_root 2>/dev/null)
check "no output holds an absolute path (execroot, output base, sandbox, HOME)" bash -c \
  "cd bazel-bin/$PKG && ! strings -a ${OUTPUTS[*]} | grep -E '$EXECROOT|$(dirname "$(dirname "$EXECROOT")")|/sandbox/|$HOME/'"

echo "$PASSED passed, $FAILED failed ($SECONDS s)"
[ "$FAILED" -eq 0 ]
