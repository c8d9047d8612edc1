#!/usr/bin/env bash
# cdp_test.sh: CUDA dynamic parallelism. A kernel that launches a kernel
# calls CUDA's device runtime (__cudaCDP2*), which exists only as nvcc
# relocatable cubins in <cuda>/lib64/libcudadevrt.a: the device link must
# assemble the PTX relocatable and nvlink it with the runtime, per target.
source "$(dirname "$0")/testlib.sh"
need_tool "$CLANG"
need_tool readelf
D="$WORK/dev"
OUT="$WORK/out"
mkdir -p "$D"
ARCHES=sm_75,sm_80,sm_90,sm_100,sm_120
for O in 0 3; do
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
    --cuda-device-only --offload-arch=sm_75 -fgpu-rdc -O$O -emit-llvm -c \
    "$TESTDATA/cuda/dynamic_parallelism.cu" -o "$D/cdp$O.bc" ||
    { echo "FAIL: compiling dynamic_parallelism.cu at -O$O"; exit 1; }
done

# A linked cubin: an executable ELF defining both kernels, whose only
# undefined symbols are what the driver provides when it loads the cubin:
# syscalls and, from sm_90 on, .nv.reservedSmem.* (a plain ptxas cubin has
# that one too). Every __cudaCDP2* is resolved.
check_cubin() {
  local name="$1" cubin="$2" syms und
  if [ ! -s "$cubin" ]; then fail "$name: no cubin $cubin"; return; fi
  if ! readelf -h "$cubin" 2>/dev/null | grep -q 'Type: *EXEC'; then
    fail "$name: $cubin is not a linked (EXEC) cubin"; return; fi
  syms=$(readelf -s -W "$cubin" 2>/dev/null)
  for k in _Z10cdp_parentPfifPi _Z9cdp_childPfif __cudaCDP2LaunchDevice \
           __cudaCDP2GetParameterBuffer __cudaCDP2GetLastError; do
    # (the name is the last field: kernels' Ndx reads "[<other>: 10] 114")
    if ! awk -v k="$k" '$NF == k && $7 != "UND" && $5 == "GLOBAL" { f = 1 }
                        END { exit !f }' <<<"$syms"; then
      fail "$name: $k not defined in $cubin"; return; fi
  done
  und=$(awk '$7 == "UND" && NF == 8 && $8 !~ /^(__cuda_syscall|\.nv\.reservedSmem\.)/ { print $8 }' <<<"$syms")
  if [ -n "$und" ]; then fail "$name: unresolved in $cubin: $und"; return; fi
  pass "$name"
}

