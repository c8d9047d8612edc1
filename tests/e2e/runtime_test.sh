#!/usr/bin/env bash
# runtime_test.sh: libfatlink_rt.a in real linked programs, without a GPU.
#
# Device code from testdata/ goes through `fatlink device-link`; hosts in C
# (runtime/tests/rt_probe.c), CUDA C++ (runtime/tests/cuda_host.cu, clang's
# new offload driver, linked without clang-linker-wrapper) and Rust (the
# fatlink-rt crate) link the kernels.o and the runtime. Checked here:
# registration and listing, registration with the CUDA runtime (kernel,
# host stub and global), a shared library with its own device code (also
# opened and closed with dlopen/dlclose: its stale kernel handles), every
# error message that needs no GPU (no driver with its exact text, the
# toolkit's stub, no device, no image, driver too old, unknown kernel,
# wrong arguments), and the driver path end to end against a fake
# libcuda.so.1 (runtime/tests/fake_cuda.c) that runs two kernels on the CPU.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
RT="$RUNFILES/runtime"
LIB="$RT/libfatlink_rt.a"
INC="$RT/include"
CC_C="${CC_C:-cc}"
export PATH="$HOME/.cargo/bin:$PATH"
unset FATLINK_RT_LOG FATLINK_RT_LIBCUDA

check "libfatlink_rt.a exists" test -s "$LIB"
check "the runtime needs no libcuda, libcudart or LLVM at link time" \
  bash -c "! nm '$LIB' | grep -E ' U (cu[A-Z]|llvm|_ZN4llvm)'"
check "the __cuda* registration functions are weak references" \
  bash -c "nm '$LIB' | grep -q ' w __cudaRegisterFatBinary\$'"

# expect NAME RC TEXT COMMAND...: COMMAND exits RC and prints TEXT.
expect() {
  local name="$1" rc="$2" text="$3"; shift 3
  local out got
  out=$("$@" 2>&1); got=$?
  if [ "$got" -ne "$rc" ]; then fail "$name: exit $got, expected $rc: $out"; return; fi
  if ! grep -qF -- "$text" <<<"$out"; then fail "$name: '$text' not in: $out"; return; fi
  pass "$name"
}

"$CC_C" -shared -fPIC -O1 "$RT/tests/fake_cuda.c" -o libfakecuda.so
FAKE="$WORK/libfakecuda.so"

# Rust + CUDA C++ device code, uncompressed and zstd (the default). PTX ISA
# 7.0 (sm_80's minimum; softplus.bc alone would raise it to 8.8), so that
# the fake driver (CUDA 12.8) can JIT it and the messages below are about
# what they test, not the driver's age (that is the probe87 case).
"$FATLINK" device-link --arch=sm_80,compute_80 --ptx-version=7.0 $RLIBS "$D/softplus.bc" \
  -o kernels.o
check "device-link for the C host" test -s kernels.o
"$CC_C" -O1 -I"$INC" "$RT/tests/rt_probe.c" kernels.o "$LIB" -lpthread "${SAN_LDFLAGS[@]}" -o probe
check "C host links with kernels.o and the runtime" test -x probe

## Listing: no driver needed.
./probe list >list.txt 2>&1
check "list exits 0 without a driver" test $? -eq 0
check "list: one module from the executable" grep -q '^module 0: probe, [0-9]*-byte fatbin$' list.txt
check "list: the cubin, zstd" grep -q '^  image cubin sm_80 zstd$' list.txt
check "list: the PTX with its ISA version" grep -q '^  image PTX compute_80 (ISA 7.0) zstd$' list.txt
check "list: kernels with parameter sizes" \
  bash -c "grep -q '^  kernel saxpy(4, 8, 8)\$' list.txt && grep -q '^  kernel cuda_scale(8, 4)\$' list.txt && [ \$(grep -c '^  kernel' list.txt) -eq 5 ]"

## No driver.
NO_DRIVER='status FATLINK_RT_ERROR_NO_DRIVER: no NVIDIA driver: cannot load libcuda.so.1 (libcuda.so.1: cannot open shared object file: No such file or directory); install the NVIDIA driver, or set FATLINK_RT_LIBCUDA to the path of its libcuda.so.1'
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "note: this machine has a libcuda.so.1; the default-path check uses a missing path"
  expect "no driver: message" 1 "no NVIDIA driver: cannot load /nonexistent/libcuda.so.1 (/nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory)" \
    env FATLINK_RT_LIBCUDA=/nonexistent/libcuda.so.1 ./probe get saxpy
