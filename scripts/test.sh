#!/usr/bin/env bash
# test.sh: runs every fatlink test (unit and end-to-end) with Bazel, after
# installing what the build needs. Extra arguments go to `bazel test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

set +e
bazel test //... "$@" 2>&1 | tee /tmp/fatlink-test.$$.log
rc=${PIPESTATUS[0]}
set -e
# A plain summary line: N passed, N failed.
passed=$(grep -cE '^//.* (PASSED|\(cached\) PASSED)' /tmp/fatlink-test.$$.log || true)
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' /tmp/fatlink-test.$$.log || true)
rm -f /tmp/fatlink-test.$$.log
echo "$passed passed, $failed failed"
exit "$rc"
