# SPDX-License-Identifier: Apache-2.0
"""
Knowing a job's end at once and for certain (issue 28), on the stack's
Slurm with slurmdbd (MariaDB) accounting and Slurm's own jobcomp/kafka
plugin publishing each job's start and end records to the stack's broker
(FORGE_KAFKA_JOBCOMP_TOPIC, tests/e2e/stack.d/slurm.sh):

- push: workers that poll slurmctld only every 30 s see every launch's
  RUNNING and terminal event within 2 s of the job's own start and end as
  accounting has them, with the usage (GPU-hours) accounting has;
- records duplicated, reordered or foreign (another job, untagged, another
  attempt) change nothing;
- accounting: every worker away while its launches' jobs end and age out of
  slurmctld (MinJobAge passed): the next worker ends each launch in its
  true state from accounting, none LOST; with accounting down too, LOST,
  only once FORGE_LOST_GRACE_S has passed (docs/CONTRACT.md).
"""

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from harness import (StatusReader, Topics, Worker, assert_contiguous,
                     het_launch, launch, one_worker, stack_verb, unique_id,
                     wait_until)

PUSH_POLL_MS = "30000"


@pytest.fixture(scope="module", autouse=True)
def needs_accounting(stack):
    if not stack.env.get("FORGE_KAFKA_JOBCOMP_TOPIC"):
        pytest.skip("the stack runs no jobcomp/kafka (FORGE_KAFKA_JOBCOMP_TOPIC)")


@pytest.fixture(scope="module")
def pushed(stack, logdir):
    """One worker that polls slurmctld every 30 s: what it learns sooner
    came from the jobcomp records."""
    with one_worker(stack, logdir, "push", {"FORGE_POLL_INTERVAL_MS": PUSH_POLL_MS},
                    logs=False) as setup:
        yield setup


def job_id_of(events):
    ids = [(e["data"].get("slurm") or {}).get("job_id") for e in events]
    return next(i for i in ids if i)


def het_offset(record):
    offset = (record.get("het") or {}).get("job_offset") or {}
    return offset.get("number", 0) if offset.get("set") else 0


def latest_runs(records):
    """accounting's records, each component's latest run (requeues add runs)."""
    best = {}
    for r in records:
        prior = best.get(het_offset(r))
        if prior is None or r["time"]["submission"] >= prior["time"]["submission"]:
            best[het_offset(r)] = r
    return [best[k] for k in sorted(best)]


def gpus_of(record):
    return sum(t["count"] for t in record["tres"]["allocated"]
               if t["type"] == "gres" and t["name"] == "gpu")


def accounting_of(stack, job_id, components):
    """The job's latest runs once accounting has each component's end."""
    def ended():
        runs = latest_runs(stack.accounting(job_id))
        return runs if len(runs) == components and all(
            r["time"]["end"] for r in runs) else None
    return wait_until(f"accounting's end of job {job_id}", ended, 30)


def check_pushed(stack, status, lid, want, components=1):
    end = status.wait_terminal(lid, timeout=120)
    events = status.of(lid)
    assert_contiguous(events, lid)
    states = [e["data"]["state"] for e in events]
    assert states[-1] == want and states.count(want) == 1, states
    runs = accounting_of(stack, job_id_of(events), components)
    started = min(r["time"]["start"] for r in runs)
    ended = max(r["time"]["end"] for r in runs)
    running = next(e for e in events if e["data"]["state"] == "RUNNING")
    # accounting's times are whole seconds, the events' arrival is not
    assert running["_received"] - started <= 2.0, (lid, running["_received"] - started)
    assert end["_received"] - ended <= 2.0, (lid, end["_received"] - ended)
    usage = end["data"]["usage"]
    hours = sum(gpus_of(r) * r["time"]["elapsed"] for r in runs) / 3600.0
    assert abs(usage["gpu_hours"] - hours) < 2e-6, (usage, hours)
    assert usage["gpus"] == sum(gpus_of(r) for r in runs), usage
    assert len(usage["components"]) == components, usage
    return end["_received"] - ended


def test_push_ends_every_launch_within_2s_at_a_30s_poll(stack, pushed):
    topics, worker, status = pushed
    plain = [(unique_id("push"), "sleep 3; exit 0", 1, "SUCCEEDED"),
             (unique_id("push"), "sleep 4; exit 0", 2, "SUCCEEDED"),
             (unique_id("push"), "sleep 2; exit 3", 4, "FAILED")]
    for lid, cmd, gpus, _ in plain:
        topics.send(lid, launch(lid, ["/bin/sh", "-c", cmd], gpus=gpus))
    het = unique_id("pushhet")
    topics.send(het, het_launch(het, ["/bin/sh", "-c", "sleep 3"]))
    late = [check_pushed(stack, status, lid, want) for lid, _, _, want in plain]
    late.append(check_pushed(stack, status, het, "SUCCEEDED", components=2))
    print(f"terminal event after accounting's end: {[round(s, 2) for s in late]} s")
    assert worker.proc.poll() is None, worker.tail()


