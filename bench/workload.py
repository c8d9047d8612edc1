"""workload.py: generates and builds the synthetic device programs of the benchmark.

A workload is N device translation units. Unit i defines one leaf device
function `bench_f<i>(float, unsigned)` (a loop over a libdevice call (expf)) and,
in CUDA C++ units, a block reduction through shared memory with atomics and
one kernel `bench_k<i>` that stages its input in shared memory, loops over
the tile calling the leaf functions of two *other* units (i+1 and 7i+3 mod
N), and accumulates with atomics. Rust units (every fourth unit of a mixed
workload) are `#![no_core]` crates over testdata/rust/minicore.rs plus
bench/rust/benchcore.rs (the comparison lang items minicore lacks); their
kernel loops, calls libdevice's `__nv_expf` directly, calls the leaf of
another unit and the shared-memory/atomic reduction of the CUDA unit before
it (Rust has no way to name shared memory or atomics without `core`). Every
cross-unit call goes through an `extern "C"` symbol, so CUDA C++ calls Rust
and Rust calls CUDA C++.

The host side is one small C file per workload that calls a host launcher of
every CUDA C++ kernel, so the host link is a real one (cudart).

Everything is generated from the workload's parameters alone: the same
(N, mix, seed) always gives the same sources. `touch_unit` rewrites one
unit's constant to model an edit.
"""

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CUDA = os.environ.get("CUDA_PATH", "/usr/local/cuda")
CLANG = os.environ.get("CLANG", "clang++-22")
CC = os.environ.get("CC", "cc")
RUSTC = os.environ.get("RUSTC", "rustc")
NVCC = os.path.join(CUDA, "bin", "nvcc")
FATLINK = os.environ.get("FATLINK", os.path.join(ROOT, "bazel-bin/tools/fatlink/fatlink"))

TILE = 128  # threads per block; shared tile size


def is_rust(i, mix):
    return mix == "mixed" and i % 4 == 3


def _consts(i, edit):
    # Distinct, deterministic constants per unit so no two units fold alike.
    a = 0.5 + ((i * 37 + edit * 11) % 97) / 200.0
    b = 1.0 + ((i * 53 + 7) % 89) / 100.0
    trips = 6 + (i % 5)
    return a, b, trips


PRELUDE = """// Without nvcc, the CUDA wrapper headers are replaced by this prelude
// (clang -nocudainc): they cost ~1.5 s per arch per unit to parse, which
// would make building the N=256 workload take longer than benchmarking it.
#if !defined(__NVCC__)
#include <__clang_cuda_builtin_vars.h>
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __host__ __attribute__((host))
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};
extern "C" unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, unsigned long shm = 0, void *stream = 0);
extern "C" int cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);
extern "C" __device__ float __nv_expf(float);
#define bench_expf __nv_expf
#define bench_atomic_add(p, v) __nvvm_atom_add_gen_i((int *)(p), (int)(v))
#define bench_atomic_max(p, v) __nvvm_atom_max_gen_i((p), (v))
#define bench_bits(f) __builtin_bit_cast(int, f)
#else
#define bench_expf expf
#define bench_atomic_add atomicAdd
#define bench_atomic_max atomicMax
#define bench_bits __float_as_int
#endif
"""


def kernel_source(name, i, j1, j2, a, b, stride, reduce=None):
    """A kernel: stages its input in shared memory, loops over the tile
    calling the leaves of units j1 and j2, reduces (unit i's reduction, or
    the one named reduce) and finishes with an atomicMax."""
    reduce = reduce or f"bench_reduce{i}"
    return f"""extern "C" __global__ void {name}(const float *in, float *out, unsigned n, unsigned *count) {{
  __shared__ float stage[{TILE}];
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  stage[threadIdx.x] = g < n ? in[g] : 0.0f;
  __syncthreads();
  float acc = 0.0f;
  for (unsigned t = 0; t < (n & 7u) + 4u; ++t) {{
    float x = stage[(threadIdx.x + t * {stride}) % {TILE}];
    acc += bench_f{j1}(x, t & 3) * {b:.4f}f;
    if (x > {a:.4f}f)
      acc += bench_f{j2}(x * acc, t);
  }}
  float block = {reduce}(acc, count);
  if (g < n) {{
    out[g] = acc + block;
    bench_atomic_max((int *)count + 1, bench_bits(acc));
  }}
}}
"""


