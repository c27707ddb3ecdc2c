#!/usr/bin/python3
"""The board's install tree: `cmake --install` of a cross build holds ARM binaries that run.

Usage: check_install_tree.py --build BUILD_DIR --arch aarch64|armhf --emulator "qemu-aarch64 -L /"

Installs BUILD_DIR into a temporary prefix (what docker/Dockerfile.aarch64 copies into its image
and deploy/README.md's board recipe copies onto a board's rootfs) and checks:
  - bin/tesserad and bin/tessera are ELF executables for the board (64-bit AArch64 or 32-bit ARM
    EABI hard-float), not the build machine's;
  - both start under qemu-user and print their version and CPU (`--version`);
  - the installed tesserad, given only the installed models, serves the installed web UI (its
    default web root, found from the binary's own path), answers /v2/health/ready with 200 and
    drains and exits 0 on SIGTERM.
Fails with the reason when qemu or cmake is missing.
"""

import argparse
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import qemu_daemon

# ELF e_machine and class per board architecture (elf.h: EM_AARCH64 183, EM_ARM 40).
EXPECTED = {"aarch64": (183, 2, "64-bit AArch64"), "armhf": (40, 1, "32-bit ARM")}
EF_ARM_ABI_FLOAT_HARD = 0x400


def elf_problem(path, arch):
    """None when `path` is an ELF executable for `arch`, else what is wrong."""
    with open(path, "rb") as f:
        head = f.read(64)
    if head[:4] != b"\x7fELF":
        return "not an ELF file"
    machine_want, class_want, what = EXPECTED[arch]
    elf_class, data = head[4], head[5]
    if data != 1:
        return "not little-endian"
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    if elf_class != class_want or e_machine != machine_want:
        return f"ELF class {elf_class}, machine {e_machine}: not {what}"
    if e_type not in (2, 3):  # ET_EXEC, ET_DYN (PIE)
        return f"ELF type {e_type} is not an executable"
    if arch == "armhf":
        e_flags = struct.unpack_from("<I", head, 36)[0]
        if not e_flags & EF_ARM_ABI_FLOAT_HARD:
            return "not hard-float (EF_ARM_ABI_FLOAT_HARD unset)"
    return None


def start_daemon(emulator, prefix, log):
    argv = emulator + [os.path.join(prefix, "bin", "tesserad"), "--listen", "127.0.0.1", "--grpc-port", "0",
                       "--http-port", "0", "--device", "emu", "--models", os.path.join(prefix, "share", "tessera", "models")]
    # The installed model has no plan cache yet: calibrating and planning it under qemu takes a while.
    return qemu_daemon.start(argv, log, wait_s=600)


def http_get(address, path):
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def check_daemon(emulator, prefix, tmp, failures):
    log_path = os.path.join(tmp, "tesserad.log")
    with open(log_path, "w") as log:
        daemon, why = start_daemon(emulator, prefix, log)
        if daemon is None:
            failures.append(why + "; log:\n" + open(log_path).read())
            return
        address = daemon.http_address
        try:
            status, _ = http_get(address, "/v2/health/ready")
            if status != 200:
                failures.append(f"/v2/health/ready answered {status}")
            status, body = http_get(address, "/")
            with open(os.path.join(prefix, "share", "tessera", "web", "index.html"), "rb") as f:
                if status != 200 or body != f.read():
                    failures.append(f"GET / answered {status}, not the installed share/tessera/web/index.html")
        finally:
            code = qemu_daemon.stop(daemon)
        if code != 0:
            failures.append(f"tesserad exited {code} on SIGTERM, not 0; log:\n" + open(log_path).read())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--arch", required=True, choices=sorted(EXPECTED))
    p.add_argument("--emulator", required=True)
    args = p.parse_args()
    emulator = shlex.split(args.emulator)
    for tool, package in ((emulator[0], "qemu-user"), ("cmake", "cmake")):
        if shutil.which(tool) is None:
            sys.exit(f"FAIL: {tool} not found (Debian package {package}; tools/cross.sh installs it)")

    failures = []
    with tempfile.TemporaryDirectory(prefix="tessera-install-") as tmp:
        prefix = os.path.join(tmp, "usr")
        r = subprocess.run(["cmake", "--install", args.build, "--prefix", prefix], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"FAIL: cmake --install {args.build} failed: {r.stderr}")
        for name in ("tesserad", "tessera"):
            path = os.path.join(prefix, "bin", name)
            if not os.access(path, os.X_OK):
                failures.append(f"bin/{name} not installed or not executable")
                continue
            problem = elf_problem(path, args.arch)
            if problem:
                failures.append(f"bin/{name}: {problem}")
                continue
            out = subprocess.run(emulator + [path, "--version"], capture_output=True, text=True, timeout=120)
            if out.returncode != 0 or not out.stdout.startswith(name + " "):
                failures.append(f"bin/{name} --version under {emulator[0]} exited {out.returncode}: "
                                f"{out.stdout.strip()} {out.stderr.strip()}")
            else:
                print(f"bin/{name}: {EXPECTED[args.arch][2]} ELF, under {emulator[0]}: {out.stdout.strip()}")
        if not failures:
            check_daemon(emulator, prefix, tmp, failures)
    if failures:
        sys.exit("FAIL: " + "\nFAIL: ".join(failures))
    print(f"install tree of {args.build}: ARM binaries start under qemu; the installed tesserad serves its "
          "installed web UI and model, is ready, and drains on SIGTERM")


if __name__ == "__main__":
    main()
