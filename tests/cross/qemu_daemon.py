"""Starting and stopping a cross-built tesserad under qemu-user, for the `cross` tests.

start(argv, log, wait_s) runs `argv` (the emulator, the ARM tesserad and its flags; ports 0 so the
kernel picks them) and waits for the daemon's startup line; stop(proc) is the board's way to end
it: SIGTERM, drain, exit 0.
"""

import re
import select
import subprocess
import time

STARTUP = re.compile(r"^tesserad: listening grpc=(\S+):(\d+) http=(\S+):(\d+) models=(\S*)$")


class Daemon:
    def __init__(self, proc, grpc_address, http_address):
        self.proc = proc
        self.grpc_address = grpc_address
        self.http_address = http_address


def start(argv, log, wait_s):
    """A Daemon once `argv` printed its startup line within wait_s seconds, else (None, why).

    qemu-user is slow to start a large binary and to calibrate and plan a model, so callers give
    minutes. select() bounds the wait: a bare readline() blocks as long as the daemon is silent.
    """
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
    deadline = time.time() + wait_s
    line = ""
    while time.time() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 5)
        if ready:
            line = proc.stdout.readline()
            break
    m = STARTUP.match(line.strip())
    if not m:
        proc.kill()
        proc.wait()
        return None, f"no startup line within {wait_s} s from {' '.join(argv)} (got {line!r})"
    return Daemon(proc, f"{m.group(1)}:{m.group(2)}", f"{m.group(3)}:{m.group(4)}"), None


def stop(daemon, wait_s=60):
    """SIGTERM; the exit code, or a sentence saying it had to be killed."""
    daemon.proc.terminate()
    try:
        return daemon.proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        daemon.proc.kill()
        daemon.proc.wait(timeout=30)
        return f"none: still running {wait_s} s after SIGTERM, killed"
