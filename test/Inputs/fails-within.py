"""fails-within.py SECONDS COMMAND...: succeeds when COMMAND fails (exits
non-zero or is killed) within SECONDS; fails when COMMAND succeeds or is
still running then (it is killed, with its process group). What COMMAND
prints passes through. For a `not` that must also not hang."""
import os
import signal
import subprocess
import sys

seconds, cmd = float(sys.argv[1]), sys.argv[2:]
proc = subprocess.Popen(cmd, start_new_session=True)
try:
    rc = proc.wait(timeout=seconds)
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    print("fails-within: %s still running after %g s" % (cmd[0], seconds), file=sys.stderr)
    sys.exit(1)
if rc == 0:
    print("fails-within: %s succeeded, expected a failure" % cmd[0], file=sys.stderr)
    sys.exit(1)
