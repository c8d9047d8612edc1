"""concurrently.py N COMMAND... [::: COMMAND...]: starts N copies of each
COMMAND, all at once, each with every "{}" in its arguments replaced by
its number (1..N), and waits for all of them. Fails, naming the copies
that failed, when any exits non-zero. What the copies print passes
through. For tests of several fatlink processes sharing inputs, an output
or a cache directory."""
import subprocess
import sys

n, args = int(sys.argv[1]), sys.argv[2:]
cmds, cmd = [], []
for a in args + [":::"]:
    if a == ":::":
        cmds.append(cmd)
        cmd = []
    else:
        cmd.append(a)
procs = []
for i in range(1, n + 1):
    for c in cmds:
        procs.append((c, i, subprocess.Popen([a.replace("{}", str(i)) for a in c])))
failed = ["%s (copy %d)" % (c[0], i) for c, i, p in procs if p.wait() != 0]
if failed:
    sys.exit("concurrently.py: failed: " + ", ".join(failed))
