#!/usr/bin/env bash
# device_link_errors_test.sh: one case per diagnostic of `fatlink
# device-link`. Each expects a non-zero exit, its message on stderr, no
# output left behind and no temporary file left in $TMPDIR.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
OUT="$WORK/out"
L=(device-link -o "$OUT")

# Symbols.
cuda_bc duplicate.cu sm_75 "$D/duplicate.bc"
expect_error "duplicate definition names both inputs" \
  "duplicate device symbol: cuda_softplus" "${L[@]}" --arch=sm_80 $RLIBS "$D/softplus.bc" "$D/duplicate.bc"
err=$("$FATLINK" "${L[@]}" --arch=sm_80 $RLIBS "$D/softplus.bc" "$D/duplicate.bc" 2>&1)
check "duplicate: first definition named" grep -qF ">>> defined in $D/softplus.bc" <<<"$err"
check "duplicate: second definition named" grep -qF ">>> defined in $D/duplicate.bc" <<<"$err"
expect_error "undefined symbol names its user" \
  ">>> referenced by $D/libsaxpy.rlib(libsaxpy.saxpy." "${L[@]}" --arch=sm_80 $RLIBS
expect_error "undefined symbol is named" \
  "undefined device symbol: cuda_softplus" "${L[@]}" --arch=sm_80 $RLIBS
# A symbol defined only in nvcc device code, which fatlink skips (here an
# nvcc -dc object in an archive beside the bitcode that calls it): the
# message names the object.
"$CUDA/bin/nvcc" -dc -arch=sm_80 "$TESTDATA/cuda/nvcc_helper.cu" -o "$D/nvcc_helper.o" ||
  fail "nvcc -dc nvcc_helper.cu"
cuda_bc calls_nvcc.cu sm_75 "$D/calls_nvcc.bc"
rm -f "$D/mixed.a" && ar rc "$D/mixed.a" "$D/calls_nvcc.bc" "$D/nvcc_helper.o"
expect_error "undefined symbol defined in skipped nvcc code names it" \
  ">>> defined in $D/mixed.a(nvcc_helper.o), which carries nvcc device code that fatlink did not read" \
  "${L[@]}" --arch=sm_80 "$D/mixed.a"

# Symbols used as what they are not, and names PTX cannot hold.
cuda_bc kernel_as_function.cu sm_75 "$D/kernel_as_function.bc"
expect_error "a kernel called as a device function" \
  "device symbol cuda_scale is a kernel, used as a device function" \
  "${L[@]}" --arch=sm_80 $RLIBS "$D/softplus.bc" "$D/kernel_as_function.bc"
err=$("$FATLINK" "${L[@]}" --arch=sm_80 $RLIBS "$D/softplus.bc" "$D/kernel_as_function.bc" 2>&1)
check "kernel called as a function: the kernel's input named" \
  grep -qxF ">>> defined as a kernel in $D/softplus.bc" <<<"$err"
check "kernel called as a function: the caller's input named" \
  grep -qxF ">>> used as a device function by $D/kernel_as_function.bc" <<<"$err"
rust_crate bad_name --extern minicore="$D/libminicore.rlib"
expect_error "a kernel name that is not a PTX identifier (Rust #[export_name])" \
  "kernel 'scale-by-two' is not a valid PTX name" \
  "${L[@]}" --arch=sm_80 "$D/libbad_name.rlib" "$D/libminicore.rlib"
err=$("$FATLINK" "${L[@]}" --arch=sm_80 "$D/libbad_name.rlib" "$D/libminicore.rlib" 2>&1)
check "the bad name's crate is named" grep -qF ">>> defined in $D/libbad_name.rlib(" <<<"$err"

# Inputs.
expect_error "no inputs" "no input files" "${L[@]}" --arch=sm_80
expect_error "missing input" "cannot open $D/nope.bc" "${L[@]}" --arch=sm_80 "$D/nope.bc"
printf 'BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00\x00\x62\x0c\x30\x24' > "$D/corrupt.bc"  # bitcode magic, then a truncated block
expect_error "corrupt bitcode" "$D/corrupt.bc: corrupt bitcode" "${L[@]}" --arch=sm_80 "$D/corrupt.bc"
"$CLANG_C" -c -emit-llvm -O2 "$TESTDATA/cuda/x86.c" -o "$D/x86.bc"
expect_error "host bitcode among device inputs" \
  "$D/x86.bc: bitcode is for target 'x86_64" "${L[@]}" --arch=sm_80 $RLIBS "$D/softplus.bc" "$D/x86.bc"
