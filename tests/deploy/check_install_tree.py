#!/usr/bin/python3
"""The CMake install target: `cmake --install BUILD --prefix TMP` lays out the tree the Docker
images and the systemd unit use, and the installed binaries run from it alone:

  bin/tesserad, bin/tessera; share/tessera/{web/index.html, boards/*.toml, models/<bundled>/...,
  examples/tesserad.toml, examples/systemd/{tesserad.service, install-board.sh}}
  - the installed `tessera plan` reads the installed board profiles (a profile that exists only in
    the installed tree is found), and $TESSERA_BOARDS_DIR overrides that;
  - the installed tesserad, started without --web-root, serves the installed web UI, loads the
    installed model and answers /v2/health/ready and /v2/health/live with 200;
  - it accepts the installed example config (every key a real setting) and drains on SIGTERM (0).

usage: check_install_tree.py SOURCE_DIR BUILD_DIR
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_check import Checks, Tesserad, need_tool  # noqa: E402


def json_object(line):
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def main(source, build):
    cmake = need_tool("cmake", "cmake")
    c = Checks("install_tree")
    with tempfile.TemporaryDirectory(prefix="tessera-install-") as tmp:
        prefix = os.path.join(tmp, "usr")
        r = subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True, text=True)
        if not c.check(r.returncode == 0, f"cmake --install failed: {r.stderr}"):
            return c.finish()
        share = os.path.join(prefix, "share", "tessera")
        for rel in ["bin/tesserad", "bin/tessera"]:
            c.check(os.access(os.path.join(prefix, rel), os.X_OK), f"{rel} installed and executable")
        c.check(filecmp.cmp(os.path.join(source, "web", "index.html"), os.path.join(share, "web", "index.html"),
                            shallow=False), "share/tessera/web/index.html is web/index.html")
        boards = sorted(f for f in os.listdir(os.path.join(source, "accel", "plan", "boards")) if f.endswith(".toml"))
        c.check(boards and sorted(os.listdir(os.path.join(share, "boards"))) == boards,
                f"share/tessera/boards holds exactly the profiles {boards}")
        for model in sorted(os.listdir(os.path.join(source, "models"))):
            src = os.path.join(source, "models", model)
            for name in os.listdir(src):
                if os.path.isfile(os.path.join(src, name)):
                    c.check(filecmp.cmp(os.path.join(src, name), os.path.join(share, "models", model, name), shallow=False),
                            f"share/tessera/models/{model}/{name} installed")
        for rel in ["examples/tesserad.toml", "examples/systemd/tesserad.service"]:
            c.check(os.path.isfile(os.path.join(share, rel)), f"share/tessera/{rel} installed")
        c.check(os.access(os.path.join(share, "examples/systemd/install-board.sh"), os.X_OK),
                "share/tessera/examples/systemd/install-board.sh installed and executable")

        # Board profiles: the installed tree's own, found relative to the binary.
        shutil.copy(os.path.join(share, "boards", "zcu102.toml"), os.path.join(share, "boards", "installed-only.toml"))
        model_dir = os.path.join(share, "models", "fashion-mnist")
        tessera = os.path.join(prefix, "bin", "tessera")
        env = dict(os.environ)
        env.pop("TESSERA_BOARDS_DIR", None)
        env["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        r = subprocess.run([tessera, "plan", model_dir, "--board", "installed-only", "--no-plan-cache"],
                           capture_output=True, text=True, env=env, timeout=300)
        c.check(r.returncode == 0 and os.path.join(share, "boards") in r.stdout,
                f"installed tessera plan reads share/tessera/boards (rc {r.returncode}): {r.stdout[-400:]} {r.stderr[-400:]}")
        env_dir = os.path.join(tmp, "env-boards")
        os.makedirs(env_dir)
        shutil.copy(os.path.join(share, "boards", "zcu104.toml"), os.path.join(env_dir, "from-env.toml"))
        env_with_dir = dict(env, TESSERA_BOARDS_DIR=env_dir)
        r = subprocess.run([tessera, "plan", model_dir, "--board", "from-env", "--no-plan-cache"],
                           capture_output=True, text=True, env=env_with_dir, timeout=300)
        c.check(r.returncode == 0 and env_dir in r.stdout,
                f"TESSERA_BOARDS_DIR overrides the installed profiles (rc {r.returncode}): {r.stderr[-400:]}")
        r = subprocess.run([tessera, "plan", model_dir, "--board", "installed-only", "--no-plan-cache"],
                           capture_output=True, text=True, env=env_with_dir, timeout=300)
        c.check(r.returncode != 0, "with TESSERA_BOARDS_DIR set, the installed-only profile is not found")

        # The daemon from the installed tree: default web root, the installed model.
        tesserad = os.path.join(prefix, "bin", "tesserad")
        d = Tesserad(tesserad, ["--models", os.path.join(share, "models"), "--plan-cache", os.path.join(tmp, "plans"),
                                "--board", "installed-only"], os.path.join(tmp, "tesserad.log"), env=env)
        if c.check(d.ok(), "installed tesserad starts from the installed tree: " + d.stderr()[-2000:]):
            c.check(d.models == "fashion-mnist", f"it serves the installed model (models={d.models})")
            c.check(d.get("/v2/health/ready")[0] == 200, "GET /v2/health/ready answers 200")
            c.check(d.get("/v2/health/live")[0] == 200, "GET /v2/health/live answers 200")
            status, body = d.get("/")
            with open(os.path.join(share, "web", "index.html"), "rb") as f:
                c.check(status == 200 and body == f.read(), f"GET / serves the installed index.html ({status})")
            c.check(os.path.join(share, "web") in d.stderr(), "its log names the installed web root")
        c.check(d.stop() == 0, "it drains and exits 0 on SIGTERM")

        # The installed example config: every key is a tesserad setting (flags override the paths).
        d = Tesserad(tesserad, ["--config", os.path.join(share, "examples", "tesserad.toml"),
                                "--models", os.path.join(share, "models"), "--web-root", os.path.join(share, "web"),
                                "--plan-cache", os.path.join(tmp, "plans")],
                     os.path.join(tmp, "tesserad-config.log"), env=env)
        if c.check(d.ok(), "installed tesserad starts with the example config: " + d.stderr()[-2000:]):
            c.check(d.get("/v2/health/ready")[0] == 200, "with the example config, /v2/health/ready answers 200")
            c.check(any(json_object(line) for line in d.stderr().splitlines()),
                    "the example config's log-format json took effect (JSON log lines)")
        c.check(d.stop() == 0, "it drains and exits 0 on SIGTERM")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
