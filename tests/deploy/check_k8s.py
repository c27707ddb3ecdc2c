#!/usr/bin/python3
"""deploy/k8s: structure checks of the manifests (no cluster here, and `kubectl apply
--dry-run=client` needs the API server's discovery, so it cannot run offline):

  K1 every file parses (python3-yaml); kinds and apiVersions are the expected ones
  K2 the DaemonSet's selector matches its pod labels; the Service, PDB and ServiceMonitor select
     the same pods
  K3 readiness probe GET /v2/health/ready, liveness (and startup) probe GET /v2/health/live, on
     the container's http port
  K4 the Service's ports (grpc 50051, http 8080) target container ports that exist, and agree
     with the ConfigMap's grpc-port/http-port; the ServiceMonitor scrapes a Service port by name
  K5 terminationGracePeriodSeconds > the ConfigMap's drain-timeout
  K6 resource requests (cpu, memory) and the Xilinx device plugin's FPGA resource
     (xilinx.com/fpga-...) in requests and limits; the container runs as non-root
  K7 the ConfigMap is mounted where args' --config reads it, and its tesserad.toml parses as TOML
  K8 kustomization.yaml lists every manifest, and `kubectl kustomize` renders them (when kubectl
     is installed; skipped in the output otherwise)

usage: check_k8s.py SOURCE_DIR
"""
import glob
import os
import shutil
import subprocess
import sys
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_check import Checks, skip  # noqa: E402

try:
    import yaml
except ImportError:
    skip("python3-yaml is missing (Debian package python3-yaml, tools/setup.sh)")

