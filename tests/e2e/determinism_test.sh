#!/usr/bin/env bash
# determinism_test.sh: a partitioned link gives the same bytes for any -j,
# run after run, and with a cache filled by concurrent links (some of whose
# partitions come from the cache and some fresh, in whatever order the
# threads finish). docs/lto.md promises byte-identical output for any -j.
#
# The program has many partitions whose pieces meet again when the PTX
# target's partitions are joined into one module: 64 kernels in 32
# components, local helpers of the same name in two translation units
# (renamed when linked), device functions shared by every kernel (copied
# into each partition), printf (a `vprintf` declaration in every
# partition), a device global, libdevice calls.
#
# Then the shape of the report that found LLVM's printer ordering global
# variables by heap address (issue #14, item 5): 60 units, each with
# host-visible device globals (clang lists them all in
# `@llvm.compiler.used`) and a global referring to two strings, linked for
# compute_90 at -j2 ten times without a cache, for sm_80,compute_90 at
# -j1/-j2/-j8, and by 8 links at once sharing one cache. Before the fix,
# each process could order those globals differently in the PTX (even at
# -j1): 2 distinct outputs in 10 runs of the corpus, 7 in 8 concurrent links.
source "$(dirname "$0")/testlib.sh"
need_tool "$CLANG"
export FATLINK_CACHE_DIR=off
unset FATLINK_ARCH FATLINK_CONFIG FATLINK_VERBOSE
D="$WORK/dev"
mkdir -p "$D"

# gen_unit FILE FIRST LAST: kernels FIRST..LAST, each pair sharing a helper.
gen_unit() {
  local file="$1" i
  {
    echo '#include <cstdio>'
    echo 'extern __device__ float shared_scale(float x, int k);'
    echo 'extern __device__ int hits;'
    echo 'static __device__ __noinline__ float helper(float x) { return sqrtf(x) + 1.0f; }'
    for i in $(seq "$2" "$3"); do
      cat <<EOC
__device__ __noinline__ float local_$i(float x) { return shared_scale(x, $i) + powf(helper(x), 1.5f); }
__global__ void k${i}_a(float *p, int n) {
  int t = threadIdx.x;
  if (t < n) p[t] = local_$i(p[t]) + expf(p[t] * $i.0f);
  if (t == 0 && p[0] > 1e30f) printf("k${i}_a %f\n", p[0]);
}
__global__ void k${i}_b(float *p, const float *q) {
  int t = threadIdx.x;
  p[t] = local_$i(q[t]) * tanhf(q[t] + $i);
  atomicAdd(&hits, 1);
}
EOC
    done
  } > "$file"
}
gen_unit "$D/units1.cu" 1 16
gen_unit "$D/units2.cu" 17 32
cat > "$D/shared.cu" <<'EOF2'
__device__ int hits;
__device__ __noinline__ float shared_scale(float x, int k) {
  return x * (float)k + sinf(x) - logf(1.0f + x * x);
}
EOF2
for f in units1 units2 shared; do
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --cuda-device-only --offload-arch=sm_80 -fgpu-rdc -O3 -emit-llvm -c \
    "$D/$f.cu" -o "$D/$f.bc" || { echo "FAIL: compiling $f.cu failed"; exit 1; }
done
INPUTS=("$D/units1.bc" "$D/units2.bc" "$D/shared.bc")
ARCHS=compute_90,sm_80
LINK=(device-link --partitions=16 --arch=$ARCHS "${INPUTS[@]}")

"$FATLINK" "${LINK[@]}" -j1 -v -o "$WORK/ref.fatbin" 2>"$WORK/ref.log" ||
  { cat "$WORK/ref.log"; echo "FAIL: the reference link failed"; exit 1; }
parts=$(sed -n 's/^optimized module for .*: \([0-9]*\) partitions$/\1/p' "$WORK/ref.log")
check "the program is optimized in many partitions (${parts:-none})" \
  test "${parts:-0}" -ge 8

# Repeated runs at each -j.
for run in 2.1 2.2 2.3 8.1 8.2 1.2; do
  "$FATLINK" "${LINK[@]}" -j"${run%%.*}" -o "$WORK/$run.fatbin" &&
    check "-j${run%%.*} (run ${run#*.}): same fatbin as -j1" \
      cmp "$WORK/ref.fatbin" "$WORK/$run.fatbin" ||
    fail "-j${run%%.*} (run ${run#*.}): link failed"
