#!/usr/bin/python3
"""deploy/systemd: the unit and the board install script.

  - install-board.sh --build-dir BUILD --prefix /opt/tessera --root TMP stages the installed tree,
    the unit (paths rewritten to the prefix), /etc/tessera/tesserad.toml (board set, paths
    rewritten) and /etc/tessera/environment; a second run keeps an edited config (writes .dist).
  - `systemd-analyze verify` accepts the unit with no warning at all. verify wants ExecStart's
    binary to exist, so it runs on a generated copy whose ExecStart points at the staged binary
    (TMP/opt/tessera/bin/tesserad), and on one pointing at the build's tesserad.
  - the unit carries what issue 8 asks: dedicated user, XILINX_XRT, config in /etc/tessera,
    Restart=on-failure, ProtectSystem=strict, NoNewPrivileges, DevicePolicy=closed with the DRM
    render nodes and xclmgmt allowed, TimeoutStopSec longer than the config's drain-timeout.

usage: check_systemd.py SOURCE_DIR BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_check import Checks, need_tool  # noqa: E402


def directives(text):
    """[(key, value)] of a unit file, comments and sections skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            k, v = line.split("=", 1)
            out.append((k.strip(), v.strip()))
    return out


def verify(analyze, unit_text, exec_path, tmp, c, what):
    path = os.path.join(tmp, "verify", "tesserad.service")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = re.sub(r"^ExecStart=\S+", f"ExecStart={exec_path}", unit_text, flags=re.M)
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([analyze, "verify", path], capture_output=True, text=True, timeout=120)
    c.check(r.returncode == 0 and r.stderr.strip() == "" and r.stdout.strip() == "",
            f"systemd-analyze verify ({what}) is clean: rc {r.returncode}: {r.stdout}{r.stderr}")


def main(source, build):
    analyze = need_tool("/usr/bin/systemd-analyze", "systemd")
    need_tool("cmake", "cmake")
    c = Checks("systemd")
    with open(os.path.join(source, "deploy", "systemd", "tesserad.service")) as f:
        unit = f.read()
    d = directives(unit)
    keys = {}
    for k, v in d:
        keys.setdefault(k, []).append(v)
    one = lambda k: keys.get(k, [""])[-1]  # noqa: E731
    c.check(one("User") == "tessera" and one("Group") == "tessera", "runs as the dedicated user tessera")
    c.check(any(v.startswith("XILINX_XRT=") for v in keys.get("Environment", [])), "sets XILINX_XRT")
    c.check(one("ExecStart") == "/usr/local/bin/tesserad --config /etc/tessera/tesserad.toml",
            "ExecStart reads /etc/tessera/tesserad.toml")
    c.check(one("Restart") == "on-failure", "Restart=on-failure")
    c.check(one("ProtectSystem") == "strict", "ProtectSystem=strict")
    c.check(one("NoNewPrivileges") == "yes", "NoNewPrivileges=yes")
    c.check(one("DevicePolicy") == "closed", "DevicePolicy=closed (only DeviceAllow= devices)")
    allowed = keys.get("DeviceAllow", [])
    c.check("char-drm rw" in allowed, "DeviceAllow: the DRM render nodes (/dev/dri/renderD*: xocl, zocl)")
    c.check("char-xclmgmt rw" in allowed, "DeviceAllow: xclmgmt")
    c.check(one("PrivateDevices") in ("", "no"), "PrivateDevices off (it would hide /dev/dri)")
    with open(os.path.join(source, "deploy", "tesserad.toml")) as f:
        drain = float(re.search(r"^drain-timeout\s*=\s*([0-9.]+)", f.read(), re.M).group(1))
    stop = one("TimeoutStopSec")
    c.check(stop.isdigit() and int(stop) > drain, f"TimeoutStopSec ({stop}) > drain-timeout ({drain})")

    with tempfile.TemporaryDirectory(prefix="tessera-systemd-") as tmp:
        root = os.path.join(tmp, "root")
        script = os.path.join(source, "deploy", "systemd", "install-board.sh")
        r = subprocess.run([script, "--build-dir", build, "--prefix", "/opt/tessera", "--root", root, "--board", "zcu104"],
                           capture_output=True, text=True, timeout=300)
        if c.check(r.returncode == 0, f"install-board.sh into a staging root: {r.stdout}{r.stderr}"):
            staged_bin = os.path.join(root, "opt/tessera/bin/tesserad")
            c.check(os.access(staged_bin, os.X_OK), "staged opt/tessera/bin/tesserad")
            with open(os.path.join(root, "etc/systemd/system/tesserad.service")) as f:
                staged_unit = f.read()
            c.check("ExecStart=/opt/tessera/bin/tesserad --config /etc/tessera/tesserad.toml" in staged_unit
                    and "/usr/local" not in staged_unit, "staged unit's paths rewritten to the prefix")
            with open(os.path.join(root, "etc/tessera/tesserad.toml")) as f:
                config = f.read()
            c.check('board = "zcu104"' in config, "staged config names the board")
            c.check('models = "/opt/tessera/share/tessera/models"' in config and "/usr/local" not in config,
                    "staged config's paths rewritten to the prefix")
            c.check(os.path.isdir(os.path.join(root, "opt/tessera/share/tessera/boards")), "board profiles staged")
            with open(os.path.join(root, "etc/tessera/environment")) as f:
                env = f.read().strip()
            c.check(env in ("XILINX_XRT=", "XILINX_XRT=/opt/xilinx/xrt"), f"environment file: {env!r}")
            verify(analyze, staged_unit, staged_bin, tmp, c, "staged unit, ExecStart at the staged binary")
            # A second run keeps the admin's config.
            with open(os.path.join(root, "etc/tessera/tesserad.toml"), "a") as f:
                f.write("# edited\n")
            r = subprocess.run([script, "--prefix", "/opt/tessera", "--root", root, "--board", "zcu102"],
                               capture_output=True, text=True, timeout=120)
            with open(os.path.join(root, "etc/tessera/tesserad.toml")) as f:
                kept = f.read()
            c.check(r.returncode == 0 and "# edited" in kept and 'board = "zcu104"' in kept
                    and os.path.isfile(os.path.join(root, "etc/tessera/tesserad.toml.dist")),
                    "a second run keeps the edited config and writes tesserad.toml.dist")
            r = subprocess.run([script, "--prefix", "/opt/tessera", "--root", root, "--board", "no-such-board"],
                               capture_output=True, text=True, timeout=120)
            c.check(r.returncode != 0, "an unknown --board is refused")
        verify(analyze, unit, os.path.join(build, "bin", "tesserad"), tmp, c, "source unit, ExecStart at the build's binary")
        # The check itself: a misspelt directive must not pass.
        broken = unit.replace("ProtectSystem=strict", "ProtectSystem=strickt")
        path = os.path.join(tmp, "broken", "tesserad.service")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write(re.sub(r"^ExecStart=\S+", f"ExecStart={os.path.join(build, 'bin', 'tesserad')}", broken, flags=re.M))
        r = subprocess.run([analyze, "verify", path], capture_output=True, text=True, timeout=120)
        c.check(r.returncode != 0 or r.stderr.strip() != "", "verify reports a bad value (the check can fail)")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