def jobcomp_records(stack, tag, want, timeout=30):
    """The jobcomp topic's records whose comment is tag (raw bytes), once
    there are `want` of them."""
    topic = stack.env["FORGE_KAFKA_JOBCOMP_TOPIC"]
    c = Consumer({**stack.kafka_conf("admin"), "group.id": f"e2e-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        found, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline and len(found) < want:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            if json.loads(m.value()).get("comment") == tag:
                found.append(m.value())
        return found
    finally:
        c.close()


def test_duplicated_reordered_and_foreign_records_change_nothing(stack, pushed):
    """While the launch runs: an end record naming its tag for another job,
    one of its job without a tag and one of another attempt are published
    (as the admin: only slurm-jobcomp may write the topic). After its end:
    its own start and end records again, end first, twice. The launch's
    events are RUNNING then SUCCEEDED, once each, nothing after."""
    topics, worker, status = pushed
    lid = unique_id("pushdup")
    topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 6"]))
    running = status.wait_state(lid, "RUNNING", timeout=60)
    job = running["data"]["slurm"]["job_id"]
    tag = f"forge:{lid}:1"
    start = json.loads(jobcomp_records(stack, tag, 1)[0])
    forged = []
    for change in ({"jobid": job + 100000},             # another job, its tag
                   {"comment": None},                    # its job, untagged
                   {"comment": f"forge:{lid}:2"},        # another attempt
                   {"comment": f"forge:other-{lid}:1"}):  # another launch
        rec = {**start, "state": "COMPLETED", "exit_code": "0:0",
               "derived_ec": "0:0", "@end": start.get("@start"), "elapsed": 1}
        rec.update(change)
        forged.append(json.dumps(rec).encode())
    producer = Producer(stack.kafka_conf("admin"))
    topic = stack.env["FORGE_KAFKA_JOBCOMP_TOPIC"]
    for value in forged:
        producer.produce(topic, value=value)
    producer.flush(10)
    time.sleep(2)
    assert status.states(lid)[-1] == "RUNNING", status.states(lid)
    status.wait_terminal(lid, timeout=60)
    own = jobcomp_records(stack, tag, 2)
    own.sort(key=lambda v: json.loads(v).get("state") is None)  # end first
    for _ in range(2):
        for value in own:
            producer.produce(topic, value=value)
    producer.flush(10)
    time.sleep(3)
    events = status.of(lid)
    assert_contiguous(events, lid)
    states = [e["data"]["state"] for e in events]
    assert states[states.index("RUNNING"):] == ["RUNNING", "SUCCEEDED"], states
    assert worker.proc.poll() is None, worker.tail()


# ---- accounting: a job slurmctld forgot -----------------------------------

def send_batch(topics, tag):
    """Three launches whose jobs end at once in known states."""
    want = {}
    for cmd, gpus, state in (("sleep 2", 1, "SUCCEEDED"),
                             ("sleep 2; exit 5", 2, "FAILED"),
                             ("sleep 3", 1, "SUCCEEDED")):
        lid = unique_id(tag)
        topics.send(lid, launch(lid, ["/bin/sh", "-c", cmd], gpus=gpus))
        want[lid] = state
    return want


@pytest.mark.disrupts("slurmdbd")
def test_jobs_that_ended_while_no_worker_ran_end_as_accounting_says(
        stack, slurm, logdir):
    """Two deployments (own topics and group): each has its launches RUNNING,
    then its every worker stops. The jobs end and slurmctld forgets them
    (MinJobAge). With accounting up, a new worker of the first ends each
    launch in its true state (SUCCEEDED, FAILED with exit 5), with usage;
    none LOST. Then slurmdbd stops: a new worker of the second, asking
    accounting in vain, ends its launches LOST, not before its
    FORGE_LOST_GRACE_S (10 s here) has passed since it first missed them."""
    grace = 10
    sets = []
    for tag in ("acct-up", "acct-down"):
        topics = Topics(stack, tag)
        group = unique_id("g")
        status = StatusReader(stack, topics.status)
        worker = Worker(stack, topics, unique_id("w"), group, logdir)
        worker.wait_ready()
        want = send_batch(topics, tag)
        sets.append((topics, group, status, want))
        for lid in want:
            status.wait_state(lid, "RUNNING", timeout=90)
        assert worker.terminate() == 0, worker.tail()
    try:
        jobs = [job_id_of(s[2].of(lid)) for s in sets for lid in s[3]]
        wait_until("slurmctld to forget every job (MinJobAge)",
                   lambda: not any(stack.slurmctld_knows(j) for j in jobs),
                   240, step=2)
        # accounting up: true states
        topics, group, status, want = sets[0]
        worker = Worker(stack, topics, unique_id("w"), group, logdir)
        worker.wait_ready()
        for lid, state in want.items():
            end = status.wait_terminal(lid, timeout=60)
            assert end["data"]["state"] == state, status.states(lid)
            assert "usage" in end["data"], end["data"]
            if state == "FAILED":
                assert end["data"]["slurm"]["exit_code"] == 5, end["data"]
            assert_contiguous(status.of(lid), lid)
        assert worker.terminate() == 0, worker.tail()
        # accounting down too: LOST, after the grace
        stack_verb("stop", "slurmdbd")
        topics, group, status, want = sets[1]
        started = time.time()
        worker = Worker(stack, topics, unique_id("w"), group, logdir,
                        {"FORGE_LOST_GRACE_S": str(grace)})
        worker.wait_ready()
        for lid in want:
            end = status.wait_terminal(lid, timeout=120)
            assert end["data"]["state"] == "LOST", status.states(lid)
            assert end["_received"] - started >= grace, end["_received"] - started
            assert_contiguous(status.of(lid), lid)
        assert worker.logged("accounting is unreachable"), worker.tail()
        assert worker.terminate() == 0, worker.tail()
    finally:
        stack_verb("start", "slurmdbd")
        for s in sets:
            s[2].close()
