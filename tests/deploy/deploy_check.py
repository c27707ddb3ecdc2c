"""Shared bits of the deploy checks (tests/deploy/check_*.py): a failure list, the CTest skip code,
and a tesserad started as a child process on loopback ports."""
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

SKIP = 77  # CTest SKIP_RETURN_CODE of every deploy check


class Checks:
    """Collects failed checks; finish() prints them and returns the exit code (0 only when all held)."""

    def __init__(self, name):
        self.name = name
        self.failures = []
        self.passed = 0

    def check(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"FAIL: {what}", flush=True)
        return bool(condition)

    def finish(self):
        for f in self.failures:
            print(f"{self.name}: FAILED: {f}")
        print(f"{self.name}: {self.passed} passed, {len(self.failures)} failed")
        return 1 if self.failures or self.passed == 0 else 0


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def need_tool(path_or_name, package):
    found = path_or_name if os.path.isabs(path_or_name) and os.access(path_or_name, os.X_OK) else shutil.which(path_or_name)
    if not found:
        skip(f"{path_or_name} is missing (Debian package {package}, tools/setup.sh)")
    return found


class Tesserad:
    """tesserad --listen 127.0.0.1 --grpc-port 0 --http-port 0 + args; waits for its startup line."""

    STARTUP = re.compile(r"^tesserad: listening grpc=(\S+):(\d+) http=(\S+):(\d+) models=(\S*)$")

    def __init__(self, binary, args, log_path, env=None, timeout=90):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1", "--grpc-port", "0", "--http-port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=self.log, env=env)
        self.http_port = 0
        self.models = ""
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline and self.proc.poll() is None:
            line = self.proc.stdout.readline()  # the daemon prints the line, or exits
            if line:
                break
        m = self.STARTUP.match(line.decode(errors="replace").strip())
        if m:
            self.http_port = int(m.group(4))
            self.models = m.group(5)

    def ok(self):
        return self.http_port > 0

    def stderr(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def get(self, path, timeout=10):
        """(status, body bytes) of GET http://127.0.0.1:<port><path>; status 0 when no answer."""
        return self.request(path, None, timeout)

    def request(self, path, body, timeout=10, content_type="application/octet-stream"):
        req = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", data=body)
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError as e:
            return 0, str(e).encode()

    def stop(self, timeout=30):
        """SIGTERM (a drain), then the exit status (None when it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        self.log.close()
        return self.proc.returncode
