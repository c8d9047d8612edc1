#!/usr/bin/env python3
"""one_arch.py: what a one-arch link's CPU is made of, against the floor (#19).

    bench/one_arch.py --n 64,256 --runs 5

For each size N (units of bench/workload.py, one kernel each) on one arch
(--arch, sm_75 by default), alternated run by run, so that the VM's drift
falls on every row alike:

  fatlink          a cold fatlink-cc link (its default partitions)
  fatlink-1p       the same with --fatlink-partitions=1
  floor            llvm-link-22, opt-22 O3, llc-22, ptxas (scale.py's floor)
  floor+fatbinary  the floor, then NVIDIA's fatbinary --compress-all
                   --compress-mode=size: a fatbin entry about as small as
                   fatlink's zstd-19 one, which the plain floor does not make

Prints, per size and row, the median CPU (user+sys of the process tree)
and wall time with their range, and for the fatlink rows the median of
each stage's time from --fatlink-time-trace (summed over threads), and
the fatbin bytes of each (fatlink's .nv_fatbin, fatbinary's file). Not part
of the test suite; docs/benchmarks.md ("Shared ptxas runs") quotes a run.
"""

import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload as wl  # noqa: E402
from run import measure, wait_for_quiet, floor_front, fatbin_size, Tools, CU  # noqa: E402

ROWS = ("fatlink", "fatlink-1p", "floor", "floor+fatbinary")
STAGES = ("Optimize partition", "Optimize", "Codegen partition", "Codegen", "ptxas batch",
          "ptxas", "Split for optimization", "Encode fatbin entry", "Parse bitcode",
          "Host link", "Probe tools")


def stages(trace):
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    return {e["name"][len("Total "):]: e["dur"] / 1e6 for e in events
            if e.get("ph") == "X" and e.get("name", "").startswith("Total ")}


def run_fatlink(tools, w, arch, out_dir, extra):
    cache, trace = os.path.join(out_dir, "cache"), os.path.join(out_dir, "trace.json")
    out = os.path.join(out_dir, "fatlink.out")
    shutil.rmtree(cache, ignore_errors=True)
    cmd = tools.link_cmd("fatlink", w.host_obj(0), w.clang_objs(), [arch], out, cache=cache,
                         extra=[f"--fatlink-time-trace={trace}", *extra])
    m = measure(cmd)
    m["stages"] = stages(trace)
    m["fatbin"] = fatbin_size(out)
    shutil.rmtree(cache, ignore_errors=True)
    return m


def run_floor(w, arch, out_dir, fatbinary):
    front, files = floor_front(w, arch, out_dir)
    ptx, cubin = os.path.join(out_dir, "floor.ptx"), os.path.join(out_dir, "floor.cubin")
    fatbin = os.path.join(out_dir, "floor.fatbin")
    steps = [cmd for _, cmd in front] + [
        ["llc-22", "-O3", "-march=nvptx64", f"-mcpu={arch}", files[0], "-o", ptx],
        [f"{CU}/bin/ptxas", "-O3", f"-arch={arch}", ptx, "-o", cubin]]
    if fatbinary:
        steps.append([f"{CU}/bin/fatbinary", "-64", f"--create={fatbin}",
                      f"--image3=kind=elf,sm={arch[3:]},file={cubin}", "--compress-all",
                      "--compress-mode=size"])
    r = {"wall": 0.0, "cpu": 0.0, "stages": {}}
    for cmd in steps:
        m = measure(cmd)
        r["wall"] += m["wall"]
        r["cpu"] += m["cpu"]
    r["fatbin"] = os.path.getsize(fatbin) if fatbinary else 0
    for f in (*files, ptx, cubin, fatbin):
        if os.path.exists(f):
            os.unlink(f)
    return r


def summary(name, runs):
    cpu = [r["cpu"] for r in runs]
    wall = [r["wall"] for r in runs]
    line = (f"  {name:16s} CPU {statistics.median(cpu):6.2f} s [{min(cpu):.2f}-{max(cpu):.2f}]"
            f"  wall {statistics.median(wall):6.2f} s [{min(wall):.2f}-{max(wall):.2f}]")
    if runs[0]["fatbin"]:
        line += f"  fatbin {runs[0]['fatbin']:,} B"
    seen = [s for s in STAGES if any(s in r["stages"] for r in runs)]
    if seen:
        line += "\n" + " " * 19 + "  ".join(
            f"{s}: {statistics.median(r['stages'].get(s, 0) for r in runs):.2f}" for s in seen)
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="64,256", help="unit counts (comma-separated)")
    ap.add_argument("--arch", default="sm_75")
    ap.add_argument("--runs", type=int, default=5, help="rounds of the four rows, alternated")
    ap.add_argument("--work", default=os.environ.get("FATLINK_BENCH_WORK",
                                                     "/tmp/fatlink-bench/one-arch"))
    ap.add_argument("--wait-load", type=float, default=0.5)
    ap.add_argument("--max-wait", type=float, default=300)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tools = Tools(args.work)
    for n in (int(x) for x in args.n.split(",") if x):
        w = wl.Workload(args.work, n, "cuda", [args.arch], tools=("clang",))
        w.build()
        w.device_bitcode(args.arch)
        out_dir = os.path.join(w.dir, "out-one-arch")
        os.makedirs(out_dir, exist_ok=True)
        results = {row: [] for row in ROWS}
        for _ in range(args.runs):
            for row in ROWS:
                wait_for_quiet(args.wait_load, args.max_wait)
                if row.startswith("fatlink"):
                    extra = ["--fatlink-partitions=1"] if row == "fatlink-1p" else []
                    results[row].append(run_fatlink(tools, w, args.arch, out_dir, extra))
                else:
                    results[row].append(run_floor(w, args.arch, out_dir, row != "floor"))
        print(f"== N = {n} ({args.arch}, {args.runs} rounds, medians)", flush=True)
        for row in ROWS:
            print(summary(row, results[row]), flush=True)


if __name__ == "__main__":
    main()
