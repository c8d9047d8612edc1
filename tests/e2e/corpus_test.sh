#!/usr/bin/env bash
# corpus_test.sh: `fatlink device-link` on the corpus of realistic CUDA C++
# programs (testdata/cuda/corpus, docs/corpus.md) and a Rust crate calling
# into them. Each translation unit is compiled once per optimization level
# by clang-22's new offload driver: those whose code depends on
# __CUDA_ARCH__ (their own guards, or cuda_bf16.h's) for sm_75, sm_80 and
# sm_90 (sm_100 and sm_120 take the sm_90 images), cccl.cu for all five
# sm targets, the others for sm_75 only (one image serves every target), to
# keep the test's compile time down. Each program is then linked at -O0 and -O3 for sm_75, sm_80,
# sm_90, sm_100, sm_120 and compute_120.
# Checked per program and level:
#   - fatlink exits 0 and prints nothing;
#   - the host object fatlink writes carries a cubin for every sm target
#     (ptxas accepted each) and the compute_120 PTX, and each cubin defines
#     every expected kernel as an entry: read by NVIDIA's cuobjdump, not by
#     fatlink; ptxas accepts the compute_120 PTX too (what a driver would
#     JIT);
#   - every target's PTX (kept by --save-temps) has every kernel's .entry;
#   - the PTX contains what the program's idioms must produce (shfl.sync,
#     redux.sync on sm_80+ only, atom.sys, wmma.mma, cp.async, bmsk ...).
# Every check reads a file whose existence it checks first, so a missing
# output fails the test instead of passing a negative grep.
source "$(dirname "$0")/testlib.sh"
need_tool "$CLANG"
need_tool "$RUSTC"
# cuobjdump is not in the CUDA 13.0 image: scripts/setup.sh unpacks it.
CUOBJDUMP=$(command -v cuobjdump ||
  echo "${FATLINK_DEPS_DIR:-$HOME/.cache/fatlink/deps}/cuobjdump/bin/cuobjdump")
[ -x "$CUOBJDUMP" ] || {
  echo "FAIL: cuobjdump not found (neither on PATH nor $CUOBJDUMP): run scripts/setup.sh"; exit 1; }
CORPUS="$TESTDATA/cuda/corpus"
PTXAS="$CUDA/bin/ptxas"
ARCHS=sm_75,sm_80,sm_90,sm_100,sm_120,compute_120
TARGETS="sm_75 sm_80 sm_90 sm_100 sm_120"
JIT=compute_120 # the PTX target in ARCHS, JIT-compiled for sm_120
OBJ="$WORK/obj"
mkdir -p "$OBJ" "$WORK/dev"

# The offload arches a TU is compiled for.
offload_archs() {
  case "$1" in
  # CUB's EmptyKernel is empty by design: compiled for fewer arches than the
  # targets, fatlink warns that it may have lost arch-gated code.
  cccl) echo sm_75,sm_80,sm_90,sm_100,sm_120 ;;
  warp_coop | atomics | tensor_async | numerics) echo sm_75,sm_80,sm_90 ;;
  *) echo sm_75 ;;
  esac
}

# One CUDA C++ TU to a host object with device bitcode for its offload
# arches: corpus_obj TU OPT (CCCL, which cooperative_groups needs too, lives
# in include/cccl in CUDA 13).
corpus_obj() {
  "$CLANG" -x cuda --cuda-path="$CUDA" -Wno-unknown-cuda-version -std=c++17 \
    -I"$CUDA/include/cccl" --offload-new-driver -fgpu-rdc -foffload-lto \
    --offload-arch="$(offload_archs "$1")" "-$2" -c "$CORPUS/$1.cu" \
    -o "$OBJ/$1.$2.o" 2>"$OBJ/$1.$2.log"
}

# cccl.cu first: it takes longest (CUB and thrust).
TUS="cccl smem_scan smem_histogram warp_coop atomics tensor_async numerics
  texsurf dispatch_a dispatch_b dynpar"

