#!/usr/bin/python3
"""What one image costs tesserad to decode (issue 24, item 9): starts a tesserad on free loopback
ports with the bundled model, POSTs each image N times in a row to /v1/classify and prints per
image the wall time per request and the daemon's own decode_us (when it classified it).

Images: the issue's PNG (16384x2441 black RGB, ~116 KB), a 1792x1792 gray JPEG (a test image
upscaled 64 times; quality 95) and the 28x28 test PNG itself.

    /usr/bin/python3 tests/bench/decode_cost.py --build build [--repeat 10] [ARGS for tesserad...]
"""
import argparse
import io
import json
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def png(width, height, channels, row):
    """A PNG of `height` copies of the filter-0 row `row` (bytes), compressed by zlib level 9."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    colour = {1: 0, 3: 2}[channels]
    ihdr = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    z = zlib.compressobj(9)
    line = b"\0" + row
    data = b"".join(z.compress(line) for _ in range(height)) + z.flush()
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def images():
    from PIL import Image
    small = sorted((ROOT / "models" / "fashion-mnist" / "calibration").glob("*.png"))[0]
    out = {"png 16384x2441 (black)": png(16384, 2441, 3, bytes(16384 * 3))}
    big = Image.open(small).convert("L").resize((1792, 1792), Image.NEAREST)
    buf = io.BytesIO()
    big.save(buf, format="JPEG", quality=95)
    out["jpeg 1792x1792"] = buf.getvalue()
    out["png 28x28"] = small.read_bytes()
    return out


def start(build, extra):
    daemon = subprocess.Popen([str(Path(build) / "bin" / "tesserad"), "--listen", "127.0.0.1", "--grpc-port", "0",
                               "--http-port", "0", "--models", str(ROOT / "models")] + extra,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = daemon.stdout.readline()
    if "http=" not in line:
        daemon.kill()
        sys.exit(f"tesserad did not start: {line!r}")
    return daemon, line.split("http=")[1].split()[0]


def post(address, body):
    request = urllib.request.Request(f"http://{address}/v1/classify", data=body,
                                     headers={"Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--repeat", type=int, default=10)
    args, extra = parser.parse_known_args()
    daemon, address = start(args.build, extra)
    try:
        for name, body in images().items():
            post(address, body)  # warm-up
            statuses, decode_us = set(), []
            started = time.monotonic()
            for _ in range(args.repeat):
                status, answer = post(address, body)
                statuses.add(status)
                if status == 200:
                    decode_us.append(answer["timing"]["decode_us"])
            wall = (time.monotonic() - started) * 1000
            decode = f"decode {sum(decode_us) / len(decode_us) / 1000:.1f} ms" if decode_us else "not decoded"
            print(f"{name:24s} {len(body):>8d} B  {args.repeat} in {wall:7.0f} ms ({wall / args.repeat:6.1f} ms each)"
                  f"  HTTP {sorted(statuses)}  {decode}")
    finally:
        daemon.terminate()
        daemon.wait()


if __name__ == "__main__":
    main()
