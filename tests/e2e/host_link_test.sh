#!/usr/bin/env bash
# host_link_test.sh: `fatlink-cc` as the linker of real link lines (rustc's
# and cc's): device code in objects and archives is linked and embedded,
# every other argument reaches the host linker byte for byte, settings come
# from arguments, environment and a config file, and errors name the crate
# or object. Also `fatlink-llbc` as rustc's nvptx64 linker.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
ln -s "$FATLINK" "$WORK/fatlink-cc"
ln -s "$FATLINK" "$WORK/fatlink-llbc"
CC_WRAP="$WORK/fatlink-cc"
unset FATLINK_ARCH FATLINK_CONFIG FATLINK_VERBOSE

# Device code travels in a host static library: Rust crates embedded with
# fatlink embed, CUDA C++ from clang's new offload driver.
"$FATLINK" embed $RLIBS -o "$D/rust_dev.o"
ar rcs "$D/libdev.a" "$D/rust_dev.o" "$D/softplus.o"
cc -I"$RUNFILES" -c "$RUNFILES/examples/mixed/main.c" -o main.o

# Recording linkers: each writes its argv (one per line) and runs cc.
recorder() {
  printf '#!/bin/sh\nprintf "%%s\\n" "$@" > %s\nexec %s "$@"\n' "$2" "${3:-cc}" > "$1"
  chmod +x "$1"
}
recorder "$WORK/rec-host" "$WORK/host-args.txt"

# 1. A C host: device link at host link time, all arguments forwarded.
"$CC_WRAP" main.o -L"$D" -Wl,-Bstatic -ldev -Wl,-Bdynamic -o app \
  --fatlink-arch=sm_80,sm_90,compute_90 --fatlink-linker="$WORK/rec-host"
check "cc: link succeeds" test -x app
./app > app.out
check "cc: program lists its three images" \
  bash -c "grep -c 'cubin for sm_80\|cubin for sm_90\|PTX   for sm_90' app.out | grep -qx 3"
for k in cuda_scale rust_softplus saxpy vec_add vec_sqrt_sin; do
  check "cc: kernel $k from the static library is embedded" grep -q "kernel $k(" app.out
done
printf '%s\n' main.o -L"$D" -Wl,-Bstatic -ldev -Wl,-Bdynamic -o app > expected.txt
check "cc: arguments forwarded byte for byte, in order, device object last" \
  bash -c "head -n -1 host-args.txt | cmp - expected.txt && tail -1 host-args.txt | grep -q 'fatlink-device-.*\.o$'"
check "cc: the device object is removed after the link" test -z "$(ls -A "$TMPDIR")"
"$FATLINK" inspect app > inspect.txt
check "cc: inspect sees sm_80, sm_90 and compute_90 in the executable" \
  bash -c "grep -q sm_80 inspect.txt && grep -q sm_90 inspect.txt && grep -qi ptx inspect.txt"

# 1b. clang objects without -foffload-lto (relocatable cubins) link too.
cuda_obj_nolto softplus.cu sm_80 "$D/softplus_nolto.o"
"$CC_WRAP" main.o "$D/rust_dev.o" "$D/softplus_nolto.o" -o app_nolto --fatlink-arch=sm_80 \
  -L"$CUDA/lib64" -lcudart -Wl,-rpath,"$CUDA/lib64"
check "cc + relocatable cubins: kernels from Rust embedded" bash -c "./app_nolto | grep -q 'kernel saxpy'"
"$FATLINK" inspect --extract=nolto_x app_nolto >/dev/null
check "cc + relocatable cubins: the cubin has the CUDA kernel too" \
  bash -c "readelf -s nolto_x/*.cubin | grep -q ' cuda_scale\$'"

# 1c. A shared library carries its own device code.
cc -fPIC -c -x c - -o shlib.o <<<'int shlib_function(void) { return 1; }'
"$CC_WRAP" -shared shlib.o "$D/libdev.a" -o libkernels.so --fatlink-arch=sm_80
"$FATLINK" inspect libkernels.so > shlib.txt
check "cc -shared: the shared library carries the sm_80 cubin" grep -q 'libkernels.so .*cubin *sm_80' shlib.txt

