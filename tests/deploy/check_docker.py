#!/usr/bin/python3
"""docker/: a documented Dockerfile checklist (hadolint is not in Debian 12) and compose.yaml.

Every docker/Dockerfile.*:
  D1 every FROM names a pinned tag (image:tag, not :latest, no untagged image) or an earlier stage
  D2 the last stage runs as a non-root USER (not root / 0)
  D3 HEALTHCHECK present and probing /v2/health/ready
  D4 no ADD of a URL (and no ADD at all: COPY says what it does)
  D5 every apt-get install has -y and --no-install-recommends, and its RUN removes
     /var/lib/apt/lists/* and runs apt-get update in the same RUN
  D6 every COPY source (not --from) exists in the repository (the build context is its root)
  D7 EXPOSE 50051 and 8080
  D8 multi-stage (a build stage and a runtime stage), ENTRYPOINT in exec (JSON) form
  D9 the runtime stage copies the install tree (cmake --install) from the build stage
compose.yaml:
  C1 parses as YAML (python3-yaml), services tesserad, prometheus, grafana
  C2 every build context/dockerfile and every bind-mount source exists (relative to compose.yaml)
  C3 images pinned (tag, not latest); tesserad publishes 50051 and 8080
  C4 Grafana is provisioned: a datasource file pointing at the prometheus service and a dashboard
     provider whose path is where the dashboards directory is mounted; a dashboard whose
     datasource is its `datasource` variable finds a provisioned default of that type
  C5 Prometheus' mounted config names the tesserad service as a target and the mounted rules

usage: check_docker.py SOURCE_DIR
"""
import glob
import json
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_check import Checks, skip  # noqa: E402

try:
    import yaml
except ImportError:
    skip("python3-yaml is missing (Debian package python3-yaml, tools/setup.sh)")


def instructions(text):
    """[(INSTRUCTION, arguments)] with continuation lines joined and comments dropped."""
    out, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") and not current:
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if not line and not current:
            continue
        current += (" " if current else "") + line.rstrip("\\").strip()
        if not line.endswith("\\"):
            word, _, rest = current.partition(" ")
            out.append((word.upper(), rest.strip()))
            current = ""
    return out


def pinned(image):
    name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
    return bool(name) and bool(tag) and tag != "latest"


def check_dockerfile(path, source, c):
    rel = os.path.relpath(path, source)
    with open(path) as f:
        ins = instructions(f.read())
    stages, users, healthchecks, exposed, last_stage = [], [], [], set(), -1
    for word, args in ins:
        if word == "FROM":
            parts = [p for p in args.split() if not p.startswith("--")]
            image = parts[0]
            c.check(image in stages or pinned(image), f"D1 {rel}: FROM {image} is pinned")
            stages.append(parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else f"#{len(stages)}")
            last_stage = len(stages) - 1
            users.append(None)
        elif word == "USER":
            users[last_stage] = args.split(":")[0]
        elif word == "HEALTHCHECK":
            healthchecks.append(args)
        elif word == "ADD":
            c.check(False, f"D4 {rel}: ADD {args} (use COPY; never ADD a URL)")
        elif word == "EXPOSE":
            exposed.update(p.split("/")[0] for p in args.split())
        elif word == "RUN" and "apt-get install" in args:
            for cmd in re.split(r"&&|;", args):
                if "apt-get install" in cmd:
                    c.check("--no-install-recommends" in cmd and re.search(r"(^|\s)-y(\s|$)", cmd),
                            f"D5 {rel}: apt-get install -y --no-install-recommends")
            c.check("rm -rf /var/lib/apt/lists/*" in args, f"D5 {rel}: the apt-get RUN removes the lists")
            c.check("apt-get update" in args, f"D5 {rel}: apt-get update in the same RUN as install")
        elif word == "COPY":
            parts = shlex.split(args)
            if any(p.startswith("--from") for p in parts):
                continue
            srcs = [p for p in parts if not p.startswith("--")][:-1]
            for s in srcs:
                c.check(os.path.exists(os.path.join(source, s)), f"D6 {rel}: COPY source {s} exists in the repository")
        elif word in ("ENTRYPOINT",):
            c.check(args.startswith("["), f"D8 {rel}: ENTRYPOINT in exec form")
    c.check(len(stages) >= 2, f"D8 {rel}: multi-stage ({len(stages)} stages)")
    c.check(users and users[-1] not in (None, "root", "0"), f"D2 {rel}: the final stage runs as non-root ({users[-1:]})")
    c.check(any("/v2/health/ready" in h for h in healthchecks), f"D3 {rel}: HEALTHCHECK on /v2/health/ready")
    c.check({"50051", "8080"} <= exposed, f"D7 {rel}: EXPOSE 50051 8080 ({sorted(exposed)})")
    final_copies = []
    seen_final = False
    for word, args in ins:
        if word == "FROM":
            seen_final = len([1 for w, _ in ins[: ins.index((word, args)) + 1] if w == "FROM"]) == len(stages)
        if seen_final and word == "COPY" and "--from=" in args:
            final_copies.append(args)
    c.check(any("/usr/local" in a for a in final_copies), f"D9 {rel}: final stage copies the installed tree")
    build_runs = " ".join(a for w, a in ins if w == "RUN")
    c.check("cmake --install" in build_runs, f"D9 {rel}: the build stage runs cmake --install")


