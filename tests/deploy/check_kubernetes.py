# SPDX-License-Identifier: Apache-2.0
"""
deploy/kubernetes/ checked (scripts/check-deploy, in the venv scripts/setup
makes, with kubernetes-validate pinned in tests/e2e/worker/requirements.txt):

1. every built-in kind (ConfigMap, Deployment, PodDisruptionBudget) against
   the Kubernetes API schemas, strictly (unknown fields refused):
   kubernetes-validate;
2. KEDA's ScaledObject, which kubernetes-validate does not know (it only
   warns), against a local schema (keda-scaledobject.v1alpha1.schema.json,
   written for this project from KEDA's documented spec);
3. what the worker needs of them: non-root, read-only root filesystem, the
   token and key from a Secret, a grace period above the drain bound
   (worker/compose.h), probes on /healthz and /readyz at the listener's
   port, the ConfigMap holding every variable of the env example, KEDA's
   trigger on the ConfigMap's group and topic, never more replicas than
   partitions;
4. that 1 and 2 can fail: a broken copy of each must be refused.

Prints one line per check; exits 1 on the first failure.
"""

import copy
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KUBE = os.path.join(TOP, "deploy", "kubernetes")
SCHEMA = os.path.join(TOP, "tests", "deploy",
                      "keda-scaledobject.v1alpha1.schema.json")
VALIDATE = os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")
PARTITIONS = 6  # forge.launch.requests in the env example's cluster


def fail(what):
    print(f"FAIL {what}")
    sys.exit(1)


def ok(what):
    print(f"ok   {what}")


def load():
    docs = {}
    for name in sorted(os.listdir(KUBE)):
        if name.endswith(".yaml"):
            with open(os.path.join(KUBE, name)) as f:
                for doc in yaml.safe_load_all(f):
                    docs[doc["kind"]] = (name, doc)
    return docs


