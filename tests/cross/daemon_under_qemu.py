#!/usr/bin/python3
"""The board's daemon under qemu-user, classified over loopback by the build machine's client.

Usage: daemon_under_qemu.py --emulator "qemu-aarch64 -L /" --tesserad ARM_BIN
       --tessera X86_CLI --models DIR --web-root DIR --images DIR

Starts the cross-built tesserad under qemu on 127.0.0.1 (ports chosen by the kernel), sends every
PNG and JPEG of --images (Fashion-MNIST test images named {index}_{label}.{png,jpg}) through the
x86_64 `tessera classify --json` over gRPC and through HTTP POST /v1/classify, and checks that
both doors give the same top-1 for each image and that top-1 accuracy is what the model reaches
(the bundled model: 92% on the whole test set). A missing emulator or client fails with the
reason: this test never passes without having run.
"""

import argparse
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request

import qemu_daemon



def start_daemon(args, log):
    """The ARM tesserad under the emulator on 127.0.0.1, serving --models and --web-root."""
    argv = shlex.split(args.emulator) + [args.tesserad, "--listen", "127.0.0.1", "--grpc-port", "0",
                                         "--http-port", "0", "--models", args.models,
                                         "--web-root", args.web_root, "--device", "emu"]
    daemon, why = qemu_daemon.start(argv, log, wait_s=120)
    if daemon is None:
        sys.exit(f"FAIL: {why}; log:\n" + pathlib.Path(log.name).read_text())
    return daemon


def classify_grpc(args, address, images):
    """top-1 class index per image, through the x86_64 CLI (one call for all images)."""
    out = subprocess.run([args.tessera, "classify", "--server", address, "--top-k", "1", "--json",
                          "--timeout", "120"] + [str(p) for p in images],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"FAIL: tessera classify exited {out.returncode}: {out.stderr}")
    top1 = {}
    for line in out.stdout.splitlines():
        answer = json.loads(line)
        top1[pathlib.Path(answer["file"]).name] = answer["classes"][0]["index"]
    return top1


def classify_http(address, image):
    request = urllib.request.Request(f"http://{address}/v1/classify?top_k=1", data=image.read_bytes(),
                                     method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())["classes"][0]["index"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--emulator", "--tesserad", "--tessera", "--models", "--web-root", "--images"):
        p.add_argument(flag, required=True)
    p.add_argument("--min-accuracy", type=float, default=0.85)
    args = p.parse_args()

    emulator = shlex.split(args.emulator)[0]
    if shutil.which(emulator) is None:
        sys.exit(f"FAIL: {emulator} not found (Debian package qemu-user; tools/cross.sh installs it)")
    if not os.access(args.tessera, os.X_OK):
        sys.exit(f"FAIL: no x86_64 client at {args.tessera} (tools/cross.sh builds it into build/)")
    images = sorted(pathlib.Path(args.images).glob("*.png")) + sorted(pathlib.Path(args.images).glob("*.jpg"))
    if not images:
        sys.exit(f"FAIL: no images in {args.images}")

    log_path = os.path.join(os.path.dirname(os.path.abspath(args.images)), "tesserad-qemu.log")
    with open(log_path, "w") as log:
        daemon = start_daemon(args, log)
    grpc_address, http_address = daemon.grpc_address, daemon.http_address
    try:
        t0 = time.time()
        grpc_top1 = classify_grpc(args, grpc_address, images)
        t_grpc = time.time() - t0
        correct = 0
        for image in images:
            label = int(image.stem.split("_")[1])
            http = classify_http(http_address, image)
            grpc = grpc_top1.get(image.name)
            if grpc != http:
                sys.exit(f"FAIL: {image.name}: gRPC says {grpc}, HTTP says {http}")
            correct += grpc == label
    finally:
        # The board's way to stop it: SIGTERM, drain, exit 0 (checked below, after the answers).
        exit_code = qemu_daemon.stop(daemon)
    if exit_code != 0:
        sys.exit(f"FAIL: tesserad did not drain and exit 0 on SIGTERM (exit code {exit_code}); log: {log_path}")
    accuracy = correct / len(images)
    print(f"aarch64/armhf tesserad under {emulator}: {len(images)} images over gRPC ({t_grpc:.1f} s) and HTTP, "
          f"same top-1 on both doors, {correct}/{len(images)} correct ({accuracy * 100:.1f}%)")
    if accuracy < args.min_accuracy:
        sys.exit(f"FAIL: accuracy {accuracy:.3f} below {args.min_accuracy}")


if __name__ == "__main__":
    main()
