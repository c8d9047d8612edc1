#!/usr/bin/env bash
# run.sh: the runtime's check on a real NVIDIA GPU.
#
#   tests/gpu/run.sh build [DIR]   on the build machine (rustc, clang-22, CUDA
#                                  toolkit, Bazel): builds everything into DIR
#                                  (default build/gpu), which is self-contained
#   tests/gpu/run.sh run [DIR]     on the GPU machine (needs only the NVIDIA
#                                  driver): runs the checks, exit 0 = all pass
#   tests/gpu/run.sh [DIR]         both
#
# Programs (all CUDA C++ hosts, tests/gpu/gpu_app.cu, plus the Rust host):
#   app_full   cubins for sm_75..sm_120 + compute_120 PTX: every kernel runs
#              and matches the host computation (CUDA runtime <<<>>>, Rust
#              kernels, Rust calling CUDA C++ device code, by-name launches)
#   app_parts  as app_full, compiled in partitions (nvlinked) with shared
#              PTX: the arches between sm_75 and sm_120 reuse sm_75's PTX
#              where sm_120's agrees
#   app_ptx    only compute_75 PTX: JIT-loads on any GPU >= sm_75
#   app_sm75 / app_sm120   one cubin of one arch: on a GPU of another major
#              version it must fail with the documented message
#   app_cdp    dynamic parallelism (testdata/cuda/cdp_main.cu): a kernel
#              launches a kernel; the device runtime (libcudadevrt.a) is
#              nvlinked into the cubins for sm_75..sm_120
#   rust_host  the fatlink-rt crate: saxpy through the untyped RawKernel
#   rust_typed typed handles (fatlink_rt::Kernel<P>, tests/gpu/rust_typed.rs)
#              of CUDA C++ kernels (tests/gpu/typed_kernels.cu) and the Rust
#              saxpy, checked against the manifest (a wrong one refused),
#              launched on two streams and checked; events time one
#   nvcc_app   nvcc host code with no nvcc -dlink (testdata/nvcc/nv_host.cu,
#              -rdc=true, launching nv_square_all of nv_math.cu, nvcc -dc,
#              which calls the Rust crate nvcc_calls), linked by fatlink cc:
#              the kernel is registered through the __cudaRegisterLinkedBinary
#              functions fatlink cc defines; it checks every square and the
#              device global nv_calls (docs/nvcc-host.md)
#   nvcc_lto_app  as nvcc_app with nv_math.cu as nvcc LTO-IR (code=lto_75),
#              linked by nvJitLink, kept as a relocatable cubin of its own
#              where Rust calls into it
#   nvcc_clang_app  nv_host.cu from nvcc with nv_math.cu from clang, whose
#              kernel the fatlink runtime registers: one handle, shared
#   cargo_nvcc_app  examples/cargo-nvcc: a Rust kernel calling nvcc's device
#              function and nvcc's kernel calling Rust's, cubins sm_75..sm_120
#              (fatlink-build's nvcc mode, fatlink-cc)
#   cargo_cc_app  examples/cargo-cc: nvcc code compiled by the cc crate
#              (Debian's librust-cc-dev, offline), its kernel launched with
#              <<<>>> by its cc-built host code (cudart_static, through
#              fatlink's registration), and a Rust kernel calling its device
#              function, cubins sm_75..sm_120 + compute_120 PTX
#   bazel_app  examples/bazel's app (gpu_device_link for sm_80..sm_120 +
#              compute_120, gpu_bindings): lists its kernels, checks the
#              typed bindings and runs saxpy through its typed launch function
#   corpus_app the corpus (testdata/cuda/corpus, docs/corpus.md), every TU
#              and the Rust crate corpus_rs in one device link for sm_75..
#              sm_120 + compute_120: dynamic shared memory across TUs, warp
#              intrinsics and cooperative groups, atomics, CUB and thrust,
#              wmma, libdevice, malloc/printf, __constant__, device function
#              pointers and virtual calls, Rust calling CUDA C++ (tests/gpu/
#              corpus_app.cu checks each against the host)
#   res_check  `fatlink inspect --resources` of fatlink's links (res_kernels.cu,
#              app_full's, the corpus's) and of nvcc's fatbins and -dc
#              objects (-O3 and -G) against cuFuncGetAttribute on the loaded
#              cubins of the GPU's arch (tests/gpu/res_check.cpp)
# The run takes well under a minute (JIT included); the build about one.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MODE=all
case "${1:-}" in build | run) MODE="$1"; shift ;; esac
OUT="$(mkdir -p "${1:-$ROOT/build/gpu}" && cd "${1:-$ROOT/build/gpu}" && pwd)"

