#!/usr/bin/env bash
# remote_test.sh: the GPU rules on a real remote-execution service,
# BuildGrid (PyPI `buildgrid`, a pinned version in a virtualenv under
# ~/.cache/fatlink/deps), started on a free local port by this script, with
# tests/bazel/remote/rwapi_worker.py as its worker (test scaffolding:
# BuildGrid ships no worker). docs/bazel.md, "Remote cache and remote
# execution", reports the figures.
#
#   1. --remote_cache: the test graph (tests/bazel/BUILD.bazel: Rust and
#      CUDA device libraries, the device link split per target, the host
#      program) and fatlink itself, built in checkout A with a fresh output
#      base, fill the cache; checkout B, at another path with another fresh
#      output base, then executes nothing: every action of the device
#      graph, and every other one, comes from the cache, and the outputs are
#      byte-identical. So the actions are hermetic and path-independent.
#   2. --remote_executor: a new target set (--//rules:archs) in B runs the
#      device link's actions on the worker, which stages each action's
#      declared inputs in an empty directory with only the action's
#      environment; the program carries the new targets. Checkout A then
#      builds the same thing from the cache alone.
#
# The worker runs on this machine, so the toolchain's absolute paths
# (rustc, clang-22, /usr/local/cuda) exist for it, as they must on a real
# farm's workers (docs/bazel.md).
# Usage: tests/bazel/remote_test.sh   (BAZEL= picks the binary; needs pip
# access the first time, to install BuildGrid)
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC="$PWD"
BAZEL="${BAZEL:-bazel}"
BG_VERSION=0.2.53 # the last release whose scheduler runs on SQLite (0.3+ needs PostgreSQL)
VENV="${FATLINK_BUILDGRID_VENV:-$HOME/.cache/fatlink/deps/buildgrid-$BG_VERSION}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for d in a b; do
    (cd "$WORK/$d/fatlink" 2>/dev/null && "$BAZEL" --output_base="$WORK/ob-$d" shutdown) >/dev/null 2>&1
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  chmod -R u+w "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
PASSED=0 FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() {
  local name="$1"; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}
die() { echo "FAIL: $*"; echo "$PASSED passed, $((FAILED + 1)) failed"; exit 1; }

# BuildGrid, once per machine.
if [ ! -x "$VENV/bin/bgd" ]; then
  echo "remote_test: installing buildgrid $BG_VERSION into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "buildgrid==$BG_VERSION" ||
    die "cannot install buildgrid $BG_VERSION with pip (needs network access once)"
fi
PY="$VENV/bin/python"

# Two checkouts of this tree (what git tracks, plus untracked files it does
# not ignore) at different paths.
for d in a b; do
  mkdir -p "$WORK/$d/fatlink"
  git ls-files -z -co --exclude-standard | xargs -0 tar cf - | tar xf - -C "$WORK/$d/fatlink" ||
    die "cannot copy the checkout"
done

# The service: CAS, action cache and execution (a SQLite scheduler), on a
# free port; then the worker.
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/bg"
sed -e "s|@PORT@|$PORT|" -e "s|@DIR@|$WORK/bg|g" tests/bazel/remote/buildgrid.yml > "$WORK/bg/config.yml"
"$PY" -c "
import sys
from sqlalchemy import create_engine
from buildgrid.server.sql.models import Base
Base.metadata.create_all(create_engine('sqlite:///' + sys.argv[1]))" "$WORK/bg/scheduler.db" ||
  die "cannot create BuildGrid's scheduler database"
"$VENV/bin/bgd" server start "$WORK/bg/config.yml" > "$WORK/bg/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  "$VENV/bin/bgd" capabilities --remote "http://127.0.0.1:$PORT" > /dev/null 2>&1 && break
  sleep 0.2
done
"$VENV/bin/bgd" capabilities --remote "http://127.0.0.1:$PORT" > /dev/null 2>&1 ||
  { cat "$WORK/bg/server.log"; die "BuildGrid did not start"; }
"$PY" tests/bazel/remote/rwapi_worker.py --remote "127.0.0.1:$PORT" --workdir "$WORK/worker" \
  --log "$WORK/worker.log" > "$WORK/bg/worker.out" 2>&1 &