# 2. A real rustc link line: rustc -> recorder -> fatlink-cc -> recorder -> cc.
recorder "$WORK/rec-rustc" "$WORK/rustc-args.txt" "$CC_WRAP"
"$RUSTC" --edition 2021 -O "$TESTDATA/host/list_modules.rs" -L "$D" -o list_modules \
  -C linker="$WORK/rec-rustc" -C link-arg=--fatlink-arch=sm_80 \
  -C link-arg=--fatlink-linker="$WORK/rec-host"
check "rustc: host program links" test -x list_modules
./list_modules > rust.out
check "rustc: one device module embedded" grep -qx 'modules: 1' rust.out
check "rustc: Rust and CUDA kernels in it" bash -c "grep -qx 'kernel rust_softplus' rust.out && grep -qx 'kernel cuda_scale' rust.out"
grep -v -- '^--fatlink-' rustc-args.txt > rustc-expected.txt
check "rustc: its link line reaches cc byte for byte, in order" \
  bash -c "head -n -1 host-args.txt | cmp - rustc-expected.txt"
check "rustc: fatlink's own arguments are stripped" lacks --fatlink host-args.txt

# 3. Response files: one without fatlink arguments is forwarded as is; one
# with them is rewritten without them.
printf '%s\n' main.o -L"$D" -ldev > plain.rsp
"$CC_WRAP" @plain.rsp -o app_rsp --fatlink-arch=sm_80 --fatlink-linker="$WORK/rec-host"
check "rsp: forwarded as @file" grep -qx '@plain.rsp' host-args.txt
check "rsp: its device code was found" bash -c "./app_rsp | grep -q 'kernel saxpy'"
printf '%s\n' main.o -L"$D" -ldev --fatlink-arch=sm_90 > mixed.rsp
"$CC_WRAP" @mixed.rsp -o app_rsp2 --fatlink-linker="$WORK/rec-host" --fatlink-save-temps="$WORK/keep"
check "rsp with fatlink arguments: forwarded rewritten" grep -q "^@$WORK/keep/app_rsp2.link-0.rsp" host-args.txt
check "rsp with fatlink arguments: rewritten without them" lacks fatlink-arch "$WORK/keep/app_rsp2.link-0.rsp"
check "rsp with fatlink arguments: its setting applied" bash -c "./app_rsp2 | grep -q 'cubin for sm_90'"

# 4. No device code: only forwards, and the result equals a plain cc link.
cc -c -x c - -o plain.o <<<'int main(void) { return 0; }'
"$CC_WRAP" plain.o -o plain_fatlink
cc plain.o -o plain_cc
check "no device code: same executable as plain cc" cmp plain_fatlink plain_cc

# 5. Settings: argument > environment > config file.
printf '# fatlink settings\narch = sm_75\n' > fatlink.conf
FATLINK_CONFIG=$PWD/fatlink.conf "$CC_WRAP" main.o -L"$D" -ldev -o app_conf
check "config file: arch = sm_75" bash -c "./app_conf | grep -q 'cubin for sm_75' && ! ./app_conf | grep -q sm_80"
FATLINK_CONFIG=$PWD/fatlink.conf FATLINK_ARCH=sm_86 "$CC_WRAP" main.o -L"$D" -ldev -o app_env
check "environment beats the config file" bash -c "./app_env | grep -q 'cubin for sm_86' && ! ./app_env | grep -q sm_75"
FATLINK_ARCH=sm_86 "$CC_WRAP" main.o -L"$D" -ldev -o app_arg --fatlink-arch=sm_120
check "argument beats the environment" bash -c "./app_arg | grep -q 'cubin for sm_120' && ! ./app_arg | grep -q sm_86"