build() {
  set -e
  cd "$ROOT"
  export PATH="$HOME/.cargo/bin:$PATH"
  local CUDA="${CUDA_PATH:-/usr/local/cuda}" CLANG=clang++-22
  bazel build //tools/fatlink:all //runtime:fatlink_rt >/dev/null 2>&1 ||
    bazel build //tools/fatlink:all //runtime:fatlink_rt
  local FATLINK="$ROOT/bazel-bin/tools/fatlink/fatlink" LIB="$ROOT/bazel-bin/runtime/libfatlink_rt.a"
  local T="$ROOT/testdata" W="$OUT/work"
  rm -rf "$W" && mkdir -p "$W"
  echo "== device code (rustc, clang-22) into $W"
  rust() {
    RUSTC_BOOTSTRAP=1 rustc --target nvptx64-nvidia-cuda --edition 2021 -O \
      --crate-type rlib --crate-name "$1" "$T/rust/$1.rs" -L "$W" -o "$W/lib$1.rlib" "${@:2}"
  }
  # The device crate the testdata kernels use (docs/device-rust.md), with
  # #[fatlink_device::kernel] from its proc-macro crate (also into $W).
  bash "$ROOT/test/Inputs/build-device-macros.sh" "$ROOT" "$W"
  local DEV=(--extern fatlink_device="$W/libfatlink_device.rlib")
  rust vecmath "${DEV[@]}"
  rust saxpy "${DEV[@]}" --extern vecmath="$W/libvecmath.rlib"
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
    --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c "$T/cuda/softplus.cu" -o "$W/softplus.bc"
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --offload-new-driver \
    -fgpu-rdc -foffload-lto --offload-arch=sm_75 -O2 -I"$ROOT/runtime/include" \
    -c "$ROOT/tests/gpu/gpu_app.cu" -o "$W/gpu_app.o"
  local INPUTS="$W/gpu_app.o $W/libsaxpy.rlib $W/libvecmath.rlib $W/libfatlink_device.rlib $W/softplus.bc"
  link_app() { # NAME ARCHS [device-link options]
    "$FATLINK" device-link --arch="$2" "${@:3}" $INPUTS -o "$W/kernels_$1.o"
    "$CLANG" "$W/gpu_app.o" "$W/kernels_$1.o" -Wl,--whole-archive "$LIB" -Wl,--no-whole-archive \
      -L"$CUDA/lib64" -lcudart -ldl -lpthread -Wl,-rpath,'$ORIGIN' -o "$OUT/app_$1"
    echo "   app_$1: --arch=$2"
  }
  echo "== fatlink device-link and host links"
  link_app full sm_75,sm_80,sm_90,sm_100,sm_120,compute_120
  link_app parts sm_75,sm_80,sm_90,sm_100,sm_120 --partitions=4
  link_app ptx compute_75
  link_app sm75 sm_75
  link_app sm120 sm_120
  echo "== dynamic parallelism (the device runtime, nvlinked)"
  for f in dynamic_parallelism cdp_main; do
    "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --offload-new-driver \
      -fgpu-rdc -foffload-lto --offload-arch=sm_75 -O2 -c "$T/cuda/$f.cu" -o "$W/$f.o"
  done
  "$FATLINK" device-link --arch=sm_75,sm_80,sm_90,sm_100,sm_120 \
    "$W/cdp_main.o" "$W/dynamic_parallelism.o" -o "$W/kernels_cdp.o"
  "$CLANG" "$W/cdp_main.o" "$W/dynamic_parallelism.o" "$W/kernels_cdp.o" \
    -Wl,--whole-archive "$LIB" -Wl,--no-whole-archive \
    -L"$CUDA/lib64" -lcudart -ldl -lpthread -Wl,-rpath,'$ORIGIN' -o "$OUT/app_cdp"
  cp -L "$CUDA"/lib64/libcudart.so.1[0-9] "$OUT/"
  echo "== the corpus (testdata/cuda/corpus) and its host, corpus_app"
  rust corpus_rs "${DEV[@]}"
  local CORPUS_OBJS="" tu
  for tu in smem_scan smem_histogram warp_coop atomics cccl tensor_async numerics texsurf dispatch_a dispatch_b; do
    "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version -std=c++17 -I"$CUDA/include/cccl" \
      --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=sm_75,sm_80,sm_90,sm_100,sm_120 -O3 \
      -c "$T/cuda/corpus/$tu.cu" -o "$W/corpus_$tu.o"
    CORPUS_OBJS="$CORPUS_OBJS $W/corpus_$tu.o"
  done
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version -std=c++17 --offload-new-driver \
    -fgpu-rdc -foffload-lto --offload-arch=sm_75 -O2 -I"$ROOT/runtime/include" \
    -c "$ROOT/tests/gpu/corpus_app.cu" -o "$W/corpus_app.o"
  "$FATLINK" device-link --arch=sm_75,sm_80,sm_90,sm_100,sm_120,compute_120 $CORPUS_OBJS \
    "$W/libcorpus_rs.rlib" "$W/libfatlink_device.rlib" -o "$W/kernels_corpus.o"
  "$CLANG" "$W/corpus_app.o" $CORPUS_OBJS "$W/kernels_corpus.o" -Wl,--whole-archive "$LIB" \
    -Wl,--no-whole-archive -L"$CUDA/lib64" -lcudart -ldl -lpthread -Wl,-rpath,'$ORIGIN' \
    -o "$OUT/corpus_app"
  echo "== nvcc host code linked by fatlink cc (no nvcc -dlink)"
  local NVCC="$CUDA/bin/nvcc" NVARCH="-gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 -gencode arch=compute_120,code=sm_120"
  "$NVCC" -rdc=true $NVARCH -c "$T/nvcc/nv_host.cu" -o "$W/nv_host.o"
  "$NVCC" -dc $NVARCH "$T/nvcc/nv_math.cu" -o "$W/nv_math.o"
  rust nvcc_calls "${DEV[@]}"
  "$FATLINK" embed "$W/libnvcc_calls.rlib" "$W/libfatlink_device.rlib" -o "$W/nvcc_calls_dev.o"
  "$FATLINK" cc "$W/nv_host.o" "$W/nv_math.o" "$W/nvcc_calls_dev.o" -L"$CUDA/lib64" -lcudart \
    -lstdc++ -Wl,-rpath,'$ORIGIN' -o "$OUT/nvcc_app" --fatlink-arch=sm_75,sm_80,sm_90,sm_100,sm_120
  # nv_math.cu as nvcc LTO-IR (code=lto_75): nvJitLink links it; the Rust
  # kernel calls its nv_scale, so it also becomes a relocatable cubin of
  # its own, nvlinked with fatlink's (docs/nvcc.md, LTO-IR).
  "$NVCC" -dc -gencode arch=compute_75,code=lto_75 "$T/nvcc/nv_math.cu" -o "$W/nv_math_lto.o"
  "$FATLINK" cc "$W/nv_host.o" "$W/nv_math_lto.o" "$W/nvcc_calls_dev.o" -L"$CUDA/lib64" -lcudart \
    -lstdc++ -Wl,-rpath,'$ORIGIN' -o "$OUT/nvcc_lto_app" --fatlink-arch=sm_75,sm_80,sm_90,sm_100,sm_120
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --offload-new-driver \
    -fgpu-rdc -foffload-lto --offload-arch=sm_75 -O2 -c "$T/nvcc/nv_math.cu" -o "$W/nv_math_clang.o"
  # nvcc calls a kernel's stub by the kernel's name, clang names it
  # __device_stub__<name> (docs/runtime.md, "nvcc host code").
  "$FATLINK" cc "$W/nv_host.o" "$W/nv_math_clang.o" "$W/nvcc_calls_dev.o" \
    -Wl,--defsym=nv_square_all=__device_stub__nv_square_all -Wl,--whole-archive "$LIB" -Wl,--no-whole-archive -L"$CUDA/lib64" -lcudart -ldl -lpthread \
    -lstdc++ -Wl,-rpath,'$ORIGIN' -o "$OUT/nvcc_clang_app" --fatlink-arch=sm_75,sm_80,sm_90,sm_100,sm_120
  echo "== Rust host (fatlink-rt crate)"
  rustc --edition 2021 -O --crate-type rlib --crate-name fatlink_rt \
    "$ROOT/runtime/rust/fatlink-rt/src/lib.rs" -o "$W/libfatlink_rt.rlib"
  mkdir -p "$W/native" && cp "$LIB" "$W/native/"
  rustc --edition 2021 -O "$ROOT/runtime/tests/rust_host.rs" --extern fatlink_rt="$W/libfatlink_rt.rlib" \
    -L native="$W/native" -C link-arg="$W/kernels_full.o" -o "$OUT/rust_host"
  echo "== Rust host with typed launches (Kernel<P>, streams, events)"
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
    --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c "$ROOT/tests/gpu/typed_kernels.cu" -o "$W/typed_kernels.bc"
  "$FATLINK" device-link --arch=sm_75,sm_80,sm_90,sm_100,sm_120,compute_120 "$W/typed_kernels.bc" \
    "$W/libsaxpy.rlib" "$W/libvecmath.rlib" "$W/libfatlink_device.rlib" "$W/softplus.bc" -o "$W/kernels_typed.o"
  rustc --edition 2021 -O "$ROOT/tests/gpu/rust_typed.rs" --extern fatlink_rt="$W/libfatlink_rt.rlib" \
    -L native="$W/native" -C link-arg="$W/kernels_typed.o" -o "$OUT/rust_typed"
  echo "== the cargo example (examples/cargo, fatlink-cc)"
  (cd "$ROOT/examples/cargo" && CARGO_TARGET_DIR="$W/cargo-target" cargo build --release --offline -q)
  cp "$W/cargo-target/release/app" "$OUT/cargo_app"
  echo "== the cargo + nvcc example (examples/cargo-nvcc, fatlink-cc)"
  (cd "$ROOT/examples/cargo-nvcc" && CARGO_TARGET_DIR="$W/cargo-nvcc-target" cargo build --release --offline -q)
  cp "$W/cargo-nvcc-target/release/app" "$OUT/cargo_nvcc_app"
  echo "== the cargo + cc crate example (examples/cargo-cc, fatlink-cc)"
  (cd "$ROOT/examples/cargo-cc" && CARGO_TARGET_DIR="$W/cargo-cc-target" NVCC="$CUDA/bin/nvcc" \
    cargo build --release --offline -q --config 'source.crates-io.replace-with="debian"' \
    --config 'source.debian.directory="/usr/share/cargo/registry"')
  cp "$W/cargo-cc-target/release/app" "$OUT/cargo_cc_app"
  echo "== the Bazel example (examples/bazel: gpu_device_link, gpu_bindings)"
  bazel build //examples/bazel:app >/dev/null 2>&1 || bazel build //examples/bazel:app
  cp -L "$ROOT/bazel-bin/examples/bazel/app" "$OUT/bazel_app" && chmod u+w "$OUT/bazel_app"
  echo "== kernel resources (fatlink inspect --resources) for res_check"
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version --cuda-device-only \
    --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c "$ROOT/tests/gpu/res_kernels.cu" -o "$W/res_kernels.bc"
  "$FATLINK" device-link --arch=sm_75,sm_90,sm_100 "$W/res_kernels.bc" -o "$W/kernels_res.o"
  "$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
    "$ROOT/tests/gpu/res_kernels.cu" -o "$W/res_nvcc.fatbin"
  "$NVCC" -fatbin -G -gencode arch=compute_90,code=sm_90 "$ROOT/tests/gpu/res_kernels.cu" \
    -o "$W/res_nvcc_g.fatbin"
  rm -rf "$OUT/res" && mkdir -p "$OUT/res"
  local f
  for f in kernels_res.o res_nvcc.fatbin res_nvcc_g.fatbin kernels_full.o kernels_parts.o kernels_cdp.o kernels_corpus.o; do
    (cd "$W" && "$FATLINK" inspect --resources "$f" >>"$OUT/res/table.txt" &&
      "$FATLINK" inspect --extract="$OUT/res" "$f" >/dev/null)
  done
  g++ -O2 -I"$CUDA/include" "$ROOT/tests/gpu/res_check.cpp" -L"$CUDA/lib64/stubs" -lcuda \
    -o "$OUT/res_check"
  echo "== built into $OUT ($(du -sh "$OUT" | cut -f1)); run: tests/gpu/run.sh run $OUT"
  set +e
}

