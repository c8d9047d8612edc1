#!/usr/bin/env bash
# device_link_test.sh: `fatlink device-link` on the bundled Rust + CUDA C++
# example, built at test time: every target is compiled and accepted by
# ptxas, the cross-language call is inlined, dead code is gone, libdevice is
# linked lazily, and the outputs do not depend on -j.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
ARCHS=sm_75,sm_80,sm_90,sm_100,sm_120,compute_120
TARGETS="sm_75 sm_80 sm_90 sm_100 sm_120"

# The main job: Rust crates + CUDA C++ bitcode -> five cubins and JIT PTX.
"$FATLINK" device-link --arch=$ARCHS $RLIBS "$D/softplus.bc" -o out \
  --emit-ptx --json=out.json 2>err.txt
check "device-link exits 0" test $? -eq 0
check "no diagnostics on success" test ! -s err.txt
for t in $TARGETS; do
  # ptxas accepted the target: a cubin (ELF) for it exists.
  check "$t cubin is ELF" bash -c "head -c4 out/$t.cubin | grep -q ELF"
  check "$t PTX targets $t" grep -q "^\.target $t\$" out/$t.ptx
done
check "compute_120 PTX exists" grep -q '^\.target sm_120$' out/compute_120.ptx
check "no cubin for compute_120" test ! -e out/compute_120.cubin
# clang compiled softplus.bc for PTX ISA 8.8 (+ptx88: CUDA 12.9's): every
# target is generated for it, above its arch's minimum.
check "PTX ISA is the inputs' (sm_75: 8.8)" grep -q '^\.version 8\.8$' out/sm_75.ptx
check "PTX ISA is the inputs' (sm_120: 8.8)" grep -q '^\.version 8\.8$' out/sm_120.ptx
# Rust bitcode names no PTX ISA: each target gets its arch's minimum.
"$FATLINK" device-link --arch=sm_75,sm_120 --emit-ptx "$D/libvecmath.rlib" "$D/libminicore.rlib" -o rust_only
check "PTX ISA is the arch minimum without +ptx inputs (sm_75: 6.3)" grep -q '^\.version 6\.3$' rust_only/sm_75.ptx
check "PTX ISA is the arch minimum without +ptx inputs (sm_120: 8.7)" grep -q '^\.version 8\.7$' rust_only/sm_120.ptx

for t in $TARGETS compute_120; do
  for k in vec_add vec_sqrt_sin saxpy rust_softplus cuda_scale; do
    check "$t has kernel $k from its crate or .cu" grep -q "\.entry $k(" out/$t.ptx
  done
  # Rust -> CUDA C++ -> libdevice expf/logf, all inlined: no call is left.
  check "$t rust_softplus has no call" kernel_has_no_call out/$t.ptx rust_softplus
  check "$t saxpy inlined vecmath::twice" kernel_has_no_call out/$t.ptx saxpy
  check "$t cuda_scale inlined cuda_softplus" kernel_has_no_call out/$t.ptx cuda_scale
  for dead in vecmath_unused_helper never_called cuda_softplus twice; do
    check "$t dropped unused $dead" lacks "$dead" out/$t.ptx
  done
  check "$t keeps the host-visible global" grep -q 'scale_factor' out/$t.ptx
  check "$t has no libdevice symbol left" lacks __nv_ out/$t.ptx
done

# libdevice is linked lazily: exactly what the Rust crate called.
check "json lists libdevice functions used" \
  python3 -c "import json,sys; d=json.load(open('out.json')); sys.exit(d['libdevice'] != ['__nv_sin','__nv_sqrtf'])"
check "json lists every kernel with parameter sizes" \
  python3 -c "import json,sys; d=json.load(open('out.json')); k={x['name']:x['param_sizes'] for x in d['kernels']}; sys.exit(k != {'cuda_scale':[8,4],'rust_softplus':[8,8],'saxpy':[4,8,8],'vec_add':[8,8,8],'vec_sqrt_sin':[8,8,8]})"
check "json has a cubin size per sm target" \
  python3 -c "import json,sys; d=json.load(open('out.json')); sys.exit(not all(t['cubin_size']>0 for t in d['targets'] if t['kind']=='cubin'))"
check "no temporary files left" test -z "$(ls -A "$TMPDIR")"

