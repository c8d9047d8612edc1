"""jobserver.py STYLE VAR TOKENS -- COMMAND...: runs COMMAND as a GNU make
jobserver would, with TOKENS tokens ('+' bytes) in a pipe (STYLE pipe:
`--jobserver-auth=R,W` in VAR, the descriptors inherited) or a named pipe
(STYLE fifo: `--jobserver-auth=fifo:PATH`), VAR being MAKEFLAGS or
CARGO_MAKEFLAGS (the other one removed). Afterwards it drains the pipe and
prints "tokens back: N of TOKENS" (a client must return every token it
took), then exits with COMMAND's status."""
import os
import subprocess
import sys
import tempfile

style, var, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
assert sys.argv[4] == "--"
cmd = sys.argv[5:]
env = dict(os.environ)
env.pop("MAKEFLAGS", None)
env.pop("CARGO_MAKEFLAGS", None)
env.pop("MFLAGS", None)
with tempfile.TemporaryDirectory() as tmp:
    if style == "fifo":
        path = os.path.join(tmp, "jobserver")
        os.mkfifo(path)
        # Held open read-write, so that neither side sees end of file.
        rfd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        wfd = rfd
        auth = "fifo:" + path
        pass_fds = ()
    else:
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        auth = "%d,%d" % (rfd, wfd)
        pass_fds = (rfd, wfd)
    os.write(wfd, b"+" * tokens)
    env[var] = "-j%d --jobserver-auth=%s" % (tokens + 1, auth)
    rc = subprocess.call(cmd, env=env, pass_fds=pass_fds)
    back = 0
    while True:
        try:
            got = os.read(rfd, 64)
        except BlockingIOError:
            break
        if not got:
            break
        back += len(got)
    print("tokens back: %d of %d" % (back, tokens))
sys.exit(rc)
