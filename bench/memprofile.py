#!/usr/bin/env python3
"""memprofile.py: where a link's memory peaks, stage by stage (issue #19).

    bench/memprofile.py --trace T.json -- fatlink-cc ... --fatlink-time-trace=T.json

Runs the command (wall and CPU time of it and every tool it waited for,
as wait4 reports them) and samples, every --interval seconds, the resident
memory of the command's own process (VmRSS, split into anonymous and file
pages as /proc/PID/status gives them) and of every process below it (the
tools fatlink runs: ptxas, nvlink, the host linker). When the command
wrote a Chrome time trace (--trace; LLVM's -time-trace format, whose
beginningOfTime is in microseconds since the epoch), each sample is
placed in the trace's events, and the report gives, for every stage that
took at least --min-share of the run, the largest sample of the
command's own process while that stage ran. The stages overlap where two
threads run different ones; a sample counts for every stage running then.

The report ends with the peak: when it was, what the process held then
(anonymous and file pages) and which stages and tools were running.
--json writes the samples and the per-stage table for other scripts.
Not part of the test suite: a benchmark prints figures, a test does not
time or weigh.
"""

import argparse
import bisect
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import descendants  # noqa: E402


def status_kb(pid):
    """VmRSS, RssAnon and RssFile of pid, in KiB (0 when gone)."""
    out = {"rss": 0, "anon": 0, "file": 0}
    keys = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file"}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k = line.split(None, 1)[0]
                if k in keys:
                    out[keys[k]] = int(line.split()[1])
    except OSError:
        pass
    return out


def exe_of(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def sample_loop(pid, interval, stop, samples):
    own_exe = exe_of(pid)
    while not stop.is_set():
        t = time.time()
        own = status_kb(pid)
        tools = []
        for cpid, comm in descendants(pid):
            # A child still running the command's own program is a fork on
            # its way to exec a tool: its pages are the parent's.
            if exe_of(cpid) == own_exe:
                continue
            kb = status_kb(cpid)["rss"]
            if kb:
                tools.append((comm, kb))
        samples.append({"t": t, **own, "tools": tools})
        stop.wait(interval)


def load_trace(path):
    with open(path) as f:
        data = json.load(f)
    begin = data.get("beginningOfTime")
    if begin is None:
        raise SystemExit(f"memprofile: error: {path} has no beginningOfTime: not an LLVM time trace")
    events = [e for e in data["traceEvents"]
              if e.get("ph") == "X" and not e.get("name", "").startswith("Total ")]
    return begin / 1e6, events


def stage_table(samples, begin, events, min_share):
    """[(name, first start s, busy s, max own RSS KiB)] for stages that ran
    at least min_share of the trace, in order of first start. Spans of one
    name are merged, then each is matched to the samples within it by
    bisection: a large link's trace has hundreds of thousands of events."""
    if not events:
        return []
    end = max(e["ts"] + e["dur"] for e in events) / 1e6
    by_name = {}
    for e in events:
        by_name.setdefault(e["name"], []).append((e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6))
    times = [s["t"] - begin for s in samples]
    rows = []
    for name, spans in by_name.items():
        busy = sum(b - a for a, b in spans)
        if busy < min_share * end:
            continue
        spans.sort()
        merged = [list(spans[0])]
        for a, b in spans[1:]:
            if a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        peak = 0
        for a, b in merged:
            lo, hi = bisect.bisect_left(times, a), bisect.bisect_right(times, b)
            for s in samples[lo:hi]:
                peak = max(peak, s["rss"])
        rows.append((name, merged[0][0], busy, peak))
    rows.sort(key=lambda r: (r[1], r[0]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=0.05, help="seconds between samples (default 0.05)")
    ap.add_argument("--trace", help="the time trace the command writes")
    ap.add_argument("--min-share", type=float, default=0.01,
                    help="leave out stages busy for less than this share of the run (default 0.01)")
    ap.add_argument("--json", help="write the samples and the table to this file")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command")
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command given (after --)")

    samples, stop = [], threading.Event()
    t0 = time.time()
    p = subprocess.Popen(cmd)
    th = threading.Thread(target=sample_loop, args=(p.pid, args.interval, stop, samples), daemon=True)
    th.start()
    _, status, usage = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    p.returncode = rc
    stop.set()
    th.join()
    wall = time.time() - t0
    samples = [s for s in samples if s["rss"]]
    if args.json:
        # The samples first: an analysis that fails must not lose a long run.
        with open(args.json, "w") as f:
            json.dump({"cmd": cmd, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                       "t0": t0, "samples": samples}, f)
    if rc != 0:
        print(f"memprofile: the command failed with exit status {rc}", file=sys.stderr)
        return rc
    if not samples:
        print("memprofile: no samples (the command ended within one interval)", file=sys.stderr)
        return 1

    rows, begin = [], None
    if args.trace:
        begin, events = load_trace(args.trace)
        rows = stage_table(samples, begin, events, args.min_share)
    peak = max(samples, key=lambda s: s["rss"])
    tree = max(s["rss"] + sum(kb for _, kb in s["tools"]) for s in samples)
    tool_peak = {}
    for s in samples:
        for comm, kb in s["tools"]:
            tool_peak[comm] = max(tool_peak.get(comm, 0), kb)

    cpu = usage.ru_utime + usage.ru_stime
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s (user {usage.ru_utime:.1f}, sys {usage.ru_stime:.1f}; "
          f"the process and every tool it waited for), {len(samples)} samples every {args.interval} s")
    print(f"peak of the command's own process: {peak['rss'] / 1024:.0f} MB "
          f"(anonymous {peak['anon'] / 1024:.0f}, file {peak['file'] / 1024:.0f}) "
          f"at {peak['t'] - t0:.1f} s")
    if begin is not None:
        t = peak["t"] - begin
        running = sorted({e["name"] for e in events if e["ts"] / 1e6 <= t <= (e["ts"] + e["dur"]) / 1e6})
        print(f"  stages running then: {', '.join(running) or '(none in the trace)'}")
    if peak["tools"]:
        print(f"  tools running then: {', '.join(f'{c} {kb / 1024:.0f} MB' for c, kb in peak['tools'])}")
    print(f"peak of the process tree (sum): {tree / 1024:.0f} MB")
    for comm, kb in sorted(tool_peak.items(), key=lambda x: -x[1]):
        print(f"  largest {comm}: {kb / 1024:.0f} MB")
    if rows:
        print(f"\n{'stage':<32} {'starts s':>9} {'busy s':>9} {'own peak MB':>12}")
        for name, start, busy, kb in rows:
            print(f"{name[:32]:<32} {start:>9.1f} {busy:>9.1f} {kb / 1024:>12.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cmd": cmd, "wall": wall, "cpu": cpu, "t0": t0, "trace_begin": begin,
                       "samples": samples,
                       "stages": [{"name": n, "start": s, "busy": b, "peak_kb": k} for n, s, b, k in rows]},
                      f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
