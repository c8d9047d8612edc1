#!/usr/bin/env bash
# lit_test.sh FILE: runs one lit test file (test/**/*.test) under Bazel with
# the fatlink this build made. test/BUILD.bazel makes one Bazel test per
# file, so they run in parallel and pass or fail one by one.
set -euo pipefail
RUNFILES="${TEST_SRCDIR:?run me with bazel test}/fatlink"
LIT="$(llvm-config-22 --bindir)/lit"
[ -x "$LIT" ] || { echo "FAIL: lit not found at $LIT: run scripts/setup.sh (llvm-22-tools)"; exit 1; }
# A test lit reports UNSUPPORTED (a REQUIRES it lacks) did not run: that
# fails here rather than showing as passed (docs/testing.md: a skipped test
# that hides something is a defect).
LOG="$TEST_TMPDIR/lit.log"
set +e
python3 "$LIT" -v --show-unsupported \
  --param exec_root="$TEST_TMPDIR/lit" \
  --param fatlink="$RUNFILES/tools/fatlink/fatlink" \
  --param rt_lib="$RUNFILES/runtime/libfatlink_rt.a" \
  --param record_sweep="$RUNFILES/fuzz/record_sweep" \
  --param prebuilt_testdata="$RUNFILES/test/testdata_dev" \
  "$RUNFILES/$1" 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
set -e
if grep -q '^UNSUPPORTED: ' "$LOG"; then
  echo "FAIL: lit skipped $1 as UNSUPPORTED: make it run here (test/lit.cfg.py, .ci/run)"
  exit 1
fi
exit "$rc"