done

# Links at once sharing one cache, cold (each finds some partitions stored
# by another, some not) and then warm.
N=4
C="$WORK/cache"
for phase in cold warm; do
  pids=()
  for i in $(seq $N); do
    "$FATLINK" "${LINK[@]}" -j2 --cache-dir="$C" -o "$WORK/$phase$i.fatbin" &
    pids+=($!)
  done
  rcs=0; for p in "${pids[@]}"; do wait "$p" || rcs=1; done
  check "$N links at once with one cache, $phase: all succeed" test $rcs -eq 0
  for i in $(seq $N); do
    check "shared cache, $phase, link $i: same fatbin as uncached -j1" \
      cmp "$WORK/ref.fatbin" "$WORK/$phase$i.fatbin"
  done
done
# A link whose partitions' O3 results all come from the memo, and the
# whole-link entry removed: the join sees only cached partitions.
rm -rf "$C"/[0-9a-f]*
"$FATLINK" "${LINK[@]}" -j2 --cache-dir="$C" -o "$WORK/memo.fatbin" &&
  check "partitions from the memo only: same fatbin" \
    cmp "$WORK/ref.fatbin" "$WORK/memo.fatbin" ||
  fail "memo-only link failed"

# Diagnostics too: a ptxas that fails every partition (the real one answers
# the probes). The partitions fail in whatever order the threads finish
# them; the error reported must not depend on it: the first partition's.
# (Before: -j8 named partition 1, 3, 6 ... as it happened.)
printf '#!/bin/sh\ncase "$1" in --version|--help) exec %s "$@";; esac\nsleep 0.$(($$ %% 5))\necho "ptxas fatal   : cannot assemble" >&2\nexit 255\n' \
  "$CUDA/bin/ptxas" > "$D/failing-ptxas"
chmod +x "$D/failing-ptxas"
msgs=()
for run in 1 2 3 4; do
  err=$("$FATLINK" device-link --partitions=16 --arch=sm_80 "${INPUTS[@]}" -j8 \
    --ptxas="$D/failing-ptxas" -o "$WORK/fail.fatbin" 2>&1)
  msgs+=("$(grep -o 'ptxas for sm_80 (partition [0-9]*)' <<<"$err" | head -1)")
done
check "failing partitions, -j8, 4 runs: the first partition's error each time (${msgs[*]})" \
  bash -c 'for m in "$@"; do [ "$m" = "ptxas for sm_80 (partition 0)" ] || exit 1; done' _ "${msgs[@]}"

# The printer's order, where one global's initializer refers to several
# that the linked module defines after it (here: another unit's, linked
# later): the module's order, which the inputs define. Before the fix it
# was the order of a DenseSet of their addresses (g11 g14 g10 g7 ... here,
# another in another process).
T="$WORK/table"
mkdir -p "$T"
G=$(seq -s ' ' -f 'g%g' 0 15)
decls=$(printf '%s, ' $G) refs=$(printf '&%s, ' $G)
{
  echo "extern __device__ int ${decls%, };"
  echo "__device__ int *table[16] = {${refs%, }};"
  echo '__global__ void bump(int i) { atomicAdd(table[i & 15], 1); }'
} > "$T/table.cu"
for g in $G; do echo "__device__ int $g = ${g#g};"; done > "$T/vars.cu"
for f in table vars; do
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --cuda-device-only --offload-arch=sm_80 -fgpu-rdc -O3 -emit-llvm -c \
    "$T/$f.cu" -o "$T/$f.bc" || { echo "FAIL: compiling $f.cu failed"; exit 1; }
done
for j in 1 2; do
  "$FATLINK" device-link --arch=compute_90 -j$j "$T/table.bc" "$T/vars.bc" \
    -o "$T/table.$j.ptx" || fail "table: link -j$j failed"
  order=$(grep -o '^\.visible \.global \.align 4 \.u32 g[0-9]*' "$T/table.$j.ptx" |
    awk '{print $NF}' | paste -sd' ')
  check "table, -j$j: the globals it refers to in their modules' order ($order)" \
    test "$order" = "$G"
done

