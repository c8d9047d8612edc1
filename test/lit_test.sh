#!/usr/bin/env bash
# lit_test.sh FILE: runs one lit test file (test/**/*.test) under Bazel with
# the fatlink this build made. test/BUILD.bazel makes one Bazel test per
# file, so they run in parallel and pass or fail one by one.
set -euo pipefail
RUNFILES="${TEST_SRCDIR:?run me with bazel test}/fatlink"
LIT="$(llvm-config-22 --bindir)/lit"
[ -x "$LIT" ] || { echo "FAIL: lit not found at $LIT: run scripts/setup.sh (llvm-22-tools)"; exit 1; }
exec python3 "$LIT" -v \
  --param exec_root="$TEST_TMPDIR/lit" \
  --param fatlink="$RUNFILES/tools/fatlink/fatlink" \
  --param rt_lib="$RUNFILES/runtime/libfatlink_rt.a" \
  "$RUNFILES/$1"