def check_compose(source, c):
    path = os.path.join(source, "docker", "compose.yaml")
    base = os.path.dirname(path)
    with open(path) as f:
        compose = yaml.safe_load(f)
    services = compose.get("services", {})
    c.check({"tesserad", "prometheus", "grafana"} <= set(services), f"C1 services: {sorted(services)}")
    mounts = {}
    for name, svc in services.items():
        build = svc.get("build")
        if build:
            ctx = os.path.normpath(os.path.join(base, build.get("context", ".")))
            c.check(os.path.isdir(ctx), f"C2 {name}: build context {ctx}")
            c.check(os.path.isfile(os.path.join(ctx, build.get("dockerfile", "Dockerfile"))),
                    f"C2 {name}: dockerfile {build.get('dockerfile')}")
        if "image" in svc:
            c.check(pinned(svc["image"]), f"C3 {name}: image {svc['image']} pinned")
        for v in svc.get("volumes", []):
            src, dst = v.split(":")[0], v.split(":")[1]
            if src.startswith((".", "/")):
                full = os.path.normpath(os.path.join(base, src))
                c.check(os.path.exists(full), f"C2 {name}: mount source {src} exists")
                mounts[(name, dst)] = full
    ports = [str(p) for p in services.get("tesserad", {}).get("ports", [])]
    c.check(any(p.endswith(":50051") for p in ports) and any(p.endswith(":8080") for p in ports),
            f"C3 tesserad publishes 50051 and 8080 ({ports})")

    prov = mounts.get(("grafana", "/etc/grafana/provisioning"))
    dash_dir = [(dst, src) for (svc, dst), src in mounts.items() if svc == "grafana" and "dashboards" in dst]
    if c.check(prov and os.path.isdir(prov), "C4 grafana mounts a provisioning directory"):
        datasources = []
        for f in glob.glob(os.path.join(prov, "datasources", "*.y*ml")):
            with open(f) as fh:
                datasources += yaml.safe_load(fh).get("datasources", [])
        c.check(any(d.get("type") == "prometheus" and d.get("url") == "http://prometheus:9090" for d in datasources),
                "C4 a prometheus datasource at http://prometheus:9090")
        providers = []
        for f in glob.glob(os.path.join(prov, "dashboards", "*.y*ml")):
            with open(f) as fh:
                providers += yaml.safe_load(fh).get("providers", [])
        paths = [p.get("options", {}).get("path") for p in providers]
        c.check(dash_dir and dash_dir[0][0] in paths, f"C4 dashboard provider path {paths} is the mounted {dash_dir}")
        if dash_dir:
            uids = {d.get("uid") for d in datasources}
            for f in glob.glob(os.path.join(dash_dir[0][1], "*.json")):
                with open(f) as fh:
                    dash = json.load(fh)
                used = {p.get("datasource", {}).get("uid") for p in dash.get("panels", []) if p.get("type") != "row"}
                variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
                if used == {"${datasource}"}:
                    # The datasource is an input (a template variable): with no saved choice Grafana
                    # takes the default datasource of the variable's type, so one must be provisioned.
                    kind = variables.get("datasource", {}).get("query")
                    c.check(any(d.get("type") == kind and d.get("isDefault") for d in datasources),
                            f"C4 {os.path.basename(f)}'s datasource variable ({kind}) has a provisioned default")
                else:
                    c.check(used and used <= uids, f"C4 {os.path.basename(f)}'s panels use the provisioned datasource {uids}")
    prom = mounts.get(("prometheus", "/etc/prometheus/prometheus.yml"))
    if c.check(prom and os.path.isfile(prom), "C5 prometheus mounts a config"):
        with open(prom) as f:
            cfg = yaml.safe_load(f)
        targets = [t for j in cfg.get("scrape_configs", []) for s in j.get("static_configs", []) for t in s["targets"]]
        c.check("tesserad:8080" in targets, f"C5 prometheus scrapes tesserad:8080 ({targets})")
        rules_dir = mounts.get(("prometheus", "/etc/prometheus/rules"))
        for rf in cfg.get("rule_files", []):
            c.check(rf.startswith("rules/") and rules_dir and os.path.isfile(os.path.join(rules_dir, rf[len("rules/"):])),
                    f"C5 rule file {rf} is in the mounted rules directory")


def main(source):
    c = Checks("docker")
    files = sorted(glob.glob(os.path.join(source, "docker", "Dockerfile.*")))
    files = [f for f in files if not f.endswith(".dockerignore")]
    c.check({"Dockerfile.x86_64", "Dockerfile.aarch64"} <= {os.path.basename(f) for f in files},
            "Dockerfiles for x86_64 and aarch64")
    for f in files:
        check_dockerfile(f, source, c)
    check_compose(source, c)
    # The checklist itself must catch a bad file.
    probe = Checks("probe")
    tmp_source = os.path.join(source, "docker")
    bad = 'FROM debian:latest\nADD https://example.com/x /x\nRUN apt-get update && apt-get install -y curl\nCOPY no-such-dir /x\nFROM debian\nUSER root\n'
    bad_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"Dockerfile.probe-{os.getpid()}")
    with open(bad_path, "w") as f:
        f.write(bad)
    try:
        sys.stdout = open(os.devnull, "w")
        check_dockerfile(bad_path, tmp_source, probe)
    finally:
        sys.stdout = sys.__stdout__
        os.remove(bad_path)
    c.check(len(probe.failures) >= 8, f"the checklist rejects a bad Dockerfile on every rule ({len(probe.failures)} failures)")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1])))