# The reporter's shape: 60 units in a ring, each calling the next one's
# function and counting in the next one's globals through a table of their
# addresses (which the linked module defines after the table: the case
# where the printer chose the order); each unit defines a static helper of
# the same name (renamed when linked) and a __constant__ array.
U="$WORK/units60"
mkdir -p "$U"
for u in $(seq 0 59); do
  n=$(((u + 1) % 60))
  cat > "$U/u$u.cu" <<EOC
#include <cstdio>
extern __device__ float unit_fn_$n(float);
extern __device__ int counter_$n, flag_$n;
__device__ int counter_$u, flag_$u;
__constant__ float coef_$u[4];
__device__ int *next_$u[2] = {&counter_$n, &flag_$n};
static __device__ __noinline__ float helper(float x) { return x * coef_$u[1] + $u; }
__device__ __noinline__ float unit_fn_$u(float x) { return helper(x) * x; }
__global__ void kernel_$u(float *p, int n) {
  int t = threadIdx.x;
  if (t < n) p[t] = unit_fn_$n(p[t]);
  if (t == 0 && p[0] > 1e30f) printf("unit $u %f\\n", p[0]);
  atomicAdd(next_$u[t & 1], 1);
}
EOC
done
# Two compilers at a time.
seq 0 59 | xargs -P2 -I{} "$CLANG" -x cuda --cuda-path="$CUDA" \
  -Wno-unknown-cuda-version --cuda-device-only --offload-arch=sm_80 \
  -fgpu-rdc -O3 -emit-llvm -c "$U/u{}.cu" -o "$U/u{}.bc" ||
  { echo "FAIL: compiling the 60 units failed"; exit 1; }
UNITS=()
for u in $(seq 0 59); do
  [ -s "$U/u$u.bc" ] || { echo "FAIL: $U/u$u.bc was not written"; exit 1; }
  UNITS+=("$U/u$u.bc")
done

# same REF OUT WHAT: OUT has REF's bytes; if not, the log shows where their
# PTX differs.
same() {
  if cmp -s "$1" "$2"; then pass "$3"; return; fi
  fail "$3"
  rm -rf "$WORK/xa" "$WORK/xb"
  "$FATLINK" inspect --extract="$WORK/xa" "$1" >/dev/null
  "$FATLINK" inspect --extract="$WORK/xb" "$2" >/dev/null
  diff <(cat "$WORK"/xa/*.ptx) <(cat "$WORK"/xb/*.ptx) | head -8
  return 0
}

PTX=(device-link --arch=compute_90 "${UNITS[@]}")
"$FATLINK" "${PTX[@]}" -j1 -o "$WORK/u.ref.fatbin" ||
  { echo "FAIL: the 60-unit reference link failed"; exit 1; }
for run in $(seq 4); do
  if "$FATLINK" "${PTX[@]}" -j2 -o "$WORK/u.$run.fatbin"; then
    same "$WORK/u.ref.fatbin" "$WORK/u.$run.fatbin" \
      "60 units, compute_90, -j2 run $run: same fatbin as -j1"
  else
    fail "60 units, compute_90, -j2 run $run: link failed"
  fi
done

MIX=(device-link --arch=sm_80,compute_90 "${UNITS[@]}")
"$FATLINK" "${MIX[@]}" -j1 -o "$WORK/m.ref.fatbin" ||
  fail "60 units, sm_80,compute_90, -j1: link failed"
for j in 8; do
  if "$FATLINK" "${MIX[@]}" -j$j -o "$WORK/m.$j.fatbin"; then
    same "$WORK/m.ref.fatbin" "$WORK/m.$j.fatbin" \
      "60 units, sm_80,compute_90, -j$j: same fatbin as -j1"
  else
    fail "60 units, sm_80,compute_90, -j$j: link failed"
  fi
done

# 8 links at once sharing one cold cache: each takes some partitions' O3
# results and cubins from the others, in whatever order they finish.
C60="$WORK/cache60"
pids=()
for i in $(seq 8); do
  "$FATLINK" "${MIX[@]}" -j2 --cache-dir="$C60" -o "$WORK/m.c$i.fatbin" &
  pids+=($!)
done
rcs=0; for p in "${pids[@]}"; do wait "$p" || rcs=1; done
check "60 units: 8 links at once with one cache all succeed" test $rcs -eq 0
for i in $(seq 8); do
  same "$WORK/m.ref.fatbin" "$WORK/m.c$i.fatbin" \
    "60 units, shared cache, link $i: same fatbin as uncached -j1"
done

finish
