#!/usr/bin/env bash
# inspect_test.sh: `fatlink inspect` on what fatbinary, nvcc, clang and
# fatlink produce, built at test time: fatbins (each compression mode), host
# objects, static archives, executables and shared libraries. Checks the
# table, --extract (byte for byte), --json, and one case per diagnostic for
# truncated and corrupt inputs.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
OUT="$WORK/extracted"
NVCC="$CUDA/bin/nvcc"
need_tool "$NVCC"
need_tool python3

# The row of the table whose name column is NAME: row FILE NAME.
row() { awk -v n="$2" '$NF == n' "$1"; }
# Columns 2..8 (section .. compression) of that row.
fields() { row "$1" "$2" | awk '{ print $2, $3, $4, $5, $6, $7, $8 }'; }
size_of() { wc -c <"$1" | tr -d ' '; }

# Copies ELF64 FILE to OUT with section SECTION's sh_size set to SIZE: the
# section is cut short, its bytes are untouched.
cut_section() {
  python3 - "$@" <<'EOF'
import struct, sys
path, name, size, out = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
d = bytearray(open(path, 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
shnum, shstrndx = struct.unpack_from('<HH', d, 0x3c)
strtab, = struct.unpack_from('<Q', d, shoff + shstrndx * 64 + 0x18)
for i in range(shnum):
    h = shoff + i * 64
    n, = struct.unpack_from('<I', d, h)
    if d[strtab + n:d.index(0, strtab + n)] == name:
        struct.pack_into('<Q', d, h + 0x20, size)
open(out, 'wb').write(d)
EOF
}

# Images: an sm_80 cubin and its PTX from fatlink's device link.
"$FATLINK" device-link --arch=sm_80 --emit-ptx -o dl $RLIBS "$D/softplus.bc"
CUBIN_SIZE=$(size_of dl/sm_80.cubin)

# A fatbin from fatbinary (default: PTX compressed with zstd).
"$CUDA/bin/fatbinary" -64 --create x.fatbin \
  --image3=kind=elf,sm=80,file=dl/sm_80.cubin --image3=kind=ptx,sm=80,file=dl/sm_80.ptx
"$FATLINK" inspect x.fatbin >fatbin.txt
check "inspect fatbin exits 0" test $? -eq 0
check "table header" grep -qE '^origin +section +kind +arch +version +stored +size +compression +name$' fatbin.txt
check "fatbin: cubin row" test "$(fields fatbin.txt x.fatbin.0.sm_80.cubin)" = \
  "- cubin sm_80 1.8 $CUBIN_SIZE $CUBIN_SIZE none"
check "fatbin: PTX row (ISA 8.8, softplus.bc's, zstd)" grep -qE \
  '^x\.fatbin +- +ptx +sm_80 +8\.8 +[0-9]+ +[0-9]+ +zstd +x\.fatbin\.1\.sm_80\.ptx$' fatbin.txt
check "table columns are aligned" \
  test "$(awk '{ print index($0, $NF) }' fatbin.txt | sort -u | wc -l)" -eq 1

"$FATLINK" inspect x.fatbin --extract="$OUT" >/dev/null
check "--extract: cubin equals the original byte for byte" cmp "$OUT/x.fatbin.0.sm_80.cubin" dl/sm_80.cubin
check "--extract: PTX is the (minified) text for sm_80" \
  bash -c "grep -q '^\.target sm_80\$' $OUT/x.fatbin.1.sm_80.ptx && grep -q '^\.version 8\.8\$' $OUT/x.fatbin.1.sm_80.ptx"
for k in saxpy vec_add cuda_scale; do
  check "--extract: PTX has kernel $k" grep -q "\.entry $k(" "$OUT/x.fatbin.1.sm_80.ptx"
done
check "--extract: PTX size is the table's size" \
  test "$(row fatbin.txt x.fatbin.1.sm_80.ptx | awk '{ print $7 }')" = "$(size_of "$OUT/x.fatbin.1.sm_80.ptx")"
check "--extract: PTX has no NUL" bash -c "! tr -d '\\n' <$OUT/x.fatbin.1.sm_80.ptx | grep -qaP '\\x00'"

# Every compression mode of fatbinary reads back to the same cubin.
for mode in none size speed; do
  "$CUDA/bin/fatbinary" -64 --create "$mode.fatbin" --compress-mode=$mode \
    --image3=kind=elf,sm=80,file=dl/sm_80.cubin --image3=kind=ptx,sm=80,file=dl/sm_80.ptx
  "$FATLINK" inspect --extract="x_$mode" "$mode.fatbin" >"$mode.txt"
  check "--compress-mode=$mode: cubin extracted intact" cmp "x_$mode/$mode.fatbin.0.sm_80.cubin" dl/sm_80.cubin
  check "--compress-mode=$mode: same PTX as the default" \
    cmp "x_$mode/$mode.fatbin.1.sm_80.ptx" "$OUT/x.fatbin.1.sm_80.ptx"
done
check "--compress-mode=none: nothing compressed" test "$(grep -c ' none ' none.txt)" -eq 2
check "--compress-mode=size: the cubin is zstd" test "$(fields size.txt size.fatbin.0.sm_80.cubin | cut -d' ' -f7)" = zstd
check "--compress-mode=size: stored smaller than its size" \
  test "$(fields size.txt size.fatbin.0.sm_80.cubin | cut -d' ' -f5)" -lt "$CUBIN_SIZE"
check "--compress-mode=speed: the PTX is lz4" test "$(fields speed.txt speed.fatbin.1.sm_80.ptx | cut -d' ' -f7)" = lz4

# nvcc objects: whole-program (.nv_fatbin) and relocatable (__nv_relfatbin).
"$NVCC" -c -arch=sm_80 "$TESTDATA/cuda/softplus.cu" -o nv.o
"$NVCC" -c -rdc=true -arch=sm_80 "$TESTDATA/cuda/softplus.cu" -o nvrdc.o
"$FATLINK" inspect nv.o nvrdc.o >nv.txt
check "nvcc object: sm_80 cubin in .nv_fatbin" grep -qE '^nv\.o +\.nv_fatbin +cubin +sm_80 +1\.[0-9]+ ' nv.txt
check "nvcc object: sm_80 PTX in .nv_fatbin" grep -qE '^nv\.o +\.nv_fatbin +ptx +sm_80 +[0-9]+\.[0-9]+ ' nv.txt
check "nvcc -rdc object: cubin in __nv_relfatbin" grep -qE '^nvrdc\.o +__nv_relfatbin +cubin +sm_80 ' nv.txt
check "indices count over the whole command line" grep -qE ' nvrdc\.o\.2\.sm_80\.cubin$' nv.txt

# An executable and a shared library linked by nvcc.
cat > main.cu <<'EOF'
__global__ void fill_ones(float *p) { p[threadIdx.x] = 1.0f; }
int main() { fill_ones<<<1, 1>>>(nullptr); return 0; }
EOF
"$NVCC" -arch=sm_80 main.cu -o app
"$NVCC" -arch=sm_80 -shared -Xcompiler -fPIC main.cu -o libapp.so
"$FATLINK" inspect --extract=app.d app libapp.so >app.txt
check "executable: cubins found" grep -qE '^app +\.nv_fatbin +cubin +sm_80 ' app.txt
check "shared library: cubins found" grep -qE '^libapp\.so +\.nv_fatbin +cubin +sm_80 ' app.txt
check "executable: the kernel's cubin is extracted" bash -c "grep -qa fill_ones app.d/app.*.sm_80.cubin"

# clang --offload-new-driver object (from build_testdata): sm_75 and sm_90
# bitcode; and an object from fatlink embed: the original bitcode, intact.
"$FATLINK" embed $RLIBS "$D/softplus.bc" -o emb.o
cp "$D/softplus.o" clang.o
"$FATLINK" inspect --extract=bc.d clang.o emb.o >bc.txt
check "clang object: sm_75 bitcode" grep -qE '^clang\.o +\.llvm\.offloading +bitcode +sm_75 +- ' bc.txt
check "clang object: sm_90 bitcode" grep -qE '^clang\.o +\.llvm\.offloading +bitcode +sm_90 +- ' bc.txt
check "clang object: extracted bitcode defines cuda_scale" \
  bash -c "llvm-dis-22 bc.d/clang.o.1.sm_90.bc -o - | grep -q 'define.*@cuda_scale'"
check "embed object: four bitcode images" test "$(grep -c '^emb\.o .* bitcode ' bc.txt)" -eq 4
check "embed object: extracted bitcode equals the input" cmp bc.d/emb.o.5.sm_75.bc "$D/softplus.bc"

# fatlink's own fatbin and host object (zstd-compressed entries).
"$FATLINK" device-link --arch=sm_80,compute_90 -o own.fatbin $RLIBS "$D/softplus.bc"
"$FATLINK" device-link --arch=sm_80,compute_90 -o own.o $RLIBS "$D/softplus.bc"
"$FATLINK" inspect --extract=own.d own.fatbin own.o >own.txt
check "fatlink fatbin: zstd sm_80 cubin" test "$(fields own.txt own.fatbin.0.sm_80.cubin | cut -d' ' -f2,3,7)" = "cubin sm_80 zstd"
check "fatlink fatbin: compute_90 PTX" test "$(fields own.txt own.fatbin.1.sm_90.ptx | cut -d' ' -f2,3)" = "ptx sm_90"
check "fatlink host object: cubin in .nv_fatbin" test "$(fields own.txt own.o.2.sm_80.cubin | cut -d' ' -f1,2)" = ".nv_fatbin cubin"
check "fatlink fatbin: cubin decompressed to the device-link cubin" cmp own.d/own.fatbin.0.sm_80.cubin dl/sm_80.cubin
check "fatlink host object: same cubin" cmp own.d/own.o.2.sm_80.cubin dl/sm_80.cubin

# A static archive of all three kinds of object.
ar rcs libmix.a nv.o clang.o emb.o
"$FATLINK" inspect libmix.a >mix.txt
check "archive: members named in origins" \
  bash -c "grep -q '^libmix\.a(nv\.o) ' mix.txt && grep -q '^libmix\.a(clang\.o) ' mix.txt && grep -q '^libmix\.a(emb\.o) ' mix.txt"
check "archive: every image found" test "$(tail -n +2 mix.txt | wc -l)" -eq 8

# Two inputs with the same file name get distinct extracted names.
mkdir -p a b && cp x.fatbin a/ && cp x.fatbin b/
"$FATLINK" inspect --extract=dup a/x.fatbin b/x.fatbin >/dev/null
check "same basename: four distinct files" test "$(ls dup | wc -l)" -eq 4
"$FATLINK" inspect a/x.fatbin b/x.fatbin >dup1.txt
"$FATLINK" inspect a/x.fatbin b/x.fatbin >dup2.txt
check "the listing is deterministic" cmp dup1.txt dup2.txt

# --json.
"$FATLINK" inspect --json --extract=json.d x.fatbin libmix.a >out.json
check "--json parses, has every field, one object per table row" python3 - <<'EOF'
import json, sys
d = json.load(open('out.json'))
keys = {'file', 'origin', 'section', 'container', 'offset', 'kind', 'arch',
        'version', 'flags', 'stored_size', 'size', 'compression', 'name', 'extracted'}
assert len(d) == 10, len(d)
for e in d:
    assert keys <= set(e), set(e) ^ keys
c = d[0]
assert (c['kind'], c['arch'], c['version'], c['compression'], c['container']) == \
    ('cubin', 'sm_80', '1.8', 'none', 'fatbin'), c
assert c['name'] == 'x.fatbin.0.sm_80.cubin' and c['extracted'] == 'json.d/x.fatbin.0.sm_80.cubin', c
bc = [e for e in d if e['container'] == 'offload-binary']
assert len(bc) == 6 and all(e['triple'] == 'nvptx64-nvidia-cuda' and e['version'] is None for e in bc)
assert all(e['size'] == len(open(e['extracted'], 'rb').read()) for e in d)
EOF
cc -c -x c /dev/null -o plain.o
check "no device code: said so" grep -qF "no fatbin or OffloadBinary found" <("$FATLINK" inspect plain.o)
check "no device code: --json gives []" python3 -c "import json,sys; sys.exit(json.loads(sys.stdin.read()) != [])" \
  < <("$FATLINK" inspect --json plain.o)

# -v, --help, --version.
"$FATLINK" inspect -v --extract=v.d x.fatbin >/dev/null 2>v.txt
check "-v: each file scanned" grep -qF "x.fatbin: 2 images" v.txt
check "-v: each file written" grep -qF "wrote v.d/x.fatbin.0.sm_80.cubin" v.txt
"$FATLINK" inspect --help >help.txt
for o in --json --extract= -v --help --version; do
  check "--help documents $o" grep -qF -- " $o" help.txt
done
check "--version" grep -q '^fatlink ' <("$FATLINK" inspect --version)
check "'fatlink --help' lists inspect" grep -q '^  inspect ' <("$FATLINK" --help)
check "no temporary files left" test -z "$(ls -A "$TMPDIR")"

# Diagnostics: truncated and corrupt inputs name the file and the offset;
# nothing is extracted.
head -c 100 x.fatbin > "$D/short.fatbin"  # the container header promises far more
expect_error "truncated fatbin" "'$D/short.fatbin': fatbin at offset 0x0 declares" \
  inspect --extract="$OUT" "$D/short.fatbin"
# The second entry's kind (u16 at its header's start) set to 7, no such kind.
BADOFF=$(python3 - x.fatbin "$D/badkind.fatbin" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
hs, = struct.unpack_from('<I', d, 16 + 4)
ps, = struct.unpack_from('<Q', d, 16 + 8)
struct.pack_into('<H', d, 16 + hs + ps, 7)
print(hex(16 + hs + ps))
open(sys.argv[2], 'wb').write(d)
EOF
)
expect_error "unknown entry kind" "'$D/badkind.fatbin': unknown fatbin entry kind 7 at offset $BADOFF" \
  inspect --extract="$OUT" "$D/badkind.fatbin"
cut_section nv.o .nv_fatbin 200 "$D/cut.o"
expect_error "host object with .nv_fatbin cut" \
  "'$D/cut.o section .nv_fatbin': fatbin at offset 0x0 declares" inspect --extract="$OUT" "$D/cut.o"
cut_section emb.o .llvm.offloading 100 "$D/cutemb.o"  # inside the first OffloadBinary
expect_error "object with .llvm.offloading cut" \
  "'$D/cutemb.o section .llvm.offloading offset 0'" inspect --extract="$OUT" "$D/cutemb.o"
head -c 3000 nv.o > "$D/short.o"  # section headers are past the end
expect_error "truncated object" "'$D/short.o': section header table goes past the end of the file" \
  inspect --extract="$OUT" "$D/short.o"
head -c 2000 libmix.a > "$D/short.a"
expect_error "truncated archive" "$D/short.a" inspect --extract="$OUT" "$D/short.a"
err=$("$FATLINK" inspect "$D/short.fatbin" x.fatbin "$D/cut.o" 2>&1 >/dev/null)
check "every broken file reported in one run" test "$(grep -c '^fatlink: error: ' <<<"$err")" -eq 2
err=$("$FATLINK" inspect $(seq -f "$D/missing%g.o" 1 25) 2>&1 >/dev/null)
check "at most 20 broken files reported" test "$(grep -c '^fatlink: error: cannot open' <<<"$err")" -eq 20
check "then: too many broken files" grep -qF "too many broken files, the first 20 shown" <<<"$err"
echo "not a container" > "$D/notes.txt"
expect_error "unknown file type" "$D/notes.txt: not a fatbin, OffloadBinary, ELF file or archive" \
  inspect "$D/notes.txt"
expect_error "missing file" "cannot open $D/nope.o" inspect "$D/nope.o"
expect_error "no inputs" "no input files" inspect
expect_error "--extract without a directory" "--extract needs a directory" inspect --extract= x.fatbin
expect_error "unknown option" "unknown option '--jsn': did you mean '--json'?" inspect --jsn x.fatbin
echo x > "$D/file"
expect_error "--extract into a file" "--extract=$D/file: exists and is not a directory" \
  inspect --extract="$D/file" x.fatbin

finish