# Compile every TU at both levels, two at a time (cccl.cu dominates).
compile_start=$SECONDS
jobs_running=0
for opt in O0 O3; do
  for tu in $TUS; do
    corpus_obj "$tu" "$opt" &
    jobs_running=$((jobs_running + 1))
    if [ $jobs_running -ge 2 ]; then wait -n; jobs_running=$((jobs_running - 1)); fi
  done
done
wait
for opt in O0 O3; do
  for tu in $TUS; do
    check "clang-22 -$opt compiles $tu.cu for $(offload_archs $tu)" test -s "$OBJ/$tu.$opt.o"
    if [ -s "$OBJ/$tu.$opt.log" ]; then
      fail "clang-22 -$opt $tu.cu: diagnostics: $(head -c 1500 "$OBJ/$tu.$opt.log")"
    else
      pass "clang-22 -$opt $tu.cu: no diagnostics"
    fi
  done
done
echo "compiled the corpus in $((SECONDS - compile_start)) s"

rust_crate minicore &&
  rust_crate corpus_rs --extern minicore="$WORK/dev/libminicore.rlib" ||
  fail "building the Rust crate corpus_rs"

# The PTX of one function, up to the next function: ptx_body FILE NAME.
# (testlib's ptx_function stops at the first line starting with "}", which
# in inline PTX such as cuda_fp16.h's `{fma.rn.f16 ...\n}` is not the end.)
ptx_body() {
  awk -v name="$2" '
    on && /^([ \t]*\/\/ \.globl|\.visible|\.weak|\.func|\.entry)/ { exit }
    $0 ~ "(\\.entry|\\.func)[^(]*[ \t]" name "\\(" { on = 1 }
    on { print }' "$1"
}

# Checks on one program's output directory.
# has_kernels DIR KERNEL...: every target has every kernel.
has_kernels() {
  local dir="$1" t k f entries before=$FAILED; shift
  if ! "$CUOBJDUMP" --list-elf --list-ptx "$dir/kernels.o" >"$dir/list.txt" 2>&1 ||
     ! "$CUOBJDUMP" -symbols "$dir/kernels.o" >"$dir/symbols.txt" 2>&1; then
    fail "$dir: cuobjdump cannot read kernels.o: $(head -3 "$dir/list.txt" "$dir/symbols.txt")"
    return
  fi
  if [ -n "$JIT" ]; then
    grep -Eq '^PTX file +[0-9]+: .*\.sm_120\.ptx$' "$dir/list.txt" ||
      fail "$dir: kernels.o has no compute_120 PTX"
  fi
  # "arch = sm_XX" opens each cubin's symbols; kernels are STO_ENTRY.
  entries=$(awk '/^arch = / { arch = $3 } /STT_FUNC .*STO_ENTRY/ { print arch, $NF }' "$dir/symbols.txt")
  for t in $TARGETS; do
    grep -Eq "^ELF file +[0-9]+: .*\.$t\.cubin\$" "$dir/list.txt" ||
      { fail "$dir: kernels.o has no $t cubin"; continue; }
    for k in "$@"; do
      grep -qx "$t $k" <<<"$entries" || fail "$dir: the $t cubin does not define kernel $k"
    done
  done
  for t in $TARGETS $JIT; do
    f=$(ptx_of "$dir" "$t")
    [ -n "$f" ] || { fail "$dir: no $t PTX"; continue; }
    for k in "$@"; do
      grep -q "^\.visible \.entry $k(" "$f" || fail "$dir: $t PTX has no .entry $k"
    done
  done
  [ $FAILED -eq $before ] && pass "$dir: every target has kernels $*"
  [ -n "$JIT" ] || return
  f=$(ptx_of "$dir" compute_120)
  if [ -n "$f" ] && "$PTXAS" -arch=sm_120 "$f" -o "$dir/jit.cubin"; then
    pass "$dir: ptxas accepts the compute_120 PTX for sm_120"
  else
    fail "$dir: ptxas rejects the compute_120 PTX"
  fi
}

