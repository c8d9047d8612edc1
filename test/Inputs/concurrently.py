"""concurrently.py N COMMAND...: runs N copies of COMMAND at once, each
with every "{}" in its arguments replaced by its number (1..N), and waits
for all of them. Fails, naming the copies that failed, when any exits
non-zero. What the copies print passes through. For tests of several
fatlink processes sharing inputs, an output or a cache directory."""
import subprocess
import sys

n, cmd = int(sys.argv[1]), sys.argv[2:]
procs = [subprocess.Popen([a.replace("{}", str(i)) for a in cmd]) for i in range(1, n + 1)]
failed = [i + 1 for i, p in enumerate(procs) if p.wait() != 0]
if failed:
    sys.exit("concurrently.py: copies %s of %s failed" % (failed, cmd[0]))
