#!/usr/bin/python3
"""The Prometheus `job` label each shipped way of scraping tesserad produces, against the selectors
of the shipped rules and dashboard (issue 25: the operator named the job after the Service,
`tesserad`, while every rule selected job="tessera", so nothing matched):

  J1 the job of each scrape path: the Prometheus Operator's (deploy/k8s, rendered by `kubectl
     kustomize` when kubectl is there, else read file by file): a ServiceMonitor relabeling whose
     targetLabel is job, else the value of the Service label that spec.jobLabel names, else the
     Service's name (the operator's documented rule); prometheus/prometheus.yml's and
     prometheus-compose.yml's job_name of the scrape configs that scrape tesserad
  J2 every job matcher (=, !=, =~, !~) of the rules (rules/*.yml) and of the dashboard (panel
     queries, template variables) matches each path's job, and there are some
  J3 each path produces the labels the rules group by and the alerts name (board_name; instance
     and job come with every scrape)
  J4 the real promtool: the shipped rule unit tests (prometheus/tests/*.yml) with their job
     relabelled to each path's job pass
  J5 not vacuous: the ServiceMonitor without spec.jobLabel yields `tesserad`, which J2's matching
     refuses and with which J4's rule tests fail

usage: check_job_label.py SOURCE_DIR
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

MATCHER = re.compile(r'\bjob\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
GROUP_BY = re.compile(r"\bby\s*\(([^)]*)\)")
ANNOTATION_LABEL = re.compile(r"\$labels\.(\w+)")
ALWAYS = {"job", "instance", "le"}  # every scrape has job and instance; le is the histograms'


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def k8s_documents(k8s_dir):
    """The manifests as kustomize renders them (kubectl), else as the files say."""
    kubectl = shutil.which("kubectl")
    if kubectl:
        r = subprocess.run([kubectl, "kustomize", k8s_dir], capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            return [d for d in yaml.safe_load_all(r.stdout) if d], "kubectl kustomize"
    docs = []
    for f in sorted(glob.glob(os.path.join(k8s_dir, "*.yaml"))):
        with open(f) as fh:
            docs += [d for d in yaml.safe_load_all(fh) if d and d.get("kind") != "Kustomization"]
    return docs, "the files"


def operator_job(monitor, services):
    """The job label the Prometheus Operator gives the targets of `monitor` (a ServiceMonitor)."""
    for endpoint in monitor["spec"].get("endpoints", []):
        for r in endpoint.get("relabelings", []):
            if r.get("targetLabel") == "job" and r.get("action", "replace") == "replace" and "replacement" in r:
                return r["replacement"]
    selector = monitor["spec"].get("selector", {}).get("matchLabels", {})
    chosen = [s for s in services if selects(selector, s["metadata"].get("labels", {}))
              and s["metadata"].get("namespace") == monitor["metadata"].get("namespace")]
    if len(chosen) != 1:
        return None
    service = chosen[0]
    job_label = monitor["spec"].get("jobLabel")
    return service["metadata"].get("labels", {}).get(job_label) if job_label and job_label in \
        service["metadata"].get("labels", {}) else service["metadata"]["name"]


def operator_labels(monitor):
    """Labels a ServiceMonitor's relabelings add to every target."""
    return {r["targetLabel"] for e in monitor["spec"].get("endpoints", []) for r in e.get("relabelings", [])
            if r.get("targetLabel") and r.get("action", "replace") == "replace"}


def scrape_paths(source, docs):
    """{path name: (job, labels the path adds)} of every way the shipped files scrape tesserad."""
    paths = {}
    services = [d for d in docs if d.get("kind") == "Service"]
    for monitor in (d for d in docs if d.get("kind") == "ServiceMonitor"):
        paths[f"k8s ServiceMonitor {monitor['metadata']['name']}"] = (operator_job(monitor, services),
                                                                      operator_labels(monitor))
    prom = os.path.join(source, "deploy", "prometheus")
    for name in ("prometheus.yml", "prometheus-compose.yml"):
        with open(os.path.join(prom, name)) as fh:
            config = yaml.safe_load(fh)
        for job in config.get("scrape_configs", []):
            static = [t for s in job.get("static_configs", []) for t in s.get("targets", [])]
            if static and all(t.startswith("localhost:9090") for t in static):
                continue  # Prometheus scraping itself
            labels = {k for s in job.get("static_configs", []) for k in s.get("labels", {})}
            if job.get("file_sd_configs"):
                labels |= file_sd_labels(prom)
            paths[f"{name} job {job['job_name']}"] = (job["job_name"], labels)
    return paths


