#!/usr/bin/env bash
# cargo_example_test.sh: `cargo build --release --offline` of examples/cargo
# (two Rust device crates, CUDA C++ compiled by the build script, a host
# crate using the fatlink-rt runtime crate), linked by fatlink-cc for sm_80,
# sm_90, sm_100 and compute_100. Checks the executable's targets with fatlink
# inspect, that the Rust kernel's call into CUDA C++ is inlined, and runs it:
# with no GPU here it lists its kernels and says so cleanly.
source "$(dirname "$0")/testlib.sh"
need_tool cargo
need_tool "$CLANG"

# The example refers to sibling directories of the repository; copy them
# into a writable tree with the same layout.
REPO="$WORK/repo"
for d in examples/cargo cargo/fatlink-build runtime/rust/fatlink-rt testdata/rust; do
  mkdir -p "$REPO/$d"
  cp -rL "$RUNFILES/$d/." "$REPO/$d/"
done
chmod -R u+w "$REPO"
ln -s "$FATLINK" "$WORK/fatlink-cc"

export CARGO_HOME="$WORK/cargo-home"
export CARGO_TARGET_DIR="$WORK/target"
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER="$WORK/fatlink-cc"
export FATLINK="$FATLINK"
export FATLINK_RT_LIB_DIR="$(dirname "$(readlink -f "$RUNFILES/runtime/libfatlink_rt.a")")"
# The instrumented runtime (--config=asan) needs the sanitizers' runtimes.
[ "${#SAN_RUSTFLAGS[@]}" -eq 0 ] || export RUSTFLAGS="${SAN_RUSTFLAGS[*]}"
(cd "$REPO/examples/cargo" && cargo build --release --offline) > build.log 2>&1
check "cargo build --release succeeds" test $? -eq 0 || cat build.log
APP="$WORK/target/release/app"

"$FATLINK" inspect "$APP" > inspect.txt
for t in "cubin +sm_80 " "cubin +sm_90 " "cubin +sm_100 " "ptx +sm_100 +8\.8"; do
  check "the executable carries: $t" grep -Eq "$t" inspect.txt
done
"$FATLINK" inspect --extract=extracted "$APP" > /dev/null
PTX=$(ls extracted/*.ptx)
check "Rust kernel calling Rust and CUDA C++ has no call left" kernel_has_no_call "$PTX" gelu_affine
check "the CUDA C++ function was inlined away" lacks cuda_gelu "$PTX"

"$APP" > run.txt 2>&1; rc=$?
check "the program exits 0 without a GPU" test "$rc" -eq 0
check "it lists gelu_affine with its parameter sizes" grep -qF 'kernel gelu_affine([4, 4, 8, 8])' run.txt
check "it lists axpy" grep -qF 'kernel axpy([4, 8, 8])' run.txt
check "it lists the four images" bash -c "[ \$(grep -c '  image ' run.txt) -eq 4 ]"
check "it reports the missing driver cleanly" grep -q '^no GPU: no NVIDIA driver' run.txt
cat run.txt

finish