echo "not an object" > "$D/notes.txt"
expect_error "unknown file type" "$D/notes.txt: unknown file type" "${L[@]}" --arch=sm_80 "$D/notes.txt"
"$RUSTC" --crate-type rlib --crate-name host_only "$TESTDATA/host/host_only.rs" -o "$D/libhost_only.rlib"
expect_error "host rlib without bitcode" \
  "$D/libhost_only.rlib: archive contains no device bitcode" "${L[@]}" --arch=sm_80 "$D/libhost_only.rlib"
ar rc "$D/empty.a"
expect_error "empty archive" "$D/empty.a: archive contains no device bitcode" "${L[@]}" --arch=sm_80 "$D/empty.a"
cc -c -x c /dev/null -o "$D/plain.o"
expect_error "object without device code" "$D/plain.o: object carries no device bitcode" \
  "${L[@]}" --arch=sm_80 "$D/plain.o"
cuda_obj sm90_only.cu sm_90 "$D/sm90_only.o"
expect_error "device image for a newer target" \
  "$D/sm90_only.o: device code was compiled for sm_90 only, which cannot run on target sm_80" \
  "${L[@]}" --arch=sm_80 "$D/sm90_only.o"
RUSTC_BOOTSTRAP=1 "$RUSTC" --target nvptx64-nvidia-cuda --edition 2021 -O --crate-type rlib \
  --crate-name vecmath -C target-cpu=sm_90 "$TESTDATA/rust/vecmath.rs" \
  --extern minicore="$D/libminicore.rlib" -o "$D/libvecmath90.rlib"
expect_error "bitcode compiled for a newer GPU" "compiled for sm_90, which is newer than target sm_80" \
  "${L[@]}" --arch=sm_80 "$D/libvecmath90.rlib" "$D/libminicore.rlib"

cuda_obj_nolto softplus.cu sm_80 "$D/nolto80.o"
expect_error "relocatable cubins for another arch" \
  "$D/nolto80.o: holds relocatable device code (cubins) for sm_80 only, which cannot serve target sm_90" \
  "${L[@]}" --arch=sm_80,sm_90 $RLIBS "$D/nolto80.o"
expect_error "relocatable cubins cannot give PTX" \
  "cannot serve target compute_80: compile it with -foffload-lto" \
  "${L[@]}" --arch=compute_80 $RLIBS "$D/nolto80.o"

# Targets.
expect_error "misspelled arch" "unknown GPU target 'sm_8O': did you mean 'sm_80'?" \
  "${L[@]}" --arch=sm_8O $RLIBS
expect_error "arch ptxas cannot serve" "target sm_70 is not supported by ptxas from CUDA" \
  "${L[@]}" --arch=sm_70 $RLIBS
expect_error "no targets" "no targets: pass --arch" "${L[@]}" $RLIBS
expect_error "PTX version too old" "--ptx-version=6.0 is too old for sm_80, which needs PTX ISA 7.0" \
  "${L[@]}" --arch=sm_80 --ptx-version=6.0 $RLIBS
expect_error "PTX version newer than ptxas" "--ptx-version=9.9 is newer than ptxas" \
  "${L[@]}" --arch=sm_80 --ptx-version=9.9 $RLIBS
expect_error "one file for several targets" "names one file, but there are 2 targets" \
  device-link -o "$OUT/k.cubin" --arch=sm_80,sm_90 $RLIBS "$D/softplus.bc"
expect_error "cubin asked for a PTX-only target" "is a PTX-only target" \
  device-link -o "$OUT.cubin" --arch=compute_90 $RLIBS "$D/softplus.bc"

# Tools.
expect_error "missing ptxas" "ptxas not found at $D/no-such-ptxas" \
  "${L[@]}" --arch=sm_80 --ptxas="$D/no-such-ptxas" $RLIBS "$D/softplus.bc"
printf '#!/bin/sh\nexit 0\n' > "$D/noexec-ptxas"
expect_error "ptxas not executable" "is not executable" \
  "${L[@]}" --arch=sm_80 --ptxas="$D/noexec-ptxas" $RLIBS "$D/softplus.bc"
