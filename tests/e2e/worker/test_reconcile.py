# SPDX-License-Identifier: Apache-2.0
"""
test_reconcile.py - `forge-worker reconcile` on the real stack (issue 15,
contract section 4, docs/RECOVERY.md): the state topic lost under 20 live
launches is rebuilt from the requests and status topics and Slurm, and the
workers started afterwards carry every launch to its end once, with no
Slurm job twice and seq contiguous; an orphan job (a forge tag, no record,
no request) is found and cancelled; --execute is refused (75) while a
worker is in the group; usage and configuration errors exit with one JSON
object on stderr.
"""

import json
import os
import shutil
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import held_jobs
from harness import (PARTITIONS, TERMINAL, StatusReader, Topics, Worker, TOP,
                     assert_contiguous, launch, own_storage, unique_id,
                     wait_until)

LAUNCHES = 20
SUBMITTED = []  # the held jobs this module made
# what a dry run may say of a launch while its worker runs
REPAIRABLE_LIVE = ("consistent", "transitions")


def reconcile_env(stack, topics, group, storage):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGE_")}
    env.update(stack.env)
    env.update(stack.principal_env("operator"))  # reconcile's principal
    env.update(topics.env())
    env.update(storage)
    env.update({"FORGE_WORKER_ID": "e2e-reconcile",
                "FORGE_KAFKA_GROUP_ID": group, "FORGE_LOG_LEVEL": "warn",
                "FORGE_LOG_FORMAT": "json"})
    stack.grant(topics, group)
    return env


def reconcile(env, *args):
    """(exit code, stdout, the JSON object on stderr's last line or None)."""
    binary = os.environ.get("FORGE_WORKER_BIN",
                            os.path.join(TOP, "build", "forge-worker"))
    p = subprocess.run([binary, "reconcile", *args], env=env,
                       capture_output=True, text=True, timeout=300)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    err = None
    if lines:
        try:
            err = json.loads(lines[-1])
        except ValueError:
            pass
    return p.returncode, p.stdout, err


def recreate_state_topic(stack, topics):
    """The state topic deleted and made again, empty (the incident)."""
    admin = AdminClient(stack.kafka_conf("admin"))
    admin.delete_topics([topics.state])[topics.state].result(30)
    compacted = {"cleanup.policy": "compact", "max.message.bytes": "4194304"}

    def created():
        try:
            admin.create_topics([NewTopic(topics.state, PARTITIONS, 1,
                                          config=compacted)])[
                topics.state].result(30)
            return True
        except Exception:  # still being deleted
            return False
    wait_until("the state topic made again", created, 90, step=1)

    def led():
        meta = admin.list_topics(topics.state, timeout=10).topics[topics.state]
        return (meta.error is None and len(meta.partitions) == PARTITIONS and
                all(p.leader >= 0 and p.error is None
                    for p in meta.partitions.values()))
    wait_until("every partition of the new state topic led", led, 30)


def submit_orphan(stack, storage, launch_id):
    """A held job (it takes nothing from the stack) with a forge tag no
    record or request knows, in the deployment's staging folder."""
    answer = held_jobs.slurm_call(stack, "POST", "job/submit", {
        "script": "#!/bin/sh\ntrue\n",
        "job": {"name": "e2e-orphan", "partition":
                stack.env.get("FORGE_SLURM_PARTITION", "batch"),
                "hold": True, "comment": f"forge:{launch_id}:1",
                "current_working_directory":
                    f"{storage['FORGE_SLURM_STORAGE_ROOT']}/staging/"
                    f"{launch_id}/1",
                "environment": ["PATH=/bin:/usr/bin"],
                "time_limit": {"set": True, "number": 1}}})
    assert answer.get("job_id"), answer.get("errors")
    SUBMITTED.append(int(answer["job_id"]))
    return int(answer["job_id"])


def job_state(stack, job_id):
    jobs = stack.slurm_get(f"job/{job_id}").get("jobs") or [{}]
    return jobs[0].get("job_state") or []