# ptx_of DIR TARGET: the path of the target's PTX, which --save-temps
# keeps as kernels.<target>.ptx (named after the output, kernels.o). A link
# of more than 8 kernels is compiled in partitions, one PTX each
# (kernels.sm_80.part0.ptx, ...): they are joined into one file to check.
# Prints nothing if there is none.
ptx_of() {
  local dir="$1" t="$2"
  if [ -s "$dir/kernels.$t.ptx" ]; then
    echo "$dir/kernels.$t.ptx"
  elif compgen -G "$dir/kernels.$t.part*.ptx" >/dev/null; then
    cat "$dir/kernels.$t".part*.ptx >"$dir/joined.$t.ptx" && echo "$dir/joined.$t.ptx"
  fi
}

# ptx_has DIR "TARGETS" REGEX WHAT: each target's PTX matches REGEX.
ptx_has() {
  local dir="$1" targets="$2" re="$3" what="$4" t f bad=""
  for t in $targets; do
    f=$(ptx_of "$dir" "$t")
    [ -n "$f" ] && grep -Eq -- "$re" "$f" || bad="$bad $t"
  done
  if [ -z "$bad" ]; then pass "$dir: $what ($targets)"; else fail "$dir: $what: not in$bad"; fi
}

# ptx_lacks DIR "TARGETS" REGEX WHAT: each target's PTX exists and does not
# match REGEX.
ptx_lacks() {
  local dir="$1" targets="$2" re="$3" what="$4" t f bad=""
  for t in $targets; do
    f=$(ptx_of "$dir" "$t")
    [ -n "$f" ] && ! grep -Eq -- "$re" "$f" || bad="$bad $t"
  done
  if [ -z "$bad" ]; then pass "$dir: $what ($targets)"; else fail "$dir: $what: fails in$bad"; fi
}

# link NAME OPT INPUTS...: fatlink device-link into NAME.OPT/kernels.o, a
# host object, keeping each target's PTX there (--save-temps); passes when
# it exits 0 with no output on stderr (the message is shown otherwise) and
# returns non-zero otherwise.
link() {
  local name="$1" opt="$2" dir="$1.$2"; shift 2
  local t0=$SECONDS
  mkdir -p "$dir"
  "$FATLINK" device-link --arch=$ARCHS "-$opt" --save-temps "$@" -o "$dir/kernels.o" 2>"$dir.err"
  local rc=$?
  if [ $rc -eq 0 ] && [ ! -s "$dir.err" ]; then
    pass "$dir: device-link exits 0 ($((SECONDS - t0)) s)"
  else
    fail "$dir: device-link exit $rc: $(head -c 2000 "$dir.err")"
    return 1
  fi
}

ALL="$TARGETS compute_120"
SM80UP="sm_80 sm_90 sm_100 sm_120 compute_120"
SM90UP="sm_90 sm_100 sm_120 compute_120"

# Dynamic shared memory declared in two TUs, static shared memory.
check_shared_memory() {
  local d="$1"
  has_kernels $d block_scan_dyn transpose_tiled histogram_dyn stencil_dyn
  ptx_has $d "$ALL" '^\.extern \.shared .*corpus_smem\[\]' "extern __shared__ corpus_smem is dynamic shared memory"
  ptx_has $d "$ALL" '^\.extern \.shared .*hist_bins\[\]' "extern __shared__ hist_bins is dynamic shared memory"
  ptx_has $d "$ALL" '\.shared \.align 4 \.b8 .*tile\[4224\]' "transpose's static 32x33 tile"
  # -O3 addresses shared memory directly; -O0 through generic pointers.
  if [ "$2" = O3 ]; then
    ptx_has $d "$ALL" 'atom\.shared\.add\.u32' "shared-memory histogram atomics"
  else
    ptx_has $d "$ALL" 'cvta\.shared' "generic pointers into shared memory"
    ptx_has $d "$ALL" 'atom\.add\.u32' "histogram atomics (generic)"
  fi
}

