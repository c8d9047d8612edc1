"""interrupt-children.py SIGNAL PIDS COUNT COMMAND...: runs COMMAND, waits
(30 s at most) until the file PIDS holds COUNT lines (each fake ptxas that
COMMAND starts appends its pid there), then interrupts it: SIGNAL TERM or
INT is sent to COMMAND; PIPE closes the pipe that COMMAND's stderr goes to,
so that its next message raises SIGPIPE. Expects COMMAND to die of that
signal and, half a second later, none of the recorded children to be
running (none was left to run on, re-parented to init; a zombie is not
running). Kills any that is."""
import os
import signal
import subprocess
import sys
import time

name, pids, count, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
sig = getattr(signal, "SIG" + name)


def recorded():
    try:
        return [int(l) for l in open(pids).read().split()]
    except (OSError, ValueError):
        return []


stderr = subprocess.PIPE if name == "PIPE" else subprocess.DEVNULL
proc = subprocess.Popen(cmd, stderr=stderr, stdout=subprocess.DEVNULL,
                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for _ in range(300):
    if len(recorded()) >= count:
        break
    time.sleep(0.1)
else:
    proc.kill()
    proc.wait()
    sys.exit("interrupt-children.py: %s never started %d children" % (cmd[0], count))
if name == "PIPE":
    proc.stderr.close()
else:
    proc.send_signal(sig)
rc = proc.wait()
time.sleep(0.5)


def running(pid):
    # A zombie has stopped: an orphan (a wrapper's child) waits there until
    # init reaps it.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


left = []
for pid in recorded():
    if running(pid):
        left.append(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
print("children started: %d" % len(recorded()))
print("children left running: %d" % len(left))
if rc != -sig:
    sys.exit("interrupt-children.py: %s exited with %d, expected death by SIG%s" % (cmd[0], rc, name))
