#!/usr/bin/env python3
"""partitions.py: what the partition count costs a cold link and saves a re-link.

    bench/partitions.py --n 256 --arches sm_75 --partitions 1,8,16,32 --runs 3

Partitions are the unit of fatlink's cache: after an edit to one unit,
only the partitions its code reaches are optimized and compiled again.
Each partition also costs a cold link something the one-module floor does
not pay: a ptxas start-up, its own pass pipeline, and the local helpers
it shares with other partitions optimized and compiled once more. This
script measures both sides on one bench/workload.py program: for each
--partitions value, a cold link (empty cache) and then, with that cache,
a re-link after one unit's edit (the edit differs in every run, so no
cache holds it), under /usr/bin/time (wall; CPU of the process tree).
It also measures the floor (bench/scale.py's: llvm-link, opt O3 for the
first arch, then llc and ptxas for each arch, one after another) once per
run, between the same run's links.

Prints a table of medians (docs/benchmarks.md, "What partitions cost");
--json writes every run. Not part of the test suite.
"""

import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload as wl  # noqa: E402
from run import measure, wait_for_quiet, Tools  # noqa: E402
from scale import floor  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=256, help="units")
    ap.add_argument("--kernels", type=int, default=1, help="kernels per unit")
    ap.add_argument("--arches", default="sm_75", help="comma-separated")
    ap.add_argument("--partitions", default="1,8,16,32", help="--fatlink-partitions values")
    ap.add_argument("--unit", type=int, default=-1, help="the unit edited (default: N/2 + 3)")
    ap.add_argument("--edit", choices=("unit", "kernels"), default="unit",
                    help="what the edit changes: the unit's leaf function (which other "
                         "units' kernels call) and its kernels, or its kernels alone")
    ap.add_argument("--independent", action="store_true",
                    help="each kernel of a unit has its own reduction, so nothing but the unit "
                         "joins them (by default a unit's kernels share one, and its shared tile)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=os.environ.get("FATLINK_BENCH_WORK", "/tmp/fatlink-bench/partitions"))
    ap.add_argument("--wait-load", type=float, default=0.5)
    ap.add_argument("--max-wait", type=float, default=120)
    ap.add_argument("--extra", action="append", default=[],
                    help="another fatlink-cc argument for every link (repeatable), "
                         "e.g. --extra=--fatlink-compress=zstd-9")
    ap.add_argument("--json", help="write every run here")
    args = ap.parse_args()
    arches = args.arches.split(",")
    parts = [int(p) for p in args.partitions.split(",")]
    unit = args.unit if args.unit >= 0 else args.n // 2 + 3

    os.makedirs(args.work, exist_ok=True)
    tools = Tools(args.work)
    w = wl.Workload(args.work, args.n, "cuda", arches, tools=("clang",), kernels=args.kernels,
                    independent=args.independent)
    w.build()
    w.device_bitcode(arches[0])
    out_dir = os.path.join(w.dir, "out")
    os.makedirs(out_dir, exist_ok=True)

    res = {p: {"cold": [], "one-unit": []} for p in parts}
    floors = []
    for r in range(args.runs):
        for p in parts:
            cache = os.path.join(out_dir, f"cache-p{p}")
            shutil.rmtree(cache, ignore_errors=True)
            cmd = tools.link_cmd("fatlink", w.host_obj(0), w.clang_objs(), arches,
                                 os.path.join(out_dir, f"p{p}.exe"), cache=cache,
                                 extra=[f"--fatlink-partitions={p}", *args.extra])
            wait_for_quiet(args.wait_load, args.max_wait)
            m = measure(cmd)
            res[p]["cold"].append({"wall": m["wall"], "cpu": m["cpu"], "rss_kb": m["rss_kb"]})
            w.touch_unit(unit, 100 + r, leaf=args.edit == "unit")
            wait_for_quiet(args.wait_load, args.max_wait)
            m = measure(cmd)
            res[p]["one-unit"].append({"wall": m["wall"], "cpu": m["cpu"], "rss_kb": m["rss_kb"]})
            w.touch_unit(unit, 0)
            shutil.rmtree(cache, ignore_errors=True)
            print(f"run {r} partitions {p:3d}: cold {res[p]['cold'][-1]['wall']:6.2f} s wall "
                  f"{res[p]['cold'][-1]['cpu']:6.2f} s CPU; one unit edited "
                  f"{res[p]['one-unit'][-1]['wall']:6.2f} s wall {res[p]['one-unit'][-1]['cpu']:6.2f} s CPU",
                  flush=True)
        wait_for_quiet(args.wait_load, args.max_wait)
        f = floor(w, arches[0], out_dir, arches[1:])
        floors.append({"wall": f["wall"], "cpu": f["cpu"]})
        print(f"run {r} floor: {f['wall']:6.2f} s wall {f['cpu']:6.2f} s CPU", flush=True)

    med = statistics.median
    fcpu = med([f["cpu"] for f in floors]) if floors else None
    print(f"\n{args.n} units of {args.kernels} kernels, {','.join(arches)}, unit {unit} edited"
          + (" (its kernels alone)" if args.edit == "kernels" else "")
          + (", each kernel independent" if args.independent else "") + f"; medians of {args.runs} runs"
          + (f"; {' '.join(args.extra)}" if args.extra else "")
          + (f"; floor CPU {fcpu:.2f} s" if fcpu else ""))
    head = "| partitions | cold wall s | cold CPU s |" + (" cold CPU / floor |" if fcpu else "")
    head += " one unit edited: wall s | CPU s | wall / cold |"
    print(head)
    print("|" + "---:|" * (head.count("|") - 1))
    for p in parts:
        cw, cc = med(x["wall"] for x in res[p]["cold"]), med(x["cpu"] for x in res[p]["cold"])
        ow, oc = med(x["wall"] for x in res[p]["one-unit"]), med(x["cpu"] for x in res[p]["one-unit"])
        row = f"| {p} | {cw:.2f} | {cc:.2f} |" + (f" {cc / fcpu:.2f} |" if fcpu else "")
        row += f" {ow:.2f} | {oc:.2f} | {ow / cw:.2f} |"
        print(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "kernels": args.kernels, "arches": arches, "unit": unit, "runs": res, "floors": floors}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
