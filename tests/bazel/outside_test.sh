#!/usr/bin/env bash
# outside_test.sh: fatlink used from a workspace outside the repository, as
# docs/bazel.md ("From another workspace") tells a user to. The workspace is
# written from that page's code blocks (test/Inputs/doc-files.py, with
# /src/fatlink replaced by this checkout) into a temporary directory, with
# its own output base, and none of fatlink's .bazelrc flags (only the
# page's .bazelrc).
#
#   quick (default; .ci/run): analysis of the whole program, the GPU rules'
#     toolchain and fatlink in the exec configuration included; every C++
#     compile of @fatlink in it (the exec configuration's too) ends with
#     -std=c++17 in its own command line, though nothing passes --cxxopt or
#     --host_cxxopt; and one LLVM-heavy fatlink library (//intake, whose
#     LLVM headers fail under the toolchain's -std=c++0x) actually compiled
#     in the exec configuration.
#   both: on a machine without clang or the CUDA toolkit (FATLINK_CLANG or
#     CUDA_PATH pointing nowhere: @fatlink_gpu_toolchain is fetched again),
#     a cuda_gpu_library and the gpu_device_link fail at analysis with the
#     variable to set and `bazel sync`, not with execvp or clang errors.
#   --full: builds and runs the whole program: fatlink compiled from
#     scratch for the exec configuration (every path differs from the main
#     workspace's, so nothing is reused: many minutes on 2 cores), the
#     device link, the host link; the program lists its kernel and the
#     fatbin carries the three targets of the page's BUILD file.
# Usage: tests/bazel/outside_test.sh [--full]   (BAZEL= picks the binary)
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
BAZEL="${BAZEL:-bazel}"
FULL=0
[ "${1:-}" = "--full" ] && FULL=1
WORK="$(mktemp -d)"
WS="$WORK/ws"
OB="$WORK/output_base"
cleanup() {
  (cd "$WS" 2>/dev/null && "$BAZEL" --output_base="$OB" shutdown) >/dev/null 2>&1
  chmod -R u+w "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
PASSED=0 FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
b() { "$BAZEL" --output_base="$OB" "$@"; }
# run NAME CMD...: runs a bazel command in the workspace; on failure shows
# its output and stops (stdout in $WORK/NAME.out).
run() {
  local name="$1" start=$SECONDS; shift
  if (cd "$WS" && "$@") > "$WORK/$name.out" 2> "$WORK/$name.err"; then
    echo "$name: $((SECONDS - start)) s"
  else
    cat "$WORK/$name.out" "$WORK/$name.err"; fail "$name: $*"; echo "$PASSED passed, $FAILED failed"; exit 1
  fi
}

python3 test/Inputs/doc-files.py docs/bazel.md "$WS" "/src/fatlink=$REPO" > "$WORK/files" ||
  { fail "cannot write the workspace from docs/bazel.md"; exit 1; }
if [ "$(sort "$WORK/files" | tr '\n' ' ')" = ".bazelrc BUILD.bazel WORKSPACE main.cc scale.rs " ]; then
  pass "docs/bazel.md shows the whole workspace: $(tr '\n' ' ' < "$WORK/files")"
else
  fail "docs/bazel.md's files: $(tr '\n' ' ' < "$WORK/files")"
fi

# The test's own additions to the page's workspace: a rule that takes a
# target in the exec configuration, as fatlink_toolchain takes fatlink
# (cfg = "exec"; a genrule's tools are built for Bazel 4's host
# configuration instead), so that aquery and a build reach fatlink's exec
# configuration directly (aquery does not follow toolchain dependencies).
cat > "$WS/outside_test.bzl" <<'BZL'
def _exec_files_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(out, "\n".join([f.path for f in ctx.files.tool]) + "\n")
    return [DefaultInfo(files = depset([out] + ctx.files.tool))]

exec_files = rule(
    implementation = _exec_files_impl,
    attrs = {"tool": attr.label(cfg = "exec")},
)
BZL
cat >> "$WS/BUILD.bazel" <<'BUILD'

# outside_test.sh: fatlink and one of its libraries in the exec configuration.
load(":outside_test.bzl", "exec_files")
load("@fatlink//rules:defs.bzl", "cuda_gpu_library")

# outside_test.sh: a CUDA C++ library, for the checks without clang or CUDA.
cuda_gpu_library(
    name = "softplus",
    srcs = ["@fatlink//testdata:cuda/softplus.cu"],
)

exec_files(
    name = "exec_fatlink",
    tool = "@fatlink//tools/fatlink",
)

exec_files(
    name = "exec_intake",
    tool = "@fatlink//intake",
)
BUILD

# 1. Analysis of the page's program: the WORKSPACE stanza is complete (the
# stand-ins, the dependencies, the toolchain), offline.
run analysis b build --nobuild //:app
pass "the page's workspace analyses offline (//:app, toolchain, fatlink in the exec configuration)"

# 2. Every C++ compile of fatlink in the exec configuration gets
# -std=c++17 from fatlink's own targets, after the toolchain's -std=c++0x.
run aquery b aquery 'mnemonic("CppCompile", deps(//:exec_fatlink))' --output=jsonproto
check_std() {
  python3 - "$WORK/aquery.out" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
data = json.loads(text)
confs = {c["id"]: c["mnemonic"] for c in data.get("configuration", [])}
bad, exec_fatlink, n, seen = [], 0, 0, set()
for a in data.get("actions", []):
    args = a.get("arguments", [])
    src = args[args.index("-c") + 1] if "-c" in args else "?"
    if not src.startswith("external/fatlink/") or src.endswith(".c"):
        continue
    n += 1
    stds = [x for x in args if x.startswith("-std=")]
    seen.add(" ".join(stds))
    if not stds or stds[-1] != "-std=c++17":
        bad.append("%s (%s): %s" % (src, confs.get(a.get("configurationId")), stds))
    if "exec" in confs.get(a.get("configurationId"), "") and src.startswith("external/fatlink/tools/fatlink/"):
        exec_fatlink += 1
print("%d C++ compiles of @fatlink (%s)" % (n, "; ".join(sorted(seen))))
for b in bad:
    print("  without -std=c++17 last:", b)
if not exec_fatlink:
    print("  no compile of fatlink's main.cpp in the exec configuration")
sys.exit(1 if bad or not exec_fatlink or n < 20 else 0)
PY
}
if out=$(check_std); then pass "$out, fatlink's in the exec configuration among them, end with -std=c++17"
else fail "-std=c++17 in @fatlink's compiles"; echo "$out" | sed 's/^/    /'; fi

if [ "$FULL" = 0 ]; then
  # 3. A real LLVM-heavy compile in the exec configuration: what failed
  # with "exponent has no digits" before.
  run exec-compile b build //:exec_intake
  if grep -q -- '-exec-.*/external/fatlink/intake/libintake' "$WS/bazel-bin/exec_intake.txt"; then
    pass "@fatlink//intake (LLVM headers) compiles in the exec configuration without --host_cxxopt"
  else
    fail "//intake was not built in the exec configuration: $(cat "$WS/bazel-bin/exec_intake.txt")"
  fi
else
  # 3. The whole program, fatlink from scratch.
  run build b build //:app
  # Without a GPU the lookup fails, and the program says why.
  (cd "$WS" && bazel-bin/app) > "$WORK/app.out" 2>&1
  if grep -qx "kernel scale" "$WORK/app.out" &&
      grep -Eq '^(scale is ready|no kernel: no NVIDIA driver)' "$WORK/app.out"; then
    pass "the program lists its kernel and looks it up: $(tail -1 "$WORK/app.out" | cut -c1-60)"
  else fail "the program's output:"; cat "$WORK/app.out"; fi
  FATLINK=$(cd "$WS" && ls -d bazel-out/*-exec-*/bin/external/fatlink/tools/fatlink/fatlink | head -1)
  if (cd "$WS" && "$FATLINK" inspect bazel-bin/app) | awk 'NR>1{print $3,$4}' | tr '\n' ' ' |
      grep -qx 'cubin sm_80 cubin sm_90 ptx compute_90 '; then
    pass "the program carries sm_80, sm_90 and compute_90"
  else fail "fatlink inspect bazel-bin/app"; (cd "$WS" && "$FATLINK" inspect bazel-bin/app); fi
fi

# 4. No clang, no CUDA toolkit: the toolchain's fetch records it, and the
# rule that needs the tool fails at analysis, naming the variable to set.
# missing_tool NAME VAR=VALUE TARGET MESSAGE
missing_tool() {
  local name="$1" env="$2" target="$3" want="$4" start=$SECONDS rc
  (cd "$WS" && env "$env" "$BAZEL" --output_base="$OB" build --nobuild "$target") > "$WORK/$name.out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$WORK/$name.out"; then
    pass "$env: $target fails at analysis: ${want:0:90}... ($((SECONDS - start)) s)"
  else
    fail "$env: $target (exit $rc) does not say: $want"; grep -E 'ERROR|Error' "$WORK/$name.out" | head -5
  fi
}
SYNC='and run `bazel sync --only=fatlink_gpu_toolchain`'
missing_tool no-clang FATLINK_CLANG=/nowhere/clang++ //:softplus \
  "//:softplus: clang++ not found when @fatlink_gpu_toolchain was fetched (FATLINK_CLANG=/nowhere/clang++: no such file): set FATLINK_CLANG to clang++ 22 or newer (or put clang++-22 in PATH) $SYNC"
missing_tool no-cuda CUDA_PATH=/nowhere //:softplus \
  "//:softplus: the CUDA toolkit for clang not found when @fatlink_gpu_toolchain was fetched (CUDA_PATH=/nowhere: no include/cuda_runtime.h, nvvm/libdevice/libdevice.10.bc): set CUDA_PATH to a CUDA toolkit $SYNC"
missing_tool no-ptxas CUDA_PATH=/nowhere //:kernels \
  "//:kernels: ptxas and libdevice for the device link not found when @fatlink_gpu_toolchain was fetched (CUDA_PATH=/nowhere: no bin/ptxas, nvvm/libdevice/libdevice.10.bc): set CUDA_PATH to a CUDA toolkit $SYNC"

echo "$PASSED passed, $FAILED failed ($SECONDS s)"
[ "$FAILED" -eq 0 ]
