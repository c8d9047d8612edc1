#!/usr/bin/env bash
# run.sh [SECONDS]: builds the fuzz targets (fuzz/build.sh), makes their
# seed corpora from real outputs (fuzz/seeds.sh), then fuzzes every target
# for SECONDS (default 20) and prints each target's executions and time.
# Fails on any crash, leak, timeout or out-of-memory (and, for the
# round-trip and differential targets, any mismatch), leaving the input in
# build/fuzz/crashes/. Every crash found so far is a case of
# fuzz/RegressionTest.cpp (bazel test //fuzz:regression_test); the
# checked-in corpora in fuzz/corpus/<target>/ seed their targets here and
# are replayed by //fuzz:corpus_test.
#
#   fuzz/run.sh         # CI: about 20 s per target
#   fuzz/run.sh 600     # a longer hunt (fork mode); build/fuzz/corpus/ grows
#
# Environment: FUZZ_TARGETS (default: all), FUZZ_JOBS (targets fuzzed at
# once, default: the number of cores), FATLINK (default: Bazel's build),
# FUZZ_SEED (libFuzzer's -seed; default: a new one each run). CI sets
# FUZZ_SEED=1: from the same corpus (a clean clone at the same path makes
# the same seeds) and seed, libFuzzer tries the same inputs in the same
# order, so a clean clone's run of .ci/run checks what CI will, and a
# failure in CI can be replayed; hunts for new bugs leave it unset.
# FUZZ_FORK=1 runs each target in libFuzzer's -fork mode: a parent process
# hands short jobs to child processes, so what one process keeps from input
# to input (LLVM's recovered crashes leak by design) cannot add up to the
# RSS limit over a long hunt, as it did for `link` after 62,592 runs in one
# process. It stops at the first crash, timeout or out-of-memory, like the
# plain mode. Default: on for runs of over 60 s per target, off below (CI).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_PER_TARGET="${1:-20}"
B="$ROOT/build/fuzz"
TARGETS="${FUZZ_TARGETS:-fatbin image scan manifest archive bitcode link options settings
  fatbin_roundtrip hostobj_roundtrip embed_roundtrip fatbin_diff ptx_link cubin_split}"
JOBS="${FUZZ_JOBS:-$(nproc)}"
export PATH="$HOME/.cargo/bin:$PATH"
start=$(date +%s)

"$ROOT/fuzz/build.sh" "$B"
if [ -z "${FATLINK:-}" ]; then
  (cd "$ROOT" && bazel build //tools/fatlink >/dev/null 2>&1) ||
    (cd "$ROOT" && bazel build //tools/fatlink)
  export FATLINK="$ROOT/bazel-bin/tools/fatlink/fatlink"
fi
"$ROOT/fuzz/seeds.sh" "$B/seeds"
rm -rf "$B/crashes" "$B/logs"
mkdir -p "$B/crashes" "$B/logs"
echo "fuzz/run.sh: built and seeded in $(( $(date +%s) - start )) s"

# A bad input is a crash, and so are an allocation over 1 GiB and an input
# that takes over 10 s.
FLAGS=(-rss_limit_mb=2560 -malloc_limit_mb=1024 -timeout=10)
[ -z "${FUZZ_SEED:-}" ] || FLAGS+=(-seed="$FUZZ_SEED")
FORK="${FUZZ_FORK:-$([ "$SECONDS_PER_TARGET" -gt 60 ] && echo 1 || echo 0)}"
[ "$FORK" = 0 ] ||
  FLAGS+=(-fork=1 -ignore_crashes=0 -ignore_ooms=0 -ignore_timeouts=0)

status=0
fuzz_one() {
  local t="$1" extra=() asan="${ASAN_OPTIONS:-}"
  # The whole link recovers LLVM's crashes as fatlink does, and what a
  # recovered crash had allocated is never freed: not a leak of fatlink's.
  # Corrupt bitcode makes LLVM's reader ask for absurd sizes (32 GB for a
  # record's operands): there, as in fatlink, such a malloc fails and LLVM's
  # bad-alloc error is recovered, so ASan returns null for anything over
  # 1 GiB instead of reporting it, and libFuzzer's own malloc limit is off.
  if [ "$t" = link ]; then
    extra=(-detect_leaks=0 -malloc_limit_mb=1000000)
    asan="$asan:allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=0"
  fi
  mkdir -p "$B/corpus/$t"
  # The corpus directory comes first: new inputs are written there.
  ASAN_OPTIONS="$asan" \
  "$B/${t}_fuzzer" "${FLAGS[@]}" "${extra[@]}" -max_total_time="$SECONDS_PER_TARGET" \
    -print_final_stats=1 -artifact_prefix="$B/crashes/$t-" \
    "$B/corpus/$t" "$B/seeds/$t" $(ls -d "$ROOT/fuzz/corpus/$t" 2>/dev/null) \
    >"$B/logs/$t.log" 2>&1
}
export -f fuzz_one
export B ROOT SECONDS_PER_TARGET
export FLAGS_STR="${FLAGS[*]}"
# shellcheck disable=SC2016
printf '%s\n' $TARGETS | xargs -P "$JOBS" -I{} bash -c '
  FLAGS=($FLAGS_STR); fuzz_one "$1" || true' _ {}

# Whether a target's run ended on its own: the plain mode's "Done N runs",
# the fork mode's parent "INFO: exiting: 0".
finished() {
  grep -q '^Done ' "$1" || grep -q '^INFO: exiting: 0 time:' "$1"
}

printf '%-18s %12s %8s %10s %8s  %s\n' target executions time exec/s corpus result
for t in $TARGETS; do
  log="$B/logs/$t.log"
  if [ "$FORK" = 0 ]; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  else
    # The parent's progress lines: "#EXECS: cov: ... time: SECONDSs job: N".
    execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
    secs=$(sed -n 's/^INFO: exiting: 0 time: \([0-9]*\)s$/\1/p' "$log" | tail -1)
  fi
  corpus=$(ls "$B/corpus/$t" | wc -l)
  crash=$(ls "$B/crashes" | grep "^$t-" | head -1 || true)
  if [ -n "$crash" ] || ! finished "$log"; then
    result="FAIL: $B/crashes/$crash (log $log)"
    status=1
  else
    result=ok
  fi
  printf '%-18s %12s %8s %10s %8s  %s\n' "$t" "${execs:-?}" "${secs:-?}s" \
    "$(( ${execs:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))" "$corpus" "$result"
done
echo "fuzz/run.sh: $(( $(date +%s) - start )) s in all"
# A CI machine keeps nothing but this output: each failure's report, and
# its input (when small) in base64, so that it can be reproduced elsewhere.
for t in $TARGETS; do
  crash=$(ls "$B/crashes" | grep "^$t-" | head -1 || true)
  log="$B/logs/$t.log"
  if [ -z "$crash" ] && finished "$log"; then
    continue
  fi
  echo "=== $t: the end of $log"
  grep -v '^#[0-9]' "$log" | tail -60
  if [ -n "$crash" ] && [ "$(stat -c %s "$B/crashes/$crash")" -le 65536 ]; then
    echo "=== $t: $crash, base64 (base64 -d > input):"
    base64 -w 100 "$B/crashes/$crash"
  fi
done
[ "$status" -eq 0 ] || echo "Reproduce: build/fuzz/<target>_fuzzer <input>; minimize: add -minimize_crash=1 -runs=10000"
exit "$status"