# Determinism: -j1 and -j2 give the same bytes; so does a second run.
"$FATLINK" device-link --arch=$ARCHS $RLIBS "$D/softplus.bc" -o j1 -j1 --emit-ptx
"$FATLINK" device-link --arch=$ARCHS $RLIBS "$D/softplus.bc" -o j2 -j 2 --emit-ptx
"$FATLINK" device-link --arch=$ARCHS $RLIBS "$D/softplus.bc" -o j8 --jobs=8 --emit-ptx
check "-j1 and -j2 outputs are identical" diff -r j1 j2
check "-j1 and -j8 outputs are identical" diff -r j1 j8
check "-j2 output equals the default run" diff -r j2 out

# --cache-dir: a second identical link is served from the cache, byte for
# byte (outputs and summary).
"$FATLINK" device-link -v --arch=$ARCHS $RLIBS "$D/softplus.bc" -o cached1 --emit-ptx --cache-dir=dlcache --json=c1.json 2>dl1.log
"$FATLINK" device-link -v --arch=$ARCHS $RLIBS "$D/softplus.bc" -o cached2 --emit-ptx --cache-dir=dlcache --json=c2.json 2>dl2.log
check "--cache-dir: miss, then hit" bash -c "grep -q '^cache: miss' dl1.log && grep -q '^cache: hit' dl2.log"
check "--cache-dir: the hit runs nothing" lacks ptxas dl2.log
check "--cache-dir: same files as without the cache" bash -c "diff -r cached1 out && diff -r cached2 out"
check "--cache-dir: same summary" bash -c "diff <(sed 's/cached1/X/' c1.json) <(sed 's/cached2/X/' c2.json)"

# Partitioned code generation: the optimized module is split into
# partitions that share nothing, each compiled alone (ptxas -c) and cached,
# then joined by nvlink.
"$FATLINK" device-link -v --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" \
  -o part.fatbin --partitions=4 --cache-dir=pcache 2>p1.log