expect_error "missing CUDA toolkit" "ptxas not found at $D/no-cuda/bin/ptxas" \
  "${L[@]}" --arch=sm_80 --cuda-path="$D/no-cuda" $RLIBS "$D/softplus.bc"
# Fake ptxases: the real one answers the probes, then each misbehaves.
fake_ptxas() {
  printf '#!/bin/sh\ncase "$1" in --version|--help) exec %s "$@";; esac\n%s\n' \
    "$CUDA/bin/ptxas" "$2" > "$D/$1"
  chmod +x "$D/$1"
}
fake_ptxas failing-ptxas "echo \"ptxas fatal   : Unresolved extern function 'oops'\" >&2; exit 255"
expect_error "ptxas failure shows its message and target" \
  "ptxas for sm_80 failed with exit code 255:" \
  "${L[@]}" --arch=sm_80 --ptxas="$D/failing-ptxas" $RLIBS "$D/softplus.bc"
err=$("$FATLINK" "${L[@]}" --arch=sm_80 --ptxas="$D/failing-ptxas" $RLIBS "$D/softplus.bc" 2>&1)
check "ptxas failure: ptxas's own message shown" grep -qF "Unresolved extern function 'oops'" <<<"$err"
# The same in partitions, with shared PTX: a failing partition names its
# target and partition, and a ptxas that fails for one arch only fails the
# link (no output, no hang) with that arch's message alone.
expect_error "partitioned ptxas failure names target and partition" \
  "ptxas for sm_75 (partition " \
  device-link -o "$OUT.fatbin" --arch=sm_75,sm_80,sm_90 --partitions=4 \
  --ptxas="$D/failing-ptxas" $RLIBS "$D/softplus.bc"
check "partitioned ptxas failure: no fatbin left" test ! -e "$OUT.fatbin"
printf '#!/bin/sh\ncase "$*" in *-c*-arch=sm_80*|*-arch=sm_80*-c*) echo "ptxas fatal   : sm_80 only" >&2; exit 255;; esac\nexec %s "$@"\n' \
  "$CUDA/bin/ptxas" > "$D/sm80-failing-ptxas"
chmod +x "$D/sm80-failing-ptxas"
err=$(timeout 120 "$FATLINK" device-link -o "$OUT.fatbin" --arch=sm_75,sm_80,sm_90 --partitions=4 \
  --ptxas="$D/sm80-failing-ptxas" $RLIBS "$D/softplus.bc" 2>&1); rc=$?
check "one arch's ptxas fails: the link fails, without hanging" test $rc -ne 0 -a $rc -ne 124
check "one arch's ptxas fails: its message, for sm_80" grep -qF "ptxas for sm_80 (partition" <<<"$err"
check "one arch's ptxas fails: no other target blamed" bash -c "! grep -qE 'ptxas for sm_(75|90)' <<<\"\$1\"" _ "$err"
check "one arch's ptxas fails: no fatbin left" test ! -e "$OUT.fatbin"
fake_ptxas crashing-ptxas 'kill -SEGV $$'
expect_error "ptxas crash" "ptxas for sm_80 crashed" \
  "${L[@]}" --arch=sm_80 --ptxas="$D/crashing-ptxas" $RLIBS "$D/softplus.bc"
fake_ptxas hanging-ptxas 'exec sleep 60'
expect_error "ptxas time limit" "ptxas for sm_80 timed out after 1 s" \
  "${L[@]}" --arch=sm_80 --ptxas="$D/hanging-ptxas" --ptxas-timeout=1 $RLIBS "$D/softplus.bc"
expect_error "missing libdevice" "cannot open libdevice $D/nope.bc" \
  "${L[@]}" --arch=sm_80 --libdevice="$D/nope.bc" $RLIBS "$D/softplus.bc"