else
  out=$(./probe get saxpy 2>&1); rc=$?
  check "no driver: exit 1" test $rc -eq 1
  check "no driver: the exact message" test "$out" = "$NO_DRIVER"
fi
expect "no driver: every later call gives the same message" 1 \
  "cannot load /nonexistent/libcuda.so.1" env FATLINK_RT_LIBCUDA=/nonexistent/libcuda.so.1 ./probe vec_add 64
expect "the toolkit's stub library is not a driver" 1 \
  "status FATLINK_RT_ERROR_NO_DRIVER: no NVIDIA driver: $CUDA/lib64/stubs/libcuda.so is the CUDA toolkit's stub library, not a driver (cuInit returned CUDA_ERROR_STUB_LIBRARY)" \
  env FATLINK_RT_LIBCUDA="$CUDA/lib64/stubs/libcuda.so" ./probe get saxpy
expect "a library that is not libcuda" 1 "lacks cuInit: it is not the NVIDIA driver's libcuda.so.1" \
  env FATLINK_RT_LIBCUDA=libm.so.6 ./probe init
expect "unknown kernel: closest name, before any driver is needed" 1 \
  "status FATLINK_RT_ERROR_KERNEL_NOT_FOUND: kernel 'saxpi' not found in 1 module (5 kernels); did you mean 'saxpy'?" \
  ./probe get saxpi
expect "unknown kernel: a part of the name finds it" 1 "did you mean 'rust_softplus'?" ./probe get softplus
expect "unknown kernel: nothing close lists the kernels" 1 \
  "the kernels are: cuda_scale, rust_softplus, saxpy, vec_add, vec_sqrt_sin" ./probe get matmul

## A driver (the fake) and the errors it lets us reach.
export FATLINK_RT_LIBCUDA="$FAKE"
expect "fake driver: vec_add round trip (alloc, copy, launch, copy back)" 0 \
  "vec_add ok (256 elements)" ./probe vec_add 256
expect "no GPU" 1 "status FATLINK_RT_ERROR_NO_DEVICE: no GPU: the NVIDIA driver ($FAKE) found no CUDA device (cuInit returned CUDA_ERROR_NO_DEVICE)" \
  env FAKE_CUDA_INIT=100 ./probe get saxpy
expect "device out of range" 1 \
  "status FATLINK_RT_ERROR_NO_DEVICE: device 3 does not exist: this machine has 2 GPUs (devices 0..1)" \
  env FAKE_CUDA_DEVICES=2 ./probe device 3
expect "device info" 0 "device Fake GPU 1 sm_86 driver 12080" \
  env FAKE_CUDA_DEVICES=2 FAKE_CUDA_CC=86 ./probe device 1
expect "no image for this GPU: names its arch and the embedded targets" 1 \
  "status FATLINK_RT_ERROR_NO_IMAGE: cannot load module 0 ($WORK/probe) on device 0 (Fake GPU 0, sm_75, driver CUDA 12.8): no image runs on sm_75 (the module has cubin sm_80, PTX compute_80 (ISA 7.0)): a cubin runs only on GPUs of its major version with the same or a newer minor, and PTX is JIT-compiled only for its own arch or newer; relink with \`fatlink device-link --arch=sm_75\` (a cubin) or \`--arch=compute_75\` (PTX for sm_75 and newer GPUs) (the driver returned CUDA_ERROR_NO_BINARY_FOR_GPU)" \
  env FAKE_CUDA_CC=75 FAKE_CUDA_LOAD=209 ./probe get saxpy
expect "driver too old for zstd entries" 1 \
  "status FATLINK_RT_ERROR_DRIVER_TOO_OLD: cannot load module 0 ($WORK/probe) on device 0 (Fake GPU 0, sm_80, driver CUDA 12.2): cubin sm_80 fits sm_80 but it is zstd-compressed, which needs a driver for CUDA 12.4 (Linux >= 550.54.14); this driver supports CUDA 12.2" \
  env FAKE_CUDA_VERSION=12020 FAKE_CUDA_LOAD=209 ./probe get saxpy
expect "a failed load is remembered: the same message for the next kernel" 1 \
  "FATLINK_RT_ERROR_NO_IMAGE" env FAKE_CUDA_CC=75 FAKE_CUDA_LOAD=209 ./probe launch vec_add 8 8 8