def reduce_source(name):
    """Block sum through shared memory; one atomic per block. Its tile is a
    device global, which joins every kernel that calls it in one component
    of fatlink's split."""
    return f"""extern "C" __device__ float {name}(float v, unsigned *count) {{
  __shared__ float tile[{TILE}];
  tile[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = {TILE // 2}; s > 0; s >>= 1) {{
    if (threadIdx.x < s)
      tile[threadIdx.x] += tile[threadIdx.x + s];
    __syncthreads();
  }}
  float sum = tile[0];
  if (threadIdx.x == 0)
    bench_atomic_add(count, 1u);
  return sum;
}}
"""


def extra_kernel(i, n, h, edit=0, own_reduce=False):
    """Kernel h (>= 1) of a unit with several (Workload(kernels=K)): the main
    kernel's shape with its own constants and callees, so that each adds
    about as much PTX as a unit of the one-kernel workload. With own_reduce
    it has a reduction (and shared tile) of its own, so that nothing joins
    it with the unit's other kernels."""
    a, b, _ = _consts(i * 31 + h, edit)
    j1, j2 = (i + h * 13 + 1) % n, (i * 7 + h * 5 + 3) % n
    reduce = f"bench_reduce{i}_{h}" if own_reduce else None
    return f"""
extern "C" __device__ float bench_f{j1}(float x, unsigned k);
extern "C" __device__ float bench_f{j2}(float x, unsigned k);
""" + (reduce_source(reduce) if reduce else "") + kernel_source(
        f"bench_k{i}_{h}", i, j1, j2, a, b, h % 7 + 3, reduce)


def cuda_source(i, n, mix, edit=0, kernels=1, leaf_edit=None, independent=False):
    """leaf_edit: the edit the unit's leaf has (default: edit; 0 with
    touch_unit(leaf=False), an edit of the unit's kernels alone).
    independent: each kernel has its own reduction (extra_kernel)."""
    a, b, trips = _consts(i, edit)
    leaf_a = _consts(i, edit if leaf_edit is None else leaf_edit)[0]
    j1, j2 = (i + 1) % n, (i * 7 + 3) % n
    extra = "".join(extra_kernel(i, n, h, edit, independent) for h in range(1, kernels))
    return f"""// unit {i} of {n} (generated by bench/workload.py; edit {edit})
{PRELUDE}
extern "C" __device__ float bench_f{j1}(float x, unsigned k);
extern "C" __device__ float bench_f{j2}(float x, unsigned k);

// The leaf: a data-dependent loop over a libdevice call.
extern "C" __device__ float bench_f{i}(float x, unsigned k) {{
  float acc = x;
#pragma unroll 2
  for (unsigned t = 0; t < k + {trips}u; ++t)
    acc = acc * {leaf_a:.4f}f + bench_expf(-acc * {b:.4f}f);
  return acc;
}}

// Block sum through shared memory; one atomic per block.
{reduce_source(f"bench_reduce{i}")}
{kernel_source(f"bench_k{i}", i, j1, j2, a, b, 5)}
extern "C" void bench_launch{i}(const float *in, float *out, unsigned n, unsigned *count) {{
  bench_k{i}<<<(n + {TILE - 1}) / {TILE}, {TILE}>>>(in, out, n, count);
}}
{extra}"""


def rust_source(i, n, edit=0):
    a, b, trips = _consts(i, edit)
    j1 = (i + 1) % n
    r = i - 1  # the CUDA unit before a Rust unit (i % 4 == 3, so i - 1 is CUDA)
    return f"""//! unit {i} of {n} (generated by bench/workload.py; edit {edit})
#![feature(no_core, abi_ptx)]
#![no_core]
#![allow(improper_ctypes)]

extern crate benchcore;
extern crate minicore;
use benchcore::*;
use minicore::*;

extern "C" {{
    fn __nv_expf(x: f32) -> f32;
    fn bench_f{j1}(x: f32, k: u32) -> f32;
    fn bench_reduce{r}(v: f32, count: *mut u32) -> f32;
}}

/// The leaf: a data-dependent loop over a libdevice call.
#[no_mangle]
pub extern "C" fn bench_f{i}(x: f32, k: u32) -> f32 {{
    let mut acc = x;
    let mut t: u32 = 0;
    while t < k + {trips} {{
        acc = acc * {a:.4f} + unsafe {{ __nv_expf(acc * {b:.4f}) }};
        t = t + 1;
    }}
    acc
}}

#[no_mangle]
pub unsafe extern "ptx-kernel" fn bench_k{i}(inp: *const f32, out: *mut f32, n: u32, count: *mut u32) {{
    let g = gpu::global_index();
    let x = if g < n {{ *offset(inp, g as usize) }} else {{ 0.0 }};
    let mut acc: f32 = 0.0;
    let mut t: u32 = 0;
    while t < n + 4 {{
        acc = acc + bench_f{j1}(x + acc, t) * {b:.4f};
        t = t + 1;
    }}
    let block = bench_reduce{r}(acc, count);
    if g < n {{
        *offset(out, g as usize) = acc + block;
    }}
}}
"""


