#!/usr/bin/python3
"""deploy/prometheus with the real promtool (Debian package prometheus):

  P1 `promtool check config` on prometheus.yml (the fleet, file_sd) and prometheus-compose.yml
  P2 `promtool check rules` on rules/*.yml
  P3 `promtool test rules` on tests/*.yml passes
  P4 every alert of rules/alerts.yml has a unit test that expects it firing (exp_alerts non-empty)
     and one that expects it silent (exp_alerts empty); every recording rule is tested by a
     promql_expr_test; the tests are not vacuous: with an alert's threshold changed they fail
  P5 boards_to_file_sd.py writes the file_sd JSON Prometheus reads (and rejects a bad line)

usage: check_prometheus.py SOURCE_DIR
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_check import Checks, need_tool, skip  # noqa: E402

try:
    import yaml
except ImportError:
    skip("python3-yaml is missing (Debian package python3-yaml, tools/setup.sh)")


def run(argv, cwd=None):
    r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)
    return r.returncode, r.stdout + r.stderr


def main(source):
    promtool = need_tool("/usr/bin/promtool", "prometheus")
    c = Checks("prometheus")
    prom = os.path.join(source, "deploy", "prometheus")
    for cfg in ("prometheus.yml", "prometheus-compose.yml"):
        rc, out = run([promtool, "check", "config", cfg], cwd=prom)
        c.check(rc == 0 and "SUCCESS" in out, f"P1 promtool check config {cfg}: {out}")
    rule_files = sorted(glob.glob(os.path.join(prom, "rules", "*.yml")))
    rc, out = run([promtool, "check", "rules", *rule_files])
    c.check(rc == 0 and len(rule_files) == 2, f"P2 promtool check rules: {out}")
    tests = sorted(glob.glob(os.path.join(prom, "tests", "*.yml")))
    rc, out = run([promtool, "test", "rules", *tests])
    c.check(rc == 0 and tests and out.count("SUCCESS") == len(tests), f"P3 promtool test rules: {out}")

    alerts, records = [], []
    for f in rule_files:
        with open(f) as fh:
            for g in yaml.safe_load(fh)["groups"]:
                for r in g["rules"]:
                    (alerts if "alert" in r else records).append(r.get("alert") or r.get("record"))
    fired, silent, exprs = set(), set(), []
    for f in tests:
        with open(f) as fh:
            for t in yaml.safe_load(fh)["tests"]:
                for a in t.get("alert_rule_test", []):
                    (fired if a.get("exp_alerts") else silent).add(a["alertname"])
                exprs += [e["expr"] for e in t.get("promql_expr_test", [])]
    expected_alerts = {"BoardDown", "NotReady", "P99High", "PowerHigh", "TemperatureHigh", "ErrorRateHigh"}
    c.check(expected_alerts <= set(alerts), f"P4 the alerts of issue 8 exist: {alerts}")
    for a in alerts:
        c.check(a in fired, f"P4 alert {a} has a test that expects it firing")
        c.check(a in silent, f"P4 alert {a} has a test that expects it silent")
    used_by_alerts = set()
    with open(os.path.join(prom, "rules", "alerts.yml")) as fh:
        text = fh.read()
    for r in records:
        if r in text:
            used_by_alerts.add(r)
    for r in records:
        c.check(any(r in e for e in exprs) or r in used_by_alerts, f"P4 recording rule {r} is tested (promql_expr_test or through an alert)")

    with tempfile.TemporaryDirectory(prefix="tessera-prom-") as tmp:
        # The tests must fail when an alert's threshold moves.
        copy = os.path.join(tmp, "prometheus")
        shutil.copytree(prom, copy)
        alerts_copy = os.path.join(copy, "rules", "alerts.yml")
        with open(alerts_copy) as fh:
            original = fh.read()
        mutations = [("> 30", "> 40"), ("> 85", "> 95"), ("> 0.1\n", "> 0.6\n"), ("> 0.05", "> 0.2"),
                     ("up{job=\"tessera\"} == 0", "up{job=\"tessera\"} == 2"), ("tessera_ready{job=\"tessera\"} == 0", "tessera_ready{job=\"tessera\"} == 2")]
        for old, new in mutations:
            with open(alerts_copy, "w") as fh:
                fh.write(original.replace(old, new))
            rc, out = run([promtool, "test", "rules", *sorted(glob.glob(os.path.join(copy, "tests", "*.yml")))])
            c.check(old in original and rc != 0, f"P4 the unit tests catch {old.strip()!r} -> {new.strip()!r}")

        boards = os.path.join(tmp, "boards.txt")
        with open(boards, "w") as fh:
            fh.write("# lab\n10.0.0.5:8080 zcu102-a\n10.0.0.6:8080\n")
        out_json = os.path.join(tmp, "boards.json")
        script = os.path.join(prom, "boards_to_file_sd.py")
        rc, out = run(["/usr/bin/python3", script, boards, out_json])
        if c.check(rc == 0, f"P5 boards_to_file_sd.py: {out}"):
            with open(out_json) as fh:
                groups = json.load(fh)
            c.check(groups == [{"targets": ["10.0.0.5:8080"], "labels": {"board_name": "zcu102-a"}},
                               {"targets": ["10.0.0.6:8080"], "labels": {"board_name": "10.0.0.6"}}],
                    f"P5 file_sd groups: {groups}")
            cfg = os.path.join(tmp, "sd.yml")
            with open(cfg, "w") as fh:
                fh.write("scrape_configs:\n  - job_name: tessera\n    file_sd_configs:\n      - files: [boards.json]\n")
            rc, out = run([promtool, "check", "config", cfg], cwd=tmp)
            c.check(rc == 0 and "WARNING" not in out, f"P5 promtool accepts a config reading it: {out}")
        with open(boards, "w") as fh:
            fh.write("not-a-target\n")
        rc, _ = run(["/usr/bin/python3", script, boards, out_json])
        c.check(rc != 0, "P5 a bad boards line is refused")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1])))
