"""check-targets.py [--cuobjdump=PATH] [--function=NAME] DIR CHECKFILE PREFIXES TARGET...:
runs FileCheck CHECKFILE once per target on what `fatlink device-link
--save-temps -o DIR/kernels.o` kept for it, with check prefixes chosen by
the target, so that one list of CHECK lines covers every target (lit's
shell has no loops).

The input for target T (sm_80, compute_120, ...) is its PTX: DIR/kernels.T.ptx,
or its partitions DIR/kernels.T.part*.ptx joined (a link of many kernels
is compiled in parts), also written to DIR/all.T.ptx for later RUN lines
(ptxas). With --function=NAME, only that function's PTX, up to the next
function. With --cuobjdump, the PTX is preceded by what NVIDIA's cuobjdump
(not fatlink) reads in DIR/kernels.o: its --list-elf --list-ptx listing and
one "ARCH KERNEL" line per kernel (STO_ENTRY) of each cubin. A missing or
empty PTX or function fails, so a negative check cannot pass on nothing.

For each base prefix P in PREFIXES (comma-separated), target T gets P, and
P-SM80UP / P-SM90UP when T is sm_80 / sm_90 or newer, P-PRE80 / P-PRE90
when older, P-CUBIN when T is an sm target (it has a cubin), P-PTX when it is a
compute target (only PTX); FileCheck gets
-DT=T and -DSM=sm_NN (the PTX file names of compute_NN say sm_NN)."""
import glob
import os
import re
import subprocess
import sys

args = sys.argv[1:]
cuobjdump = function = None
while args and args[0].startswith("--"):
    opt, _, val = args.pop(0).partition("=")
    if opt == "--cuobjdump":
        cuobjdump = val
    elif opt == "--function":
        function = val
    else:
        sys.exit("check-targets: unknown option %s" % opt)
outdir, checkfile, prefixes, targets = args[0], args[1], args[2].split(","), args[3:]
if not targets:
    sys.exit("check-targets: no targets")


def fail(msg):
    print("check-targets: %s: %s" % (outdir, msg), file=sys.stderr)
    sys.exit(1)


def ptx_of(t):
    one = os.path.join(outdir, "kernels.%s.ptx" % t)
    parts = sorted(glob.glob(os.path.join(outdir, "kernels.%s.part*.ptx" % t)))
    files = [one] if os.path.isfile(one) and os.path.getsize(one) else parts
    if not files:
        fail("no %s PTX (kernels.%s.ptx or kernels.%s.part*.ptx)" % (t, t, t))
    text = "".join(open(f).read() for f in files)
    with open(os.path.join(outdir, "all.%s.ptx" % t), "w") as out:
        out.write(text)
    return text


def function_body(ptx, name):
    """The lines of function NAME up to the next function (a line "}" inside
    inline PTX such as cuda_fp16.h's is not its end)."""
    start = re.compile(r"(\.entry|\.func)[^(]*[ \t]" + re.escape(name) + r"\(")
    other = re.compile(r"^([ \t]*// \.globl|\.visible|\.weak|\.func|\.entry)")
    body = []
    for line in ptx.splitlines(keepends=True):
        if body and other.match(line):
            break
        if body or start.search(line):
            body.append(line)
    return "".join(body)


cubins = ""
if cuobjdump:
    kernels_o = os.path.join(outdir, "kernels.o")
    listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", kernels_o],
                             capture_output=True, text=True)
    symbols = subprocess.run([cuobjdump, "-symbols", kernels_o], capture_output=True, text=True)
    if listing.returncode or symbols.returncode:
        fail("cuobjdump cannot read kernels.o: %s%s" % (listing.stderr, symbols.stderr))
    # "arch = sm_XX" opens each cubin's symbols; kernels are STO_ENTRY.
    entries, arch = [], "?"
    for line in symbols.stdout.splitlines():
        if line.startswith("arch = "):
            arch = line.split()[2]
        elif re.search(r"STT_FUNC .*STO_ENTRY", line):
            entries.append("%s %s\n" % (arch, line.split()[-1]))
    cubins = listing.stdout + "".join(entries)

failed = []
for t in targets:
    m = re.fullmatch(r"(sm|compute)_(\d+)a?", t)
    if not m:
        fail("not a target: %s" % t)
    n = int(m.group(2))
    ptx = ptx_of(t)
    if function:
        ptx = function_body(ptx, function)
        if not ptx:
            fail("no function %s in the %s PTX" % (function, t))
    text = ptx if function else cubins + ptx
    chosen = []
    for p in prefixes:
        chosen.append(p)
        chosen += [p + "-SM80UP"] if n >= 80 else [p + "-PRE80"]
        chosen += [p + "-SM90UP"] if n >= 90 else [p + "-PRE90"]
        chosen.append(p + ("-CUBIN" if m.group(1) == "sm" else "-PTX"))
    inputfile = os.path.join(outdir, "check.%s.txt" % t)
    with open(inputfile, "w") as out:
        out.write(text)
    print("check-targets: %s %s: --check-prefixes=%s" % (outdir, t, ",".join(chosen)), flush=True)
    rc = subprocess.run(["FileCheck", checkfile, "--input-file=" + inputfile,
                         "--check-prefixes=" + ",".join(chosen), "--allow-unused-prefixes",
                         "-DT=" + t, "-DSM=sm_%d" % n]).returncode
    if rc:
        failed.append(t)
if failed:
    fail("FileCheck failed for %s" % " ".join(failed))