# Cooperative groups, shuffles, votes, match, __reduce_*_sync.
check_warp_coop() {
  local d="$1"
  has_kernels $d warp_reduce_shfl warp_vote_match cg_block_reduce grid_sync_normalize
  ptx_has $d "$ALL" 'shfl\.sync\.bfly\.b32' "butterfly shuffles"
  ptx_has $d "$ALL" 'vote\.sync\.ballot\.b32' "ballot"
  ptx_has $d "$ALL" 'vote\.sync\.all\.pred' "__all_sync"
  ptx_has $d "$ALL" 'match\.any\.sync\.b32' "__match_any_sync"
  ptx_has $d "$ALL" 'match\.all\.sync\.b32' "__match_all_sync"
  ptx_has $d "$ALL" 'activemask\.b32' "__activemask"
  ptx_has $d "$SM80UP" 'redux\.sync\.add\.[su]32' "__reduce_add_sync on sm_80+"
  ptx_has $d "$SM80UP" 'redux\.sync\.(min|max)\.u32' "__reduce_min/max_sync on sm_80+"
  ptx_has $d "$SM80UP" 'redux\.sync\.xor\.b32' "__reduce_xor_sync on sm_80+"
  ptx_lacks $d "sm_75" 'redux\.sync' "no redux.sync before sm_80"
  ptx_has $d "$ALL" 'atom\.(global\.)?add\.u32|red\.(global\.)?add\.u32|atom\..*\.add|red\.release' "grid.sync's barrier atomics"
}

# Atomics: every width and scope, cuda::atomic_ref.
check_atomics() {
  local d="$1"
  has_kernels $d atomic_widths atomic_scopes atomic_ref_orders spinlock_sum
  ptx_has $d "$ALL" 'atom\.sys\.(global\.)?add\.u64' "atomicAdd_system (64-bit)"
  ptx_has $d "$ALL" 'atom\.sys\.(global\.)?exch\.b32' "atomicExch_system"
  ptx_has $d "$ALL" 'atom\.cta\.(global\.)?add\.[su]32' "atomicAdd_block"
  ptx_has $d "$ALL" 'atom\.cta\.(global\.)?cas\.b32' "atomicCAS_block"
  ptx_has $d "$ALL" 'atom\.(global\.)?add\.f64' "double atomicAdd"
  ptx_has $d "$ALL" 'atom\.(global\.)?add\.f32' "float atomicAdd"
  # LLVM expands the 16-bit CAS (sm_70+) into a 32-bit CAS loop.
  ptx_has $d "$ALL" 'atom\.(relaxed\.sys\.)?(global\.)?cas\.b32' "16-bit atomicCAS as a 32-bit CAS"
  ptx_has $d "$ALL" 'atom\.(global\.)?add\.noftz\.f16x2' "__half2 atomicAdd"
  # bf16 atomicAdd: a CAS loop before sm_90, one instruction from sm_90 on.
  ptx_has $d "$SM90UP" 'atom\.(global\.)?add\.noftz\.bf16' "bf16 atomicAdd on sm_90+"
  ptx_has $d "$ALL" 'atom\.(global\.)?(inc|dec)\.u32' "atomicInc/atomicDec"
  ptx_has $d "$ALL" 'atom\.(global\.)?(max|min)\.s64' "64-bit atomicMax/Min"
  ptx_has $d "$ALL" 'atom\.add\.acq_rel\.sys|atom\.acq_rel\.sys\.(global\.)?add' "atomic_ref<system>.fetch_add(acq_rel)"
  ptx_has $d "$ALL" 'st\.release\.gpu' "atomic_ref<device>.store(release)"
  ptx_has $d "$ALL" 'ld\.acquire\.gpu' "atomic_ref<device>.load(acquire)"
  ptx_has $d "$ALL" 'atom\.(.*\.)?cta\.(shared\.)?add|atom\.shared.*add' "atomic_ref<block> on shared memory"
}

# CCCL: CUB block/warp primitives, thrust in device code.
check_cccl() {
  local d="$1"
  has_kernels $d cub_block_sort_scan cub_warp_sum thrust_seq_sort
  ptx_has $d "$ALL" 'bmsk\.clamp\.b32' "cuda::bitmask's inline PTX bmsk"
  ptx_has $d "$ALL" 'shfl\.sync' "WarpReduce shuffles"
}