PASSED=0 FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }

run() {
  cd "$OUT" || exit 1
  for f in app_full app_parts app_ptx app_sm75 app_sm120 app_cdp nvcc_app nvcc_lto_app nvcc_clang_app rust_host rust_typed cargo_app cargo_nvcc_app cargo_cc_app bazel_app corpus_app res_check; do
    [ -x "$f" ] || { echo "FAIL: $OUT/$f missing: run 'tests/gpu/run.sh build' first"; exit 1; }
  done
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader || true
  local CC
  CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [ -n "$CC" ] || { echo "FAIL: no GPU visible to nvidia-smi"; exit 1; }
  local MAJOR=$((CC / 10))
  echo "== device 0 is sm_$CC"

  echo "== app_full: every kernel against the host computation"
  FATLINK_RT_LOG=1 timeout 120 ./app_full >full.txt 2>&1; local rc=$?
  cat full.txt
  [ $rc -eq 0 ] && grep -q 'gpu_app: all checks passed' full.txt &&
    pass "app_full: all kernels correct" || fail "app_full (exit $rc)"
  grep -q 'Rust rust_softplus calling CUDA C++ cuda_softplus' full.txt &&
    grep -q '^PASS: Rust rust_softplus' full.txt &&
    pass "rust_softplus -> cuda_softplus result" || fail "rust_softplus check missing"
  grep -q '^fatlink-rt: CUDA runtime: registered 1 fatbin, 2 kernels and 1 variable' full.txt &&
    pass "CUDA runtime registration logged" || fail "CUDA runtime registration not logged"
  grep -q "on device 0 .*: expecting cubin sm_" full.txt &&
    pass "image choice logged (cubin)" || fail "no image choice in the log"

  echo "== app_parts: partitions, shared PTX between arches"
  timeout 120 ./app_parts >parts.txt 2>&1; rc=$?
  cat parts.txt
  [ $rc -eq 0 ] && grep -q 'gpu_app: all checks passed' parts.txt &&
    pass "app_parts: all kernels correct" || fail "app_parts (exit $rc)"

  echo "== app_ptx: compute_75 PTX only, JIT-compiled"
  FATLINK_RT_LOG=1 timeout 180 ./app_ptx >ptx.txt 2>&1; rc=$?
  cat ptx.txt
  [ $rc -eq 0 ] && grep -q 'gpu_app: all checks passed' ptx.txt &&
    pass "app_ptx: JIT-loaded PTX, all kernels correct" || fail "app_ptx (exit $rc)"
  grep -q "expecting PTX compute_75 (ISA [0-9.]*) is JIT-compiled for sm_$CC" ptx.txt &&
    pass "app_ptx: log says the PTX is JIT-compiled for sm_$CC" || fail "app_ptx: JIT choice not logged"
  grep -q "the driver reports binary sm_$CC, PTX compute_75" ptx.txt &&
    pass "app_ptx: the driver confirms JIT for sm_$CC" || fail "app_ptx: driver attributes not as expected"

  echo "== a cubin for another GPU only: the documented message"
  local checked=0
  for app in sm75:75 sm120:120; do
    local name=${app%%:*} sm=${app##*:}
    [ $((sm / 10)) -eq $MAJOR ] && continue
    checked=1
    timeout 60 ./app_$name >$name.txt 2>&1; rc=$?
    cat $name.txt
    [ $rc -ne 0 ] &&
      grep -qF "FATLINK_RT_ERROR_NO_IMAGE: cannot load module 0 ($OUT/app_$name) on device 0 (" $name.txt &&
      grep -qF "no image runs on sm_$CC (the module has cubin sm_$sm): a cubin runs only on GPUs of its major version" $name.txt &&
      grep -qF "relink with \`fatlink device-link --arch=sm_$CC\`" $name.txt &&
      pass "app_$name on sm_$CC: NO_IMAGE with the documented message" ||
      fail "app_$name on sm_$CC: expected the NO_IMAGE message"
  done
  [ $checked -eq 1 ] || fail "no single-arch program is incompatible with sm_$CC"

  echo "== app_cdp: a kernel that launches a kernel (the device runtime)"
  FATLINK_RT_LOG=1 timeout 60 ./app_cdp >cdp.txt 2>&1; rc=$?
  cat cdp.txt
  [ $rc -eq 0 ] && grep -q '^ok$' cdp.txt &&
    pass "app_cdp: child grids launched from the device scaled the data" ||
    fail "app_cdp (exit $rc)"

  # squares APP WHAT: APP (nv_host.cu's main) squared all 256 values and
  # read nv_calls back.
  squares() {
    timeout 60 "./$1" >"$1.txt" 2>&1; local rc=$?
    cat "$1.txt"
    [ $rc -eq 0 ] && grep -q '^ok: 256 squares, nv_calls 1$' "$1.txt" &&
      pass "$1: $2 squared every value" || fail "$1 (exit $rc)"
  }
  echo "== nvcc_app: nvcc host code, <<<>>> through fatlink cc's registration"
  squares nvcc_app "nv_square_all (nvcc, calling Rust)"
  echo "== nvcc_lto_app: as nvcc_app, nv_math.cu as nvcc LTO-IR (nvJitLink)"
  squares nvcc_lto_app "nv_square_all from LTO-IR (calling Rust)"
  echo "== nvcc_clang_app: nvcc host code, clang's kernel, one shared handle"
  FATLINK_RT_LOG=1 timeout 60 ./nvcc_clang_app >nvcc_clang.txt 2>&1; rc=$?
  cat nvcc_clang.txt
  [ $rc -eq 0 ] && grep -q '^ok: 256 squares, nv_calls 1$' nvcc_clang.txt &&
    grep -q "registered 1 fatbin (1 with nvcc's modules, one handle)" nvcc_clang.txt &&
    pass "nvcc_clang_app: nvcc's launch of clang's kernel, one registration" ||
    fail "nvcc_clang_app (exit $rc)"

  echo "== rust_host: the fatlink-rt crate"
  timeout 60 ./rust_host >rust.txt 2>&1; rc=$?
  cat rust.txt
  [ $rc -eq 0 ] && grep -q '^saxpy ok$' rust.txt && pass "rust_host: saxpy through RawKernel" ||
    fail "rust_host (exit $rc)"
  echo "== rust_typed: typed launches (Kernel<P>) on streams"
  timeout 60 ./rust_typed >rust_typed.txt 2>&1; rc=$?
  cat rust_typed.txt
  [ $rc -eq 0 ] && grep -q '^wrong handle refused: kernel typed_axpy (_Z10typed_axpyfPKfPfj) does not fit its handle' rust_typed.txt &&
    grep -q '^typed launches ok' rust_typed.txt &&
    pass "rust_typed: typed handles checked, launches on two streams correct" || fail "rust_typed (exit $rc)"

  echo "== cargo_app: the cargo example (Rust kernels calling CUDA C++)"
  timeout 60 ./cargo_app >cargo.txt 2>&1; rc=$?
  cat cargo.txt
  [ $rc -eq 0 ] && grep -q '^ran gelu_affine and axpy on 4096 values' cargo.txt &&
    pass "cargo_app: gelu_affine and axpy match the host" || fail "cargo_app (exit $rc)"

  echo "== cargo_nvcc_app: the cargo + nvcc example (Rust and nvcc kernels calling each other)"
  timeout 60 ./cargo_nvcc_app >cargo_nvcc.txt 2>&1; rc=$?
  cat cargo_nvcc.txt
  [ $rc -eq 0 ] && grep -q '^ran rust_affine and nv_cube_all on 4096 values' cargo_nvcc.txt &&
    pass "cargo_nvcc_app: rust_affine and nv_cube_all match the host" || fail "cargo_nvcc_app (exit $rc)"
  echo "== cargo_cc_app: the cargo + cc crate example (Rust kernel, nvcc kernel launched with <<<>>>)"
  timeout 60 ./cargo_cc_app >cargo_cc.txt 2>&1; rc=$?
  cat cargo_cc.txt
  [ $rc -eq 0 ] && grep -q '^ran rust_affine and nv_square_all on 4096 values' cargo_cc.txt &&
    pass "cargo_cc_app: rust_affine and nv_square_all match the host" || fail "cargo_cc_app (exit $rc)"

  echo "== bazel_app: the Bazel example, saxpy through its typed launch function"
  timeout 60 ./bazel_app >bazel.txt 2>&1; rc=$?
  cat bazel.txt
  [ $rc -eq 0 ] && grep -q '^typed bindings: every kernel matches its manifest' bazel.txt &&
    grep -q "^GPU 0: .* (sm_$CC)" bazel.txt && grep -q '^saxpy: 256 results correct' bazel.txt &&
    pass "bazel_app: typed saxpy launch correct" || fail "bazel_app (exit $rc)"

  echo "== corpus_app: the corpus programs against the host"
  timeout 180 ./corpus_app >corpus.txt 2>&1; rc=$?
  cat corpus.txt
  [ $rc -eq 0 ] && grep -q '^corpus_app: all checks passed' corpus.txt &&
    pass "corpus_app: every corpus check" || fail "corpus_app (exit $rc)"
  [ "$(grep -c '^PASS: ' corpus.txt)" -eq 17 ] &&
    pass "corpus_app: all 17 checks ran" || fail "corpus_app: not all 17 checks ran"
  grep -q '^device_heap_printf: block 0 of 2, sum\[0\] = 0, 0.500000$' corpus.txt &&
    pass "corpus_app: device printf output" || fail "corpus_app: device printf output missing"

  echo "== res_check: fatlink inspect --resources against the driver's attributes"
  timeout 120 ./res_check res/table.txt res >res.txt 2>&1; rc=$?
  cat res.txt
  [ $rc -eq 0 ] && grep -q "^res_check: [1-9][0-9]* kernels in [1-9][0-9]* sm_$CC cubins" res.txt &&
    pass "res_check: registers, shared memory, block sizes and kernels as the driver reports" ||
    fail "res_check (exit $rc)"

  echo "$PASSED passed, $FAILED failed"
  [ $FAILED -eq 0 ]
}

case $MODE in
build) build ;;
run) run ;;
all) build && run ;;
esac
