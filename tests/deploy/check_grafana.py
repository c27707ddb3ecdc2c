#!/usr/bin/python3
"""deploy/grafana: the fleet dashboard.

  G1 the JSON loads; a query template variable `instance` from up{job="tessera"} for the per-board
     drill-down, used by the per-board panels
  G2 every panel query names only metrics that a live tesserad exports (its /metrics, after one
     classification so the request counters exist, histograms as _bucket/_sum/_count), `up`, or
     the recording rules of deploy/prometheus/rules define
  G3 the fleet overview shows boards up, images/s, p99, power, energy per image, temperature and
     batch sizes
  G4 the check is not vacuous: a made-up metric name in a query is caught
(The fleet test, tests/integration/test_fleet.cc, runs every query on a real Prometheus.)

usage: check_grafana.py SOURCE_DIR TESSERAD
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_check import Checks, Tesserad, skip  # noqa: E402

try:
    import yaml
except ImportError:
    skip("python3-yaml is missing (Debian package python3-yaml, tools/setup.sh)")

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
            "inf", "nan",
            # aggregation operators, which may stand before `by (...)` rather than `(`
            "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values",
            "group"}


def metric_names(expr):
    """Metric names a PromQL expression selects (functions, keywords, labels and strings removed)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)           # strings
    e = re.sub(r"\{[^}]*\}", "", e)                         # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                        # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", e)  # label lists
    e = re.sub(r"\$\w+", "", e)                             # Grafana variables
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        word = m.group(0)
        if rest.startswith("(") or word.lower() in KEYWORDS:
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue  # 1e3, 0.5
        names.add(word)
    return names


def exported_names(exposition):
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()[:4]
            names |= {name + s for s in ("_bucket", "_sum", "_count")} if kind == "histogram" else {name}
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def main(source, tesserad):
    c = Checks("grafana")
    with open(os.path.join(source, "deploy", "grafana", "dashboards", "tessera-fleet.json")) as f:
        dash = json.load(f)
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    inst = variables.get("instance", {})
    query = inst.get("query", {})
    query = query.get("query", "") if isinstance(query, dict) else query
    c.check(inst.get("type") == "query" and 'up{job="tessera"}' in query, f"G1 template variable instance: {query}")
    panels = [p for p in dash["panels"] if p.get("type") != "row"]
    queries = [(p["title"], t["expr"]) for p in panels for t in p.get("targets", [])]
    c.check(len(queries) >= 10, f"G1 {len(queries)} panel queries")
    per_board = [p for p in panels if any("$instance" in t["expr"] for t in p.get("targets", []))]
    c.check(len(per_board) >= 8, f"G1 {len(per_board)} panels follow the board selection")

    recorded = set()
    for f in ("recording.yml",):
        with open(os.path.join(source, "deploy", "prometheus", "rules", f)) as fh:
            for g in yaml.safe_load(fh)["groups"]:
                recorded |= {r["record"] for r in g["rules"] if "record" in r}

    with tempfile.TemporaryDirectory(prefix="tessera-grafana-") as tmp:
        d = Tesserad(tesserad, ["--models", os.path.join(source, "models"), "--plan-cache", os.path.join(tmp, "plans")],
                     os.path.join(tmp, "tesserad.log"))
        if not c.check(d.ok(), "tesserad starts: " + d.stderr()[-2000:]):
            return c.finish()
        with open(os.path.join(source, "models", "fashion-mnist", "calibration", "00000_9.png"), "rb") as f:
            status, body = d.request("/v1/classify", f.read(), content_type="image/png")
        c.check(status == 200, f"one classification ({status} {body[:200]!r})")
        status, body = d.get("/metrics")
        c.check(status == 200, f"GET /metrics ({status})")
        d.stop()
    exported = exported_names(body.decode())
    c.check("tessera_requests_total" in exported and "tessera_request_stage_seconds_bucket" in exported,
            "the live exposition has the request counters and histograms")
    known = exported | recorded | {"up"}
    used = set()
    for title, expr in queries:
        names = metric_names(expr)
        used |= names
        c.check(names and names <= known, f"G2 panel '{title}': {sorted(names - known)} unknown in {expr}")
    for family in ("fleet:tessera_boards_up:sum", "fleet:tessera_images:rate1m", "fleet:tessera_request_seconds:p99_5m",
                   "tessera_power_watts", "fleet:tessera_joules_per_image:rate5m", "tessera_temperature_celsius",
                   "tessera_batch_size_bucket"):
        c.check(family in used, f"G3 the dashboard shows {family}")
    c.check(metric_names('rate(tessera_imagez_total{model="x"}[1m])') - known == {"tessera_imagez_total"},
            "G4 a made-up metric is caught")
    c.check(metric_names('sum by (instance, le) (rate(tessera_request_stage_seconds_bucket{stage="total"}[5m]))')
            == {"tessera_request_stage_seconds_bucket"}, "G4 labels, functions and ranges are not metrics")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1]), sys.argv[2]))