# 5b. The device-link cache: a host-only change reuses the device link.
CACHE="$WORK/cache-test"
"$CC_WRAP" main.o -L"$D" -ldev -o app_c1 --fatlink-arch=sm_80 --fatlink-cache-dir="$CACHE" --fatlink-verbose 2>c1.log
check "cache: first link misses and stores" bash -c "grep -q '^cache: miss ' c1.log && grep -q '^cache: stored ' c1.log"
cc -I"$RUNFILES" -DUNUSED_CHANGE=1 -c "$RUNFILES/examples/mixed/main.c" -o main2.o
"$CC_WRAP" main2.o -L"$D" -ldev -o app_c2 --fatlink-arch=sm_80 --fatlink-cache-dir="$CACHE" --fatlink-verbose 2>c2.log
check "cache: a host-only change hits" grep -q '^cache: hit ' c2.log
check "cache: a hit runs no ptxas" lacks ptxas c2.log
check "cache: same executable from the cache" cmp app_c1 app_c2
"$CC_WRAP" main.o -L"$D" -ldev -o app_c3 --fatlink-arch=sm_80,sm_90 --fatlink-cache-dir="$CACHE" --fatlink-verbose 2>c3.log
check "cache: another target list misses" grep -q '^cache: miss ' c3.log
entry=$(ls "$CACHE" | head -1)
printf 'garbage' | dd of="$CACHE/$entry" bs=1 seek=200 conv=notrunc 2>/dev/null
"$CC_WRAP" main.o -L"$D" -ldev -o app_c4 --fatlink-arch=sm_80 --fatlink-cache-dir="$CACHE" --fatlink-verbose 2>c4.log
"$CC_WRAP" main.o -L"$D" -ldev -o app_c5 --fatlink-arch=sm_80,sm_90 --fatlink-cache-dir="$CACHE" --fatlink-verbose 2>c5.log
check "cache: a corrupted entry is detected and rebuilt" \
  bash -c "cat c4.log c5.log | grep -q '^cache: corrupt entry $CACHE/$entry (hash mismatch): ignored, rebuilding'"
check "cache: rebuilt output is correct" cmp app_c1 app_c4
check "cache: no temporary file left in the cache" bash -c "! ls '$CACHE' | grep -q tmp"
"$CC_WRAP" main.o -L"$D" -ldev -o app_c6 --fatlink-arch=sm_80 --fatlink-cache-dir=off --fatlink-verbose 2>c6.log
check "cache: off: the same program" cmp app_c1 app_c6
check "cache: off: no cache line" lacks '^cache:' c6.log

# 5c. The partition and shared-PTX settings reach the device link, by
# argument and by environment; the executable is the same either way.
"$CC_WRAP" main.o -L"$D" -ldev -o app_p1 --fatlink-arch=sm_75,sm_80,sm_90 \
  --fatlink-partitions=2 --fatlink-cache-dir=off --fatlink-verbose 2>p1.log
FATLINK_PTX_PER_ARCH=1 "$CC_WRAP" main.o -L"$D" -ldev -o app_p2 \
  --fatlink-arch=sm_75,sm_80,sm_90 --fatlink-partitions=2 --fatlink-cache-dir=off \
  --fatlink-verbose 2>p2.log
check "settings: partitions=2 splits the device link" grep -q '^partition 1: ' p1.log
check "settings: sm_80 reuses PTX by default" grep -q '^PTX: 4 generated, 2 reused' p1.log
check "settings: FATLINK_PTX_PER_ARCH=1 turns that off" grep -q '^PTX: 6 generated, 0 reused' p2.log
check "settings: the same executable either way" cmp app_p1 app_p2

# 6. --fatlink-dry-run prints the plan and runs nothing.
"$CC_WRAP" main.o -L"$D" -ldev -o app_dry --fatlink-arch=sm_80,compute_80 --fatlink-dry-run > plan.txt
check "dry run: no output written" test ! -e app_dry
check "dry run: lists device inputs" grep -q 'libdev.a(rust_dev.o)' plan.txt
check "dry run: lists targets" grep -q 'sm_80 (cubin, PTX ISA 7.0)' plan.txt
check "dry run: lists ptxas commands" grep -q 'ptxas -arch=sm_80 -O3' plan.txt
check "dry run: prints the host link line" grep -q "cc main.o -L$D -ldev -o app_dry <fatlink-device.o>" plan.txt

