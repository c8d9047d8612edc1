#!/usr/bin/env bash
# corrupt_input_test.sh: bitcode that gets past fatlink's intake checks
# can still crash LLVM (issue #14: an abort in the NVPTX printer, "LLVM
# ERROR: out of memory", a SIGSEGV in the metadata loader from 3 changed
# bytes of an rlib). A few hundred inputs, each a real rustc bitcode member
# or clang bitcode with 3 bytes changed (fixed seed), go through the whole
# link (parse, verify, link, optimize, PTX, ptxas): fatlink must never die
# by a signal, must fail with "fatlink: error:" when it fails, and must
# leave no output and no temporary file behind.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
mkdir -p "$WORK/x" && (cd "$WORK/x" && ar x "$D/libvecmath.rlib")
VECMATH=$(ls "$WORK"/x/*vecmath*.rcgu.o)

# mutate SRC N SEED: writes $WORK/m/<i>.bc, each SRC with 3 bytes changed.
mutate() {
  rm -rf "$WORK/m" && mkdir -p "$WORK/m"
  python3 - "$1" "$2" "$3" "$WORK/m" <<'PY'
import random, sys
src = open(sys.argv[1], 'rb').read()
r = random.Random(int(sys.argv[3]))
for i in range(int(sys.argv[2])):
    b = bytearray(src)
    for _ in range(3):
        b[r.randrange(len(b))] = r.randrange(256)
    open('%s/%03d.bc' % (sys.argv[4], i), 'wb').write(b)
PY
}

run_all() { # run_all NAME EXTRA-INPUTS...
  local name="$1"; shift
  local signals=0 silent=0 left=0 ok=0 failed=0 f rc err
  for f in "$WORK"/m/*.bc; do
    rm -f "$WORK/out.cubin"
    err=$("$FATLINK" device-link --arch=sm_80 "$f" "$@" -o "$WORK/out.cubin" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ge 128 ]; then
      signals=$((signals + 1)); echo "signal (exit $rc): $f: $(head -2 <<<"$err")"
      [ -z "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ] || cp "$f" "$TEST_UNDECLARED_OUTPUTS_DIR/"
    elif [ "$rc" -ne 0 ]; then
      failed=$((failed + 1))
      grep -q '^fatlink: error: ' <<<"$err" || { silent=$((silent + 1)); echo "no error line: $f: $err"; }
      [ ! -e "$WORK/out.cubin" ] || { left=$((left + 1)); echo "output left: $f"; }
    else
      ok=$((ok + 1))
    fi
  done
  echo "$name: $ok linked, $failed refused, $signals died by a signal"
  check "$name: no run dies by a signal" test "$signals" -eq 0
  check "$name: every refusal says fatlink: error:" test "$silent" -eq 0
  check "$name: no refusal leaves an output" test "$left" -eq 0
  check "$name: no temporary file left" test -z "$(ls -A "$TMPDIR")"
}

mutate "$VECMATH" 200 1234
run_all "rustc bitcode (vecmath)" "$D/libminicore.rlib"
mutate "$D/softplus.bc" 100 99
run_all "clang bitcode (softplus.cu)" $RLIBS

finish
