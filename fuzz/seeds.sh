#!/usr/bin/env bash
# seeds.sh OUT: writes the fuzz targets' seed corpora to OUT/<target>/, made
# at run time from real outputs: rustc rlibs and their bitcode members,
# clang CUDA bitcode and --offload-new-driver objects, CUDA's fatbinary (all
# compression modes, including LZ4), ptxas cubins, and fatlink's own
# fatbins, host objects and embed objects. The command-line and settings
# seeds are written from text below, and the round-trip targets' seeds
# encode real images in their structured input format. The small corpora
# checked in under fuzz/corpus/ were merged (-merge=1) from these.
# Needs FATLINK (default: bazel-bin/tools/fatlink/fatlink), rustc, clang-22
# and the CUDA toolkit, as the end-to-end tests do.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$1"
FATLINK="${FATLINK:-$ROOT/bazel-bin/tools/fatlink/fatlink}"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
T="$ROOT/testdata"
W="$OUT/.work"
rm -rf "$OUT"
mkdir -p "$W" "$OUT"/{fatbin,image,scan,archive,bitcode,link,options,settings} \
  "$OUT"/{fatbin_roundtrip,hostobj_roundtrip,embed_roundtrip,fatbin_diff,ptx_link} \
  "$OUT"/{manifest,cubin_split}
cd "$W"

# rust NAME SRC [RUSTC ARGS...]
rust() {
  RUSTC_BOOTSTRAP=1 rustc --target nvptx64-nvidia-cuda --edition 2021 -O \
    --crate-type rlib --crate-name "$1" "$2" -L . -o "lib$1.rlib" "${@:3}"
}
# fatlink-device with #[fatlink_device::kernel] (and its proc-macro crate).
bash "$ROOT/test/Inputs/build-device-macros.sh" "$ROOT" .
rust vecmath "$T/rust/vecmath.rs" --extern fatlink_device=libfatlink_device.rlib
rust saxpy "$T/rust/saxpy.rs" --extern fatlink_device=libfatlink_device.rlib --extern vecmath=libvecmath.rlib
rustc --crate-type rlib --crate-name host_only "$T/host/host_only.rs" -o libhost_only.rlib
ar x libsaxpy.rlib
CU=(clang++-22 -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version -O3)
"${CU[@]}" --cuda-device-only --offload-arch=sm_75 -fgpu-rdc -emit-llvm -c "$T/cuda/softplus.cu" -o softplus.bc
"${CU[@]}" --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=sm_75,sm_90 -c "$T/cuda/softplus.cu" -o softplus.o
clang-22 -c -emit-llvm -O2 "$T/cuda/x86.c" -o x86.bc

K=(libsaxpy.rlib libvecmath.rlib libfatlink_device.rlib softplus.bc)
"$FATLINK" device-link --arch=sm_75,sm_90a,compute_80 "${K[@]}" -o dir
"$FATLINK" device-link --arch=sm_75,compute_80 "${K[@]}" -o k.fatbin
"$FATLINK" device-link --arch=sm_75,compute_80 --compress=none "${K[@]}" -o plain.fatbin
"$FATLINK" device-link --arch=sm_80 "${K[@]}" -o k.o
"$FATLINK" embed libsaxpy.rlib softplus.bc -o emb.o
for mode in none default speed size; do
  "$CUDA/bin/fatbinary" -64 --create "nv-$mode.fatbin" --compress-mode=$mode \
    --image3=kind=elf,sm=75,file=dir/sm_75.cubin --image3=kind=ptx,sm=80,file=dir/compute_80.ptx
done
# Small fatbins (under 4 KiB, for fuzz/corpus/fatbin_diff): one image each.
"$CUDA/bin/fatbinary" -64 --create ptx-zstd.fatbin --compress-mode=size \
  --image3=kind=ptx,sm=80,file=dir/compute_80.ptx
"$CUDA/bin/fatbinary" -64 --create ptx-lz4.fatbin --compress-mode=speed \
  --image3=kind=ptx,sm=80,file=dir/compute_80.ptx
"$CUDA/bin/fatbinary" -64 --create cubin-zstd.fatbin --compress-mode=size \
  --image3=kind=elf,sm=75,file=dir/sm_75.cubin
ar rc mix.a k.o softplus.o emb.o
cc -c -x c /dev/null -o plain.o
# nvcc's device code (docs/packager.md, "What nvcc writes"): relocatable
# cubin and PTX, and LTO-IR plain and obfuscated (zstd, LZ4), as objects and
# as their __nv_relfatbin sections, each one container (under 4 KiB).
NV=("$CUDA/bin/nvcc" -dc "$T/nvcc/nv_math.cu")
"${NV[@]}" -gencode arch=compute_80,code=[sm_80,compute_80] -o nv-dc.o
for mode in none default speed; do
  "${NV[@]}" -gencode arch=compute_80,code=lto_80 -Xfatbin=--compress-mode=$mode -o "nv-lto-$mode.o"
  objcopy -O binary --only-section=__nv_relfatbin "nv-lto-$mode.o" "nv-lto-$mode.fatbin"