# Tensor cores, cp.async, nanosleep, clusters.
check_tensor_async() {
  local d="$1"
  has_kernels $d wmma_gemm_f16 wmma_gemm_bf16 dmma_gemm_f64 mma_bf16_tile cp_async_stage cluster_exchange
  ptx_has $d "$ALL" 'wmma\.mma\.sync\.aligned\.row\.col\.m16n16k16\.f32\.f32' "wmma half"
  ptx_has $d "$SM80UP" 'wmma\.mma\.sync\.aligned\.row\.col\.m16n16k16\.f32\.bf16' "wmma bf16 on sm_80+"
  ptx_has $d "$SM80UP" 'wmma\.mma\.sync\.aligned\.row\.row\.m8n8k4\.f64' "wmma double (DMMA) on sm_80+"
  ptx_has $d "$SM80UP" 'mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32' "inline PTX mma.sync on sm_80+"
  ptx_has $d "$SM80UP" 'cp\.async\.(ca|cg)\.shared\.global' "cp.async on sm_80+"
  ptx_has $d "$SM80UP" 'cp\.async\.wait_group' "cp.async.wait_group on sm_80+"
  ptx_lacks $d "sm_75" 'cp\.async|\.bf16|m8n8k4\.f64' "no cp.async, bf16 or DMMA before sm_80"
  ptx_has $d "$ALL" 'nanosleep\.u32' "__nanosleep"
  ptx_has $d "$SM90UP" 'barrier\.cluster\.arrive' "cluster barrier on sm_90+"
  ptx_has $d "$SM90UP" 'mapa\.shared::cluster' "distributed shared memory on sm_90+"
  ptx_lacks $d "sm_75 sm_80" 'barrier\.cluster|mapa|%cluster_' "no cluster code before sm_90"
}

# fp16/bf16, libdevice float and double, printf, assert, malloc/free.
check_numerics() {
  local d="$1"
  has_kernels $d half_bf16_math math_float math_double device_heap_printf
  ptx_has $d "$ALL" 'fma\.rn\.f16x2' "__hfma2"
  ptx_has $d "$ALL" 'ex2\.approx' "h2exp / expf"
  ptx_has $d "$ALL" 'call(\.uni)? .*vprintf' "printf calls vprintf"
  ptx_has $d "$ALL" 'call(\.uni)? .*malloc' "device malloc"
  ptx_has $d "$ALL" 'call(\.uni)? .*free' "device free"
  ptx_has $d "$ALL" 'call(\.uni)? .*__assertfail' "assert"
  ptx_has $d "$ALL" '\.f64' "double math"
  ptx_lacks $d "$ALL" '\.extern .*__nv_' "every libdevice function linked in"
}

# Textures, surfaces, constant memory, managed memory.
check_texsurf() {
  local d="$1"
  has_kernels $d tex_sample surf_blur constant_filter managed_accumulate
  ptx_has $d "$ALL" 'tex\.2d\.v4\.f32\.f32' "tex2D<float> on a texture object"
  ptx_has $d "$ALL" 'tex\.1d\.v4\.f32\.s32' "tex1Dfetch<float4>"
  ptx_has $d "$ALL" 'suld\.b\.2d\.b32\.clamp' "surf2Dread"
  ptx_has $d "$ALL" 'sust\.b\.2d\.b32' "surf2Dwrite"
  ptx_has $d "$ALL" '^\.visible \.const .*filter_taps\[36\]' "__constant__ filter_taps host-visible"
  ptx_has $d "$ALL" '^\.visible \.const .*lookup\[64\]' "__constant__ lookup host-visible"
  # -O3 reads the constant bank directly; -O0 through a generic pointer.
  ptx_has $d "$ALL" 'ld\.const|cvta\.const' "constant memory reads"
  ptx_has $d "$ALL" 'atom\.sys\.(global\.)?or\.b32' "atomicOr_system on managed memory"
}

# Templates across TUs, function pointers, virtual functions.
check_dispatch() {
  local d="$1"
  has_kernels $d reduce_sum_max lerp_kernel_f32 apply_ops shapes_virtual reduce_max_f32 lerp_kernel_f64 fold_with_table
  ptx_has $d "$ALL" '^\.visible \.global .*op_table' "the function-pointer table stays host-visible"
  ptx_has $d "$ALL" 'call(\.uni)? (\(retval0\), )?%rd[0-9]+' "indirect calls through op_table"
  ptx_has $d "$ALL" 'prototype_' "call prototypes for the indirect calls"
}

