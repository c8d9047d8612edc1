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
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload as wl  # noqa: E402
from run import measure, wait_for_quiet, fatbin_size, Tools  # noqa: E402
from scale import floor, trace_stages  # noqa: E402

ROWS = ("fatlink", "fatlink-1p", "floor", "floor+fatbinary")
STAGES = ("Optimize partition", "Optimize", "Codegen partition", "Codegen", "ptxas batch",
          "ptxas", "Split for optimization", "Encode fatbin entry", "Parse bitcode",
          "Host link", "Probe tools")


def run_fatlink(tools, w, arch, out_dir, extra):
    cache, trace = os.path.join(out_dir, "cache"), os.path.join(out_dir, "trace.json")
    out = os.path.join(out_dir, "fatlink.out")
    shutil.rmtree(cache, ignore_errors=True)
    cmd = tools.link_cmd("fatlink", w.host_obj(0), w.clang_objs(), [arch], out, cache=cache,
                         extra=[f"--fatlink-time-trace={trace}", *extra])
    m = measure(cmd)
    m["stages"] = trace_stages(trace)
    m["fatbin"] = fatbin_size(out)
    shutil.rmtree(cache, ignore_errors=True)
    return m


def summary(name, runs):
    cpu = [r["cpu"] for r in runs]
    wall = [r["wall"] for r in runs]
    line = (f"  {name:16s} CPU {statistics.median(cpu):6.2f} s [{min(cpu):.2f}-{max(cpu):.2f}]"
            f"  wall {statistics.median(wall):6.2f} s [{min(wall):.2f}-{max(wall):.2f}]")
    if runs[0]["fatbin"]:
        line += f"  fatbin {runs[0]['fatbin']:,} B"
    # fatlink's stages, from its time trace (the floor's are its tools).
    seen = [s for s in STAGES if any(s in r["stages"] for r in runs)]
    if name.startswith("fatlink") and seen:
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
                    results[row].append(floor(w, args.arch, out_dir,
                                              fatbinary=row != "floor"))
        print(f"== N = {n} ({args.arch}, {args.runs} rounds, medians)", flush=True)
        for row in ROWS:
            print(summary(row, results[row]), flush=True)


if __name__ == "__main__":
    main()
