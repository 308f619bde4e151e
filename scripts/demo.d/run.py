#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The demo's platform side (scripts/demo starts the stack and two workers,
then runs this): sends the sample requests of deploy/samples/ to the
requests topic, each under a launch_id made unique for this run, shows one
line per launch while the workers drive them (states read from the status
topic, archives from the logs topic, read_committed, as the platform would),
cancels the long-running one once it runs, and ends with each launch's
final state, its archive and the tail of its log.

  run.py SAMPLES_DIR   (the stack's env variables must be set)
"""

import json
import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "LOST", "REJECTED"}
CANCEL_SAMPLE = "cancel-long-running.json"
TIMEOUT_S = 300
# What each sample ends as: the demo fails (exit 1) when one ends otherwise,
# so scripts/test, which runs the demo as the README shows it, notices.
EXPECTED = {"hello-single.json": "SUCCEEDED", "rlhf-het.json": "SUCCEEDED",
            "failing.json": "FAILED", "long-running.json": "CANCELLED",
            "invalid-oci-image.json": "REJECTED"}


def load_samples(folder, suffix):
    """(file, request) for each launch sample, launch_id made unique."""
    out, cancels = [], []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            req = json.load(f)
        body = req["data"] if "specversion" in req else req
        body["launch_id"] = f"{body['launch_id']}-{suffix}"
        if "specversion" in req:
            req["id"] = f"{req['id']}-{suffix}"
        (cancels if name == CANCEL_SAMPLE else out).append((name, req))
    return out, cancels


def launch_id(req):
    return (req["data"] if "specversion" in req else req)["launch_id"]


class View:
    """What the platform knows of each launch, and one line per launch."""

    def __init__(self, samples):
        self.rows = {launch_id(r): {"sample": n, "states": [], "logs": None,
                                    "event": None} for n, r in samples}
        self.tty = sys.stdout.isatty()
        self.drawn = 0
        self.last = None

    def on_status(self, e):
        row = self.rows.get(e["data"]["launch_id"])
        if row is not None:
            row["states"].append(e["data"]["state"])
            row["event"] = e["data"]

    def on_logs(self, e):
        if e.get("type") != "forge.launch.logs_archived":
            return  # a live logs chunk (contract section 2): not the archive
        row = self.rows.get(e["data"]["launch_id"])
        if row is not None:
            row["logs"] = e["data"]

    def done(self):
        for row in self.rows.values():
            states = row["states"]
            if not states or states[-1] not in TERMINAL:
                return False
            ran = (row["event"]["slurm"] or {}).get("job_id")
            if ran and row["logs"] is None:
                return False
        return True

    def line(self, lid, row):
        states = " > ".join(row["states"]) or "(waiting)"
        job = (row["event"] or {}).get("slurm") or {}
        extra = f"  job {job['job_id']}" if job.get("job_id") else ""
        if row["logs"]:
            extra += "  logs archived"
        return f"  {lid:<34} {states}{extra}"

    def draw(self):
        lines = [self.line(lid, row) for lid, row in self.rows.items()]
        if lines == self.last:
            return
        if self.tty:  # redraw in place
            if self.drawn:
                sys.stdout.write(f"\x1b[{self.drawn}F\x1b[J")
            print("\n".join(lines), flush=True)
        else:  # a log: only what changed, timed
            old = self.last or [None] * len(lines)
            for before, now in zip(old, lines):
                if before != now:
                    print(time.strftime("%H:%M:%S") + now, flush=True)
        self.drawn, self.last = len(lines), lines


def platform_conf():
    """The platform's Kafka settings: on the secured stack, its own
    principal over SASL_SSL (deploy/kafka/acls.tsv: writes requests, reads
    status and logs; its groups are platform-*); else the plain brokers."""
    env = os.environ
    if "FORGE_STACK_KAFKA_SASL_SSL" not in env:
        return {"bootstrap.servers": env["FORGE_KAFKA_BROKERS"]}
    with open(env["FORGE_STACK_KAFKA_PLATFORM_PASSWORD_FILE"]) as f:
        password = f.read().strip()
    return {"bootstrap.servers": env["FORGE_STACK_KAFKA_SASL_SSL"],
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": env["FORGE_STACK_KAFKA_PLATFORM_USER"],
            "sasl.password": password,
            "ssl.ca.location": env["FORGE_STACK_KAFKA_CA_FILE"]}


def reader(conf, topic):
    c = Consumer({**conf, "group.id": f"platform-demo-{os.getpid()}",
                  "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    meta = c.list_topics(topic, timeout=10).topics[topic]
    parts = []
    for p in meta.partitions:  # from the end: this run's events only
        _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        parts.append(TopicPartition(topic, p, high))
    c.assign(parts)
    return c


def summary(view):
    print("\n== Final states")
    for lid, row in view.rows.items():
        e = row["event"] or {}
        state = row["states"][-1] if row["states"] else "(none)"
        why = e.get("reason") or ""
        code = (e.get("slurm") or {}).get("exit_code")
        if e.get("error"):
            why = f"{e['error']['code']} at {e['error']['field']}: {e['error']['message']}"
        print(f"\n{lid} ({row['sample']}): {state}"
              + (f", exit code {code}" if code not in (None, 0) else "")
              + (f" - {why}" if why else ""))
        logs = row["logs"]
        if not logs:
            print("   no logs (it never reached Slurm)")
            continue
        a = logs["archive"]
        print(f"   archive {a['path']} ({a['bytes']} bytes, sha256 {a['sha256'][:16]}...)")
        print(f"   files: {', '.join(f['name'] for f in logs['files'])}"
              + (f"; missing: {', '.join(logs['missing'])}" if logs.get("missing") else ""))
        if logs.get("tail"):
            print(f"   tail of {logs['tail']['name']}:")
            for text in logs["tail"]["text"].rstrip("\n").split("\n")[-6:]:
                print(f"     | {text}")


def main():
    folder = sys.argv[1]
    conf = platform_conf()
    requests = os.environ.get("FORGE_KAFKA_TOPIC_REQUESTS", "forge.launch.requests")
    samples, cancels = load_samples(folder, time.strftime("%H%M%S"))
    view = View(samples)
    status = reader(conf, os.environ.get("FORGE_KAFKA_TOPIC_STATUS", "forge.launch.status"))
    logs = reader(conf, os.environ.get("FORGE_KAFKA_TOPIC_LOGS", "forge.launch.logs"))
    producer = Producer({**conf, "partitioner": "murmur2_random"})
    for name, req in samples:
        producer.produce(requests, key=launch_id(req), value=json.dumps(req))
    producer.flush(10)
    print(f"== Sent {len(samples)} requests to {requests}; the workers take it from here:")
    deadline = time.monotonic() + TIMEOUT_S
    while not view.done() and time.monotonic() < deadline:
        for consumer, on in ((status, view.on_status), (logs, view.on_logs)):
            m = consumer.poll(0.2)
            while m is not None:
                if not m.error():
                    on(json.loads(m.value()))
                m = consumer.poll(0)
        for name, req in list(cancels):
            if "RUNNING" in view.rows.get(launch_id(req), {}).get("states", []):
                producer.produce(requests, key=launch_id(req), value=json.dumps(req))
                producer.flush(10)
                cancels.remove((name, req))
        view.draw()
    status.close()
    logs.close()
    summary(view)
    if not view.done():
        print(f"\nnot everything ended within {TIMEOUT_S} s", file=sys.stderr)
        return 1
    wrong = [f"{row['sample']} ended {row['states'][-1]}, not "
             f"{EXPECTED.get(row['sample'])}"
             for row in view.rows.values()
             if row["states"][-1] != EXPECTED.get(row["sample"])]
    for line in wrong:
        print(line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