expect "JIT failure: the driver's JIT log is in the message" 1 \
  "CUDA_ERROR_INVALID_PTX (218): fake driver error; expected PTX compute_80 (ISA 7.0) is JIT-compiled for sm_90: no cubin runs on sm_90 (cubins: cubin sm_80); JIT log: ptxas fatal: bad PTX" \
  env FAKE_CUDA_CC=90 FAKE_CUDA_LOAD=218 "FAKE_CUDA_JIT_LOG=ptxas fatal: bad PTX" ./probe get saxpy
expect "wrong argument count" 1 \
  "status FATLINK_RT_ERROR_ARGUMENTS: kernel saxpy takes 3 arguments (sizes in bytes: 4, 8, 8), but the launch passes 2" \
  ./probe launch saxpy 4 8
expect "wrong argument size" 1 \
  "status FATLINK_RT_ERROR_ARGUMENTS: argument 0 of kernel saxpy is 4 bytes, but the launch passes 8 (parameter sizes: 4, 8, 8)" \
  ./probe launch saxpy 8 8 8
expect "block larger than the kernel allows" 1 \
  "a block of 2048x1x1 = 2048 threads exceeds its limit of 1024" env PROBE_BLOCK=2048 ./probe launch saxpy 4 8 8
expect "a right launch" 0 "ok" ./probe launch saxpy 4 8 8
rm -f trace.txt
expect "16 threads look up and launch at once" 0 "0 of 16 threads failed" \
  env FAKE_CUDA_TRACE="$WORK/trace.txt" ./probe threads 16
check "... and the module was loaded exactly once" test "$(grep -c '^load$' trace.txt)" -eq 1
check "... and every thread launched" test "$(grep -c '^launch vec_add grid 1,1,1 block 1,1,1 shared 0$' trace.txt)" -eq 16

# PTX only, uncompressed, PTX ISA 8.7: a CUDA 12.4 driver cannot load it.
"$FATLINK" device-link --arch=compute_80 --ptx-version=8.7 --compress=none \
  $RLIBS "$D/softplus.bc" -o ptx87.o
"$CC_C" -I"$INC" "$RT/tests/rt_probe.c" ptx87.o "$LIB" "${SAN_LDFLAGS[@]}" -o probe87
expect "driver too old for the PTX ISA: names the driver it needs" 1 \
  "status FATLINK_RT_ERROR_DRIVER_TOO_OLD: cannot load module 0 ($WORK/probe87) on device 0 (Fake GPU 0, sm_86, driver CUDA 12.4): PTX compute_80 (ISA 8.7) fits sm_86 but its PTX ISA 8.7 needs a driver for CUDA 12.8 (Linux >= 570.26); this driver supports CUDA 12.4: update the NVIDIA driver, or relink with \`fatlink device-link --ptx-version=8.4\` (the newest PTX ISA this driver loads) (the driver returned CUDA_ERROR_UNSUPPORTED_PTX_VERSION)" \
  env FAKE_CUDA_CC=86 FAKE_CUDA_VERSION=12040 FAKE_CUDA_LOAD=222 ./probe87 get saxpy
expect "PTX only: JIT expected on a newer GPU (log)" 0 \
  "expecting PTX compute_80 (ISA 8.7) is JIT-compiled for sm_90: no cubin runs on sm_90 (cubins: none)" \
  env FATLINK_RT_LOG=1 FAKE_CUDA_CC=90 ./probe87 get saxpy

## FATLINK_RT_LOG=1: which image for which device and why.
FATLINK_RT_LOG=1 FAKE_CUDA_CC=86 ./probe get saxpy >log.txt 2>&1
check "log: the module at registration" grep -q "^fatlink-rt: module 0 from $WORK/probe: [0-9]*-byte fatbin: cubin sm_80, PTX compute_80 (ISA 7.0); 5 kernels: cuda_scale, rust_softplus, saxpy, vec_add, vec_sqrt_sin\$" log.txt
check "log: the driver" grep -q "^fatlink-rt: driver $FAKE: CUDA 12.8, 1 device\$" log.txt
check "log: the image chosen and why" grep -qF "fatlink-rt: module 0 ($WORK/probe) on device 0 (Fake GPU 0, sm_86, driver CUDA 12.8): expecting cubin sm_80 runs on sm_86 (same major version, older minor); no cubin for sm_86 itself" log.txt
check "log: what the driver reports" grep -q '^fatlink-rt: kernel saxpy on device 0: the driver reports binary sm_86, PTX compute_86$' log.txt
unset FATLINK_RT_LIBCUDA

