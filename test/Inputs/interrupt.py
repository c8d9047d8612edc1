"""interrupt.py SIGNAL STARTED COMMAND...: runs COMMAND, waits (10 s at
most) until the file STARTED is not empty (a fake ptxas writes its pid
there), sends SIGNAL (TERM, INT) to COMMAND and expects COMMAND to die of
that signal. Then kills the orphaned fake ptxas whose pid STARTED holds."""
import os
import signal
import subprocess
import sys
import time

sig = getattr(signal, "SIG" + sys.argv[1])
started, cmd = sys.argv[2], sys.argv[3:]
# Python starts children with SIGINT at its default; say so anyway.
proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL,
                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for _ in range(100):
    if os.path.exists(started) and os.path.getsize(started) > 0:
        break
    time.sleep(0.1)
else:
    proc.kill()
    proc.wait()
    sys.exit("interrupt.py: %s never started ptxas" % cmd[0])
proc.send_signal(sig)
rc = proc.wait()
try:
    os.kill(int(open(started).read()), signal.SIGKILL)
except (ValueError, ProcessLookupError):
    pass
if rc != -sig:
    sys.exit("interrupt.py: %s exited with %d, expected death by SIG%s" % (cmd[0], rc, sys.argv[1]))
