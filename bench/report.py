"""report.py: turns bench/run.py's results.json into docs/benchmarks.md and
bench/benchmarks-time.svg (a hand-written SVG: no plotting library needed).

The prose that interprets the numbers lives in bench/notes.md and is copied
in verbatim after the generated tables, so re-running the benchmark never
overwrites the analysis, and the analysis can be checked against the tables
next to it.
"""

import math
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
SCALE_BEGIN = "<!-- scale.py: begin -->"  # bench/scale.py's section
SCALE_END = "<!-- scale.py: end -->"
SVG = os.path.join(HERE, "benchmarks-time.svg")  # bench/ owns it; docs/ links to it
PEERS = ["clang", "clang-j2", "nvcc", "nvcc-t2"]
NAMES = {
    "fatlink": "fatlink-cc",
    "fatlink-1img": "fatlink-cc, sm_75-only objects",
    "clang": "clang-linker-wrapper",
    "clang-j2": "clang-linker-wrapper --offload-jobs=2",
    "nvcc": "nvcc -dlto",
    "nvcc-t2": "nvcc -dlto -t 2",
    "cc": "cc (plain host link)",
}
CASES = ["full", "unchanged", "host-only", "one-unit"]


def med(ms, key="wall"):
    return statistics.median(m[key] for m in ms) if ms else None


def tree(m):
    """Sampled tree RSS; a run shorter than one sample falls back to the
    largest process, which is a lower bound of the tree."""
    return max(m["tree_kb"], m["rss_kb"])


def fmt(x, d=2):
    if x is None:
        return "-"
    return f"{x:.{d}f}"


def mib(kb):
    return f"{kb / 1024:.0f}"


def ratio_per_run(a, b):
    """Median over runs of a[i].wall / b[i].wall (runs are interleaved)."""
    rs = [x["wall"] / y["wall"] for x, y in zip(a, b) if y["wall"] > 0]
    return statistics.median(rs) if rs else None


def configs(R, mix):
    cs = [(k, v) for k, v in R["configs"].items() if v["mix"] == mix]
    return sorted(cs, key=lambda kv: (kv[1]["set"] != "one", kv[1]["n"]))


