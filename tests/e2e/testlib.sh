# testlib.sh: shared setup and checks for fatlink's end-to-end tests.
#
# Sourced by each *_test.sh. Builds the device code under testdata/ with the
# real rustc (RUSTC_BOOTSTRAP=1 for the nightly-only #![no_core] features)
# and clang-22, in a fresh directory, and provides small assertion helpers
# that count passes and failures. A missing tool is a failure, never a skip.

set -uo pipefail

: "${TEST_TMPDIR:=$(mktemp -d)}"
RUNFILES="${TEST_SRCDIR:-$PWD/..}/fatlink"
[ -d "$RUNFILES" ] || RUNFILES="$(cd "$(dirname "$0")/../.." && pwd)"
FATLINK="$RUNFILES/tools/fatlink/fatlink"
TESTDATA="$RUNFILES/testdata"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
CLANG="${CLANG:-clang++-22}"
CLANG_C="${CLANG_C:-clang-22}"
RUSTC="${RUSTC:-rustc}"

# Under --config=asan the runtime archive is instrumented: a program that
# links it needs the sanitizers' runtime libraries too, gcc's libasan first
# of all. SAN_LDFLAGS are the flags for a C compiler driver; SAN_RUSTFLAGS
# those for rustc, whose links pass -nodefaultlibs (which drops what
# -fsanitize adds), so it names the libraries, before the system ones.
# Both are empty for a normal build.
SAN_LDFLAGS=()
SAN_RUSTFLAGS=()
# (grep without -q reads all of nm's output: with pipefail, an early exit
# would fail the pipeline through nm's SIGPIPE.)
if nm "$RUNFILES/runtime/libfatlink_rt.a" 2>/dev/null | grep ' U __asan_' >/dev/null; then
  SAN_LDFLAGS=(-fsanitize=address,undefined)
  SAN_RUSTFLAGS=(-ldylib=asan -ldylib=ubsan)
fi

# Everything a test writes lives here; TMPDIR too, so that the tests can
# check that fatlink leaves no temporary files behind.
WORK="$TEST_TMPDIR/work"
rm -rf "$WORK"
mkdir -p "$WORK/tmp"
export TMPDIR="$WORK/tmp"
# The wrappers cache device links; keep each test's cache its own.
export FATLINK_CACHE_DIR="$WORK/cache"
cd "$WORK"

PASSED=0
FAILED=0

pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }

# check NAME COMMAND...: passes when COMMAND succeeds.
check() {
  local name="$1"; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}

need_tool() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "FAIL: required tool '$1' not found (run the README's setup)"; exit 1; }
}

# Compiles a Rust device crate: rust_crate NAME [--extern ...].
rust_crate() {
  local name="$1"; shift
  RUSTC_BOOTSTRAP=1 "$RUSTC" --target nvptx64-nvidia-cuda --edition 2021 -O \
    --crate-type rlib --crate-name "$name" "$TESTDATA/rust/$name.rs" \
    -L "$WORK/dev" -o "$WORK/dev/lib$name.rlib" "$@"
}

# CUDA C++ to device bitcode for one arch: cuda_bc FILE ARCH OUT.
cuda_bc() {
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --cuda-device-only --offload-arch="$2" -fgpu-rdc -O3 -emit-llvm -c \
    "$TESTDATA/cuda/$1" -o "$3"
}

# CUDA C++ to a host object carrying device bitcode for several arches, as
# clang's new offload driver writes it: cuda_obj FILE ARCHES OUT.
cuda_obj() {
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch="$2" -O3 -c \
    "$TESTDATA/cuda/$1" -o "$3"
}

# CUDA C++ to a host object carrying relocatable cubins (no -foffload-lto),
# linked by nvlink: cuda_obj_nolto FILE ARCHES OUT.
cuda_obj_nolto() {
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --offload-new-driver -fgpu-rdc --offload-arch="$2" -O3 -c \
    "$TESTDATA/cuda/$1" -o "$3"
}

# Builds the bundled example's device code into $WORK/dev.
build_testdata() {
  need_tool "$RUSTC"
  need_tool "$CLANG"
  mkdir -p "$WORK/dev"
  rust_crate minicore &&
    rust_crate vecmath --extern minicore="$WORK/dev/libminicore.rlib" &&
    rust_crate saxpy --extern minicore="$WORK/dev/libminicore.rlib" \
      --extern vecmath="$WORK/dev/libvecmath.rlib" &&
    cuda_bc softplus.cu sm_75 "$WORK/dev/softplus.bc" &&
    cuda_obj softplus.cu sm_75,sm_90 "$WORK/dev/softplus.o" || {
      echo "FAIL: building testdata failed"; exit 1; }
  RLIBS="$WORK/dev/libsaxpy.rlib $WORK/dev/libvecmath.rlib $WORK/dev/libminicore.rlib"
}

# The body of one PTX function: ptx_function FILE NAME.
ptx_function() {
  awk -v name="$2" '
    $0 ~ "(\\.entry|\\.func)[^(]*[ \t]" name "\\(" { on = 1 }
    on { print }
    on && /^}/ { exit }' "$1"
}

# The function exists in FILE and calls nothing: kernel_has_no_call FILE NAME.
kernel_has_no_call() {
  local body
  body=$(ptx_function "$1" "$2")
  [ -n "$body" ] && ! grep -q 'call' <<<"$body"
}

# FILE exists and no line of it matches PATTERN (grep's basic regular
# expressions): lacks PATTERN FILE. A bare `! grep -q PATTERN FILE` also
# passes when FILE is missing, which proves nothing.
lacks() {
  if [ ! -f "$2" ]; then
    echo "lacks: $2 does not exist" >&2
    return 1
  fi
  ! grep -q -- "$1" "$2"
}

# Runs fatlink expecting failure: expect_error NAME MESSAGE ARGS...
# Checks the non-zero exit, the message on stderr, that no output ($OUT) was
# left and that no temporary file is left in $TMPDIR.
expect_error() {
  local name="$1" msg="$2"; shift 2
  rm -rf "$OUT"
  local err rc
  err=$("$FATLINK" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq 0 ]; then
    fail "$name: exit code 0, expected failure"; return
  fi
  if ! grep -qF -- "$msg" <<<"$err"; then
    fail "$name: message '$msg' not in: $err"; return
  fi
  if ! grep -q "^fatlink: error: " <<<"$err"; then
    fail "$name: no 'fatlink: error:' line in: $err"; return
  fi
  if [ -e "$OUT" ]; then
    fail "$name: output $OUT left behind"; return
  fi
  if [ -n "$(ls -A "$TMPDIR")" ]; then
    fail "$name: temporary files left: $(ls -A "$TMPDIR")"; rm -rf "${TMPDIR:?}"/*; return
  fi
  pass "$name"
}

# Prints the summary line and exits with the test's status.
finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
