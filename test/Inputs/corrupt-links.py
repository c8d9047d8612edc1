"""corrupt-links.py SRC COUNT SEED DIR -- LINK...: writes COUNT copies of
the bitcode file SRC with 3 bytes changed each (random.Random(SEED)) as
DIR/NNN.bc and runs LINK on each, with the argument {} replaced by the
mutant and `-o MUTANT.cubin` added, as many at once as there are cores. Prints how
many linked and were refused, then one line per kind of misbehaviour with
its count and the first inputs that showed it: a death by a signal, a
refusal without a 'fatlink: error:' line, a refusal that left its output.
Exits non-zero when any count is not 0. The mutants that killed the linker
are copied to $TEST_UNDECLARED_OUTPUTS_DIR when Bazel sets it.

corrupt-links.py --each DIR -- LINK... does the same with the files DIR
holds (*.bc, sorted) instead of mutants: record_sweep's edits
(test/reliability/metadata-sweep.test)."""
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys

USAGE = "usage: corrupt-links.py SRC COUNT SEED DIR -- LINK... | --each DIR -- LINK..."
if sys.argv[1] == "--each":
    out_dir, rest = sys.argv[2], sys.argv[3:]
    inputs = [os.path.join(out_dir, f) for f in sorted(os.listdir(out_dir)) if f.endswith(".bc")]
else:
    src, count, seed, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rest = sys.argv[5:]
    data = open(src, "rb").read()
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    inputs = []
    for i in range(count):
        mutant = bytearray(data)
        for _ in range(3):
            mutant[rng.randrange(len(mutant))] = rng.randrange(256)
        path = os.path.join(out_dir, "%03d.bc" % i)
        open(path, "wb").write(mutant)
        inputs.append(path)
assert rest and rest[0] == "--", USAGE
link = rest[1:]
assert "{}" in link, "LINK has no {} for the mutant"
linked, refused = 0, 0
# Refusals where LLVM crashed and fatlink recovered: while reading an
# input ("x.bc: corrupt bitcode: LLVM crashed reading it"), or later, on
# the linked program, where the message names no input.
recovered = {"reading": 0, "later": 0}
bad = {"died by a signal": [], "refused without 'fatlink: error:'": [], "refused and left its output": []}


def run(path):
    """Links one input; its output beside it, so that links run at once."""
    out = path + ".cubin"
    if os.path.exists(out):
        os.remove(out)
    proc = subprocess.run([path if a == "{}" else a for a in link] + ["-o", out], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace")
    left = os.path.exists(out)
    if left:
        os.remove(out)
    return path, proc, left


# As many links at once as there are cores: the results are gathered in
# the inputs' order, so the report is the same whatever the count.
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
    for path, proc, left in pool.map(run, inputs):
        if proc.returncode < 0 or proc.returncode >= 128:
            bad["died by a signal"].append("%s (exit %d): %s" % (path, proc.returncode, proc.stderr[:200]))
            if os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR"):
                shutil.copy(path, os.environ["TEST_UNDECLARED_OUTPUTS_DIR"])
        elif proc.returncode != 0:
            refused += 1
            errors = [l for l in proc.stderr.splitlines() if l.startswith("fatlink: error: ")]
            if any(l.startswith("fatlink: error: LLVM crashed") or l.startswith("fatlink: error: LLVM failed")
                   for l in errors):
                recovered["later"] += 1
            elif any("LLVM crashed" in l or "LLVM failed" in l for l in errors):
                recovered["reading"] += 1
            if not errors:
                bad["refused without 'fatlink: error:'"].append("%s: %s" % (path, proc.stderr[:200]))
            if left:
                bad["refused and left its output"].append(path)
        else:
            linked += 1
print("%d linked, %d refused" % (linked, refused))
print("LLVM crashed, recovered: %d reading an input, %d on the linked program" % (recovered["reading"], recovered["later"]))
for what, cases in bad.items():
    print("%s: %d" % (what, len(cases)))
    for c in cases[:5]:
        print("  " + c)
sys.exit(1 if any(bad.values()) else 0)
