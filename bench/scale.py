#!/usr/bin/env python3
"""scale.py: how the device link's cost grows with the program (issue #19).

    bench/scale.py --n 64,256,1024,4096 --large 700x32 --doc

For each size N (units of bench/workload.py, one kernel each) and one large
program (--large UNITSxKERNELS: units of several kernels each, hundreds of
MB of PTX), on one arch (--arch, sm_75 by default): a cold fatlink link
(empty cache, the default -j, --fatlink-time-trace), the floor (the
standalone LLVM tools and ptxas, one after another: llvm-link-22, opt-22
O3 with the kernels kept, llc-22, ptxas) and clang-linker-wrapper
(--offload-jobs=2) up to --peer-max-n units. Each command runs under
/usr/bin/time (wall, user+sys of the process tree, max RSS of the largest
process) with the process tree's RSS sampled every 50 ms.

nvcc -dlto is not in this run: building its objects costs about 2.5 s of
CPU per unit (10,000 s at N = 4096), far more than the links measured; its
N = 256 figures are in the side-by-side run (bench/run.py).

Results go to WORK/scale.json; --doc writes the "How cost grows" section of
docs/benchmarks.md from them. Not part of the test suite.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload as wl  # noqa: E402
from run import measure, wait_for_quiet, load_average, floor_front, Tools, CU  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(wl.ROOT, "docs", "benchmarks.md")
BEGIN = "<!-- scale.py: begin -->"
END = "<!-- scale.py: end -->"


def fatlink(tools, w, arch, out_dir, jobs):
    """A cold fatlink-cc link; returns the measurement and its time trace's
    top-level stages (seconds)."""
    cache = os.path.join(out_dir, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    trace = os.path.join(out_dir, "fatlink.trace.json")
    extra = [f"--fatlink-time-trace={trace}"]
    if jobs:
        extra.append(f"--fatlink-jobs={jobs}")
    cmd = tools.link_cmd("fatlink", w.host_obj(0), w.clang_objs(), [arch],
                         os.path.join(out_dir, "fatlink.out"), cache=cache, extra=extra)
    m = measure(cmd)
    m["stages"] = trace_stages(trace)
    shutil.rmtree(cache, ignore_errors=True)
    return m


def trace_stages(path):
    """Sum of durations by event name for the events the driver reports
    as stages (the main thread's), in seconds, and the process's total."""
    try:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError):
        return {}
    sums = {}
    for e in events:
        if e.get("ph") != "X" or not e.get("name", "").startswith("Total "):
            continue
        sums[e["name"][len("Total "):]] = round(e["dur"] / 1e6, 3)
    return sums


def floor(w, arch, out_dir, more_arches=(), fatbinary=False):
    """The floor, one stage after another: the front (for arch), then llc
    and ptxas for arch and each of more_arches; with fatbinary, then NVIDIA's
    fatbinary --compress-mode=size of arch's cubin (a fatbin entry about as
    small as fatlink's zstd-19 one, which the plain floor does not make).
    Returns wall, cpu, peak RSS, arch's PTX size and the fatbin's (0
    without fatbinary)."""
    stages, files = floor_front(w, arch, out_dir)
    ptx, cubin = os.path.join(out_dir, "floor.ptx"), os.path.join(out_dir, "floor.cubin")
    made = []
    for a in (arch, *more_arches):
        p, c = (ptx, cubin) if a == arch else (
            os.path.join(out_dir, f"floor.{a}.ptx"), os.path.join(out_dir, f"floor.{a}.cubin"))
        tag = "" if a == arch else f" {a}"
        stages += [
            ("llc" + tag, ["llc-22", "-O3", "-march=nvptx64", f"-mcpu={a}", files[0], "-o", p]),
            ("ptxas" + tag, [f"{CU}/bin/ptxas", "-O3", f"-arch={a}", p, "-o", c]),
        ]
        made += [p, c]
    fatbin = os.path.join(out_dir, "floor.fatbin")
    if fatbinary:
        stages.append(("fatbinary", [f"{CU}/bin/fatbinary", "-64", f"--create={fatbin}",
                                     f"--image3=kind=elf,sm={arch[3:]},file={cubin}",
                                     "--compress-all", "--compress-mode=size"]))
        made.append(fatbin)
    r = {"wall": 0.0, "cpu": 0.0, "rss_kb": 0, "stages": {}}
    for name, cmd in stages:
        m = measure(cmd)
        r["wall"] += m["wall"]
        r["cpu"] += m["cpu"]
        r["rss_kb"] = max(r["rss_kb"], m["rss_kb"])
        r["stages"][name] = {"wall": m["wall"], "cpu": m["cpu"], "rss_kb": m["rss_kb"]}
    r["tree_kb"] = r["rss_kb"]
    r["ptx_bytes"] = os.path.getsize(ptx)
    r["fatbin"] = os.path.getsize(fatbin) if fatbinary else 0
    for f in (*files, *made):
        os.unlink(f)
    return r


def clang(tools, w, arch, out_dir):
    cmd = tools.link_cmd("clang-j2", w.host_obj(0), w.clang_objs(), [arch],
                         os.path.join(out_dir, "clang.out"))
    return measure(cmd)


def configs(args):
    out = [(n, 1) for n in args.n]
    if args.large:
        u, k = (int(x) for x in args.large.split("x"))
        out.append((u, k))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="64,256,1024,4096", help="unit counts (comma-separated)")
    ap.add_argument("--large", default="", help="the large program: UNITSxKERNELS per unit (e.g. 700x32)")
    ap.add_argument("--arch", default="sm_75")
    ap.add_argument("--runs", type=int, default=1, help="runs per size and tool")
    ap.add_argument("--tools", default="fatlink,floor,clang-j2")
    ap.add_argument("--peer-max-n", type=int, default=4096,
                    help="largest program (in kernels) clang-linker-wrapper links")
    ap.add_argument("--floor-max-kernels", type=int, default=1 << 30,
                    help="largest program (in kernels) the floor runs for")
    ap.add_argument("--jobs", type=int, default=0, help="fatlink -j (0: its default)")
    ap.add_argument("--work", default=os.environ.get("FATLINK_BENCH_WORK", "/tmp/fatlink-bench/scale"))
    ap.add_argument("--wait-load", type=float, default=0.5)
    ap.add_argument("--max-wait", type=float, default=300)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--doc", action="store_true", help="write docs/benchmarks.md's section from WORK/scale.json")
    ap.add_argument("--doc-only", action="store_true")
    args = ap.parse_args()
    args.n = [int(x) for x in args.n.split(",") if x]
    os.makedirs(args.work, exist_ok=True)
    results_path = os.path.join(args.work, "scale.json")
    meta_path = os.path.join(args.work, "scale-meta.json")
    results, meta = {}, []
    if os.path.exists(results_path):
        with open(results_path) as f:
            results = json.load(f)
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)

    def log(s):
        print(s, flush=True)

    if not args.doc_only and not args.build_only:
        # What the section's "measured" lines say: when, how, how loaded.
        meta.append({"date": time.strftime("%Y-%m-%d %H:%M"), "argv": " ".join(shlex.quote(a) for a in sys.argv[1:]),
                     "load": round(load_average(), 2), "fatlink": wl.FATLINK,
                     "fatlink_sha256": sha256(wl.FATLINK), "commit": head_commit()})
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=1)
    if not args.doc_only:
        tools = Tools(args.work)
        tool_list = args.tools.split(",")
        for units, kpu in configs(args):
            w = wl.Workload(args.work, units, "cuda", [args.arch], tools=("clang",), kernels=kpu)
            t0 = time.time()
            w.build()
            if "floor" in tool_list:
                w.device_bitcode(args.arch)
            kernels = len(w.kernel_names())
            log(f"== {units} units x {kpu} kernels ({kernels} kernels): built in {time.time() - t0:.0f} s")
            if args.build_only:
                continue
            key = f"{units}x{kpu}"
            entry = results.setdefault(key, {"units": units, "kernels_per_unit": kpu,
                                             "kernels": kernels, "arch": args.arch, "runs": {}})
            out_dir = os.path.join(w.dir, "out")
            os.makedirs(out_dir, exist_ok=True)
            for tool in tool_list:
                if tool == "clang-j2" and kernels > args.peer_max_n:
                    continue
                if tool == "floor" and kernels > args.floor_max_kernels:
                    continue
                runs = []
                for r in range(args.runs):
                    load = wait_for_quiet(args.wait_load, args.max_wait)
                    if tool == "fatlink":
                        m = fatlink(tools, w, args.arch, out_dir, args.jobs)
                    elif tool == "floor":
                        m = floor(w, args.arch, out_dir)
                        entry["ptx_bytes"] = m["ptx_bytes"]
                    else:
                        try:
                            m = clang(tools, w, args.arch, out_dir)
                        except RuntimeError as e:
                            # A peer that fails is a result: keep its last
                            # error line for the table.
                            lines = [l for l in str(e).splitlines() if "error:" in l]
                            m = {"failed": lines[0] if lines else str(e).splitlines()[0]}
                            log(f"  {tool:9s} run {r}: failed: {m['failed']}")
                            runs.append(m)
                            break
                    m.pop("log", None)
                    m["load_before"] = round(load, 2)
                    runs.append(m)
                    log(f"  {tool:9s} run {r}: wall {m['wall']:8.2f} s  cpu {m['cpu']:8.2f} s  "
                        f"peak {m['rss_kb'] / 1024:7.0f} MB  tree {m['tree_kb'] / 1024:7.0f} MB"
                        f"  (load {load:.2f})")
                entry["runs"][tool] = runs
                with open(results_path, "w") as f:
                    json.dump(results, f, indent=1, sort_keys=True)
    if args.doc or args.doc_only:
        write_doc(results, meta)


def head_commit():
    """The commit the fatlink under test was built from, where that is
    known: the checkout's, for the checkout's own build. A FATLINK set to
    another build says only its sha256."""
    if "FATLINK" in os.environ:
        return "?"
    try:
        return subprocess.run(["git", "-C", wl.ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def sha256(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def med(runs, k):
    return statistics.median(r[k] for r in runs)


def write_doc(results, meta):
    rows = sorted(results.values(), key=lambda e: e["kernels"])
    lines = [BEGIN, "", "## How cost grows (`bench/scale.py`)", "",
             "One arch (sm_75), a cold link each (fatlink's cache empty), "
             "2 cores, no GPU; generated by `bench/scale.py --doc` from these invocations "
             "(the workloads are built before any timing and not timed):", ""]
    for m in meta:
        lines.append(f"* `bench/scale.py {m['argv']}` at {m['date']}: 1-min load {m['load']} "
                     f"at the start; fatlink sha256 {m['fatlink_sha256'][:16]}…"
                     + (f", built from {m['commit']}" if m.get("commit", "?") != "?" else "")
                     + ".")
    lines.append("")
    lines.append("| program | kernels | PTX | tool | wall s | CPU s | CPU / floor | "
                 "same work / floor | ms CPU per kernel | peak MB (largest process) | "
                 "peak MB (tree) |")
    lines.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for e in rows:
        name = (f"N = {e['units']}" if e["kernels_per_unit"] == 1
                else f"large: {e['units']} units × {e['kernels_per_unit']} kernels")
        fl = e["runs"].get("floor")
        ptx = f"{e['ptx_bytes'] / 1e6:.1f} MB" if "ptx_bytes" in e else "-"
        for tool in ("fatlink", "floor", "clang-j2"):
            runs = e["runs"].get(tool)
            if not runs:
                continue
            label = {"fatlink": "fatlink", "floor": "floor",
                     "clang-j2": "clang-linker-wrapper -j2"}[tool]
            if "failed" in runs[0]:
                lines.append(f"| {name} | {e['kernels']} | {ptx} | {label} | "
                             f"failed: `{runs[0]['failed'][:160]}` | | | | | | |")
                name, ptx = "", ""
                continue
            cpu = med(runs, "cpu")
            has_floor = fl and "failed" not in fl[0]
            ratio = f"{cpu / med(fl, 'cpu'):.2f}" if has_floor else "-"
            # The floor neither packages nor links the host: fatlink's CPU
            # without its zstd of the cubins and its host link, from its
            # time trace (single-threaded stages: their wall is their CPU).
            same = "-"
            if tool == "fatlink" and has_floor and all("stages" in r for r in runs):
                work = statistics.median(
                    r["cpu"] - r["stages"].get("Encode fatbin entry", 0) - r["stages"].get("Host link", 0)
                    for r in runs)
                same = f"{work / med(fl, 'cpu'):.2f}"
            lines.append(
                f"| {name} | {e['kernels']} | {ptx} | {label} | {med(runs, 'wall'):.2f} | {cpu:.2f} | "
                f"{ratio} | {same} | {cpu / e['kernels'] * 1e3:.1f} | {med(runs, 'rss_kb') / 1024:.0f} | "
                f"{med(runs, 'tree_kb') / 1024:.0f} |")
            name, ptx = "", ""
    notes = os.path.join(HERE, "scale-notes.md")
    if os.path.exists(notes):
        lines += ["", open(notes).read().rstrip()]
    lines += ["", END]
    text = open(DOC).read()
    block = "\n".join(lines)
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text += "\n" + block + "\n"
    with open(DOC, "w") as f:
        f.write(text)
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
