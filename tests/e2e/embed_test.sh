#!/usr/bin/env bash
# embed_test.sh: `fatlink embed` wraps the bundled Rust crates and CUDA C++
# bitcode, built at test time, in a host object that llvm-objdump,
# clang-linker-wrapper, the host linker and `fatlink device-link` all read;
# the default arch comes from the bitcode; one case per diagnostic.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
OUT="$WORK/out.o"
need_tool llvm-objdump-22
need_tool llvm-readelf-22

# The main job: three rlibs and a .bc -> one object, four images.
"$FATLINK" embed $RLIBS "$D/softplus.bc" -o emb.o 2>err.txt
check "embed exits 0" test $? -eq 0
check "no diagnostics on success" test ! -s err.txt
check "no temporary files left" test -z "$(ls -A "$TMPDIR")"

# llvm-objdump reads every image, as clang's objects.
llvm-objdump-22 --offloading emb.o >objdump.txt
check "llvm-objdump --offloading lists four images" \
  test "$(grep -c '^OFFLOADING IMAGE' objdump.txt)" -eq 4
check "llvm-objdump: every image is bitcode" test "$(grep -c '^kind *llvm ir$' objdump.txt)" -eq 4
check "llvm-objdump: every image is for nvptx64" \
  test "$(grep -c '^triple *nvptx64-nvidia-cuda$' objdump.txt)" -eq 4
check "llvm-objdump: every image is for CUDA" test "$(grep -c '^producer *cuda$' objdump.txt)" -eq 4
llvm-readelf-22 -S -W emb.o >sections.txt
check "section .llvm.offloading is SHT_LLVM_OFFLOADING and excluded (E)" \
  grep -qE '\.llvm\.offloading +LLVM_OFFLOADING .* E ' sections.txt
check "host arch defaults to this machine's" grep -q "$(uname -m | sed 's/_/-/')" \
  <(llvm-readelf-22 -h emb.o | grep Machine | tr 'A-Z' 'a-z')

# Default arch: rustc's sm_30 is below what ptxas builds, softplus.bc asks
# for sm_75: sm_75 for all.
check "default arch: sm_75 recorded" test "$(grep -c '^arch *sm_75$' objdump.txt)" -eq 4
"$FATLINK" embed -v $RLIBS -o rust.o 2>v.txt
check "-v: rustc's target-cpu is shown" grep -qF "libsaxpy.rlib(libsaxpy.saxpy." v.txt
check "-v: sm_30 raised to sm_75" grep -qF "arch: sm_75 (the bitcode asks for sm_30; pass --arch to choose)" v.txt
check "-v: every image with its arch" test "$(grep -c '^embed .*\.rlib(.*\.rcgu\.o) \[sm_75\]$' v.txt)" -eq 3
check "-v: lib.rmeta skipped" grep -qF "skipped $D/libsaxpy.rlib(lib.rmeta): not device code" v.txt
RUSTC_BOOTSTRAP=1 "$RUSTC" --target nvptx64-nvidia-cuda --edition 2021 -O --crate-type rlib \
  --crate-name vecmath -C target-cpu=sm_90 "$TESTDATA/rust/vecmath.rs" \
  --extern minicore="$D/libminicore.rlib" -o "$D/libvecmath90.rlib"
"$FATLINK" embed "$D/libvecmath90.rlib" "$D/libminicore.rlib" -o v90.o
check "default arch: the newest target-cpu (sm_90) for every image" \
  test "$(llvm-objdump-22 --offloading v90.o | grep -c '^arch *sm_90$')" -eq 2
"$FATLINK" embed --arch=sm_86 $RLIBS -o a86.o
check "--arch=sm_86 is recorded" test "$(llvm-objdump-22 --offloading a86.o | grep -c '^arch *sm_86$')" -eq 3
"$FATLINK" embed --arch sm_100a "$D/softplus.bc" -o a100.o
check "--arch sm_100a (separate form)" grep -q '^arch *sm_100a$' <(llvm-objdump-22 --offloading a100.o)
# A clang --offload-new-driver object: its sm_75 and sm_90 images keep their arch.
"$FATLINK" embed --arch=sm_80 "$D/softplus.o" "$D/softplus.bc" -o clang.o
llvm-objdump-22 --offloading clang.o | grep '^arch' >clang_arches.txt
check "images from an OffloadBinary keep their arch, plain bitcode gets --arch" \
  diff <(printf 'arch            sm_75\narch            sm_90\narch            sm_80\n') clang_arches.txt

# --host-arch.
"$FATLINK" embed --host-arch=aarch64 "$D/softplus.bc" -o arm.o
check "--host-arch=aarch64 gives an AArch64 object" grep -q AArch64 <(llvm-readelf-22 -h arm.o)
"$FATLINK" embed --host-arch x86_64 "$D/softplus.bc" -o x86.o
check "--host-arch x86_64 gives an x86-64 object" grep -q 'X86-64' <(llvm-readelf-22 -h x86.o)

# Determinism and response files.
"$FATLINK" embed $RLIBS "$D/softplus.bc" -o emb2.o
check "same inputs, same bytes" cmp emb.o emb2.o
printf '%s\n' $RLIBS "$D/softplus.bc" -o rsp.o > embed.rsp
"$FATLINK" embed @embed.rsp
check "response file: same object" cmp emb.o rsp.o