# 7. Errors name the crate or object; nothing is left behind.
OUT="$WORK/bad_app"
ar rcs "$D/libnosoftplus.a" "$D/rust_dev.o"
expect_error "undefined device symbol names the Rust crate" \
  "referenced by $D/libnosoftplus.a(rust_dev.o)(.llvm.offloading[" \
  cc main.o "$D/libnosoftplus.a" -o "$OUT" --fatlink-arch=sm_80
"$FATLINK" embed "$D/libvecmath.rlib" "$D/libminicore.rlib" -o "$D/vecmath_again.o"
expect_error "the same kernel in two crates names both" \
  "duplicate device symbol: vec_add" \
  cc main.o "$D/libdev.a" "$D/vecmath_again.o" -o "$OUT" --fatlink-arch=sm_80
cuda_obj sm90_only.cu sm_90 "$D/sm90_only.o"
expect_error "device image for the wrong target" \
  "$D/sm90_only.o: device code was compiled for sm_90 only, which cannot run on target sm_80" \
  cc main.o "$D/sm90_only.o" -o "$OUT" --fatlink-arch=sm_80
expect_error "missing CUDA toolkit" "ptxas not found at $D/no-cuda/bin/ptxas" \
  cc main.o "$D/libdev.a" -o "$OUT" --fatlink-cuda-path="$D/no-cuda"
head -c 300 "$D/libdev.a" > "$D/libtruncated.a"
expect_error "unreadable (truncated) archive" "$D/libtruncated.a: corrupt archive" \
  cc main.o "$D/libtruncated.a" -o "$OUT"
expect_error "misspelled setting" "unknown fatlink setting 'ach': did you mean 'arch'?" \
  cc main.o -o "$OUT" --fatlink-ach=sm_80
expect_error "host linker not found" "host linker 'no-such-cc' not found" \
  cc main.o -o "$OUT" --fatlink-linker=no-such-cc
# A failing host link: its exit code and its own message, unchanged.
cc -c -x c - -o needs.o <<<'int missing_function(void); int main(void) { return missing_function(); }'
"$CC_WRAP" needs.o -o "$OUT" 2>hostlink.err; rc=$?
cc needs.o -o "$OUT.cc" 2>/dev/null; cc_rc=$?
check "host link failure: same exit code as cc ($rc)" test "$rc" -eq "$cc_rc"
check "host link failure: the linker's message shown" grep -q "missing_function" hostlink.err
check "host link failure: no output" test ! -e "$OUT"

# 8. fatlink-llbc as rustc's nvptx64 linker.
LLBC=(-Z unstable-options -C linker-flavor=llbc -C linker="$WORK/fatlink-llbc")
RUST_CDYLIB=(--target nvptx64-nvidia-cuda --edition 2021 -O --crate-type cdylib --crate-name saxpy
  "$TESTDATA/rust/saxpy.rs" --extern minicore="$D/libminicore.rlib" --extern vecmath="$D/libvecmath.rlib" -L "$D")
RUSTC_BOOTSTRAP=1 "$RUSTC" "${RUST_CDYLIB[@]}" "${LLBC[@]}" -C target-cpu=sm_80 \
  -C link-arg="$D/softplus.bc" -o kernel.ptx
check "llbc: rustc writes PTX through fatlink-llbc" grep -q '^\.target sm_80$' kernel.ptx
check "llbc: the Rust kernel calls no CUDA C++ function" kernel_has_no_call kernel.ptx rust_softplus
RUSTC_BOOTSTRAP=1 "$RUSTC" "${RUST_CDYLIB[@]}" "${LLBC[@]}" \
  -C link-arg="$D/softplus.bc" -C link-arg=--fatlink-arch=sm_80,sm_90,compute_90 -o kernels.fatbin
"$FATLINK" inspect kernels.fatbin > fatbin.txt
check "llbc + --fatlink-arch: a multi-target fatbin" \
  bash -c "grep -q sm_80 fatbin.txt && grep -q sm_90 fatbin.txt"
err=$(RUSTC_BOOTSTRAP=1 "$RUSTC" "${RUST_CDYLIB[@]}" "${LLBC[@]}" -o nope.ptx 2>&1)
check "llbc: an undefined symbol fails the rustc build with fatlink's message" \
  grep -q 'undefined device symbol: cuda_softplus' <<<"$err"

finish