def host_source(n, mix, variant=0):
    cu = [i for i in range(n) if not is_rust(i, mix)]
    decls = "\n".join(
        f"void bench_launch{i}(const float *, float *, unsigned, unsigned *);" for i in cu)
    calls = "\n".join(f"  bench_launch{i}(in, out, n, count);" for i in cu)
    return f"""/* host program (generated by bench/workload.py; variant {variant}) */
#include <stdio.h>
{decls}
int main(int argc, char **argv) {{
  static float in[1024], out[1024];
  static unsigned count[2];
  unsigned n = argc > 1 ? 1024u : 0u;
  (void)argv;
{calls}
  printf("variant {variant}: %f %u\\n", out[0], count[0]);
  return 0;
}}
"""


PLAIN_HOST = """/* a program with no device code at all */
#include <stdio.h>
int main(void) { puts("no device code"); return 0; }
"""


def run(cmd, cwd=None, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    return p.stdout


def write_if_changed(path, text):
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return False
    with open(path, "w") as f:
        f.write(text)
    return True


def stale(out, *inputs):
    if not os.path.exists(out):
        return True
    t = os.path.getmtime(out)
    return any(os.path.getmtime(x) > t for x in inputs)


class Workload:
    """One generated program in its own directory: sources and objects.

    arches: the arches device objects are compiled for (clang and nvcc).
    tools: which object sets to build ('clang', 'nvcc').
    """

    def __init__(self, root, n, mix, arches, tools=("clang",), jobs=2, kernels=1, independent=False):
        self.n, self.mix, self.arches, self.tools, self.jobs = n, mix, list(arches), tools, jobs
        self.kernels = kernels  # per CUDA C++ unit (the large program of scale.py)
        self.independent = independent  # each kernel its own reduction (extra_kernel)
        k = (f"-k{kernels}" if kernels > 1 else "") + ("-independent" if independent and kernels > 1 else "")
        self.dir = os.path.join(root, f"{mix}-n{n}{k}-{'_'.join(self.arches)}")
        os.makedirs(os.path.join(self.dir, "src"), exist_ok=True)
        os.makedirs(os.path.join(self.dir, "obj"), exist_ok=True)
        self.edits = {}
        self.leaf_edits = {}

    # -- paths --------------------------------------------------------------
    def src(self, name):
        return os.path.join(self.dir, "src", name)

    def obj(self, name):
        return os.path.join(self.dir, "obj", name)

    def cuda_units(self):
        return [i for i in range(self.n) if not is_rust(i, self.mix)]

    def rust_units(self):
        return [i for i in range(self.n) if is_rust(i, self.mix)]

    def clang_objs(self):
        objs = [self.obj(f"u{i}.clang.o") for i in self.cuda_units()]
        objs += [self.obj(f"r{i}.o") for i in self.rust_units()]
        if self.rust_units():
            objs.append(self.obj("rustcore.o"))
        return objs

    def nvcc_objs(self):
        return [self.obj(f"u{i}.nvcc.o") for i in self.cuda_units()]

    def host_obj(self, variant=0):
        return self.obj(f"main{variant}.o")

    # -- generation ---------------------------------------------------------
    def generate(self):
        for i in range(self.n):
            e = self.edits.get(i, 0)
            if is_rust(i, self.mix):
                write_if_changed(self.src(f"r{i}.rs"), rust_source(i, self.n, e))
            else:
                write_if_changed(self.src(f"u{i}.cu"), cuda_source(i, self.n, self.mix, e, self.kernels,
                                                                  self.leaf_edits.get(i, e), self.independent))
        for v in (0, 1):
            write_if_changed(self.src(f"main{v}.c"), host_source(self.n, self.mix, v))

    def touch_unit(self, i, edit, leaf=True):
        """Rewrites unit i with another constant (an edit) and rebuilds it.
        With leaf=False only the unit's kernels change, not its leaf, which
        other units' kernels call: an edit that stays inside the unit (CUDA
        C++ units only)."""
        self.edits[i] = edit
        self.leaf_edits[i] = edit if leaf else 0
        self.generate()
        self.build()

    # -- building -----------------------------------------------------------
    def _clang_cmd(self, i):
        return [CLANG, "-x", "cuda", f"--cuda-path={CUDA}", "-Wno-unknown-cuda-version",
                "-nocudainc", "--offload-new-driver", "-fgpu-rdc", "-foffload-lto",
                f"--offload-arch={','.join(self.arches)}", "-O3", "-c",
                self.src(f"u{i}.cu"), "-o", self.obj(f"u{i}.clang.o")]

    def _nvcc_cmd(self, i):
        gencode = []
        for a in self.arches:
            num = a.split("_")[1]
            gencode += ["-gencode", f"arch=compute_{num},code=lto_{num}"]
        return [NVCC, "-dc", "-O3", *gencode, "-x", "cu",
                self.src(f"u{i}.cu"), "-o", self.obj(f"u{i}.nvcc.o")]

    def _rustc(self, name, src, extra=()):
        env = dict(os.environ, RUSTC_BOOTSTRAP="1")
        run([RUSTC, "--target", "nvptx64-nvidia-cuda", "--edition", "2021", "-O",
             "--crate-type", "rlib", "--crate-name", name, src,
             "-L", self.obj(""), "-o", self.obj(f"lib{name}.rlib"), *extra], env=env)

    def build(self):
        self.generate()
        jobs = []
        for i in self.cuda_units():
            s = self.src(f"u{i}.cu")
            if "clang" in self.tools and stale(self.obj(f"u{i}.clang.o"), s):
                jobs.append(self._clang_cmd(i))
            if "nvcc" in self.tools and stale(self.obj(f"u{i}.nvcc.o"), s):
                jobs.append(self._nvcc_cmd(i))
        with ThreadPoolExecutor(self.jobs) as ex:
            list(ex.map(run, jobs))
        if self.rust_units():
            core_src = os.path.join(ROOT, "testdata/rust/minicore.rs")
            bcore_src = os.path.join(HERE, "rust/benchcore.rs")
            core = self.obj("libminicore.rlib")
            bcore = self.obj("libbenchcore.rlib")
            ext = ["--extern", f"minicore={core}"]
            if stale(core, core_src):
                self._rustc("minicore", core_src)
            if stale(bcore, bcore_src, core):
                self._rustc("benchcore", bcore_src, ext)
            if stale(self.obj("rustcore.o"), core, bcore):
                run([FATLINK, "embed", core, bcore, "-o", self.obj("rustcore.o")])

            def rust_unit(i):
                rlib = self.obj(f"libr{i}.rlib")
                if stale(rlib, self.src(f"r{i}.rs"), bcore):
                    self._rustc(f"r{i}", self.src(f"r{i}.rs"),
                                ext + ["--extern", f"benchcore={bcore}"])
                if stale(self.obj(f"r{i}.o"), rlib):
                    run([FATLINK, "embed", rlib, "-o", self.obj(f"r{i}.o")])
            with ThreadPoolExecutor(self.jobs) as ex:
                list(ex.map(rust_unit, self.rust_units()))
        for v in (0, 1):
            if stale(self.host_obj(v), self.src(f"main{v}.c")):
                run([CC, "-O2", "-c", self.src(f"main{v}.c"), "-o", self.host_obj(v)])
        plain_c = os.path.join(os.path.dirname(self.dir), "plain.c")
        write_if_changed(plain_c, PLAIN_HOST)
        self.plain_obj = os.path.join(os.path.dirname(self.dir), "plain.o")
        if stale(self.plain_obj, plain_c):
            run([CC, "-O2", "-c", plain_c, "-o", self.plain_obj])

    def device_bitcode(self, arch):
        """Per-unit device bitcode for the floor measurement (clang, one arch)."""
        out = []
        jobs = []
        for i in self.cuda_units():
            bc = self.obj(f"u{i}.{arch}.bc")
            out.append(bc)
            if stale(bc, self.src(f"u{i}.cu")):
                jobs.append([CLANG, "-x", "cuda", f"--cuda-path={CUDA}",
                             "-Wno-unknown-cuda-version", "-nocudainc", "--cuda-device-only",
                             f"--offload-arch={arch}", "-fgpu-rdc", "-O3", "-emit-llvm",
                             "-c", self.src(f"u{i}.cu"), "-o", bc])
        with ThreadPoolExecutor(self.jobs) as ex:
            list(ex.map(run, jobs))
        return out

    def kernel_names(self):
        return [f"bench_k{i}" for i in range(self.n)] + [
            f"bench_k{i}_{h}" for i in self.cuda_units() for h in range(1, self.kernels)]
