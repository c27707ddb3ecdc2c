#!/usr/bin/python3
"""Issue 24's memory figures (items 3 and 4), for a before/after comparison of tesserad builds.

    /usr/bin/python3 tests/bench/hardening_memory.py TESSERAD [stream|json|watch|all]

stream: one ClassifyStream whose client writes up to 400,000 requests and never reads; prints
        how many writes went through before they stalled (3 s without progress, or all), the
        daemon's VmRSS then and 2 s after the client cancelled.
json:   on a fresh daemon each, POSTs to /v2/models/fashion-mnist/infer: a 16 MiB body of
        nested arrays, the same four at once, a 10 MB body 5 M levels deep, a flat array of
        8.4 M numbers; prints the answers, VmHWM (peak) and VmRSS 2 s after (kept), baseline first.
watch:  20 WatchTelemetry calls (every 50 ms) and 20 server-sent event streams (/v1/telemetry/stream,
        every 100 ms, a 4 KiB receive buffer) that never read, for 60 s (--http-write-timeout-s 5);
        prints VmRSS every 10 s and how many event streams the daemon has closed.
Uses the bundled model (models/) and the test images of $TESSERA_BUILD_DIR (build)/testdata/fmnist_images.
"""
import glob
import os
import re
import socket
import subprocess
import sys
import threading
import time

import grpc


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mem(pid):
    return f"VmRSS {status_kb(pid, 'VmRSS') / 1024:.0f} MB, VmHWM {status_kb(pid, 'VmHWM') / 1024:.0f} MB"


class Daemon:
    def __init__(self, binary, *args):
        self.log = open(os.devnull, "w")
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1", "--grpc-port", "0", "--http-port", "0",
                                      "--models", "models", "--log-level", "warn", *args],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"grpc=([^ ]+) http=([^ ]+)", line)
        if not m:
            raise SystemExit(f"tesserad did not start: {line!r}")
        self.grpc, self.http = m.group(1), m.group(2)
        self.pid = self.proc.pid
        time.sleep(1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def classify_request(image, i):
    def field(number, wire, payload):
        key = bytes([number << 3 | wire])
        if wire == 2:
            n, size = len(payload), b""
            while True:
                b = n & 0x7F
                n >>= 7
                size += bytes([b | (0x80 if n else 0)])
                if not n:
                    break
            return key + size + payload
        return key + payload
    return field(2, 2, image) + field(4, 2, f"r{i}".encode())


def stream(binary, build):
    image = open(sorted(glob.glob(f"{build}/testdata/fmnist_images/*.png"))[0], "rb").read()
    d = Daemon(binary)
    print(f"stream: baseline {mem(d.pid)}")
    channel = grpc.insecure_channel(d.grpc)
    call = channel.stream_stream("/tessera.v1.Classifier/ClassifyStream", request_serializer=lambda b: b,
                                 response_deserializer=lambda b: b)
    sent = [0]

    def requests():
        for i in range(400_000):
            yield classify_request(image, i)
            sent[0] = i + 1

    responses = call(requests())
    last, still = -1, time.time()
    start = time.time()
    while sent[0] < 400_000 and time.time() - still < 3:
        time.sleep(0.2)
        if sent[0] != last:
            last, still = sent[0], time.time()
    print(f"stream: {sent[0]} requests written in {time.time() - start:.1f} s before the writes stalled "
          f"(or all); {mem(d.pid)}")
    responses.cancel()
    time.sleep(2)
    print(f"stream: 2 s after the cancel: {mem(d.pid)}")
    channel.close()
    d.stop()


def post(http, body, answers):
    host, port = http.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    head = (f"POST /v2/models/fashion-mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    start = time.time()
    try:
        s.sendall(head + body)
    except OSError:
        pass
    data = b""
    s.settimeout(60)
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        pass
    s.close()
    answers.append(f"{data[9:12].decode() or 'none'} in {time.time() - start:.2f} s")


def json_case(binary, name, body, copies=1):
    d = Daemon(binary)
    base = status_kb(d.pid, "VmRSS")
    answers = []
    threads = [threading.Thread(target=post, args=(d.http, body, answers)) for _ in range(copies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(2)
    print(f"json {name}: {len(body) / 1e6:.1f} MB x{copies}: answers {answers}; baseline VmRSS {base / 1024:.0f} MB, "
          f"peak VmHWM {status_kb(d.pid, 'VmHWM') / 1024:.0f} MB, kept VmRSS {status_kb(d.pid, 'VmRSS') / 1024:.0f} MB")
    d.stop()


def json_cases(binary):
    sixteen = 16 << 20
    envelope = b'{"inputs":[{"name":"input","datatype":"FP32","shape":[1,1,28,28],"data":%s}]}'
    nested = envelope % (b"[" + b",".join([b"[0.5]"] * (sixteen // 6 - 20)) + b"]")
    json_case(binary, "nested arrays", nested)
    json_case(binary, "nested arrays, four at once", nested, copies=4)
    json_case(binary, "5 M levels deep", b"[" * 5_000_000 + b"]" * 5_000_000)
    json_case(binary, "flat 8.4 M numbers", b"[" + b",".join([b"0"] * (sixteen // 2 - 1)) + b"]")


def watch(binary):
    d = Daemon(binary, "--http-write-timeout-s", "5")
    print(f"watch: baseline {mem(d.pid)}")
    channel = grpc.insecure_channel(d.grpc)
    method = channel.unary_stream("/tessera.v1.Telemetry/WatchTelemetry", request_serializer=lambda b: b,
                                  response_deserializer=lambda b: b)
    calls = [method(bytes([0x08, 50])) for _ in range(20)]  # interval_ms = 50, never iterated
    host, port = d.http.rsplit(":", 1)
    sockets = []
    for _ in range(20):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, int(port)))
        s.sendall(b"GET /v1/telemetry/stream?interval_ms=100 HTTP/1.1\r\nHost: x\r\n\r\n")
        sockets.append(s)
    for t in range(6):
        time.sleep(10)
        states = subprocess.run(["ss", "-tn", "state", "established", f"( sport = :{port} )"], capture_output=True,
                                text=True).stdout.count("\n") - 1
        print(f"watch: {10 * (t + 1)} s: {mem(d.pid)}; {states} HTTP connections still open on the daemon's side")
    for c in calls:
        c.cancel()
    for s in sockets:
        s.close()
    channel.close()
    d.stop()


def main():
    binary = os.path.abspath(sys.argv[1])
    what = sys.argv[2] if len(sys.argv) > 2 else "all"
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    build = os.environ.get("TESSERA_BUILD_DIR", "build")
    if what in ("stream", "all"):
        stream(binary, build)
    if what in ("json", "all"):
        json_cases(binary)
    if what in ("watch", "all"):
        watch(binary)


if __name__ == "__main__":
    main()
