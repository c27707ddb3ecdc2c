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
  G5 the datasource is the dashboard's input, not a uid of one Grafana: a `datasource` template
     variable of type datasource (Prometheus), and every datasource reference (panels, targets,
     variables) is ${datasource}; a hard-coded uid is caught (not vacuous either)
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


def datasource_refs(node, path="dashboard"):
    """(path, uid) of every datasource reference in a dashboard's JSON (a dict's uid, or a plain string)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource" and value is not None:
                yield f"{path}.datasource", value.get("uid") if isinstance(value, dict) else value
            else:
                yield from datasource_refs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from datasource_refs(value, f"{path}[{i}]")


def hard_coded_datasources(dash):
    """The datasource references that are not the ${datasource} variable."""
    return [(path, uid) for path, uid in datasource_refs(dash) if uid not in ("${datasource}", "$datasource")]


def check_datasource_input(c, dash):
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    c.check(ds.get("type") == "datasource" and ds.get("query") == "prometheus",
            f"G5 a datasource template variable of Prometheus datasources: {ds}")
    c.check(not ds.get("current"), "G5 the variable has no saved choice (Grafana picks its default Prometheus)")
    c.check("__inputs" not in dash, "G5 no __inputs: file provisioning does not substitute them")
    refs = list(datasource_refs(dash))
    c.check(len(refs) >= 20, f"G5 {len(refs)} datasource references found")
    c.check(not hard_coded_datasources(dash), f"G5 hard-coded datasources: {hard_coded_datasources(dash)}")
    mutated = json.loads(json.dumps(dash))
    mutated["panels"][-1]["targets"][0]["datasource"] = {"type": "prometheus", "uid": "tessera-prometheus"}
    c.check(hard_coded_datasources(mutated) != [], "G5 a hard-coded uid is caught")


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
    check_datasource_input(c, dash)

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