EXPECTED = {
    "Namespace": "v1", "ConfigMap": "v1", "Service": "v1", "DaemonSet": "apps/v1",
    "PodDisruptionBudget": "policy/v1", "ServiceMonitor": "monitoring.coreos.com/v1",
}


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def main(source):
    c = Checks("k8s")
    k8s = os.path.join(source, "deploy", "k8s")
    docs, files = {}, sorted(glob.glob(os.path.join(k8s, "*.yaml")))
    for f in files:
        with open(f) as fh:
            for doc in yaml.safe_load_all(fh):
                if doc is None:
                    continue
                kind = doc.get("kind")
                if kind == "Kustomization":
                    continue
                c.check(EXPECTED.get(kind) == doc.get("apiVersion"), f"K1 {os.path.basename(f)}: {kind} {doc.get('apiVersion')}")
                docs[kind] = doc
    c.check(set(EXPECTED) <= set(docs), f"K1 all kinds present: {sorted(docs)}")
    if not set(EXPECTED) <= set(docs):
        return c.finish()
    ds, svc, pdb, sm, cm = docs["DaemonSet"], docs["Service"], docs["PodDisruptionBudget"], docs["ServiceMonitor"], docs["ConfigMap"]
    namespace = docs["Namespace"]["metadata"]["name"]
    for kind in ("DaemonSet", "Service", "PodDisruptionBudget", "ServiceMonitor", "ConfigMap"):
        c.check(docs[kind]["metadata"].get("namespace") == namespace, f"{kind} in namespace {namespace}")

    pod = ds["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    c.check(selects(ds["spec"]["selector"]["matchLabels"], pod_labels), "K2 DaemonSet selector matches its pod labels")
    c.check(selects(svc["spec"]["selector"], pod_labels), "K2 Service selects the pods")
    c.check(selects(pdb["spec"]["selector"]["matchLabels"], pod_labels), "K2 PodDisruptionBudget selects the pods")
    c.check(selects(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]), "K2 ServiceMonitor selects the Service")

    containers = pod["spec"]["containers"]
    c.check(len(containers) == 1, "one container")
    ctr = containers[0]
    ports = {p["name"]: p["containerPort"] for p in ctr.get("ports", [])}
    for probe, path in (("readinessProbe", "/v2/health/ready"), ("livenessProbe", "/v2/health/live"),
                        ("startupProbe", "/v2/health/live")):
        get = ctr.get(probe, {}).get("httpGet", {})
        c.check(get.get("path") == path and get.get("port") in ("http", ports.get("http")),
                f"K3 {probe} GET {path} on the http port ({get})")

    conf = tomllib.loads(cm["data"]["tesserad.toml"])
    c.check(ports.get("grpc") == conf.get("grpc-port") == 50051, f"K4 grpc port {ports.get('grpc')} = config {conf.get('grpc-port')}")
    c.check(ports.get("http") == conf.get("http-port") == 8080, f"K4 http port {ports.get('http')} = config {conf.get('http-port')}")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for name, number in (("grpc", 50051), ("http", 8080)):
        p = svc_ports.get(name, {})
        c.check(p.get("port") == number and p.get("targetPort") in (name, number) and name in ports,
                f"K4 Service port {name} {number} -> container port {p.get('targetPort')}")
    c.check(all(e.get("port") in svc_ports and e.get("path") == "/metrics" for e in sm["spec"]["endpoints"]),
            "K4 ServiceMonitor scrapes /metrics on a Service port")
    annotations = pod["metadata"].get("annotations", {})
    c.check(annotations.get("prometheus.io/port") == str(ports.get("http")) and annotations.get("prometheus.io/path") == "/metrics",
            "K4 scrape annotations name the http port and /metrics")

    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    c.check(grace > conf.get("drain-timeout", 10), f"K5 terminationGracePeriodSeconds {grace} > drain-timeout {conf.get('drain-timeout')}")
    c.check(conf.get("listen") == "0.0.0.0", "K5 the daemon listens on the pod's addresses")

    res = ctr.get("resources", {})
    c.check("cpu" in res.get("requests", {}) and "memory" in res.get("requests", {}), "K6 cpu and memory requests")
    fpga = [k for k in res.get("requests", {}) if k.startswith("xilinx.com/fpga-")]
    c.check(len(fpga) == 1 and res.get("limits", {}).get(fpga[0]) == res["requests"][fpga[0]],
            f"K6 the FPGA resource {fpga} requested and limited alike (extended resources need both equal)")
    c.check(fpga and "xilinx_aws-vu9p-f1" in fpga[0], "K6 the F1 shell's resource name")
    sc = pod["spec"].get("securityContext", {})
    c.check(sc.get("runAsNonRoot") is True and sc.get("runAsUser", 0) != 0, "K6 runs as non-root")
    c.check(ctr.get("securityContext", {}).get("allowPrivilegeEscalation") is False, "K6 no privilege escalation")

    args = ctr.get("args", [])
    config_path = args[args.index("--config") + 1] if "--config" in args else ""
    mounts = {m["name"]: m["mountPath"] for m in ctr.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    cm_vol = [n for n, v in vols.items() if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
    c.check(cm_vol and os.path.join(mounts.get(cm_vol[0], ""), "tesserad.toml") == config_path,
            f"K7 --config {config_path} is the mounted ConfigMap")
    c.check(all(m in vols for m in mounts), "K7 every volumeMount has a volume")

    with open(os.path.join(k8s, "kustomization.yaml")) as fh:
        kust = yaml.safe_load(fh)
    listed = set(kust.get("resources", []))
    c.check(listed == {os.path.basename(f) for f in files} - {"kustomization.yaml"}, f"K8 kustomization lists every manifest {sorted(listed)}")
    kubectl = shutil.which("kubectl")
    if kubectl:
        r = subprocess.run([kubectl, "kustomize", k8s], capture_output=True, text=True, timeout=120)
        rendered = [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else []
        c.check(r.returncode == 0 and sorted(d["kind"] for d in rendered) == sorted(EXPECTED),
                f"K8 kubectl kustomize renders all {len(EXPECTED)} resources: {r.stderr[-500:]}")
    else:
        print("K8 kubectl kustomize: skipped (no kubectl; Debian package kubernetes-client)")
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1])))