@pytest.fixture(scope="module")
def scenario(stack, logdir):
    topics = Topics(stack, "reconcile")
    group = unique_id("e2e-reconcile")
    storage = own_storage(stack, unique_id("reconcile"))
    status = StatusReader(stack, topics.status)
    workers = []
    yield stack, topics, group, status, storage, workers
    for w in workers:  # a failed assertion leaves none running
        if w.proc.poll() is None:
            w.terminate()
    held_jobs.cancel(stack, SUBMITTED)  # nothing left held if one failed
    status.close()
    shutil.rmtree(storage["FORGE_STORAGE_ROOT"], ignore_errors=True)


@pytest.mark.sanitized
def test_usage_and_configuration_errors_are_json(stack):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGE_")}
    rc, _, err = reconcile(dict(env, **stack.env), "--bogus")
    assert rc == 2 and err["error"] == "usage", err
    rc, _, err = reconcile(env)
    assert rc == 78 and err["error"] == "config", err


def test_state_topic_lost_with_live_launches(scenario, slurm, logdir):
    stack, topics, group, status, storage, started = scenario
    workers = [Worker(stack, topics, f"rc-w{i}", group, logdir,
                      extra_env=storage) for i in (1, 2)]
    started.extend(workers)
    for w in workers:
        w.wait_ready()
    ids = [unique_id("rc") for _ in range(LAUNCHES)]
    for n, lid in enumerate(ids):
        # two series: 16 run at once on the stack's two 8-GPU nodes
        topics.send(lid, launch(lid, ["sleep", str(45 + n * 15 // LAUNCHES)],
                                series=("h200", "a100")[n % 2]))
    for lid in ids:
        status.wait_state(lid, "SUBMITTED", timeout=180)
        wait_until(f"{lid}'s job in Slurm", lambda: slurm.leaders(lid), 60)
    env = reconcile_env(stack, topics, group, storage)

    # a worker in the group: --execute refused, nothing done
    rc, out, err = reconcile(env, "--execute", "--json")
    assert rc == 75 and err["error"] == "group_active", (rc, out, err)
    # the workers' records are there: nothing to rebuild (a record a poll
    # behind its job may say "transitions": the workers are running)
    rc, out, err = reconcile(env, "--json")
    report = json.loads(out)
    assert rc in (0, 1) and not [i for i in report["items"]
                                 if i["kind"] not in REPAIRABLE_LIVE], out

    for w in workers:
        assert w.terminate() == 0
    ended = [lid for lid in ids if TERMINAL & set(status.states(lid))]
    assert not ended, f"ended before the state topic was lost: {ended}"
    recreate_state_topic(stack, topics)
    orphan_id = unique_id("rc-orphan")
    orphan_job = submit_orphan(stack, storage, orphan_id)
    events_before = {lid: len(status.of(lid)) for lid in ids}

    rc, out, err = reconcile(env, "--json")
    assert out, (rc, err)
    report = json.loads(out)
    assert rc == 1, (rc, out, err)
    assert report["state_topic_empty"] is True
    items = {i["launch_id"]: i for i in report["items"]}
    for lid in ids:
        assert items[lid]["kind"] == "rebuild", items[lid]
        assert items[lid]["writes_record"] is True
        assert items[lid]["job_id"] in slurm.leaders(lid), items[lid]
    assert items[orphan_id]["kind"] == "orphan_cancel", items.get(orphan_id)
    assert items[orphan_id]["cancel_jobs"] == [orphan_job]
    assert "CANCELLED" not in job_state(stack, orphan_job)  # a dry run

    rc, out, err = reconcile(env, "--execute", "--json")
    report = json.loads(out)
    assert rc == 0 and report["undone"] == 0, (rc, out, err)
    assert all(i["done"] for i in report["items"]
               if i["kind"] != "consistent"), out
    wait_until("the orphan job cancelled",
               lambda: "CANCELLED" in job_state(stack, orphan_job), 30)
    # the events it published continue each launch's seq
    for lid in ids:
        published = len(items[lid]["events"])
        wait_until(f"{lid}'s repair events", lambda: len(status.of(lid)) >=
                   events_before[lid] + published, 30)

    workers = [Worker(stack, topics, f"rc-w{i}", group, logdir,
                      extra_env=storage) for i in (3, 4)]
    started.extend(workers)
    for w in workers:
        w.wait_ready()
    for lid in ids:
        end = status.wait_terminal(lid, timeout=400)
        assert end["data"]["state"] == "SUCCEEDED", status.states(lid)
    time.sleep(3)  # anything published twice would be here by now
    for lid in ids:
        events = status.of(lid)
        assert_contiguous(events, lid)
        assert len(slurm.leaders(lid)) == 1, (lid, slurm.leaders(lid))
    # the records the workers carried on from agree with Slurm
    rc, out, err = reconcile(env, "--json")
    report = json.loads(out)
    assert not [i for i in report["items"] if i["launch_id"] in ids and
                i["kind"] not in REPAIRABLE_LIVE], out
    for w in workers:
        assert w.terminate() == 0


@pytest.mark.sanitized
def test_record_behind_slurm_and_an_ended_launchs_job_back(scenario, slurm,
                                                           logdir):
    """Records left live while their jobs ended (the workers were down):
    the missing transitions are published, once; then a job comes back for
    a launch that ended (slurmctld restored from a backup): cancelled."""
    stack, topics, group, status, storage, started = scenario
    worker = Worker(stack, topics, "rc-w5", group, logdir, extra_env=storage)
    started.append(worker)
    worker.wait_ready()
    ids = [unique_id("rcb") for _ in range(3)]
    for lid in ids:
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 25"]))
    jobs = {lid: status.wait_state(lid, "RUNNING", timeout=180)
            ["data"]["slurm"]["job_id"] for lid in ids}
    assert worker.terminate() == 0
    ended = [lid for lid in ids if TERMINAL & set(status.states(lid))]
    assert not ended, f"ended while the worker ran: {ended}"
    env = reconcile_env(stack, topics, group, storage)
    for lid in ids:
        wait_until(f"{lid}'s job to end",
                   lambda: "COMPLETED" in job_state(stack, jobs[lid]), 120)

    rc, out, err = reconcile(env, "--json")
    assert rc == 1, (rc, out, err)
    items = {i["launch_id"]: i for i in json.loads(out)["items"]}
    last = {lid: status.of(lid)[-1]["data"]["seq"] for lid in ids}
    for lid in ids:
        assert items[lid]["kind"] == "transitions", items[lid]
        assert [(e["seq"], e["state"]) for e in items[lid]["events"]] == \
            [(last[lid] + 1, "SUCCEEDED")], items[lid]
    rc, out, err = reconcile(env, "--execute", "--json")
    assert rc == 0, (rc, out, err)
    for lid in ids:
        status.wait_terminal(lid, timeout=30)

    # a job of an ended launch back from the past, in its staging folder
    ghost = submit_orphan(stack, storage, ids[0])
    rc, out, err = reconcile(env, "--json")
    items = {i["launch_id"]: i for i in json.loads(out)["items"]}
    assert rc == 1 and items[ids[0]]["kind"] == "ended_job_live", out
    assert items[ids[0]]["cancel_jobs"] == [ghost]
    rc, out, err = reconcile(env, "--execute", "--json")
    assert rc == 0, (rc, out, err)
    wait_until("the ghost job cancelled",
               lambda: "CANCELLED" in job_state(stack, ghost), 30)

    # a worker carries on from those records: it archives, publishes no
    # second terminal event
    worker = Worker(stack, topics, "rc-w6", group, logdir, extra_env=storage)
    started.append(worker)
    worker.wait_ready()
    wait_until("the logs archived", lambda: {
        k.decode() for k, _, _ in topics.read_all(topics.logs, timeout=2)
    } >= set(ids), 120, step=1)
    time.sleep(3)
    for lid in ids:
        assert_contiguous(status.of(lid), lid)
        assert status.states(lid)[-1] == "SUCCEEDED", status.states(lid)
    assert worker.terminate() == 0
