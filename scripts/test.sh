#!/usr/bin/env bash
# test.sh: runs every fatlink test (unit and end-to-end) with Bazel, after
# installing what the build needs. Extra arguments go to `bazel test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

# Every program the tests run must come from setup.sh's packages, the CUDA
# toolkit or rustup: a fresh machine has nothing else (scripts/check-install.sh).
set +e
scripts/check-install.sh >/tmp/fatlink-install.$$.log 2>&1
install_rc=$?
grep -v ' ok ' /tmp/fatlink-install.$$.log
rm -f /tmp/fatlink-install.$$.log

# A test that fails and then passes on its second attempt is reported as
# FLAKY (and counted below, with its failed attempt's log), not hidden.
bazel test --flaky_test_attempts=2 //... "$@" 2>&1 | tee /tmp/fatlink-test.$$.log
rc=${PIPESTATUS[0]}
set -e
# A plain summary line: N passed, N failed.
passed=$(grep -cE '^//.* (PASSED|\(cached\) PASSED|FLAKY)' /tmp/fatlink-test.$$.log || true)
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' /tmp/fatlink-test.$$.log || true)
flaky=$(grep -cE '^//.* FLAKY' /tmp/fatlink-test.$$.log || true)
# Bazel prints a failing test's whole log before its summary, so a CI
# system that keeps only the head and tail of the output loses the error.
# Repeat the end of each failed (or flaky) test's logs after the summary.
awk '/^\/\/.* (FAILED|TIMEOUT|FLAKY)/ { keep = 1; next }
     keep && /^ / { if ($1 ~ /^\/.*\.log$/) print $1; next }
     { keep = 0 }' /tmp/fatlink-test.$$.log | while read -r log; do
  echo "==== end of $log"
  tail -n 40 "$log"
done
rm -f /tmp/fatlink-test.$$.log
if [ "$install_rc" -eq 0 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  [ "$rc" -ne 0 ] || rc=1
fi
echo "$passed passed ($flaky flaky), $failed failed"
exit "$rc"