check "partitions: split in several" test "$(grep -c '^partition ' p1.log)" -ge 2
check "partitions: each assembled relocatable" grep -q "ptxas -arch=sm_80 -O3 -c " p1.log
check "partitions: joined by nvlink" grep -q "nvlink -arch=sm_90 " p1.log
"$FATLINK" inspect part.fatbin --extract=part_x >/dev/null
for t in sm_80 sm_90; do
  c=$(ls part_x/*.$t.cubin)
  check "partitions: $t cubin is an executable ELF" bash -c "readelf -h $c | grep -q 'EXEC'"
  for k in vec_add vec_sqrt_sin saxpy rust_softplus cuda_scale scale_factor; do
    check "partitions: $t defines $k exactly once" \
      test "$(readelf -sW $c | awk '$7 != "UND"' | grep -c " $k\$")" -eq 1
  done
done
"$FATLINK" device-link --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" \
  -o part_j1.fatbin --partitions=4 -j1
check "partitions: same bytes with -j1 and without the cache" cmp part.fatbin part_j1.fatbin
# Another compression changes the link's key, not the partitions' code:
# every partition comes from the cache and nothing is assembled again.
"$FATLINK" device-link -v --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" \
  -o part_z3.fatbin --partitions=4 --cache-dir=pcache --compress=zstd-3 2>p2.log
check "partitions: cached code reused" \
  test "$(grep -c '^cache: hit' p2.log)" -eq "$(($(grep -c '^partition ' p1.log) * 2))"
check "partitions: no partition assembled again" lacks 'ptxas .* -c ' p2.log
"$FATLINK" inspect part_z3.fatbin --extract=part_z3x >/dev/null
check "partitions: cached code gives the same cubins" bash -c \
  "cmp part_x/*.sm_80.cubin part_z3x/*.sm_80.cubin && cmp part_x/*.sm_90.cubin part_z3x/*.sm_90.cubin"
# A damaged partition entry is noticed and rebuilt, never used.
victim=$(ls pcache/codegen | grep '^llvmcache-' | head -1)
printf 'garbage' >> "pcache/codegen/$victim"
"$FATLINK" device-link -v --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" \
  -o part_again.fatbin --partitions=4 --cache-dir=pcache --compress=zstd-5 2>p3.log
check "partitions: damaged entry detected" grep -q "^cache: corrupt entry .*$victim" p3.log
check "partitions: damaged entry rebuilt" grep -q "^cache: stored ${victim#llvmcache-}" p3.log
"$FATLINK" inspect part_again.fatbin --extract=part_ax >/dev/null
check "partitions: rebuilt code is the same" bash -c \
  "cmp part_x/*.sm_80.cubin part_ax/*.sm_80.cubin && cmp part_x/*.sm_90.cubin part_ax/*.sm_90.cubin"

# Shared PTX: with three or more plain sm targets, each partition's code is
# generated for the oldest and the newest arch; where the two agree (apart
# from .version/.target) the arches between reuse it. to_bf16's code differs
# per arch (cvt.rn.bf16.f32 from sm_80 on), so its partition is not shared;
# scale_add's is. Either way the bytes equal a link that generates every
# arch's own code (--ptx-per-arch).
cuda_obj bf16_convert.cu sm_75,sm_80,sm_90,sm_100 "$D/bf16.o"
BF_ARCHS=sm_75,sm_80,sm_90,sm_100
"$FATLINK" device-link -v --arch=$BF_ARCHS "$D/bf16.o" --partitions=3 \
  -o bf_shared.fatbin --cache-dir=bfcache 2>bf1.log
"$FATLINK" device-link -v --arch=$BF_ARCHS "$D/bf16.o" --partitions=3 \
  -o bf_own.fatbin --ptx-per-arch 2>bf2.log
check "shared PTX: two partitions, one kernel each" \
  test "$(grep -c '^partition .: 1 kernels' bf1.log)" -eq 2
check "shared PTX: scale_add's partition reused, to_bf16's not" \
  grep -q '^PTX: 6 generated, 2 reused' bf1.log
check "shared PTX: --ptx-per-arch generates every arch's own" \
  grep -q '^PTX: 8 generated, 0 reused' bf2.log
check "shared PTX: same fatbin as every arch's own code" cmp bf_shared.fatbin bf_own.fatbin
"$FATLINK" device-link --arch=$BF_ARCHS "$D/bf16.o" --partitions=3 \
  -o bf_j1.fatbin -j1
check "shared PTX: same bytes with -j1 and without the cache" cmp bf_shared.fatbin bf_j1.fatbin
# With only the middle arches' code missing from the cache (a link for the
# two ends filled it), the ends' code comes from the cache and is generated
# again only to decide, the same way: the same bytes whatever the cache held.
"$FATLINK" device-link --arch=sm_75,sm_100 "$D/bf16.o" --partitions=3 \
  -o bf_ends.fatbin --cache-dir=bfcache2
"$FATLINK" device-link -v --arch=$BF_ARCHS "$D/bf16.o" --partitions=3 \
  -o bf_mid.fatbin --cache-dir=bfcache2 2>bf3.log
check "shared PTX: the ends' cubins come from the cache" \
  test "$(grep -c '^cache: hit' bf3.log)" -eq 4
check "shared PTX: only the middle arches are assembled" \
  test "$(grep -c 'ptxas -arch=sm_[0-9]* -O3 -c' bf3.log)" -eq 4
check "shared PTX: the same decision with a partly filled cache" \
  grep -q '^PTX: 6 generated, 2 reused' bf3.log
check "shared PTX: same bytes whatever the cache held" cmp bf_shared.fatbin bf_mid.fatbin

# Partitions calling what the driver provides (printf, malloc, free,
# assert) and sharing a device global; and a program whose components all
# land in one partition (then it is optimized whole).
cuda_obj syscalls.cu sm_80 "$D/syscalls.o"
for n in 2 8; do
  "$FATLINK" device-link -v --arch=sm_80,compute_80 "$D/syscalls.o" --partitions=$n \
    -o sys$n.fatbin 2>sys$n.log
  check "partitions=$n with printf/malloc/assert: link succeeds" test -s sys$n.fatbin
  "$FATLINK" inspect sys$n.fatbin --extract=sys${n}_x >/dev/null
  for sym in sys_a sys_b sys_c counter; do
    check "partitions=$n: $sym defined once" \
      test "$(readelf -sW sys${n}_x/*.sm_80.cubin | awk '$7 != "UND"' | grep -c " $sym\$")" -eq 1
  done
done
check "syscalls: sys_a and sys_c (sharing counter) in one partition" \
  grep -q "^partition .: 2 kernels" sys8.log

# Inputs in a response file, and an rlib given through @file with options.
printf '%s\n' --arch=sm_80 -o rsp.cubin $RLIBS "$D/softplus.bc" > link.rsp
"$FATLINK" device-link @link.rsp
check "response file: cubin written" test -s rsp.cubin
check "response file: same cubin as the directory run" cmp rsp.cubin out/sm_80.cubin

# Single-file outputs.
"$FATLINK" device-link --arch=compute_90 -o one.ptx $RLIBS "$D/softplus.bc"
check "-o file.ptx for compute_90" grep -q '^\.target sm_90$' one.ptx

# Device code carried in a host object (clang --offload-new-driver
# -foffload-lto, sm_75 and sm_90 images): each target takes its best image.
"$FATLINK" device-link -v --arch=sm_75,sm_80,sm_90,sm_100 $RLIBS "$D/softplus.o" \
  -o offload 2>offload.log
check "offload object: link succeeds" test -s offload/sm_100.cubin
check "offload object: both images found" grep -q 'softplus.o(.llvm.offloading\[1\]) \[sm_90\]' offload.log
# softplus.cu does not look at __CUDA_ARCH__: its sm_75 and sm_90 images
# differ only in target-cpu/features, so all four targets share one link
# and one O3 run.
check "offload object: identical per-arch images share one optimized module" \
  grep -q 'optimized module for sm_75, sm_80, sm_90, sm_100:' offload.log
# arch_variant.cu does: its images differ, and each target takes its best.
cuda_obj arch_variant.cu sm_75,sm_90 "$D/arch_variant.o"
"$FATLINK" device-link -v --arch=sm_75,sm_80,sm_90,sm_100 "$D/arch_variant.o" \
  -o variant --emit-ptx 2>variant.log
check "per-arch images that differ: sm_75/sm_80 share the sm_75 image, sm_90/sm_100 the sm_90 one" \
  bash -c "grep -q 'optimized module for sm_75, sm_80:' variant.log && grep -q 'optimized module for sm_90, sm_100:' variant.log"
check "per-arch images that differ: sm_80 runs the sm_75 code" grep -q '750;' variant/sm_80.ptx
check "per-arch images that differ: sm_100 runs the sm_90 code" grep -q '900;' variant/sm_100.ptx

# -v prints every subcommand, runnable as printed.
check "-v prints the ptxas command of each target" \
  bash -c "[ \$(grep -c 'ptxas -arch=sm_[0-9]* -O3 .*\\.ptx -o .*\\.cubin' offload.log) -eq 4 ]"

# --save-temps keeps the linked and optimized bitcode and the PTX.
"$FATLINK" device-link --arch=sm_80 $RLIBS "$D/softplus.bc" -o temps/k.cubin --save-temps
check "--save-temps keeps linked bitcode" test -s temps/k.linked.bc
check "--save-temps keeps optimized bitcode" test -s temps/k.opt.sm_80.bc
check "--save-temps keeps PTX" grep -q '\.entry saxpy' temps/k.sm_80.ptx

# --time-trace writes a Chrome trace with the stages.
"$FATLINK" device-link --arch=sm_80,sm_90 $RLIBS "$D/softplus.bc" -o tt --time-trace=trace.json --time-trace-granularity=0
for stage in "Read inputs" "Link modules" "Optimize" "Codegen" "ptxas" "Write outputs"; do
  check "time trace has '$stage'" \
    python3 -c "import json,sys; d=json.load(open('trace.json')); sys.exit(not any(e.get('name')=='$stage' for e in d['traceEvents']))"
done

# -O0 keeps calls (nothing is inlined but always_inline), -O3 does not.
"$FATLINK" device-link --arch=sm_80 -O0 $RLIBS "$D/softplus.bc" -o o0.ptx
check "-O0 PTX still calls cuda_softplus" grep -q 'call.*cuda_softplus' o0.ptx

# --export-symbol keeps a function that would otherwise be dropped.
"$FATLINK" device-link --arch=sm_80 --export-symbol vecmath_unused_helper $RLIBS "$D/softplus.bc" -o export.ptx
check "--export-symbol keeps vecmath_unused_helper" grep -q '\.func .*vecmath_unused_helper' export.ptx

# Presets and the target table.
"$FATLINK" device-link --list-targets > targets.txt
check "--list-targets lists sm_90a with PTX 8.0" grep -Eq '^sm_90a +cubin +8\.0$' targets.txt
check "--list-targets lists compute_120" grep -Eq '^compute_120 +ptx +8\.7$' targets.txt
"$FATLINK" device-link --arch=all-major $RLIBS "$D/softplus.bc" -o major
check "all-major: one cubin per generation" \
  bash -c "[ \"\$(ls major | tr '\n' ' ')\" = 'compute_121.ptx sm_100.cubin sm_110.cubin sm_120.cubin sm_75.cubin sm_80.cubin sm_90.cubin ' ]"
"$FATLINK" device-link --arch=sm_90a "$D/libvecmath.rlib" "$D/libminicore.rlib" -o a.ptx
check "sm_90a target uses PTX 8.0" grep -q '^\.version 8\.0$' a.ptx
"$FATLINK" device-link --arch=sm_80 --ptx-version=8.0 $RLIBS "$D/softplus.bc" -o v80.ptx
check "--ptx-version overrides the PTX ISA" grep -q '^\.version 8\.0$' v80.ptx

# Packaged outputs: a fatbin and a host object.
"$FATLINK" device-link --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" -o whole.fatbin
"$FATLINK" device-link --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" -o whole.o --compress=none
check "-o .fatbin starts with the fatbin magic" bash -c "head -c4 whole.fatbin | od -An -tx1 | grep -q '50 ed 55 ba'"
check "-o .o is an ELF relocatable with .nv_fatbin" bash -c "readelf -S whole.o | grep -q '\.nv_fatbin'"
"$FATLINK" inspect whole.o > whole.txt
check "--compress=none stores entries uncompressed" lacks zstd whole.txt
check "--compress=none: three entries" test "$(grep -c 'sm_' whole.txt)" -eq 3

# Relocatable device code (clang -fgpu-rdc without -foffload-lto): the LTO
# part is assembled with ptxas -c and nvlink links it with the cubins.
cuda_obj_nolto softplus.cu sm_80,sm_90 "$D/softplus_nolto.o"
"$FATLINK" device-link -v --arch=sm_80,sm_90 $RLIBS "$D/softplus_nolto.o" -o nolto 2>nolto.log
check "relocatable cubins: link succeeds" test -s nolto/sm_90.cubin
check "relocatable cubins: ptxas -c then nvlink" \
  bash -c "grep -q 'ptxas -arch=sm_80 -O3 -c ' nolto.log && grep -q 'nvlink -arch=sm_80 ' nolto.log"
check "relocatable cubins: Rust and CUDA kernels in one cubin" \
  bash -c "readelf -s nolto/sm_80.cubin | grep -q ' rust_softplus\$' && readelf -s nolto/sm_80.cubin | grep -q ' cuda_scale\$'"
"$FATLINK" device-link --arch=sm_80,sm_90 -j1 $RLIBS "$D/softplus_nolto.o" -o nolto_j1
check "relocatable cubins: deterministic" diff -r nolto nolto_j1

# The device link split into actions (as the Bazel rules run it): one
# optimization to .bc, one --codegen-only run per target, then package.
# The result is byte-identical to the one-step link.
"$FATLINK" device-link --arch=sm_80,sm_90,compute_90 $RLIBS "$D/softplus.bc" -o split.bc
for t in sm_80 sm_90; do
  "$FATLINK" device-link --codegen-only --arch=$t split.bc -o split_$t.cubin
done
"$FATLINK" device-link --codegen-only --arch=compute_90 split.bc -o split_compute_90.ptx
"$FATLINK" package split_sm_90.cubin split_compute_90.ptx split_sm_80.cubin --kernels-from=split.bc \
  -o split.o --compress=none
check "split link: same host object as the one-step link" cmp split.o whole.o
"$FATLINK" package split_sm_80.cubin split_sm_90.cubin split_compute_90.ptx -o split.fatbin
check "split link: same fatbin as the one-step link" cmp split.fatbin whole.fatbin

finish
