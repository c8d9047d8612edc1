"""corrupt-links.py SRC COUNT SEED DIR -- LINK...: writes COUNT copies of
the bitcode file SRC with 3 bytes changed each (random.Random(SEED)) as
DIR/NNN.bc and runs LINK on each, with the argument {} replaced by the
mutant and `-o DIR/out.cubin` added. Prints how
many linked and were refused, then one line per kind of misbehaviour with
its count and the first inputs that showed it: a death by a signal, a
refusal without a 'fatlink: error:' line, a refusal that left its output.
Exits non-zero when any count is not 0. The mutants that killed the linker
are copied to $TEST_UNDECLARED_OUTPUTS_DIR when Bazel sets it."""
import os
import random
import shutil
import subprocess
import sys

src, count, seed, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
assert sys.argv[5] == "--", "usage: corrupt-links.py SRC COUNT SEED DIR -- LINK..."
link = sys.argv[6:]
assert "{}" in link, "LINK has no {} for the mutant"
data = open(src, "rb").read()
rng = random.Random(seed)
os.makedirs(out_dir, exist_ok=True)
linked, refused = 0, 0
bad = {"died by a signal": [], "refused without 'fatlink: error:'": [], "refused and left its output": []}
out = os.path.join(out_dir, "out.cubin")
for i in range(count):
    mutant = bytearray(data)
    for _ in range(3):
        mutant[rng.randrange(len(mutant))] = rng.randrange(256)
    path = os.path.join(out_dir, "%03d.bc" % i)
    open(path, "wb").write(mutant)
    if os.path.exists(out):
        os.remove(out)
    proc = subprocess.run([path if a == "{}" else a for a in link] + ["-o", out], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace")
    if proc.returncode < 0 or proc.returncode >= 128:
        bad["died by a signal"].append("%s (exit %d): %s" % (path, proc.returncode, proc.stderr[:200]))
        if os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR"):
            shutil.copy(path, os.environ["TEST_UNDECLARED_OUTPUTS_DIR"])
    elif proc.returncode != 0:
        refused += 1
        if not any(l.startswith("fatlink: error: ") for l in proc.stderr.splitlines()):
            bad["refused without 'fatlink: error:'"].append("%s: %s" % (path, proc.stderr[:200]))
        if os.path.exists(out):
            bad["refused and left its output"].append(path)
    else:
        linked += 1
print("%d linked, %d refused" % (linked, refused))
for what, cases in bad.items():
    print("%s: %d" % (what, len(cases)))
    for c in cases[:5]:
        print("  " + c)
sys.exit(1 if any(bad.values()) else 0)
