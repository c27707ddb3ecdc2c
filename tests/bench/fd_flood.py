#!/usr/bin/python3
"""Floods tesserad's HTTP port with connections under a low file-descriptor limit (issue 24, item 2).

Starts `tesserad` under `prlimit --nofile=N:N`, opens one keep-alive connection, then opens
--connections more and holds them for --seconds. Prints what the flood cost: log bytes and lines
written, CPU seconds the daemon burned, whether a request on the existing keep-alive connection
was answered (and how fast), whether a new connection is served once the flood is gone, and
tessera_http_connections_refused_total.

  /usr/bin/python3 tests/bench/fd_flood.py --tesserad build/bin/tesserad [--max-connections 100000]
"""
import argparse
import http.client
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get(conn, path, timeout):
    if conn.sock:
        conn.sock.settimeout(timeout)
    start = time.monotonic()
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        body = res.read()
        return res.status, body.decode(errors="replace"), time.monotonic() - start
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e), time.monotonic() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesserad", default=os.path.join(ROOT, "build/bin/tesserad"))
    ap.add_argument("--nofile", type=int, default=256)
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--max-connections", type=int, default=None, help="passed on when given")
    args = ap.parse_args()

    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    log = tempfile.NamedTemporaryFile(prefix="fd-flood-", suffix=".log", delete=False)
    cmd = ["prlimit", f"--nofile={args.nofile}:{args.nofile}", "--", args.tesserad, "--listen", "127.0.0.1",
           "--grpc-port", "0", "--http-port", "0", "--models", os.path.join(ROOT, "models")]
    if args.max_connections is not None:
        cmd += ["--max-connections", str(args.max_connections)]
    daemon = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    line = daemon.stdout.readline()
    m = re.search(r"http=\S+:(\d+)", line)
    if not m:
        sys.exit(f"no startup line: {line!r}; log {log.name}")
    port = int(m.group(1))
    keep = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    status, _, _ = get(keep, "/healthz", 10)
    assert status == 200, status

    log_before = os.path.getsize(log.name)
    cpu_before = cpu_seconds(daemon.pid)
    wall = time.monotonic()
    flood = []
    for _ in range(args.connections):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        flood.append(s)
    time.sleep(args.seconds / 2)
    existing = get(keep, "/healthz", 10)
    time.sleep(args.seconds / 2)
    cpu = cpu_seconds(daemon.pid) - cpu_before
    held = time.monotonic() - wall
    log_bytes = os.path.getsize(log.name) - log_before
    with open(log.name, errors="replace") as f:
        f.seek(log_before)
        log_lines = sum(1 for _ in f)
    for s in flood:
        s.close()
    time.sleep(0.5)
    fresh = (0, "", 0)
    for _ in range(50):
        fresh = get(http.client.HTTPConnection("127.0.0.1", port, timeout=5), "/healthz", 5)
        if fresh[0] == 200:
            break
        time.sleep(0.1)
    metrics = get(http.client.HTTPConnection("127.0.0.1", port, timeout=5), "/metrics", 5)[1]
    refused = re.search(r"^tessera_http_connections_refused_total (\S+)", metrics, re.M)
    daemon.terminate()
    daemon.wait(timeout=30)
    print(f"flood: {len(flood)} connections held {held:.1f} s under nofile {args.nofile}")
    print(f"log: {log_bytes} bytes, {log_lines} lines during the flood ({log_bytes / held:.0f} B/s)")
    print(f"cpu: {cpu:.2f} s in {held:.1f} s ({100 * cpu / held:.0f}% of a core)")
    print(f"existing keep-alive connection: status {existing[0]} in {existing[2] * 1000:.0f} ms"
          + ("" if existing[0] == 200 else f" ({existing[1]})"))
    print(f"new connection after the flood: status {fresh[0]}")
    print(f"tessera_http_connections_refused_total: {refused.group(1) if refused else 'absent'}")
    os.unlink(log.name)


if __name__ == "__main__":
    main()