## A shared library with its own device code next to the executable's.
"$FATLINK" device-link --arch=sm_80 "$D/libvecmath.rlib" "$D/libminicore.rlib" -o dso_kernels.o
"$FATLINK" device-link --arch=sm_80 "$D/softplus.bc" -o exe_kernels.o
printf 'int dso_answer(void) { return 42; }\n' >dso.c
"$CC_C" -shared -fPIC dso.c dso_kernels.o -Wl,--whole-archive "$LIB" -Wl,--no-whole-archive \
  "${SAN_LDFLAGS[@]}" -o libdso.so
"$CC_C" -I"$INC" "$RT/tests/rt_probe.c" exe_kernels.o -Wl,--whole-archive "$LIB" \
  -Wl,--no-whole-archive -L. -Wl,--no-as-needed -ldso -Wl,-rpath,"$WORK" "${SAN_LDFLAGS[@]}" -o probe_dso
LD_LIBRARY_PATH="$WORK" ./probe_dso list >dso.txt 2>&1
check "shared library: both modules listed" bash -c "grep -q '^2 modules\$' dso.txt && grep -q '^module 0: libdso.so' dso.txt && grep -q '^module 1: probe_dso' dso.txt"
check "shared library: each module keeps its kernels" \
  bash -c "grep -A3 '^module 0' dso.txt | grep -q 'kernel vec_add' && grep -A3 '^module 1' dso.txt | grep -q 'kernel cuda_scale'"
expect "shared library: a kernel of the library, through the executable's API" 0 \
  "vec_add ok (64 elements)" env FATLINK_RT_LIBCUDA="$FAKE" ./probe_dso vec_add 64

# The same library opened with dlopen (the executable exports the runtime,
# so the library joins its registry) and closed again: a kernel handle into
# it fails cleanly, without reading the unmapped descriptor.
"$CC_C" -I"$INC" "$RT/tests/rt_probe.c" exe_kernels.o -rdynamic -Wl,--whole-archive \
  "$LIB" -Wl,--no-whole-archive -ldl "${SAN_LDFLAGS[@]}" -o probe_dl
FATLINK_RT_LIBCUDA="$FAKE" ./probe_dl dlclose "$WORK/libdso.so" vec_add >dl.txt 2>&1; rc=$?
cat dl.txt
check "dlclose: the library's module joins the registry and leaves it" \
  bash -c "[ $rc -eq 1 ] && grep -qx '2 modules while loaded' dl.txt && grep -qx '1 module after dlclose' dl.txt"
STALE="kernel vec_add belongs to a module of $WORK/libdso.so, which has been unloaded"
check "dlclose: kernel info of a stale handle is BAD_MODULE" \
  grep -qxF "info: status FATLINK_RT_ERROR_BAD_MODULE: $STALE" dl.txt
check "dlclose: launching a stale handle is BAD_MODULE" \
  grep -qxF "launch: status FATLINK_RT_ERROR_BAD_MODULE: $STALE" dl.txt

## The CUDA runtime path: clang CUDA objects, plain host link.
"$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --offload-new-driver \
  -fgpu-rdc -foffload-lto --offload-arch=sm_80 -O2 -c "$RT/tests/cuda_host.cu" -o cuda_host.o
check "clang host object has the stub in llvm_offload_entries" \
  bash -c "readelf -rW cuda_host.o | sed -n '/llvm_offload_entries/,/^\$/p' | grep -q '_Z20__device_stub__scalePfi + 0'"
"$FATLINK" device-link --arch=sm_80,compute_80 cuda_host.o -o cuda_kernels.o
"$CLANG" cuda_host.o cuda_kernels.o -Wl,--whole-archive "$LIB" -Wl,--no-whole-archive \
  -L"$CUDA/lib64" -lcudart -ldl -lpthread -Wl,-rpath,"$CUDA/lib64" "${SAN_LDFLAGS[@]}" -o cuda_app
check "CUDA C++ app links without clang-linker-wrapper" test -x cuda_app
FATLINK_RT_LOG=1 ./cuda_app >cuda.txt 2>&1; rc=$?
cat cuda.txt
check "CUDA app: exits cleanly" test $rc -eq 0
STUB=$(nm cuda_app | awk '$3 == "_Z20__device_stub__scalePfi" { sub(/^0+/, "", $1); print $1 }')
check "CUDA app: fatbin, kernel (against its host stub) and global registered" \
  grep -q "^fatlink-rt: CUDA runtime: registered 1 fatbin, 1 kernel and 1 variable: kernel _Z5scalePfi (host stub cuda_app+0x$STUB), variable scale_by (4 bytes)\$" cuda.txt
if ! nvidia-smi >/dev/null 2>&1; then
  check "CUDA app: no GPU is reported by the CUDA runtime, not a crash" \
    grep -q '^cudaMalloc: cudaErrorInsufficientDriver (35)' cuda.txt