done

cp k.fatbin plain.fatbin nv-*.fatbin "$OUT/fatbin/"
cp k.fatbin plain.fatbin nv-*.fatbin ptx-*.fatbin cubin-zstd.fatbin "$OUT/fatbin_diff/"
cp nv-dc.o nv-lto-default.o "$OUT/scan/"
cp dir/*.cubin dir/*.ptx "$OUT/image/"
cp k.fatbin nv-size.fatbin nv-speed.fatbin k.o emb.o softplus.o mix.a plain.o "$OUT/scan/"
# The descriptor reader: a host object (relocations), a shared library
# linked by lld (R_X86_64_RELATIVE addends), an archive.
cc -fuse-ld=lld -shared k.o -o k.so
cp k.o k.so mix.a plain.o "$OUT/manifest/"
cp libsaxpy.rlib libfatlink_device.rlib libhost_only.rlib mix.a "$OUT/archive/"
ar rc empty.a && cp empty.a "$OUT/archive/"
cp softplus.bc x86.bc ./*.rcgu.o softplus.o emb.o "$OUT/bitcode/"
# ptx_link: PTX modules separated by NUL, as a PTX target links them:
# fatlink's PTX and nvcc's relocatable PTX of two units.
"$CUDA/bin/nvcc" -ptx -rdc=true -arch=compute_80 "$T/nvcc/nv_math.cu" -o nv_math.ptx
"$CUDA/bin/nvcc" -ptx -rdc=true -arch=compute_80 "$T/nvcc/nv_extra.cu" -o nv_extra.ptx
{ cat dir/compute_80.ptx; printf '\0'; cat nv_math.ptx; printf '\0'; cat nv_extra.ptx; } \
  > "$OUT/ptx_link/three-modules"
{ cat nv_math.ptx; printf '\0'; cat nv_extra.ptx; } > "$OUT/ptx_link/nvcc-units"

# cubin_split: the function lists of a shared `ptxas -c` run (a line per
# input: the .entry and .func names its PTX defines, as sharedRunFunctions
# lists them), NUL, then the run's cubin; clang's PTX of units with
# callees, shared memory and an alias, for sm_75 and sm_86, and a run with a
# module-scope variable, which the cut refuses.
for u in unit_a unit_b alias dynamic_smem_a; do
  "${CU[@]}" --cuda-device-only --offload-arch=sm_75 -I"$T/cuda" -S \
    "$T/cuda/$u.cu" -o "$u.ptx"
done
functions() {
  python3 -c 'import re, sys
for p in sys.argv[1:]:
    print(" ".join(re.findall(r"^(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)",
                              open(p).read(), re.M)))' "$@"
}
batch() { # batch NAME ARCH PTX...
  "$CUDA/bin/ptxas" -arch="$2" -O3 -c "${@:3}" -o "$1.cubin"
  { functions "${@:3}" | head -c -1; printf '\0'; cat "$1.cubin"; } > "$OUT/cubin_split/$1"
}
batch three-sm_75 sm_75 unit_a.ptx unit_b.ptx alias.ptx
batch two-sm_86 sm_86 unit_b.ptx unit_a.ptx
batch one-sm_75 sm_75 unit_a.ptx
batch with-variable-sm_75 sm_75 unit_a.ptx dynamic_smem_a.ptx

# The whole link: inputs that link on their own (a kernel and its callees).
mkdir vm && (cd vm && ar x ../libvecmath.rlib)
cp softplus.bc softplus.o libvecmath.rlib vm/*.rcgu.o "$OUT/link/"

# options: byte 0 picks the table (0 llbc, 1 device-link, 2 embed,
# 3 inspect), then one argument per line, then NUL and r.rsp's content.
# settings: arguments, NUL, environment, NUL, f.conf.
python3 - "$OUT" <<'PY'
import sys
out = sys.argv[1]
seeds = {
  "options/llbc": b"\x00--export-symbol\nrust_kernel\nk.rcgu.o\nlibcrate_a.rlib\n-L\ndeps\n"
                  b"--target\nnvptx64-nvidia-cuda\n--target-cpu\nsm_80\n-o\nkernel.ptx\n-O3\n--debug",
  "options/llbc-rsp": b"\x00@r.rsp\n--target-feature=+ptx80\x00--export-symbol a_twice "
                      b"\"quoted arg\" 'single' back\\ slash\n-Os",
  "options/devlink": b"\x01--arch=sm_75,sm_90a,compute_120\n-j2\n--compress=zstd-3\n-O2\n"
                     b"--ptx-version=8.0\n--json=k.json\n--save-temps\na.rlib\nb.bc\n-o\nk.o",
  "options/devlink-rsp": b"\x01@r.rsp\x00--arch sm_80 -o out a.bc @r.rsp",
  "options/devlink-bad": b"\x01--arhc=sm_80\n-O\n-j",
  "options/embed": b"\x02--arch=sm_80\n--host-arch=aarch64\n-v\nlibk.rlib\n-o\nk.o",
  "options/inspect": b"\x03--extract=d\n--json\n-v\nk.fatbin\nk.o",
  "settings/args": b"--fatlink-arch=sm_80,compute_90\n--fatlink-opt=O2\n--fatlink-jobs=3\n"
                   b"--fatlink-compress=zstd-19\n--fatlink-verbose\n--fatlink-dry-run\n"
                   b"--fatlink-ptx-version=7.8",
  "settings/env": b"\x00FATLINK_ARCH=sm_86\nFATLINK_SAVE_TEMPS=1\nFATLINK_JOBS=0\nCUDA_PATH=cuda",
  "settings/config": b"--fatlink-config=f.conf\x00FATLINK_OPT=3\x00# comment\n"
                     b"arch = sm_75 # trailing\nopt=-O1\nptx-version = 9.0\ncompress = none\n"
                     b"host-arch = aarch64\n",
  "settings/config-env": b"\x00FATLINK_CONFIG=f.conf\x00jobs = 1024\nlinker = cc\nbad line\n",
}
for name, data in seeds.items():
    open(f"{out}/{name}", "wb").write(data)

# The round-trip targets read structured input (fuzz/RoundTrip.h and each
# target's ByteReader calls); these seeds encode real images: the start of
# ptxas's sm_75 cubin and of llc's compute_80 PTX, and of clang's bitcode.
def u16(v): return bytes([v & 255, v >> 8])
def blob(b, most): b = b[:most]; return u16(len(b)) + b
cubin = open("dir/sm_75.cubin", "rb").read()
ptx = open("dir/compute_80.ptx", "rb").read()
bc = open("softplus.bc", "rb").read()
def image(kind_bits, sm, major, minor, data, compat=None):
    k = kind_bits | (8 if compat is not None else 0)
    return (bytes([k]) + u16(sm - 1) + bytes([major, minor]) +
            (blob(compat, 24) if compat is not None else b"") + blob(data, 600))
# options byte: bit 0 zstd, bits 1-2 level-1, bit 3 minify PTX
fatbins = {
  "cubin-ptx-zstd": bytes([1 | 8, 1]) + image(0, 75, 1, 8, cubin) +
                    image(1, 80, 7, 0, ptx),
  "cubin-ptx-none": bytes([0, 1]) + image(0, 75, 1, 8, cubin) +
                    image(1, 80, 7, 0, ptx),
  "sm100a-compat": bytes([1, 0]) + image(2, 100, 1, 8, cubin, b"\x02\x01\x04\x00"),
}
for name, data in fatbins.items():
    open(f"{out}/fatbin_roundtrip/{name}", "wb").write(data)
    # kernels: count, then (name, parameter count, sizes); then host arch
    kernels = bytes([2]) + blob(b"saxpy", 20) + bytes([2]) + u16(4) + u16(8) + \
              blob(b"_Z8softplusPfi", 20) + bytes([0])
    open(f"{out}/hostobj_roundtrip/{name}", "wb").write(data + kernels + bytes([1]))
    # and with manifests: per kernel 1, origin, language, (max threads u16,
    # req threads, cluster) x3, min blocks, 1 = describe the parameters:
    # (kind, flags, address space, element kind, align u16, element size
    # u16, type, name) each
    manifests = (bytes([1]) + blob(b"libk.rlib(k.o)", 40) + bytes([1]) +
                 u16(256) + bytes([0, 2]) + (u16(0) + bytes([0, 1])) * 2 +
                 bytes([2, 1]) +
                 bytes([4, 0, 0, 0]) + u16(4) + u16(0) + blob(b"f32", 20) + blob(b"a", 10) +
                 bytes([6, 1, 1, 4]) + u16(8) + u16(4) + blob(b"*const f32", 20) + blob(b"x", 10) +
                 bytes([1]) + blob(b"softplus.bc", 40) + bytes([2]) + bytes(12) + bytes([0, 1]))
    open(f"{out}/hostobj_roundtrip/{name}-manifest", "wb").write(
        data + kernels + bytes([1]) + manifests)
# embed: count-1, then per image (bits: 1 any arch, 2 any triple, 4 no
# bitcode magic) arch, bitcode after its magic; then host arch
assert bc[:4] == b"BC\xc0\xde"
open(f"{out}/embed_roundtrip/one", "wb").write(
    bytes([0, 0]) + u16(80) + blob(bc[4:], 300) + bytes([0]))
open(f"{out}/embed_roundtrip/two", "wb").write(
    bytes([1, 0]) + u16(75) + blob(bc[4:], 300) +
    bytes([3]) + blob(b"sm_90a", 12) + blob(b"nvptx64-nvidia-cuda", 24) +
    blob(bc[4:], 100) + bytes([1]))
PY
rm -rf "$W"