def svg_plot(R):
    """Full-link wall time against N (log-log), four arches, one line per tool."""
    cs = [v for k, v in configs(R, "cuda") if v["set"] == "four"]
    if not cs:
        return None
    tools = [t for t in ["fatlink", "fatlink-1img"] + PEERS if any(t in c["res"] for c in cs)]
    series = {t: [(c["n"], med(c["res"][t]["full"])) for c in cs if t in c["res"]] for t in tools}
    fl = R.get("floor", {})
    series["floor"] = [(c["n"], fl[k]["total"]) for k, c in configs(R, "cuda")
                       if c["set"] == "four" and k in fl]
    colors = {"fatlink": "#d62728", "fatlink-1img": "#ff7f0e", "clang": "#1f77b4",
              "clang-j2": "#17becf", "nvcc": "#2ca02c", "nvcc-t2": "#98df8a", "floor": "#555555"}
    W, H, L, B, T, Rm = 640, 400, 60, 50, 20, 230
    ns = sorted({n for s in series.values() for n, _ in s})
    ys = [y for s in series.values() for _, y in s if y]
    if not ns or not ys:
        return None
    x0, x1 = math.log(min(ns)) - 0.2, math.log(max(ns)) + 0.2
    y0, y1 = math.log(min(ys) * 0.8), math.log(max(ys) * 1.25)

    def X(n):
        return L + (math.log(n) - x0) / (x1 - x0) * (W - L - Rm)

    def Y(y):
        return H - B - (math.log(y) - y0) / (y1 - y0) * (H - B - T)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<line x1="{L}" y1="{H - B}" x2="{W - Rm}" y2="{H - B}" stroke="black"/>',
         f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for n in ns:
        o.append(f'<text x="{X(n):.1f}" y="{H - B + 16}" text-anchor="middle">{n}</text>')
    tick = 0.1
    while tick < math.exp(y1):
        for m in (1, 2, 5):
            v = tick * m
            if math.exp(y0) <= v <= math.exp(y1):
                o.append(f'<line x1="{L}" y1="{Y(v):.1f}" x2="{W - Rm}" y2="{Y(v):.1f}" '
                         f'stroke="#ddd"/>')
                o.append(f'<text x="{L - 4}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        tick *= 10
    o.append(f'<text x="{(L + W - Rm) / 2}" y="{H - 12}" text-anchor="middle">'
             f'translation units (N, log scale)</text>')
    o.append(f'<text x="14" y="{(H - B) / 2}" transform="rotate(-90 14 {(H - B) / 2})" '
             f'text-anchor="middle">full link wall time, s (log)</text>')
    ly = T + 10
    for t, pts in series.items():
        pts = [(n, y) for n, y in pts if y]
        if not pts:
            continue
        c = colors.get(t, "black")
        dash = ' stroke-dasharray="5,4"' if t == "floor" else ""
        path = " ".join(f"{X(n):.1f},{Y(y):.1f}" for n, y in pts)
        o.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for n, y in pts:
            o.append(f'<circle cx="{X(n):.1f}" cy="{Y(y):.1f}" r="3" fill="{c}"/>')
        o.append(f'<line x1="{W - Rm + 15}" y1="{ly}" x2="{W - Rm + 35}" y2="{ly}" stroke="{c}" '
                 f'stroke-width="2"{dash}/>')
        o.append(f'<text x="{W - Rm + 40}" y="{ly + 4}">{NAMES.get(t, t)}</text>')
        ly += 18
    o.append(f'<text x="{L + 4}" y="{T}">four arches (sm_75, sm_80, sm_90, sm_100), '
             f'device LTO, 2 cores</text>')
    o.append("</svg>")
    with open(SVG, "w") as f:
        f.write("\n".join(o) + "\n")
    return os.path.relpath(SVG, os.path.dirname(DOC))


def write(R):
    L = []
    m = R.get("machine", {})
    runs = R.get("runs", {})
    L.append("# Device-link benchmark\n")
    L.append("fatlink-cc against clang-linker-wrapper and `nvcc -dlto` on the same "
             "synthetic programs, and against the floor (each stage run once with the "
             "standalone tools). Generated by `bench/run.py` (the tables) from its "
             "results; the analysis at the end is `bench/notes.md`. How the cost grows "
             "with the program (up to 4,096 units and a 22,400-kernel program of 200 MB "
             "of PTX) is the last section, from a run of its own (`bench/scale.py`).\n")
    L.append("## Reproduce\n")
    L.append("```sh\nbazel build //tools/fatlink:all //runtime:fatlink_rt\n"
             "bench/run.py --n 16,64,256 --runs 3 --runs-large 3 --mixed 16 --doc   # everything\n"
             "# what this page was measured with (the peers' re-links at N=256 are full links,\n"
             "# measured as such at N=16 and 64):\n"
             "bench/run.py --n 256 --sets four --runs-large 3 --peer-cases full \\\n"
             "    --tools fatlink,fatlink-1img,clang,clang-j2,nvcc,nvcc-t2\n"
             "bench/run.py --n 16,64 --sets one,four --runs 3 --mixed 16\n"
             "bench/run.py --doc-only     # rewrite this page from the saved results\n```\n\n"
             "Objects and results live in `--work` (default `/tmp/fatlink-bench/work`); objects are "
             "reused by later invocations. `FATLINK=/path/to/fatlink` benchmarks another build "
             "(`fatlink-cc` must sit beside it). Building the N=256 workload's nvcc objects "
             "takes ~15-30 min on 2 cores; `--tools fatlink,clang,clang-j2` skips nvcc.\n")
    L.append(f"Measured {m.get('when', '?')} on {m.get('cores', '?')} cores (Linux "
             f"{m.get('kernel', '?')}), no GPU (loads below; the machine is a shared VM, "
             f"whose speed drifts by up to 20 % between runs). Medians of "
             f"{max((c['runs'] for c in R['configs'].values() if c['n'] < 256), default='?')} runs "
             f"for N < 256 and "
             f"{max((c['runs'] for c in R['configs'].values() if c['n'] >= 256), default='?')} for "
             f"N = 256 (the latest invocation of each configuration); the workloads and "
             f"objects are built before any timing and are not timed.\n")
    for inv in R.get("invocations", []):
        L.append(f"* `bench/run.py {inv['args']}` at {inv['when']}: 1-min load average "
                 f"{inv['load_start']} at the start, highest seen between configurations "
                 f"{inv['load_max_seen']}.")
    if R.get("invocations"):
        L.append("")
    v = R.get("versions")
    if v:
        L.append(f"Tools: fatlink `{v['fatlink']}` (sha256 {v['fatlink_sha256']}…, built from "
                 f"{v['git']}); {v['clang']}; {v['nvcc']}; {v['rustc']}.\n")
    L.append("""## Workload

`bench/workload.py` generates N translation units. Unit i defines a leaf device
function (a data-dependent loop over libdevice `expf`), a block reduction through
`__shared__` memory with `atomicAdd`, and a kernel that stages its input in shared
memory, loops over the tile calling the leaf functions of two *other* units
(i+1 and 7i+3 mod N), reduces, and finishes with `atomicMax`. All cross-unit
calls are `extern "C"` symbols, so nothing is inlined before the device link.
The host program calls a launcher of every kernel (a real host link with
cudart).

* **cuda** workload: all N units CUDA C++ (what all three tools can link).
* **mixed** workload: every fourth unit is a Rust `#![no_core]` crate over
  `testdata/rust/minicore.rs` (+ `bench/rust/benchcore.rs` for `<`), compiled
  with `RUSTC_BOOTSTRAP=1 rustc --target nvptx64-nvidia-cuda --crate-type rlib -O`
  and wrapped with `fatlink embed`; its kernel loops, calls `__nv_expf`, the leaf
  of the next unit (CUDA C++ calls Rust and Rust calls CUDA C++) and the shared
  memory reduction of the CUDA unit before it. Only fatlink can link it.

Inputs per tool (objects built once, outside the timing):

| tool | objects | link command |
|---|---|---|
| fatlink-cc | `clang++-22 -x cuda -nocudainc --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=<set> -O3 -c` | `fatlink-cc main.o u*.o -lcudart -o app --fatlink-arch=<set> --fatlink-cache-dir=<fresh dir per run>` |
| fatlink-cc, sm_75-only objects | the same objects built with `--offload-arch=sm_75` only | the same |
| clang-linker-wrapper | the same objects as fatlink-cc | `clang++-22 --offload-new-driver -fgpu-rdc -foffload-lto --offload-arch=<set> [--offload-jobs=2] main.o u*.o -lcudart` |
| nvcc -dlto | `nvcc -dc -O3 -gencode arch=compute_XX,code=lto_XX` for the four arches | `nvcc -dlto -gencode arch=compute_XX,code=sm_XX... [-t 2] main.o u*.o` |

The one-arch set is sm_75. clang-linker-wrapper links every arch present in its
input objects whatever the link line says, so the one-arch set uses objects
built for sm_75 only (for fatlink too: same inputs); nvcc picks `lto_75` out of
its four-arch objects. `-nocudainc` with a small prelude (in each generated
source) replaces clang's CUDA wrapper headers, which cost ~1.5 s per arch per
unit to parse; nvcc compiles the same sources with its own headers.
nvcc's link needs `nvlink -nvvmpath=DIR` with `DIR/lib64/libnvvm.so`, and nvcc
passes its own `-nvvmpath=<nvcc dir>/../nvvm` after any `-Xnvlink` option, so the
benchmark runs nvcc from a shadow CUDA root of symlinks (`WORK/cuda-shadow`)
whose `nvvm/lib64/libnvvm.so` points at this image's `lib/libnvvm.so.4`.

Cases: **full** (cold: fatlink starts with an empty cache), **unchanged** (the
same link again), **host-only** (another `main.o`, device inputs identical),
**one-unit** (unit N/2+3 edited and its object rebuilt, untimed, then the link),
and a program with **no device code**. The peers have no cache, so their
re-links are full links: they are measured in the first run only (fatlink's in
every run). CPU is user+sys of the whole process tree.
**RSS** is the max RSS of the largest single process (`/usr/bin/time %M`), not of
the tree; **tree** is the sum of RSS over the live process tree, sampled every
50 ms (may miss short peaks). **fatbin** is the size of the fatbin container(s)
in the executable's `.nv_fatbin` section (header plus declared entries, so
section padding is not counted).
""")
    # Full link table
    L.append("## Full link (cuda workload), wall time, seconds\n")
    L.append("| N | arches | floor | fatlink | fatlink sm_75 objs | clang-lw | clang-lw -j2 | nvcc | nvcc -t 2 | fatlink / best peer (wall; median of per-run ratios; CPU) | fatlink / floor |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    targets = []
    for k, c in configs(R, "cuda"):
        res = c["res"]
        fl = R.get("floor", {}).get(k, {}).get("total")
        row = [str(c["n"]), c["set"], fmt(fl)]
        for t in ["fatlink", "fatlink-1img"] + PEERS:
            row.append(fmt(med(res[t]["full"])) if t in res else "-")
        peers = [(t, med(res[t]["full"])) for t in PEERS if t in res]
        best = min(peers, key=lambda p: p[1]) if peers else None
        fat = med(res["fatlink"]["full"]) if "fatlink" in res else None
        if best and fat:
            bc = med(res[best[0]]["full"], "cpu")
            fc = med(res["fatlink"]["full"], "cpu")
            row.append(f"{fat / best[1]:.2f} ({best[0]}; per-run {fmt(ratio_per_run(res['fatlink']['full'], res[best[0]]['full']))}; CPU {fc / bc:.2f})")
        else:
            row.append("-")
        row.append(fmt(fat / fl) if fat and fl else "-")
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    plot = svg_plot(R)
    if plot:
        L.append(f"![full link time against N, four arches]({plot})\n")
    # CPU / memory / size
    L.append("## Full link: CPU time, memory, device code size\n")
    L.append("| N | arches | tool | wall s | CPU s | RSS MiB (largest process) | tree MiB (sampled) | .nv_fatbin bytes |")
    L.append("|---|---|---|---|---|---|---|---|")
    for k, c in configs(R, "cuda"):
        for t in ["fatlink", "fatlink-1img"] + PEERS:
            if t not in c["res"]:
                continue
            ms = c["res"][t]["full"]
            L.append(f"| {c['n']} | {c['set']} | {NAMES[t]} | {fmt(med(ms))} | {fmt(med(ms, 'cpu'))} | "
                     f"{mib(max(x['rss_kb'] for x in ms))} | {mib(max(tree(x) for x in ms))} | "
                     f"{int(med(ms, 'fatbin'))} |")
        if c.get("ref_fatbin"):
            L.append(f"| {c['n']} | {c['set']} | fatlink's cubins through `fatbinary --compress-all --compress-mode=size` (default mode) | | | | | "
                     f"{c['ref_fatbin']['size']} ({c['ref_fatbin']['default']}) |")
    L.append("")
    # incremental
    L.append("## Re-links, wall time, seconds\n")
    L.append("| N | arches | tool | full | unchanged | host-only | one-unit | one-unit / full |")
    L.append("|---|---|---|---|---|---|---|---|")
    for k, c in configs(R, "cuda") + configs(R, "mixed"):
        label = c["set"] + (" (mixed)" if c["mix"] == "mixed" else "")
        for t in ["fatlink", "fatlink-1img"] + PEERS:
            if t not in c["res"]:
                continue
            r = c["res"][t]
            f, one = med(r["full"]), med(r["one-unit"])
            L.append(f"| {c['n']} | {label} | {NAMES[t]} | {fmt(f)} | {fmt(med(r['unchanged']))} | "
                     f"{fmt(med(r['host-only']))} | {fmt(one)} | {fmt(one / f if f and one else None)} |")
        L.append(f"| {c['n']} | {label} | {NAMES['cc']} | | | {fmt(med(c['res']['cc']['host link']), 3)} | | |")
    L.append("")
    # mixed
    mx = configs(R, "mixed")
    if mx:
        L.append("## Mixed Rust + CUDA C++ workload (fatlink alone)\n")
        L.append("| N | arches | full s | CPU s | RSS MiB | .nv_fatbin bytes | unchanged s | host-only s | one-unit s |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for k, c in mx:
            r = c["res"]["fatlink"]
            L.append(f"| {c['n']} | {c['set']} | {fmt(med(r['full']))} | {fmt(med(r['full'], 'cpu'))} | "
                     f"{mib(max(x['rss_kb'] for x in r['full']))} | {int(med(r['full'], 'fatbin'))} | "
                     f"{fmt(med(r['unchanged']))} | {fmt(med(r['host-only']))} | {fmt(med(r['one-unit']))} |")
        L.append("")
    # no device code
    if R.get("nodevice"):
        L.append("## A program with no device code\n")
        L.append("| tool | wall s | over plain cc |")
        L.append("|---|---|---|")
        base = med(R["nodevice"]["cc"])
        for t, ms in R["nodevice"].items():
            L.append(f"| {NAMES.get(t, t)} | {fmt(med(ms), 3)} | {fmt(med(ms) - base, 3)} |")
        L.append("")
    # floor
    if R.get("floor"):
        L.append("## The floor (each stage once, standalone tools)\n")
        L.append("`llvm-link-22` of the per-unit device bitcode (clang, sm_75), one "
                 "`opt-22 -passes='internalize,default<O3>' -internalize-public-api-list=<kernels>`, "
                 "then per arch `llc-22 -O3 -mcpu=sm_XX` and `ptxas -O3 -arch=sm_XX`, two arches at a time. "
                 "The floor runs with the same process-tree RSS sampler as every link "
                 "(about 6 ms of CPU every 50 ms), so both are measured under the same load. "
                 "It is measured once per run, after that run's links, and the row is the run "
                 "with the median total (every run's total in the last column).\n")
        L.append("| N | arches | llvm-link | opt O3 | llc+ptxas, 2 at a time | per arch llc+ptxas | total | totals of the runs |")
        L.append("|---|---|---|---|---|---|---|---|")
        for k, c in configs(R, "cuda"):
            f = R["floor"].get(k)
            if not f:
                continue
            per = ", ".join(f"{a} {v:.2f}" for a, v in f["per arch llc+ptxas"].items())
            totals = ", ".join(fmt(t) for t in f.get("totals", [f["total"]]))
            L.append(f"| {c['n']} | {c['set']} | {fmt(f['llvm-link'])} | {fmt(f['opt O3'])} | "
                     f"{fmt(f['llc+ptxas (2 at a time)'])} | {per} | {fmt(f['total'])} | {totals} |")
        L.append("")
    # targets
    L.append("## The issue's targets (#7)\n")
    L.append("| target | measured | met |")
    L.append("|---|---|---|")
    for line in check_targets(R):
        L.append(line)
    L.append("")
    notes = os.path.join(HERE, "notes.md")
    if os.path.exists(notes):
        L.append(open(notes).read())
    # bench/scale.py's section is its own (from its own run): kept as it is.
    scale = ""
    if os.path.exists(DOC):
        old = open(DOC).read()
        b, e = old.find(SCALE_BEGIN), old.find(SCALE_END)
        if b >= 0 and e > b:
            scale = "\n" + old[b:e + len(SCALE_END)] + "\n"
    with open(DOC, "w") as f:
        f.write("\n".join(L).rstrip() + "\n" + scale)
    print(f"wrote {DOC}")


def check_targets(R):
    out = []

    def row(name, meas, ok):
        out.append(f"| {name} | {meas} | {'yes' if ok else '**no**'} |")
    cs = dict(configs(R, "cuda"))
    for k, c in cs.items():
        res = c["res"]
        if "fatlink" not in res:
            continue
        fat = med(res["fatlink"]["full"])
        fl = R.get("floor", {}).get(k, {}).get("total")
        if c["n"] >= 256 and c["set"] == "four" and fl:
            row(f"full link ≤ 1.05× the floor (N={c['n']}, four arches)",
                f"{fat:.2f} s / {fl:.2f} s = {fat / fl:.2f}×", fat <= 1.05 * fl)
        peers = [(t, med(res[t]["full"])) for t in PEERS if t in res]
        if peers and c["n"] < 256:
            t, b = min(peers, key=lambda p: p[1])
            row(f"faster than the best peer (N={c['n']}, {c['set']})",
                f"{fat:.2f} s vs {NAMES[t]} {b:.2f} s", fat < b)
        host = med(res["cc"]["host link"])
        for case in ("unchanged", "host-only"):
            v = med(res["fatlink"][case])
            row(f"{case} ≤ plain host link + 0.2 s (N={c['n']}, {c['set']})",
                f"{v:.3f} s vs {host:.3f} s + 0.2", v <= host + 0.2)
        one = med(res["fatlink"]["one-unit"])
        if c["n"] >= 256:  # the target is for one unit out of 256
            row(f"one unit changed ≤ 0.25× full (N={c['n']}, {c['set']})",
                f"{one:.2f} s / {fat:.2f} s = {one / fat:.2f}×", one <= 0.25 * fat)
        if "clang" in res:
            a = max(x["rss_kb"] for x in res["fatlink"]["full"])
            b = max(x["rss_kb"] for x in res["clang"]["full"])
            ta = max(tree(x) for x in res["fatlink"]["full"])
            tb = max(tree(x) for x in res["clang"]["full"])
            row(f"peak memory ≤ clang-linker-wrapper's (N={c['n']}, {c['set']})",
                f"largest process {mib(a)} vs {mib(b)} MiB; tree {mib(ta)} vs {mib(tb)} MiB",
                a <= b and ta <= tb)
        if c.get("ref_fatbin"):
            s = med(res["fatlink"]["full"], "fatbin")
            row(f"fatbin ≤ fatbinary --compress-mode=size (N={c['n']}, {c['set']})",
                f"{int(s)} vs {c['ref_fatbin']['size']} bytes", s <= c["ref_fatbin"]["size"])
    return out