fi
"$CLANG" cuda_host.o cuda_kernels.o "$LIB" -L"$CUDA/lib64" -lcudart -ldl -lpthread \
  -Wl,-rpath,"$CUDA/lib64" "${SAN_LDFLAGS[@]}" -o cuda_app_no_whole
check "without --whole-archive nothing registers (the documented pitfall)" \
  bash -c "! FATLINK_RT_LOG=1 ./cuda_app_no_whole 2>&1 | grep -q 'CUDA runtime: registered'"
"$CLANG" cuda_host.o kernels.o -Wl,--whole-archive "$LIB" -Wl,--no-whole-archive \
  -L"$CUDA/lib64" -lcudart -ldl -lpthread -Wl,-rpath,"$CUDA/lib64" "${SAN_LDFLAGS[@]}" -o cuda_app_wrong
expect "a host stub without device code is named" 0 \
  "fatlink-rt: warning: kernel _Z5scalePfi has a host stub (cuda_app_wrong+0x" ./cuda_app_wrong

## Rust host over the fatlink-rt crate.
mkdir -p native && cp "$LIB" native/
"$RUSTC" --edition 2021 -O --crate-type rlib --crate-name fatlink_rt \
  "$RT/rust/fatlink-rt/src/lib.rs" -o libfatlink_rt.rlib
"$RUSTC" --edition 2021 "$RT/tests/rust_host.rs" --extern fatlink_rt=libfatlink_rt.rlib \
  -L native="$WORK/native" -C link-arg="$WORK/kernels.o" "${SAN_RUSTFLAGS[@]}" -o rust_host
check "Rust host links" test -x rust_host
./rust_host >rust.txt 2>&1; rc=$?
check "Rust host: lists the kernels" grep -q '^kernel saxpy\[4, 8, 8\]$' rust.txt
check "Rust host: unknown kernel suggestion" grep -qF "FATLINK_RT_ERROR_KERNEL_NOT_FOUND: kernel 'saxpi' not found in 1 module (5 kernels); did you mean 'saxpy'?" rust.txt
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  check "Rust host: no driver, exact message, exit 1" \
    bash -c "[ $rc -eq 1 ] && grep -qxF '${NO_DRIVER#status }' rust.txt"
fi
expect "Rust host: typed saxpy launch and buffers through the fake driver" 0 "saxpy ok" \
  env FATLINK_RT_LIBCUDA="$FAKE" ./rust_host
expect "Rust host: argument size mismatch as a Rust error" 0 \
  "FATLINK_RT_ERROR_ARGUMENTS: argument 0 of kernel saxpy is 4 bytes, but the launch passes 8" \
  env FATLINK_RT_LIBCUDA="$FAKE" ./rust_host

# The crate as a plain cargo dependency, linked the documented way.
mkdir -p cargo_host/src
cp "$RT/tests/rust_host.rs" cargo_host/src/main.rs
cat >cargo_host/Cargo.toml <<TOML
[package]
name = "cargo_host"
version = "0.1.0"
edition = "2021"
[dependencies]
fatlink-rt = { path = "$RT/rust/fatlink-rt" }
TOML
cat >cargo_host/build.rs <<'RS'
fn main() {
    let lib = std::env::var("FATLINK_RT_LIB_DIR").expect("set FATLINK_RT_LIB_DIR");
    let kernels = std::env::var("FATLINK_KERNELS_O").expect("set FATLINK_KERNELS_O");
    println!("cargo:rustc-link-search=native={lib}");
    println!("cargo:rustc-link-arg={kernels}");
    println!("cargo:rerun-if-env-changed=FATLINK_RT_LIB_DIR");
    println!("cargo:rerun-if-env-changed=FATLINK_KERNELS_O");
}
RS
(cd cargo_host && [ "${#SAN_RUSTFLAGS[@]}" -eq 0 ] || export RUSTFLAGS="${SAN_RUSTFLAGS[*]}"
  FATLINK_RT_LIB_DIR="$WORK/native" FATLINK_KERNELS_O="$WORK/kernels.o" \
  CARGO_TARGET_DIR="$WORK/cargo_target" cargo build --offline -q) >cargo.txt 2>&1
check "cargo build --offline of a binary using the crate" test -x cargo_target/debug/cargo_host || cat cargo.txt
expect "cargo-built host runs saxpy through the fake driver" 0 "saxpy ok" \
  env FATLINK_RT_LIBCUDA="$FAKE" cargo_target/debug/cargo_host

finish
