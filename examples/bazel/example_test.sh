#!/usr/bin/env bash
# example_test.sh: checks the Bazel example's outputs. The program carries
# every requested GPU target, the Rust kernel that calls CUDA C++ was
# inlined across the language boundary, dead code is gone, and the program
# lists its kernels and reports the missing GPU cleanly (or, on a machine
# with a GPU, runs saxpy and checks the result). The Rust kernels' signatures
# (#[fatlink_device::kernel]) are in the kernel manifest.
# Usage: example_test.sh APP FATBIN FATLINK
set -uo pipefail
APP="$1" FATBIN="$2" FATLINK="$3"
WORK="${TEST_TMPDIR:-$(mktemp -d)}/example"
rm -rf "$WORK" && mkdir -p "$WORK"
PASSED=0 FAILED=0
check() {
  local name="$1"; shift
  if "$@"; then PASSED=$((PASSED + 1)); echo "PASS: $name"
  else FAILED=$((FAILED + 1)); echo "FAIL: $name"; fi
}

# The program and the fatbin output group carry the same five targets.
"$FATLINK" inspect "$APP" > "$WORK/app.txt"
"$FATLINK" inspect "$FATBIN" > "$WORK/fatbin.txt"
for t in "cubin  sm_80 " "cubin  sm_90 " "cubin  sm_100 " "cubin  sm_120 " "ptx    compute_120 "; do
  check "program has $t" grep -q " $t" "$WORK/app.txt"
  check "fatbin has $t" grep -q " $t" "$WORK/fatbin.txt"
done
check "program carries exactly five images" test "$(grep -c 'nv_fatbin' "$WORK/app.txt")" -eq 5

# saxpy and vecmath's kernels carry #[fatlink_device::kernel] (fatlink-device
# built with its proc-macro crate, rust_gpu_proc_macro): the kernel
# manifest has their Rust signatures, element types and const-ness included,
# which typed launches check.
"$FATLINK" inspect --manifest "$APP" > "$WORK/manifest.txt"
manifest_param() { # KERNEL ROW: ROW is one parameter's line of the kernel's table
  awk -v k="kernel $1" '$0 == k { on = 1; next } /^kernel / { on = 0 } on' "$WORK/manifest.txt" |
    sed 's/  */ /g' | grep -qxF " $2"
}
check "manifest: saxpy is Rust" bash -c "grep -A1 -x 'kernel saxpy' '$WORK/manifest.txt' | grep -qx '  language: Rust'"
check "manifest: saxpy a: f32" manifest_param saxpy "0 a float 4 4 - - f32"
check "manifest: saxpy x: *const f32" manifest_param saxpy "1 x pointer 8 8 generic const float, 4 bytes *const f32"
check "manifest: saxpy y: *mut f32" manifest_param saxpy "2 y pointer 8 8 generic float, 4 bytes *mut f32"
check "manifest: vec_sqrt_sin b: *const f64" manifest_param vec_sqrt_sin "1 b pointer 8 8 generic const float, 8 bytes *const f64"

# Cross-language inlining: rust_softplus (Rust) calls cuda_softplus (CUDA
# C++), which calls libdevice's expf/logf. After the device link no call
# is left, in the PTX for JIT and in every cubin target's PTX alike.
"$FATLINK" inspect --extract="$WORK/x" "$FATBIN" >/dev/null
PTX=$(ls "$WORK"/x/*.ptx)
ptx_function() {
  awk -v name="$2" '
    $0 ~ "(\\.entry|\\.func)[^(]*[ \t]" name "\\(" { on = 1 }
    on { print }
    on && /^}/ { exit }' "$1"
}
no_call() {
  local body
  body=$(ptx_function "$PTX" "$1")
  [ -n "$body" ] && ! grep -q 'call' <<<"$body"
}
check "one PTX extracted" test "$(wc -w <<<"$PTX")" -eq 1
check "PTX targets sm_120" grep -q '^\.target sm_120' "$PTX"
for k in saxpy rust_softplus vec_add vec_sqrt_sin cuda_scale cuda_relu; do
  check "PTX has kernel $k" grep -q "\.entry $k(" "$PTX"
done
check "rust_softplus (Rust -> CUDA C++ -> libdevice) has no call" no_call rust_softplus
check "saxpy inlined vecmath::twice (Rust crate -> Rust crate)" no_call saxpy
check "cuda_relu inlined relu() from the cc_library header" no_call cuda_relu
for dead in cuda_softplus never_called vecmath_unused_helper; do
  check "dead function $dead removed" bash -c "! grep -q '$dead' '$PTX'"
done
# fatlink-device's functions (mangled names holding fatlink_device) are all
# inlined into the kernels or dropped.
check "no fatlink_device function left" bash -c "! grep -q 'fatlink_device' '$PTX'"
for f in "$WORK"/x/*.cubin; do
  check "$(basename "$f") is an ELF cubin" bash -c "head -c4 '$f' | grep -q ELF"
done

# The program lists its module and kernels through the runtime, then
# reports the missing GPU and exits 0 (or runs saxpy on a GPU).
"$APP" > "$WORK/out.txt" 2>&1
rc=$?
cat "$WORK/out.txt"
check "program exits 0" test "$rc" -eq 0
check "program finds one module" grep -qx 'modules: 1' "$WORK/out.txt"
check "program lists five images" grep -q '5 images, 6 kernels' "$WORK/out.txt"
check "program lists saxpy with its parameter sizes" grep -qx '  kernel saxpy(4, 8, 8)' "$WORK/out.txt"
check "program lists cuda_relu" grep -qx '  kernel cuda_relu(8, 4)' "$WORK/out.txt"
check "program reports no GPU cleanly, or runs saxpy on one" \
  grep -Eq '^(no GPU: FATLINK_RT_ERROR_(NO_DRIVER|NO_DEVICE|CUDA): .+|saxpy: 256 results correct)$' "$WORK/out.txt"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