for O in 0 3; do
  # Found in the toolkit, with nothing on the command line.
  rm -rf "$OUT"
  if "$FATLINK" device-link -v -O$O --arch=$ARCHES "$D/cdp$O.bc" \
       -o "$WORK/cdp$O.fatbin" >"$WORK/cdp$O.log" 2>&1; then
    pass "-O$O: links for $ARCHES"
  else
    fail "-O$O: link failed: $(cat "$WORK/cdp$O.log")"; continue
  fi
  "$FATLINK" inspect "$WORK/cdp$O.fatbin" >"$WORK/cdp$O.txt"
  rm -rf "$WORK/x$O"
  "$FATLINK" inspect --extract="$WORK/x$O" "$WORK/cdp$O.fatbin" >/dev/null
  for a in ${ARCHES//,/ }; do
    check "-O$O $a: one cubin in the fatbin" \
      test "$(awk -v a=$a '$3 == "cubin" && $4 == a' "$WORK/cdp$O.txt" | wc -l)" -eq 1
    check "-O$O $a: PTX assembled relocatable" \
      grep -qE -- "ptxas -arch=$a -O$O -c " "$WORK/cdp$O.log"
    check "-O$O $a: nvlink links the device runtime" \
      grep -qE -- "nvlink -arch=$a .* $CUDA/lib64/libcudadevrt.a -o " "$WORK/cdp$O.log"
    check_cubin "-O$O $a: cubin has both kernels and the runtime" \
      "$(ls "$WORK/x$O"/*."$a".cubin 2>/dev/null | head -1)"
  done
done
check "-v names the runtime symbols the program uses" grep -qF \
  "linked by nvlink for __cudaCDP2GetLastError __cudaCDP2GetParameterBuffer __cudaCDP2LaunchDevice" \
  "$WORK/cdp3.log"
check "no temporary file left" test -z "$(ls -A "$TMPDIR")"
# Byte-identical for any -j (nvlink records its options, not its inputs'
# temporary paths).
"$FATLINK" device-link -j1 --arch=$ARCHES "$D/cdp3.bc" -o "$WORK/j1/" &&
  "$FATLINK" device-link -j2 --arch=$ARCHES "$D/cdp3.bc" -o "$WORK/j2/"
check "-j1 and -j2 give the same cubins" diff -r "$WORK/j1" "$WORK/j2"
check "-j1 wrote every cubin" test "$(ls "$WORK"/j1/*.cubin | wc -l)" -eq 5

# A host object for the runtime: the kernel table lists both kernels.
"$FATLINK" device-link --arch=sm_80 "$D/cdp3.bc" -o "$WORK/cdp.o" --json="$WORK/cdp.json"
check "host object: kernel table lists parent and child" \
  grep -q '"_Z10cdp_parentPfifPi"' "$WORK/cdp.json"
check "host object: kernel table lists the child" \
  grep -q '"_Z9cdp_childPfif"' "$WORK/cdp.json"

# clang's new offload driver: device bitcode in a host object
# (-foffload-lto), and relocatable cubins (without it) whose own calls into
# the runtime nvlink must resolve.
cuda_obj dynamic_parallelism.cu sm_75,sm_90 "$D/cdp_lto.o"
rm -rf "$WORK/lto_x"
if "$FATLINK" device-link --arch=sm_75,sm_90 "$D/cdp_lto.o" -o "$WORK/cdp_lto.fatbin" &&
   "$FATLINK" inspect --extract="$WORK/lto_x" "$WORK/cdp_lto.fatbin" >/dev/null; then
  check_cubin "clang -foffload-lto object: sm_75" "$(ls "$WORK"/lto_x/*.sm_75.cubin | head -1)"
  check_cubin "clang -foffload-lto object: sm_90" "$(ls "$WORK"/lto_x/*.sm_90.cubin | head -1)"
else
  fail "clang -foffload-lto object: link failed"
fi
cuda_obj_nolto dynamic_parallelism.cu sm_80 "$D/cdp_rdc.o"
check "clang relocatable cubins calling the runtime link" \
  "$FATLINK" device-link --arch=sm_80 "$D/cdp_rdc.o" -o "$WORK/cdp_rdc.cubin"
check_cubin "clang relocatable cubins: sm_80" "$WORK/cdp_rdc.cubin"

# A whole program through fatlink-cc (the host link): the device link of
# both objects' bitcode gets the runtime; the executable's cubin has it.
cuda_obj cdp_main.cu sm_75 "$D/cdp_main.o"
ln -sf "$FATLINK" "$WORK/fatlink-cc"
rm -rf "$WORK/app_x"
if "$WORK/fatlink-cc" "$D/cdp_main.o" "$D/cdp_lto.o" -o "$WORK/cdp_app" \
     -L"$CUDA/lib64" -lcudart -Wl,-rpath,"$CUDA/lib64" --fatlink-arch=sm_80 &&
   "$FATLINK" inspect --extract="$WORK/app_x" "$WORK/cdp_app" >/dev/null; then
  check_cubin "fatlink-cc executable: sm_80 cubin" "$(ls "$WORK"/app_x/*.sm_80.cubin | head -1)"
  # On a GPU the data must check out (exit 0); without one (this machine)
  # only the runtime's "no driver / no device" error is accepted.
  "$WORK/cdp_app" >"$WORK/app.out" 2>&1; rc=$?
  if [ "$rc" -eq 0 ] || { [ "$rc" -eq 2 ] &&
       grep -qE 'driver version is insufficient|no CUDA-capable device' "$WORK/app.out"; }; then
    pass "fatlink-cc executable runs (exit $rc: $(head -1 "$WORK/app.out"))"
  else
    fail "fatlink-cc executable: exit $rc: $(cat "$WORK/app.out")"
  fi
else
  fail "fatlink-cc link of a dynamic parallelism program"
fi

# nvcc users' -lcudadevrt: fatlink-cc finds the archive on -L like any -l
# archive and takes the runtime from it (the flags still reach cc).
if "$WORK/fatlink-cc" "$D/cdp_main.o" "$D/cdp_lto.o" -o "$WORK/cdp_app2" \
     -L"$CUDA/lib64" -lcudadevrt -lcudart --fatlink-arch=sm_80 --fatlink-verbose \
     >"$WORK/app2.log" 2>&1; then
  check "fatlink-cc -lcudadevrt: the archive is the named device runtime" \
    grep -qF "input $CUDA/lib64/libcudadevrt.a [device library: " "$WORK/app2.log"
else
  fail "fatlink-cc -lcudadevrt: $(cat "$WORK/app2.log")"
fi

# sm_90a takes the runtime's sm_90 cubin (nvlink does).
rm -rf "$OUT"
check "sm_90a links with the runtime's sm_90 cubin" \
  "$FATLINK" device-link --arch=sm_90a "$D/cdp3.bc" -o "$WORK/cdp90a.cubin"
check_cubin "sm_90a cubin" "$WORK/cdp90a.cubin"

# A toolkit without libcudadevrt.a (links to the real tools only).
FAKE="$WORK/fakecuda"
mkdir -p "$FAKE/bin" "$FAKE/nvvm"
ln -s "$CUDA/bin/ptxas" "$CUDA/bin/nvlink" "$FAKE/bin/"
ln -s "$CUDA/nvvm/libdevice" "$FAKE/nvvm/libdevice"
expect_error "toolkit without the device runtime: symbol named" \
  "undefined device symbol: __cudaCDP2LaunchDevice" \
  device-link --cuda-path="$FAKE" --arch=sm_80 "$D/cdp3.bc" -o "$OUT"
expect_error "toolkit without the device runtime: says what to do" \
  "$FAKE/lib64/libcudadevrt.a does not exist; pass --cuda-path=<a CUDA toolkit with lib64/libcudadevrt.a> or name libcudadevrt.a as an input" \
  device-link --cuda-path="$FAKE" --arch=sm_80 "$D/cdp3.bc" -o "$OUT"
expect_error "toolkit without the device runtime: relocatable cubins' user named" \
  ">>> referenced by $D/cdp_rdc.o(.llvm.offloading[0])" \
  device-link --cuda-path="$FAKE" --arch=sm_80 "$D/cdp_rdc.o" -o "$OUT"
expect_error "toolkit without the device runtime: relocatable cubins, what to do" \
  "$FAKE/lib64/libcudadevrt.a does not exist; pass --cuda-path=" \
  device-link --cuda-path="$FAKE" --arch=sm_80 "$D/cdp_rdc.o" -o "$OUT"

# Named on the command line instead (before the fix: "archive contains no
# device bitcode").
rm -rf "$OUT"
if "$FATLINK" device-link -v --cuda-path="$FAKE" --arch=sm_80,sm_120 "$D/cdp3.bc" \
     "$CUDA/lib64/libcudadevrt.a" -o "$WORK/named/" >"$WORK/named.log" 2>&1; then
  pass "libcudadevrt.a named as an input links"
else
  fail "libcudadevrt.a named as an input: $(cat "$WORK/named.log")"
fi
check_cubin "named runtime: sm_80 cubin" "$WORK/named/sm_80.cubin"
check_cubin "named runtime: sm_120 cubin" "$WORK/named/sm_120.cubin"

# A program that launches nothing never reads the runtime: it links with the
# toolkit that lacks it, and without nvlink.
"$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version \
  --cuda-device-only --offload-arch=sm_75 -fgpu-rdc -O3 -emit-llvm -c \
  "$TESTDATA/cuda/softplus.cu" -o "$D/softplus.bc"
if "$FATLINK" device-link -v --cuda-path="$FAKE" --arch=sm_80 "$D/softplus.bc" \
     -o "$WORK/plain.cubin" >"$WORK/plain.log" 2>&1 &&
   lacks nvlink "$WORK/plain.log" && grep -q 'ptxas -arch=sm_80 -O3 /' "$WORK/plain.log"; then
  pass "no dynamic parallelism: no device runtime, no nvlink"
else
  fail "no dynamic parallelism: $(cat "$WORK/plain.log")"
fi

# PTX cannot carry the runtime; an arch the runtime lacks is named.
expect_error "PTX target refused" \
  "compute_120: the program launches kernels from the device (it calls __cudaCDP2LaunchDevice and 2 more, from $CUDA/lib64/libcudadevrt.a), and the device runtime is relocatable machine code that cannot be linked into PTX: build a cubin target instead (sm_120)" \
  device-link --arch=sm_80,compute_120 "$D/cdp3.bc" -o "$OUT"
expect_error "arch missing from the runtime is named" \
  "sm_87: $CUDA/lib64/libcudadevrt.a has no cubin for sm_87 (it has sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_103, sm_110, sm_120, sm_121)" \
  device-link --arch=sm_87 "$D/cdp3.bc" -o "$OUT"

finish