def kubernetes_validate(paths):
    r = subprocess.run([VALIDATE, "--strict", "--quiet", *paths],
                       capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def validate_builtin(docs):
    paths = [os.path.join(KUBE, docs[k][0])
             for k in ("ConfigMap", "Deployment", "PodDisruptionBudget")]
    rc, out = kubernetes_validate(paths)
    if rc != 0:
        fail(f"kubernetes-validate: {out}")
    ok("ConfigMap, Deployment, PodDisruptionBudget: Kubernetes schemas "
       "(kubernetes-validate --strict)")
    broken = copy.deepcopy(docs["Deployment"][1])
    broken["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = \
        "ninety"
    broken["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump(broken, f)
        f.flush()
        rc, out = kubernetes_validate([f.name])
    if rc == 0:
        fail("kubernetes-validate took a broken Deployment")
    ok("a broken Deployment is refused")


def validate_keda(docs):
    with open(SCHEMA) as f:
        schema = json.load(f)
    scaled = docs["ScaledObject"][1]
    try:
        jsonschema.validate(scaled, schema)
    except jsonschema.ValidationError as e:
        fail(f"ScaledObject: {e.message} at {list(e.absolute_path)}")
    ok("ScaledObject: the local KEDA schema")
    for mutate in (lambda s: s["spec"]["triggers"][0]["metadata"].update(
                       lagThreshold=20),
                   lambda s: s["spec"].update(maxReplicas=6),
                   lambda s: s["spec"]["triggers"][0]["metadata"].pop(
                       "consumerGroup")):
        broken = copy.deepcopy(scaled)
        mutate(broken)
        try:
            jsonschema.validate(broken, schema)
            fail("the local KEDA schema took a broken ScaledObject")
        except jsonschema.ValidationError:
            pass
    ok("broken ScaledObjects are refused")


def drain_bound_s():
    with open(os.path.join(TOP, "src", "loop", "loop.h")) as f:
        text = f.read()
    settle = int(re.search(r"#define FORGE_WORKER_SETTLE_MS\s+(\d+)",
                           text).group(1))
    return settle // 1000


def env_example_names():
    names = set()
    with open(os.path.join(TOP, "deploy", "forge-worker.env.example")) as f:
        for line in f:
            m = re.match(r"^(FORGE_[A-Z0-9_]+)=", line)
            if m:
                names.add(m.group(1))
    return names


def known_variables():
    """Every variable of src/config/config_table.c's table (none found is an
    error: a pattern that matches nothing would pass every check)."""
    with open(os.path.join(TOP, "src", "config", "config_table.c")) as f:
        names = set(re.findall(r'\.name = "(FORGE_[A-Z0-9_]+)"', f.read()))
    if len(names) < 20:
        fail(f"only {len(names)} variables read from config_table.c")
    return names


def check_worker_needs(docs):
    pod = docs["Deployment"][1]["spec"]["template"]["spec"]
    config = docs["ConfigMap"][1]["data"]
    worker = next(c for c in pod["containers"] if c["name"] == "forge-worker")
    ctx = pod.get("securityContext", {})
    if not ctx.get("runAsNonRoot") or not ctx.get("runAsUser"):
        fail("the pod must run as a non-root user")
    sc = worker.get("securityContext", {})
    if not sc.get("readOnlyRootFilesystem") or \
            sc.get("allowPrivilegeEscalation") is not False:
        fail("the worker's root filesystem must be read-only, no escalation")
    ok(f"non-root (uid {ctx['runAsUser']}), read-only root filesystem")

    grace, drain = pod["terminationGracePeriodSeconds"], drain_bound_s()
    if grace <= drain + 15:
        fail(f"terminationGracePeriodSeconds {grace} must exceed the drain "
             f"bound {drain} s with room for the last commit")
    ok(f"grace period {grace} s above the drain bound {drain} s")

    port = int(config["FORGE_HTTP_LISTEN"].rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    for probe, path in (("livenessProbe", "/healthz"),
                        ("readinessProbe", "/readyz")):
        get = worker[probe]["httpGet"]
        if get["path"] != path or ports.get(get["port"], get["port"]) != port:
            fail(f"{probe} must ask {path} on port {port}: {get}")
    ok(f"probes: /healthz and /readyz on FORGE_HTTP_LISTEN's port {port}")

    secrets = {v["name"]: v for v in pod["volumes"] if "secret" in v}
    mounted = {m["mountPath"]: m["name"]
               for c in pod["initContainers"] + pod["containers"]
               for m in c.get("volumeMounts", [])}
    for var in ("FORGE_SLURM_JWT_FILE", "FORGE_STATE_KEY_FILE"):
        folder = os.path.dirname(config[var])
        if mounted.get(folder) != "secrets":
            fail(f"{var} ({config[var]}) is not in the secrets volume")
    if not secrets or any(v["secret"].get("defaultMode", 0o644) & 0o077
                          for v in secrets.values()):
        fail("the Secret volume must exist and be readable by its owner only")
    ok("the token and the state key come from a Secret, copied 0600")

    missing = env_example_names() - set(config)
    if missing:
        fail(f"the ConfigMap lacks variables of the env example: {missing}")
    unknown = {k for k in config if k.startswith("FORGE_")} - \
        known_variables()
    if unknown:
        fail(f"the ConfigMap sets variables the worker does not know: "
             f"{unknown}")
    if "FORGE_WORKER_ID" in config:
        fail("FORGE_WORKER_ID must be each pod's own, not the ConfigMap's")
    ok("the ConfigMap holds every variable the env example sets, and only "
       "variables the worker knows")

    scaled = docs["ScaledObject"][1]["spec"]
    kafka = scaled["triggers"][0]["metadata"]
    if scaled["scaleTargetRef"]["name"] != docs["Deployment"][1]["metadata"][
            "name"]:
        fail("the ScaledObject must scale the Deployment")
    if kafka["consumerGroup"] != config["FORGE_KAFKA_GROUP_ID"] or \
            kafka["topic"] != config.get("FORGE_KAFKA_TOPIC_REQUESTS",
                                         "forge.launch.requests") or \
            kafka["bootstrapServers"] != config["FORGE_KAFKA_BROKERS"]:
        fail("KEDA's trigger must watch the workers' group, topic, brokers")
    if scaled["maxReplicaCount"] > PARTITIONS or \
            kafka.get("allowIdleConsumers", "false") != "false":
        fail(f"at most {PARTITIONS} replicas (the partitions), no idle ones")
    ok(f"KEDA: lag of group {kafka['consumerGroup']} on {kafka['topic']}, "
       f"{scaled['minReplicaCount']}..{scaled['maxReplicaCount']} replicas")


def main():
    docs = load()
    for kind in ("ConfigMap", "Deployment", "PodDisruptionBudget",
                 "ScaledObject"):
        if kind not in docs:
            fail(f"no {kind} in deploy/kubernetes/")
    validate_builtin(docs)
    validate_keda(docs)
    check_worker_needs(docs)


if __name__ == "__main__":
    main()