# Rust calling the CUDA C++ corpus through extern "C", linked with every
# TU whose functions it calls (and so with their kernels too).
check_rust_mix() {
  local d="$1" opt="$2" before=$FAILED t f body re callee
  has_kernels $d rust_corpus_mix warp_reduce_shfl math_double atomic_scopes apply_ops shapes_virtual
  for t in $ALL; do
    f=$(ptx_of "$d" "$t")
    body=$([ -n "$f" ] && ptx_body "$f" rust_corpus_mix)
    if [ -z "$body" ]; then
      fail "$d: $t: no rust_corpus_mix"
      continue
    fi
    if [ "$opt" = O3 ]; then
      # Inlined from CUDA C++ into the Rust kernel: shuffles, the vote,
      # half fma, the system atomic; no call of a corpus_ function is left
      # (the indirect call through op_table and libdevice's own internal
      # helpers remain).
      for re in 'shfl\.sync\.bfly' 'vote\.sync\.ballot' 'fma\.rn\.f16' 'atom\.sys\.(global\.)?add\.u64' \
        'call(\.uni)? \(retval0\), %rd[0-9]+'; do
        grep -Eq "$re" <<<"$body" || fail "$d: $t: rust_corpus_mix lacks $re"
      done
      if grep -q 'call.*corpus_' <<<"$body"; then
        fail "$d: $t: rust_corpus_mix still calls $(grep -o 'corpus_[a-z_]*' <<<"$body" | sort -u | tr '\n' ' ')"
      fi
    else
      for callee in corpus_warp_sum corpus_apply_op corpus_half_fma corpus_special corpus_warp_vote corpus_count_system; do
        grep -q "call.*$callee" <<<"$body" || fail "$d: $t: -O0 rust_corpus_mix does not call $callee"
      done
    fi
  done
  [ $FAILED -eq $before ] && pass "$d: rust_corpus_mix checked in every target"
}

# Dynamic parallelism (dynpar.cu: dp_parent launching dp_child_scale and a
# tail-launched dp_finish): the launches call the device runtime, which
# fatlink takes from the toolkit's libcudadevrt.a and nvlink links into
# each cubin. Linked without compute_120: the runtime is machine code, so
# fatlink refuses PTX targets for a program that calls it.
check_dynpar() {
  local d="$1" ALL="$TARGETS"
  has_kernels $d dp_parent dp_child_scale dp_finish
  ptx_has $d "$ALL" 'call(\.uni)? .*__cudaCDP2LaunchDevice' "device-side launches"
  ptx_has $d "$ALL" 'call(\.uni)? .*__cudaCDP2GetParameterBuffer' "parameter buffers"
}

# The programs: the TUs each links.
program_tus() {
  case "$1" in
  shared_memory) echo smem_scan smem_histogram ;;
  warp_coop) echo warp_coop ;;
  atomics) echo atomics ;;
  cccl) echo cccl ;;
  tensor_async) echo tensor_async ;;
  numerics) echo numerics ;;
  texsurf) echo texsurf ;;
  dispatch) echo dispatch_a dispatch_b ;;
  rust_mix) echo warp_coop numerics atomics dispatch_a dispatch_b ;;
  esac
}

for opt in O0 O3; do
  for prog in shared_memory warp_coop atomics cccl tensor_async numerics texsurf dispatch rust_mix; do
    inputs=$(for tu in $(program_tus $prog); do echo "$OBJ/$tu.$opt.o"; done)
    [ $prog = rust_mix ] &&
      inputs="$WORK/dev/libcorpus_rs.rlib $WORK/dev/libminicore.rlib $inputs"
    # A failed link is one failure; its outputs are not checked.
    link $prog $opt $inputs && check_$prog $prog.$opt $opt
  done
  ARCHS=${ARCHS%,compute_120} JIT="" link dynpar $opt "$OBJ/dynpar.$opt.o" &&
    JIT="" check_dynpar dynpar.$opt $opt
done


check "no temporary files left" test -z "$(ls -A "$TMPDIR")"
echo "corpus test ran in $SECONDS s"
finish