# Interrupted mid-link (SIGTERM, SIGINT) while ptxas runs: no output and no
# temporary file is left.
for sig in TERM INT; do
  rm -rf "$OUT" "$D/started"
  fake_ptxas slow-ptxas "echo \$\$ > $D/started; exec sleep 30"
  # Background jobs of a script start with SIGINT ignored; restore it.
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$FATLINK" "${L[@]}" --arch=sm_80 --ptxas="$D/slow-ptxas" $RLIBS "$D/softplus.bc" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do [ -s "$D/started" ] && break; sleep 0.1; done
  kill -s $sig $pid
  wait $pid; rc=$?
  kill "$(cat "$D/started")" 2>/dev/null || true # the orphaned "ptxas"
  check "SIG$sig: killed by the signal ($rc)" test "$rc" -eq $((128 + $(kill -l $sig)))
  check "SIG$sig: no output left" test ! -e "$OUT"
  check "SIG$sig: no temporary file left" test -z "$(ls -A "$TMPDIR")"
  rm -rf "${TMPDIR:?}"/*
done

# Options.
expect_error "unknown option" "unknown option '--arhc=sm_80': did you mean '--arch=sm_80'?" \
  "${L[@]}" --arhc=sm_80 $RLIBS
expect_error "bad -O" "invalid value for -O: '7'" "${L[@]}" -O7 --arch=sm_80 $RLIBS
expect_error "bad -j" "invalid value for -j: '0'" "${L[@]}" -j0 --arch=sm_80 $RLIBS
expect_error "no output" "no output: pass -o" device-link --arch=sm_80 $RLIBS
echo "@$D/self.rsp" > "$D/self.rsp"
expect_error "response file that includes itself" "cannot expand response file" \
  "${L[@]}" "@$D/self.rsp"

# -o prog.bc needs one optimized module for all targets; per-arch images
# that differ (arch_variant.cu branches on __CUDA_ARCH__) give two.
cuda_obj arch_variant.cu sm_75,sm_90 "$D/arch_variant.o"
expect_error "split link: targets that need two modules" \
  "-o $OUT.bc: the targets need 2 differently optimized modules" \
  device-link -o "$OUT.bc" --arch=sm_75,sm_90 "$D/arch_variant.o"
# softplus.o's sm_75 and sm_90 images are the same program: one module.
"$FATLINK" device-link -o "$WORK/same.bc" --arch=sm_75,sm_90 $RLIBS "$D/softplus.o"
check "split link: identical per-arch images make one module" test -s "$WORK/same.bc"

# Packaging.
expect_error "package: output must be .fatbin or .o" "name a .fatbin or a .o output" \
  package "$D/softplus.bc" -o "$OUT.cubin"
expect_error "package: not an image" "$D/softplus.bc: " package "$D/softplus.bc" -o "$OUT.fatbin"
expect_error "package: no images" "no images" package -o "$OUT.fatbin"
"$FATLINK" device-link --arch=sm_80 $RLIBS "$D/softplus.bc" -o "$D/one.cubin"
expect_error "package: two images for one arch" "two cubin images for sm_80" \
  package "$D/one.cubin" "$D/one.cubin" -o "$OUT.fatbin"
expect_error "package: corrupt kernel bitcode" "$D/corrupt.bc: corrupt bitcode" \
  package "$D/one.cubin" --kernels-from="$D/corrupt.bc" -o "$OUT.o"
expect_error "bad --compress" "invalid value for --compress: 'lz5'" \
  "${L[@]}.fatbin" --arch=sm_80 --compress=lz5 $RLIBS "$D/softplus.bc"

# Outputs: a failed link keeps the previous output intact.
mkdir -p "$D/keep"
"$FATLINK" device-link --arch=sm_80 -o "$D/keep/k.cubin" $RLIBS "$D/softplus.bc"
cp "$D/keep/k.cubin" "$D/keep/k.cubin.orig"
"$FATLINK" device-link --arch=sm_80 -o "$D/keep/k.cubin" $RLIBS 2>/dev/null
check "failed link: exit non-zero and previous output intact" cmp "$D/keep/k.cubin" "$D/keep/k.cubin.orig"
mkdir -p "$D/isdir.cubin"
expect_error "output path is a directory" "is a directory" \
  device-link -o "$D/isdir.cubin" --arch=sm_80 $RLIBS "$D/softplus.bc"
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$D/ro" && chmod 555 "$D/ro"
  expect_error "unwritable output directory" "cannot write $D/ro/k.cubin" \
    device-link -o "$D/ro/k.cubin" --arch=sm_80 $RLIBS "$D/softplus.bc"
fi
echo x > "$D/file"
expect_error "output directory is a file" "exists and is not a directory" \
  device-link -o "$D/file" --arch=sm_80,sm_90 $RLIBS "$D/softplus.bc"

finish
