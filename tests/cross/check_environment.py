#!/usr/bin/python3
"""What every `cross` test needs from the build machine; fails with the reason, never skips.

Usage: check_environment.py --emulator "qemu-aarch64 -L /" --binary ARM_ELF

Checks that the qemu-user binary is there, that the ARM binary's ELF interpreter (its dynamic
loader, /lib/ld-linux-aarch64.so.1 or /lib/ld-linux-armhf.so.3) is there on the build machine
(Debian's libc6:arm64 / libc6:armhf: qemu runs with `-L /`, see cmake/toolchain-cross-common.cmake),
that the loader and libc.so.6 come from the same package version, and that the binary starts
under qemu (`--version`). The `cross` tests require this one (CTest fixture cross_environment).
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys


def package_of(path):
    """"package:arch version" owning `path` (or the file it links to) per dpkg, or None."""
    for candidate in (path, os.path.realpath(path)):
        out = subprocess.run(["dpkg-query", "-S", candidate], capture_output=True, text=True)
        if out.returncode == 0:
            package = out.stdout.strip().rsplit(": ", 1)[0].split(",")[0].strip()
            version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                                     text=True).stdout.strip()
            return f"{package} {version}"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--emulator", required=True)
    p.add_argument("--binary", required=True)
    args = p.parse_args()
    emulator = shlex.split(args.emulator)
    problems = []

    if shutil.which(emulator[0]) is None:
        sys.exit(f"FAIL: {emulator[0]} not found (Debian package qemu-user; tools/cross.sh installs it)")
    if shutil.which("readelf") is None:
        sys.exit("FAIL: readelf not found (Debian package binutils)")
    if not os.path.isfile(args.binary):
        sys.exit(f"FAIL: {args.binary} is not built")
    headers = subprocess.run(["readelf", "-l", args.binary], capture_output=True, text=True).stdout
    m = re.search(r"Requesting program interpreter: (\S+)\]", headers)
    if not m:
        sys.exit(f"FAIL: {args.binary} names no ELF interpreter (not a dynamic ARM executable?)")
    loader = m.group(1)
    triplet = "aarch64-linux-gnu" if "aarch64" in loader else "arm-linux-gnueabihf"
    deb_arch = "arm64" if "aarch64" in loader else "armhf"
    libc = f"/lib/{triplet}/libc.so.6"
    if not os.path.exists(loader):
        problems.append(f"the target's loader {loader} is missing (Debian package libc6:{deb_arch}; "
                        "tools/cross.sh installs it with the :" + deb_arch + " libraries)")
    elif not os.path.exists(libc):
        problems.append(f"{libc} is missing (Debian package libc6:{deb_arch})")
    else:
        owners = {package_of(loader), package_of(libc)}
        if len(owners) != 1 or None in owners:
            problems.append(f"{loader} and {libc} come from different packages or versions {sorted(map(str, owners))}: "
                            "a loader and a libc of two glibc builds hang the first pthread_create")
    if problems:
        sys.exit("FAIL: " + "; ".join(problems))

    try:
        out = subprocess.run(emulator + [args.binary, "--version"], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: {' '.join(emulator)} {args.binary} --version did not finish within 120 s")
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit(f"FAIL: {' '.join(emulator)} {args.binary} --version exited {out.returncode}: {out.stderr.strip()}")
    print(f"{emulator[0]} runs {os.path.basename(args.binary)} with {loader} ({package_of(loader)}): "
          f"{out.stdout.strip()}")


if __name__ == "__main__":
    main()
