#!/usr/bin/env python3
"""run.py: the device-link benchmark: fatlink against clang-linker-wrapper and
nvcc -dlto, side by side on the same inputs, and against "the floor".

    bench/run.py --n 16,64,256 --runs 3 --runs-large 1

Builds the workloads of bench/workload.py (once; objects are reused between
invocations), then for each N and target set (one arch: sm_75; four:
sm_75,sm_80,sm_90,sm_100) and each run, links with every tool in turn:

  full       a cold link (fatlink: empty cache directory)
  unchanged  the same link again, nothing changed
  host-only  main.c changed (another host object), device inputs identical
  one-unit   one unit's source edited and its object rebuilt (not timed)

plus a program with no device code at all, the plain host link (cc), and the
floor: llvm-link-22, one opt-22 O3 with the kernels kept, then llc-22 and
ptxas per arch, two at a time. Each command runs under /usr/bin/time (wall,
user+sys of the whole process tree, max RSS of the largest single process)
while a sampler sums the RSS of the live process tree every 50 ms.

Results go to WORK/results.json; --doc writes docs/benchmarks.md and its plot
(bench/benchmarks-time.svg) from them. Not part of the test suite.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload as wl  # noqa: E402
import report  # noqa: E402

CU = wl.CUDA
ONE = ["sm_75"]
FOUR = ["sm_75", "sm_80", "sm_90", "sm_100"]
SETS = {"one": ONE, "four": FOUR}
PEERS = ["clang", "clang-j2", "nvcc", "nvcc-t2"]
ALL_TOOLS = ["fatlink"] + PEERS


# -- measuring ---------------------------------------------------------------

def descendants(root):
    """[(pid, comm)] of every process below root (from /proc/*/stat)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            comm = st[st.index("(") + 1:st.rindex(")")]
            ppid = int(st[st.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append((int(d), comm))
    out, todo = [], [root]
    while todo:
        for pid, comm in children.get(todo.pop(), []):
            out.append((pid, comm))
            todo.append(pid)
    return out


def _tree_rss_kb(root):
    """Sum of VmRSS of root and its descendants (from /proc), in KiB."""
    total = 0
    for pid in [root] + [pid for pid, _ in descendants(root)]:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total * (os.sysconf("SC_PAGE_SIZE") // 1024)


def measure(cmd, cwd=None, env=None, sample=True):
    """Runs cmd; returns wall, cpu (user+sys of the tree), rss_kb (largest
    single process, as /usr/bin/time %M), tree_kb (sampled sum)."""
    fd, tfile = tempfile.mkstemp(prefix="bench-time-")
    os.close(fd)
    full = ["/usr/bin/time", "-o", tfile, "-f", "%e %U %S %M"] + cmd
    t0 = time.perf_counter()
    p = subprocess.Popen(full, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    peak = [0]
    stop = threading.Event()

    def sampler():
        while not stop.wait(0.05):
            peak[0] = max(peak[0], _tree_rss_kb(p.pid))
    th = threading.Thread(target=sampler, daemon=True)
    if sample:
        th.start()
    out, _ = p.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    if sample:
        th.join()
    with open(tfile) as f:
        lines = f.read().strip().splitlines()
    os.unlink(tfile)
    if p.returncode != 0:
        raise RuntimeError(f"failed ({p.returncode}): {' '.join(cmd)}\n{out[-4000:]}")
    e, u, s, m = lines[-1].split()
    return {"wall": round(wall, 4), "cpu": round(float(u) + float(s), 3),
            "rss_kb": int(m), "tree_kb": max(peak[0], int(m)), "log": out[-2000:]}


def fatbin_size(exe):
    """Bytes of fatbin containers in the executable's .nv_fatbin section (the
    device part): the sum of each container's 16-byte header plus the entry
    size it declares, so section alignment padding is not counted."""
    with tempfile.NamedTemporaryFile(prefix="bench-fatbin-") as t:
        r = subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", exe, t.name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = open(t.name, "rb").read() if r.returncode == 0 else b""
    total, off = 0, 0
    while off + 16 <= len(data):
        magic, _ver, hsize, size = struct.unpack_from("<IHHQ", data, off)
        if magic != 0xBA55ED50:
            off += 8  # padding between containers
            continue
        total += hsize + size
        off += hsize + size
    return total


def load_average():
    return os.getloadavg()[0]


def wait_for_quiet(limit, max_wait):
    t0 = time.time()
    while load_average() >= limit and time.time() - t0 < max_wait:
        time.sleep(10)
    return load_average()


# -- the tools ---------------------------------------------------------------

def shadow_cuda(work):
    """A CUDA root of symlinks whose nvvm/lib64/libnvvm.so exists: nvcc passes
    nvlink -nvvmpath=<bin>/../nvvm after any -Xnvlink option, and this image
    keeps libnvvm.so.4 in lib/, not nvvm/lib64/."""
    root = os.path.join(work, "cuda-shadow")
    if os.path.exists(os.path.join(root, "nvvm/lib64/libnvvm.so")):
        return root
    os.makedirs(os.path.join(root, "bin"), exist_ok=True)
    os.makedirs(os.path.join(root, "nvvm/lib64"), exist_ok=True)
    for f in os.listdir(os.path.join(CU, "bin")):
        dst = os.path.join(root, "bin", f)
        if not os.path.lexists(dst):
            os.symlink(os.path.join(CU, "bin", f), dst)
    for d in ("include", "lib", "lib64", "targets"):
        if os.path.exists(os.path.join(CU, d)) and not os.path.lexists(os.path.join(root, d)):
            os.symlink(os.path.join(CU, d), os.path.join(root, d))
    for d in ("bin", "libdevice"):
        dst = os.path.join(root, "nvvm", d)
        if not os.path.lexists(dst):
            os.symlink(os.path.join(CU, "nvvm", d), dst)
    nvvm = None
    for cand in ("lib64/libnvvm.so.4", "lib/libnvvm.so.4", "nvvm/lib64/libnvvm.so"):
        if os.path.exists(os.path.join(CU, cand)):
            nvvm = os.path.realpath(os.path.join(CU, cand))
            break
    if not nvvm:
        raise RuntimeError(f"libnvvm.so.4 not found under {CU}")
    os.symlink(nvvm, os.path.join(root, "nvvm/lib64/libnvvm.so"))
    return root


class Tools:
    def __init__(self, work):
        self.fatlink_cc = os.path.join(os.path.dirname(wl.FATLINK), "fatlink-cc")
        self.nvcc = os.path.join(shadow_cuda(work), "bin", "nvcc")
        self.cudart = [f"-L{CU}/lib64", "-lcudart"]

    def link_cmd(self, tool, host, objs, arches, out, cache=None, extra=()):
        if tool == "fatlink":
            return [self.fatlink_cc, host, *objs, *self.cudart, "-o", out,
                    f"--fatlink-arch={','.join(arches)}", f"--fatlink-cache-dir={cache}",
                    *extra]
        if tool.startswith("clang"):
            j = ["--offload-jobs=2"] if tool == "clang-j2" else []
            return [wl.CLANG, f"--cuda-path={CU}", "--offload-new-driver", "-fgpu-rdc",
                    "-foffload-lto", f"--offload-arch={','.join(arches)}", *j,
                    host, *objs, *self.cudart, "-o", out]
        if tool.startswith("nvcc"):
            g = []
            for a in arches:
                n = a.split("_")[1]
                g += ["-gencode", f"arch=compute_{n},code=sm_{n}"]
            t = ["-t", "2"] if tool == "nvcc-t2" else []
            return [self.nvcc, "-dlto", *g, *t, host, *objs, "-o", out]
        if tool == "cc":
            return [wl.CC, host, *objs, *self.cudart, "-o", out]
        raise ValueError(tool)


# -- the floor ---------------------------------------------------------------

def floor_front(w, arch, out_dir):
    """The floor's first two stages, the same for every floor: llvm-link of
    the units' device bitcode, then opt O3 keeping the kernels. Returns
    [(stage, argv)] and the files they leave in out_dir (opt.bc, the O3
    output, first). The kernels to keep go in a file: 22,400 names in one
    argument pass the kernel's limit on an argument's length (128 KiB)."""
    bcs = w.device_bitcode(arch)
    os.makedirs(out_dir, exist_ok=True)
    opt, linked = os.path.join(out_dir, "opt.bc"), os.path.join(out_dir, "linked.bc")
    keep = os.path.join(out_dir, "kernels.txt")
    with open(keep, "w") as f:
        f.write("\n".join(w.kernel_names()) + "\n")
    stages = [
        ("llvm-link", ["llvm-link-22", *bcs, "-o", linked]),
        ("opt O3", ["opt-22", "-mtriple=nvptx64-nvidia-cuda", f"-mcpu={arch}",
                    "-passes=internalize,default<O3>", f"-internalize-public-api-file={keep}",
                    linked, "-o", opt]),
    ]
    return stages, [opt, linked, keep]


def floor(w, arches, out_dir):
    """The stages once each with the standalone tools. Returns stage walls.
    Measured under the same conditions as the tools: the process-tree RSS
    sampler (about 6 ms of CPU every 50 ms on this machine) runs for every
    stage, as it does for every link."""
    stages, files = floor_front(w, "sm_75", out_dir)
    opt = files[0]
    r = {}
    for name, cmd in stages:
        r[name] = measure(cmd)["wall"]
    # llc then ptxas per arch, two arches at a time (one shell per arch).
    script = []
    for a in arches:
        ptx, cubin = os.path.join(out_dir, f"{a}.ptx"), os.path.join(out_dir, f"{a}.cubin")
        script.append(f"llc-22 -O3 -march=nvptx64 -mcpu={a} {opt} -o {ptx} && "
                      f"{CU}/bin/ptxas -O3 -arch={a} {ptx} -o {cubin}")
    t0 = time.perf_counter()
    per = {}

    def one(i):
        s = time.perf_counter()
        subprocess.run(["bash", "-c", script[i]], check=True)
        per[arches[i]] = time.perf_counter() - s
    from concurrent.futures import ThreadPoolExecutor
    stop = threading.Event()

    def sampler():
        while not stop.wait(0.05):
            _tree_rss_kb(os.getpid())
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    with ThreadPoolExecutor(2) as ex:
        list(ex.map(one, range(len(arches))))
    stop.set()
    th.join()
    r["llc+ptxas (2 at a time)"] = time.perf_counter() - t0
    r["per arch llc+ptxas"] = {a: round(v, 3) for a, v in per.items()}
    r["total"] = r["llvm-link"] + r["opt O3"] + r["llc+ptxas (2 at a time)"]
    return r


# -- one configuration ---------------------------------------------------------

def bench_config(tools_, w1, w4, setname, tool_list, runs, work, log, mix,
                 peer_relinks_all=False, peer_cases=("full", "unchanged", "host-only", "one-unit"),
                 floor_fn=None):
    """All cases for one (mix, N, target set). w1: sm_75-only objects, w4:
    four-arch objects (nvcc objects always come from w4)."""
    arches = SETS[setname]
    n = w4.n if w4 else w1.n
    tag = f"{mix}-n{n}-{setname}"
    out_dir = os.path.join(work, "out", tag)
    os.makedirs(out_dir, exist_ok=True)
    res = {t: {c: [] for c in ("full", "unchanged", "host-only", "one-unit")} for t in tool_list}
    res["cc"] = {"host link": []}
    floors = []
    sizes = {}
    unit = (n // 2 + 3) % n

    def objs_for(tool):
        if tool.startswith("nvcc"):
            return w4.nvcc_objs()
        if tool == "fatlink-1img":
            return w1.clang_objs()
        return (w1 if setname == "one" else w4).clang_objs()

    def link(tool, case, host_v, run_i):
        cache = os.path.join(work, "cache", f"{tag}-{tool}-run{run_i}")
        if case == "full" and os.path.exists(cache):
            shutil.rmtree(cache)
        real_tool = "fatlink" if tool.startswith("fatlink") else tool
        w = w4 if w4 else w1
        out = os.path.join(out_dir, f"{tool}.{case}.exe")
        cmd = tools_.link_cmd(real_tool, w.host_obj(host_v), objs_for(tool), arches, out, cache)
        m = measure(cmd, cwd=out_dir)
        m["fatbin"] = fatbin_size(out)
        m.pop("log")
        res[tool][case].append(m)
        log(f"  {tag} run {run_i} {tool:13s} {case:10s} {m['wall']:7.2f} s  cpu {m['cpu']:6.2f} s  "
            f"rss {m['rss_kb'] // 1024} MiB  tree {m['tree_kb'] // 1024} MiB  fatbin {m['fatbin']}")
        if case == "full":
            sizes[tool] = out
        return m

    def relinks(tool, r):
        # A peer has no cache: its re-links are full links, measured in the
        # first run only (--peer-relinks-all measures them in every run).
        return r == 0 or tool.startswith("fatlink") or peer_relinks_all

    def want(tool, case):
        return tool.startswith("fatlink") or case in peer_cases

    for r in range(runs):
        for tool in tool_list:
            link(tool, "full", 0, r)
            if relinks(tool, r):
                if want(tool, "unchanged"):
                    link(tool, "unchanged", 0, r)
                if want(tool, "host-only"):
                    link(tool, "host-only", 1, r)
        # plain host link of the same objects, no device link (cc)
        w = w4 if w4 else w1
        m = measure(tools_.link_cmd("cc", w.host_obj(0), w.clang_objs(), arches,
                                    os.path.join(out_dir, "cc.exe")), cwd=out_dir)
        m.pop("log")
        res["cc"]["host link"].append(m)
        log(f"  {tag} run {r} cc host link   {m['wall']:7.3f} s")
        # the floor once per run, between the same runs' links: the machine's
        # speed drifts, and the ratio compares medians taken alike
        if floor_fn:
            floors.append(floor_fn())
            log(f"  {tag} run {r} floor          {floors[-1]['total']:7.2f} s")
        # one unit edited (edit value unique per run so no cache can hold it)
        for ww in (w1, w4):
            if ww:
                ww.touch_unit(unit, 100 + r)
        for tool in tool_list:
            if relinks(tool, r) and want(tool, "one-unit"):
                link(tool, "one-unit", 0, r)
        for ww in (w1, w4):
            if ww:
                ww.touch_unit(unit, 0)
    res["floors"] = floors
    return tag, res, sizes


def median_floor(floors):
    """The floor run with the median total, with every run's total."""
    by_total = sorted(floors, key=lambda f: f["total"])
    pick = dict(by_total[(len(by_total) - 1) // 2])
    pick["totals"] = [round(f["total"], 3) for f in floors]
    return pick


def fatbinary_reference(exe, work):
    """fatlink's cubins re-packed by NVIDIA's fatbinary --compress-mode=size."""
    d = tempfile.mkdtemp(dir=work)
    subprocess.run([wl.FATLINK, "inspect", f"--extract={d}", exe], check=True,
                   stdout=subprocess.DEVNULL)
    imgs = []
    for f in sorted(os.listdir(d)):
        m = re.search(r"sm_(\d+)\.(cubin|ptx)$", f)
        if m:
            kind = "elf" if m.group(2) == "cubin" else "ptx"
            imgs.append(f"--image3=kind={kind},sm={m.group(1)},file={os.path.join(d, f)}")
    res = {}
    for mode in ("size", "default"):
        out = os.path.join(d, f"ref-{mode}.fatbin")
        subprocess.run([f"{CU}/bin/fatbinary", "-64", "--create", out, f"--compress-mode={mode}",
                        "--compress-all", *imgs], check=True)
        res[mode] = os.path.getsize(out)
    shutil.rmtree(d)
    return res


def no_device(tools_, work, runs, log):
    d = os.path.join(work, "out", "nodevice")
    os.makedirs(d, exist_ok=True)
    plain = os.path.join(work, "plain.o")
    res = {}
    for r in range(runs):
        for tool in ["cc"] + ALL_TOOLS:
            out = os.path.join(d, f"{tool}.exe")
            real = "fatlink" if tool.startswith("fatlink") else tool
            cmd = tools_.link_cmd(real, plain, [], FOUR, out, os.path.join(work, "cache", "nodev"))
            if tool == "cc":
                cmd = [wl.CC, plain, "-o", out]
            m = measure(cmd, cwd=d)
            m.pop("log")
            res.setdefault(tool, []).append(m)
            log(f"  no-device run {r} {tool:10s} {m['wall']:.3f} s")
    return res


def merge(results, tag, entry):
    """Adds one configuration's results; tools measured by an earlier
    invocation (say nvcc, once its objects were built) are kept."""
    old = results["configs"].get(tag)
    if old:
        old["res"].update(entry["res"])
        entry["res"] = old["res"]
        entry["ref_fatbin"] = entry.get("ref_fatbin") or old.get("ref_fatbin")
    results["configs"][tag] = entry


def versions():
    def first(cmd):
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True).stdout.strip().splitlines()
            return out[-1] if cmd[0].endswith("nvcc") else out[0]
        except OSError:
            return "?"
    import hashlib
    head = subprocess.run(["git", "-C", wl.ROOT, "rev-parse", "--short", "HEAD"],
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", wl.ROOT, "status", "--short", "--untracked-files=no"],
                           stdout=subprocess.PIPE, text=True).stdout.split("\n")
    return {"fatlink": wl.FATLINK,
            "fatlink_sha256": hashlib.sha256(open(wl.FATLINK, "rb").read()).hexdigest()[:16],
            "git": head + (" + uncommitted changes to " + ", ".join(
                l[3:] for l in dirty if l.strip()) if any(l.strip() for l in dirty) else ""),
            "clang": first([wl.CLANG, "--version"]),
            "nvcc": first([os.path.join(CU, "bin", "nvcc"), "--version"]),
            "rustc": first([wl.RUSTC, "--version"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="16,64,256", help="unit counts (comma-separated)")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration")
    ap.add_argument("--runs-large", type=int, default=1, help="runs for N >= 256")
    ap.add_argument("--sets", default="one,four", help="target sets: one (sm_75), four")
    ap.add_argument("--tools", default=",".join(ALL_TOOLS + ["fatlink-1img"]),
                    help="fatlink, fatlink-1img (sm_75-only objects), clang, clang-j2, nvcc, nvcc-t2")
    ap.add_argument("--mixed", default="", help="N for the mixed Rust + CUDA C++ workload (fatlink only)")
    ap.add_argument("--work", default=os.environ.get("FATLINK_BENCH_WORK", "/tmp/fatlink-bench/work"))
    ap.add_argument("--wait-load", type=float, default=0.5,
                    help="wait (up to --max-wait s) until the 1-min load is below this")
    ap.add_argument("--max-wait", type=float, default=600)
    ap.add_argument("--no-floor", action="store_true")
    ap.add_argument("--peer-cases", default="full,unchanged,host-only,one-unit",
                    help="cases measured for the peers (fatlink always gets all four)")
    ap.add_argument("--peer-relinks-all", action="store_true",
                    help="measure the peers' re-links in every run, not only the first")
    ap.add_argument("--doc", action="store_true", help="write docs/benchmarks.md from WORK/results.json")
    ap.add_argument("--doc-only", action="store_true", help="only rewrite the doc from saved results")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rpath = os.path.join(a.work, "results.json")
    if a.doc_only:
        report.write(json.load(open(rpath)))
        return
    if not os.path.exists(wl.FATLINK):
        sys.exit(f"bench: {wl.FATLINK} not found: run bazel build //tools/fatlink:all first")

    def log(s):
        print(s, flush=True)

    results = json.load(open(rpath)) if os.path.exists(rpath) else {"configs": {}, "floor": {}}
    tools_ = Tools(a.work)
    tool_list = [t for t in a.tools.split(",") if t]
    sets = [s for s in a.sets.split(",") if s]
    log(f"building workloads in {a.work} ...")
    ws = {}
    for n in [int(x) for x in a.n.split(",") if x]:
        w1 = wl.Workload(a.work, n, "cuda", ONE, tools=("clang",))
        nv = ("nvcc",) if any(t.startswith("nvcc") for t in tool_list) else ()
        w4 = wl.Workload(a.work, n, "cuda", FOUR, tools=("clang",) + nv)
        w1.build()
        w4.build()
        ws[n] = (w1, w4)
    mixed = {}
    for n in [int(x) for x in a.mixed.split(",") if x]:
        m1 = wl.Workload(a.work, n, "mixed", ONE, tools=("clang",))
        m4 = wl.Workload(a.work, n, "mixed", FOUR, tools=("clang",))
        m1.build()
        m4.build()
        mixed[n] = (m1, m4)
    load = wait_for_quiet(a.wait_load, a.max_wait)
    log(f"1-min load average before measuring: {load:.2f}")
    results["machine"] = {"cores": os.cpu_count(), "kernel": platform.release(),
                          "load_start": round(load, 2), "when": time.strftime("%Y-%m-%d %H:%M")}
    results["runs"] = {"small": a.runs, "large": a.runs_large}
    results["versions"] = versions()
    loads = [load]
    for n, (w1, w4) in ws.items():
        runs = a.runs_large if n >= 256 else a.runs
        for s in sets:
            tl = [t for t in tool_list if not (t == "fatlink-1img" and s == "one")]
            ftag = f"cuda-n{n}-{s}"
            fdir = os.path.join(a.work, "out", f"floor-{ftag}")
            floor_fn = None if a.no_floor else (lambda w1=w1, s=s, fdir=fdir: floor(w1, SETS[s], fdir))
            tag, res, outs = bench_config(tools_, w1, w4, s, tl, runs, a.work, log, "cuda",
                                          a.peer_relinks_all, a.peer_cases.split(","), floor_fn)
            floors = res.pop("floors")
            sizes = {"ref": fatbinary_reference(outs["fatlink"], a.work)} if "fatlink" in outs else {}
            merge(results, tag, {"n": n, "set": s, "mix": "cuda", "runs": runs,
                                 "res": res, "ref_fatbin": sizes.get("ref")})
            loads.append(load_average())
            json.dump(results, open(rpath, "w"), indent=1)
            if floors:
                fl = median_floor(floors)
                results["floor"][tag] = fl
                log(f"  floor {tag} (median of {len(floors)}): {fl}")
                json.dump(results, open(rpath, "w"), indent=1)
    for n, (m1, m4) in mixed.items():
        runs = a.runs_large if n >= 256 else a.runs
        for s in sets:
            tag, res, outs = bench_config(tools_, m1 if s == "one" else None,
                                          m4 if s == "four" else None, s, ["fatlink"],
                                          runs, a.work, log, "mixed")
            res.pop("floors", None)
            merge(results, tag, {"n": n, "set": s, "mix": "mixed", "runs": runs, "res": res})
            json.dump(results, open(rpath, "w"), indent=1)
    results["nodevice"] = no_device(tools_, a.work, a.runs, log)
    loads.append(load_average())
    results["machine"]["load_max_seen"] = round(max(loads), 2)
    results.setdefault("invocations", []).append(
        {"when": results["machine"]["when"], "args": " ".join(sys.argv[1:]),
         "load_start": round(loads[0], 2), "load_max_seen": round(max(loads), 2)})
    json.dump(results, open(rpath, "w"), indent=1)
    log(f"results in {rpath}")
    if a.doc:
        report.write(results)


if __name__ == "__main__":
    main()
