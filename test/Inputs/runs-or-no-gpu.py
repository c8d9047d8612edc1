#!/usr/bin/env python3
# runs-or-no-gpu.py PROGRAM [ARGS...]: runs a CUDA program that exits 0 when
# its results check out on a GPU and 2 when the CUDA runtime reports an
# error. Passes (exit 0) when PROGRAM exits 0, or when it exits 2 because
# the machine has no GPU: the runtime's "driver version is insufficient"
# (no driver) or "no CUDA-capable device" (a driver without a device).
# Anything else fails, with the program's output. lit's shell cannot say
# "this, or that" about one command.
import re
import subprocess
import sys

proc = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
out = proc.stdout
if proc.returncode == 0:
    print("ran on a GPU: " + out.strip())
    sys.exit(0)
if proc.returncode == 2 and re.search(r"driver version is insufficient|no CUDA-capable device", out):
    print("no GPU: " + out.strip())
    sys.exit(0)
print("runs-or-no-gpu: %s exited %d:\n%s" % (sys.argv[1], proc.returncode, out), file=sys.stderr)
sys.exit(1)