def file_sd_labels(prom):
    """The labels boards_to_file_sd.py gives every board (it writes the file_sd files)."""
    with tempfile.TemporaryDirectory(prefix="tessera-sd-") as tmp:
        boards, out = os.path.join(tmp, "boards.txt"), os.path.join(tmp, "boards.json")
        with open(boards, "w") as fh:
            fh.write("10.0.0.5:8080 a\n10.0.0.6:8080\n")
        r = subprocess.run(["/usr/bin/python3", os.path.join(prom, "boards_to_file_sd.py"), boards, out],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            return set()
        with open(out) as fh:
            groups = json.load(fh)
    return set.intersection(*(set(g.get("labels", {})) for g in groups)) if groups else set()


def rule_exprs(prom):
    """(where, expr, annotations text) of every rule."""
    out = []
    for f in sorted(glob.glob(os.path.join(prom, "rules", "*.yml"))):
        with open(f) as fh:
            for g in yaml.safe_load(fh)["groups"]:
                for r in g["rules"]:
                    text = " ".join(str(v) for v in r.get("annotations", {}).values())
                    out.append((f"{os.path.basename(f)} {r.get('alert') or r.get('record')}", r["expr"], text))
    return out


def dashboard_exprs(source):
    """(where, expr) of every dashboard query: panel targets and template variables."""
    with open(os.path.join(source, "deploy", "grafana", "dashboards", "tessera-fleet.json")) as fh:
        dash = json.load(fh)
    out = [(f"panel '{p.get('title')}'", t["expr"]) for p in dash["panels"] for t in p.get("targets", []) if "expr" in t]
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q
        if v.get("type") == "query":
            out.append((f"variable {v['name']}", q))
    return out


def matches(op, pattern, job):
    value = pattern.encode().decode("unicode_escape")
    if op in ("=", "!="):
        return (value == job) == (op == "=")
    return bool(re.fullmatch(value, job)) == (op == "=~")  # PromQL regexes are anchored


def mismatches(selectors, job):
    return [(where, f"job{op}\"{pattern}\"") for where, op, pattern in selectors if not matches(op, pattern, job)]


def rule_tests_pass(promtool, prom, job):
    """`promtool test rules` on the shipped unit tests with their job="tessera" series relabelled `job`."""
    with tempfile.TemporaryDirectory(prefix="tessera-job-") as tmp:
        copy = os.path.join(tmp, "prometheus")
        shutil.copytree(prom, copy)
        tests = sorted(glob.glob(os.path.join(copy, "tests", "*.yml")))
        for t in tests:
            with open(t) as fh:
                text = fh.read()
            text = text.replace('job="tessera"', f'job="{job}"').replace("job: tessera", f"job: {job}")
            with open(t, "w") as fh:
                fh.write(text)
        r = subprocess.run([promtool, "test", "rules", *tests], capture_output=True, text=True, timeout=300)
        return r.returncode == 0 and tests, r.stdout + r.stderr


def main(source):
    promtool = need_tool("/usr/bin/promtool", "prometheus")
    c = Checks("job_label")
    prom = os.path.join(source, "deploy", "prometheus")
    docs, rendered_by = k8s_documents(os.path.join(source, "deploy", "k8s"))
    paths = scrape_paths(source, docs)
    print(f"J1 scrape paths (k8s manifests from {rendered_by}): {paths}")
    c.check(len(paths) == 3 and all(job for job, _ in paths.values()), f"J1 three scrape paths, each with a job: {paths}")

    rules = rule_exprs(prom)
    selectors = [(where, m.group(1), m.group(2)) for where, expr, _ in rules for m in MATCHER.finditer(expr)]
    selectors += [(where, m.group(1), m.group(2)) for where, expr in dashboard_exprs(source) for m in MATCHER.finditer(expr)]
    c.check(len(selectors) >= 10, f"J2 {len(selectors)} job selectors in the rules and the dashboard")
    needed = set()
    for _, expr, annotations in rules:
        needed |= {label.strip() for m in GROUP_BY.finditer(expr) for label in m.group(1).split(",") if label.strip()}
        needed |= set(ANNOTATION_LABEL.findall(annotations))
    needed -= ALWAYS | {"device"}  # device comes with the series themselves (/metrics)
    for name, (job, labels) in paths.items():
        c.check(not mismatches(selectors, job), f"J2 {name}: job={job!r} fails {mismatches(selectors, job)}")
        c.check(needed <= labels, f"J3 {name} gives the targets {sorted(needed)} (it gives {sorted(labels)})")
        ok, out = rule_tests_pass(promtool, prom, job)
        c.check(ok, f"J4 {name}: the rule unit tests with job={job!r}: {out[-1500:]}")

    # J5: without spec.jobLabel the operator names the job after the Service.
    bare = json.loads(json.dumps(docs))
    for d in bare:
        if d.get("kind") == "ServiceMonitor":
            d["spec"].pop("jobLabel", None)
    bare_paths = {n: p for n, p in scrape_paths(source, bare).items() if n.startswith("k8s")}
    bare_job = next(iter(bare_paths.values()))[0] if bare_paths else None
    c.check(bare_job == "tesserad", f"J5 without jobLabel the job is the Service's name ({bare_job})")
    if bare_job:
        c.check(mismatches(selectors, bare_job), f"J5 job={bare_job!r} is caught by the selectors")
        ok, _ = rule_tests_pass(promtool, prom, bare_job)
        c.check(not ok, f"J5 the rule unit tests fail with job={bare_job!r}")
    c.check(not matches("=~", "tess.*", "xtessera") and matches("=~", "tess.*", "tessera") and
            matches("!=", "a", "b") and not matches("!~", "t.*", "tessera"), "J5 matcher semantics (anchored regexes)")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1])))