# Round trips through device-link: the same cubin as from the originals,
# from the object and from a static library holding it.
"$FATLINK" device-link --arch=sm_80 -o orig.cubin $RLIBS "$D/softplus.bc"
"$FATLINK" device-link --arch=sm_80 -o emb.cubin emb.o
check "device-link of the embedded object gives the original cubin" cmp orig.cubin emb.cubin
ar rcs libemb.a emb.o
"$FATLINK" device-link --arch=sm_80 -o lib.cubin libemb.a
check "device-link of an archive of it gives the original cubin" cmp orig.cubin lib.cubin
for n in saxpy vecmath minicore; do "$FATLINK" embed "$D/lib$n.rlib" -o "$n.o"; done
"$FATLINK" embed "$D/softplus.bc" -o softplus.o
"$FATLINK" device-link --arch=sm_80 -o each.cubin saxpy.o vecmath.o minicore.o softplus.o
check "device-link of one object per input gives the original cubin" cmp orig.cubin each.cubin

# The host link drops the device code (SHF_EXCLUDE).
printf 'int main(void) { return 0; }\n' > main.c
cc main.c emb.o -o host_app
check "host link succeeds and drops .llvm.offloading" \
  bash -c "./host_app && ! llvm-readelf-22 -S host_app | grep -q llvm.offloading"

# clang's new offload driver: a CUDA kernel calls cuda_softplus from the
# embedded object, so clang-linker-wrapper must LTO our bitcode (Rust crates
# included; they call libdevice, given to the device link).
cat > use.cu <<'EOF'
extern "C" __device__ float cuda_softplus(float);
extern "C" __global__ void use_softplus(float *p) { p[0] = cuda_softplus(p[0]); }
int main() { use_softplus<<<1, 1>>>(nullptr); return 0; }
EOF
"$CLANG" --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=sm_75 \
  --cuda-path="$CUDA" -Wno-unknown-cuda-version use.cu emb.o \
  -Xoffload-linker "$CUDA/nvvm/libdevice/libdevice.10.bc" \
  -L"$CUDA/lib64" -lcudart -o clang_app
check "clang-linker-wrapper links the embedded object" test -x clang_app
"$FATLINK" inspect --extract=clang_app.d clang_app >/dev/null
for k in use_softplus saxpy vec_add cuda_scale; do
  check "clang_app's sm_75 cubin has kernel $k" \
    grep -qa "\.text\.$k" clang_app.d/clang_app.0.sm_75.cubin
done

# Options.
"$FATLINK" embed --help >help.txt
for o in -o --arch= --host-arch= -v --help --version; do
  check "--help documents $o" grep -qF -- " $o" help.txt
done
check "--version" grep -q '^fatlink ' <("$FATLINK" embed --version)
check "'fatlink --help' lists embed" grep -q '^  embed ' <("$FATLINK" --help)

# Diagnostics: non-zero exit, message, no output, no temporary files.
expect_error "no output" "no output: pass -o <file.o>" embed "$D/softplus.bc"
expect_error "no inputs" "no input files" embed -o "$OUT"
expect_error "missing input" "cannot open $D/nope.bc" embed "$D/nope.bc" -o "$OUT"
"$CLANG_C" -c -emit-llvm -O2 "$TESTDATA/cuda/x86.c" -o "$D/x86.bc"
expect_error "host bitcode" "$D/x86.bc: bitcode is for target 'x86_64" \
  embed "$D/softplus.bc" "$D/x86.bc" -o "$OUT"
"$RUSTC" --crate-type rlib --crate-name host_only "$TESTDATA/host/host_only.rs" -o "$D/libhost_only.rlib"
expect_error "rlib without device bitcode" "$D/libhost_only.rlib: archive contains no device bitcode" \
  embed "$D/libhost_only.rlib" -o "$OUT"
echo "not an object" > "$D/notes.txt"
expect_error "unknown file type" "$D/notes.txt: unknown file type" embed "$D/notes.txt" -o "$OUT"
expect_error "misspelled arch" "unknown GPU arch 'sm_8O' for --arch: did you mean 'sm_80'?" \
  embed --arch=sm_8O "$D/softplus.bc" -o "$OUT"
expect_error "not an arch" "unknown GPU arch 'compute_80' for --arch" \
  embed --arch=compute_80 "$D/softplus.bc" -o "$OUT"
expect_error "bad host arch" "unsupported host arch 'riscv64': fatlink writes host objects for x86_64 and aarch64 (--host-arch=x86_64 or --host-arch=aarch64)" \
  embed --host-arch=riscv64 "$D/softplus.bc" -o "$OUT"
expect_error "unknown option" "unknown option '--ach=sm_80': did you mean '--arch=sm_80'?" \
  embed --ach=sm_80 "$D/softplus.bc" -o "$OUT"
mkdir -p "$D/isdir.o"
expect_error "output is a directory" "-o $D/isdir.o is a directory" \
  embed "$D/softplus.bc" -o "$D/isdir.o"
printf 'BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00\x00\x62\x0c\x30\x24' > "$D/corrupt.bc"  # bitcode magic, then a truncated block
expect_error "corrupt bitcode" "$D/corrupt.bc: corrupt bitcode" embed "$D/corrupt.bc" -o "$OUT"
cp emb.o keep.o
"$FATLINK" embed "$D/x86.bc" -o keep.o 2>/dev/null
check "failed embed keeps the previous output" cmp emb.o keep.o

finish
