# SPDX-License-Identifier: Apache-2.0
"""
held_jobs.py - many live Slurm jobs for a worker to own, cheaply: real jobs
submitted held, then held by an operator (they stay PENDING, JobHeldAdmin,
and take no resources from the shared stack: a worker releases a job of
its own held by its user again, never an operator's hold, CONTRACT §1),
and launch records written straight into a scenario's
state topic naming them, as a worker that submitted them would have left
them (contract section 1). A worker that restores those records owns the
jobs: it polls them like any other, so a restart with hundreds of live jobs
costs seconds to set up instead of hundreds of real launches.

The jobs carry the comment `e2e-held:<tag>` (not the `forge:` tag of
launches, so SlurmWatch ignores them); cancel() ends them.
"""

import hashlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request

from confluent_kafka import Producer

EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


def slurm_call(stack, method, path, body=None):
    """One slurmrestd call as the stack's user; the answer's JSON."""
    with open(stack.env["FORGE_SLURM_JWT_FILE"]) as f:
        token = f.read().strip().removeprefix("SLURM_JWT=")
    req = urllib.request.Request(
        f"{stack.slurm_url}/slurm/{stack.api}/{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"X-SLURM-USER-NAME": stack.env["FORGE_SLURM_REST_USER"],
                 "X-SLURM-USER-TOKEN": token,
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30,
                                    context=stack.ssl_context()) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def submit_held(stack, n, tag):
    """n held jobs; their ids."""
    ids = []
    for _ in range(n):
        answer = slurm_call(stack, "POST", "job/submit", {
            "script": "#!/bin/sh\ntrue\n",
            "job": {"name": "e2e-held", "partition":
                    stack.env.get("FORGE_SLURM_PARTITION", "batch"),
                    "hold": True, "comment": f"e2e-held:{tag}",
                    "current_working_directory": "/tmp",
                    "environment": ["PATH=/bin:/usr/bin"],
                    "time_limit": {"set": True, "number": 1}}})
        if not answer.get("job_id"):
            raise RuntimeError(f"held submit refused: {answer.get('errors')}")
        ids.append(int(answer["job_id"]))
    hold_as_operator(stack, ids)
    return ids


def hold_as_operator(stack, ids, chunk=200):
    """`scontrol hold` of the jobs as root in the cluster: their submit
    hold (JobHeldUser) becomes an operator's (JobHeldAdmin)."""
    for i in range(0, len(ids), chunk):
        subprocess.run(["chroot", stack.env["FORGE_STACK_SLURM_CHROOT"],
                        "scontrol", "hold",
                        ",".join(str(j) for j in ids[i:i + chunk])],
                       check=True, capture_output=True, timeout=120)


def take_node(stack, name, partition, seconds, minutes):
    """A plain job (not a launch) wanting every GPU of the partition's h200
    node, sleeping `seconds` within a limit of `minutes`: what holds a node
    from a launch, or preempts one there; its id."""
    answer = slurm_call(stack, "POST", "job/submit", {
        "script": f"#!/bin/sh\nsleep {seconds}\n",
        "job": {"name": name, "partition": partition,
                "constraints": "h200", "tres_per_node": "gres/gpu:8",
                "current_working_directory": "/tmp",
                "standard_output": "/dev/null",
                "environment": ["PATH=/bin:/usr/bin"],
                "time_limit": {"set": True, "number": minutes}}})
    assert answer.get("job_id"), answer.get("errors")
    return int(answer["job_id"])


def cancel(stack, ids, chunk=500):
    for at in range(0, len(ids), chunk):
        slurm_call(stack, "DELETE", "jobs",
                   {"jobs": [str(i) for i in ids[at:at + chunk]]})


def record(launch_id, job_id, state="PENDING", seq=3):
    """A launch record as a worker leaves it once its job is polled (no
    request: it was never sealed, which a restore accepts)."""
    now = int(time.time() * 1000)
    return {"v": 1, "launch_id": launch_id, "attempt": 1, "state": state,
            "seq": seq, "digest": EMPTY_DIGEST, "request": None,
            "job_id": job_id, "components": [job_id],
            "cancel_requested": False, "archived": False,
            "accepted_at_ms": now, "updated_at_ms": now,
            "missing_since_ms": 0, "cleaned": False}


def write_records(topics, records, partitions):
    """records into the state topic, spread over its partitions, as an
    earlier worker would have left them: written as the stack's admin (the
    platform's producer may not write the state topic: deploy/kafka/
    acls.tsv), every delivery checked."""
    failed = []
    producer = Producer(topics.stack.kafka_conf("admin"))

    def delivered(err, _msg):
        if err:
            failed.append(err)

    for i, rec in enumerate(records):
        producer.produce(topics.state, key=rec["launch_id"],
                         value=json.dumps(rec).encode(),
                         partition=i % partitions, on_delivery=delivered)
        if i % 1000 == 999:
            producer.flush(30)
    assert producer.flush(30) == 0, "state records still in flight"
    assert not failed, f"state records refused: {failed[:3]}"


def tag():
    return os.urandom(5).hex()