PIDS+=($!)
touch "$WORK/worker.log"
REMOTE="grpc://127.0.0.1:$PORT"
TARGETS=(//tests/bazel:app //tests/bazel:kernels_fatbin)

# build NAME CHECKOUT FLAGS...: builds the test graph in checkout a or b
# (each with its own output base), logging every spawn to $WORK/NAME.json.
build() {
  local name="$1" d="$2" start=$SECONDS; shift 2
  if ! (cd "$WORK/$d/fatlink" && "$BAZEL" --output_base="$WORK/ob-$d" build "$@" \
        --execution_log_json_file="$WORK/$name.json" "${TARGETS[@]}") > "$WORK/$name.out" 2>&1; then
    tail -40 "$WORK/$name.out"; tail -20 "$WORK/bg/worker.out"; die "bazel build ($name) $*"
  fi
  echo "build $name ($d): $((SECONDS - start)) s, $(grep -oE '[0-9]+ processes[^.]*' "$WORK/$name.out" | tail -1)"
}

# spawns LOG [all]: the logged spawns as "runner cache-hit mnemonic: message",
# sorted; only the test graph's unless "all".
spawns() {
  "$PY" - "$WORK/$1.json" "${2:-graph}" <<'PY'
import json, sys
text, dec, i, out = open(sys.argv[1]).read(), json.JSONDecoder(), 0, []
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    if sys.argv[2] == "graph" and not any("/tests/bazel/" in o for o in obj.get("listedOutputs", [])):
        continue
    out.append("%s %s %s: %s" % (obj.get("runner", "?").replace(" ", "-"),
                                 "hit" if obj.get("remoteCacheHit") else "miss",
                                 obj.get("mnemonic", "?"), obj.get("progressMessage", "")))
print("\n".join(sorted(out)))
PY
}
OUTPUTS=(kernels.bc kernels/sm_75.cubin kernels/sm_90.cubin kernels/compute_90.ptx kernels.o
  kernels.fatbin libkernels_device.a app)
hashes() { (cd "$WORK/$1/fatlink/bazel-bin/tests/bazel" && sha256sum "${OUTPUTS[@]}"); }

# 1. The remote cache.
build cold a --remote_cache="$REMOTE"
build warm b --remote_cache="$REMOTE"
spawns warm all > "$WORK/warm.all"
spawns warm > "$WORK/warm.graph"
echo "checkout B: $(grep -c ' hit ' "$WORK/warm.all") of $(wc -l < "$WORK/warm.all") spawns from the cache," \
  "$(grep -c ' hit ' "$WORK/warm.graph") of $(wc -l < "$WORK/warm.graph") in the device graph"
check "checkout B (another path, a fresh output base) runs no action: all come from the cache" \
  bash -c "! grep -v ' hit ' '$WORK/warm.all'"
check "... the device graph's actions among them (Rust, CUDA, device link per target, packaging)" bash -c \
  "for m in RustGpuCompile CudaGpuCompile GpuDeviceLink GpuCodegen GpuPackage; do grep -q \" hit \$m:\" '$WORK/warm.graph' || exit 1; done"
check "checkout B's outputs equal checkout A's, byte for byte" cmp <(hashes a) <(hashes b)

# 2. Remote execution: new targets, so the device link's actions are new.
ARCHS=--//rules:archs=sm_80,compute_80
build exec b --remote_executor="$REMOTE" --noremote_local_fallback "$ARCHS"
spawns exec > "$WORK/exec.graph"
ran=$(grep -c '^remote miss' "$WORK/exec.graph")
echo "remote execution: $ran actions ran on the worker:"; grep '^remote miss' "$WORK/exec.graph" | sed 's/^/    /'
check "the device link, each target's code generation and the packaging ran on the worker" bash -c \
  "for m in 'GpuDeviceLink: Device-linking //tests/bazel:kernels for sm_80,compute_80' \
            'GpuCodegen: Generating sm_80 code' 'GpuCodegen: Generating compute_80 code' \
            'GpuPackage: Packaging tests/bazel/kernels.o'; do grep -q \"^remote miss \$m\" '$WORK/exec.graph' || exit 1; done"
check "the worker ran as many actions as Bazel sent it, each exiting 0" bash -c \
  "[ \$(grep -c ' exit=0 ' '$WORK/worker.log') -ge $ran ] && ! grep -v ' exit=0 ' '$WORK/worker.log'"
# The fatlink the rules ran (built for the exec configuration).
FATLINK=$(find "$WORK/ob-b/execroot/fatlink/bazel-out" -path '*-exec-*/bin/tools/fatlink/fatlink' -type f | head -1)
check "the program built remotely carries exactly sm_80 and compute_80" bash -c \
  "'$FATLINK' inspect '$WORK/b/fatlink/bazel-bin/tests/bazel/app' |
   awk 'NR>1{print \$3,\$4}' | tr '\n' ' ' | grep -qx 'cubin sm_80 ptx compute_80 '"
build again a --remote_cache="$REMOTE" "$ARCHS"
spawns again > "$WORK/again.graph"
check "checkout A builds the same targets from the cache: the worker's results" \
  bash -c "grep -q ' hit GpuCodegen' '$WORK/again.graph' && ! grep -v ' hit ' '$WORK/again.graph'"
check "... and the same bytes" cmp <(cd "$WORK/a/fatlink/bazel-bin/tests/bazel" && sha256sum kernels.fatbin app) \
  <(cd "$WORK/b/fatlink/bazel-bin/tests/bazel" && sha256sum kernels.fatbin app)

echo "$PASSED passed, $FAILED failed ($SECONDS s)"
[ "$FAILED" -eq 0 ]
