# SPDX-License-Identifier: Apache-2.0
"""
Slurm's own requeue (issue 26): a launch's job, running, is requeued by
Slurm (a) through preemption, a plain job in the stack's `urgent`
partition taking the node of a launch in `preempt`
(PreemptMode=REQUEUE: tests/e2e/slurm/slurm.conf.in), and (b) by
`scontrol requeue`. Either way the same job runs again: the worker stages
that run's credentials (credentials.1) once its poll sees the requeue, the
run reads exactly the env, secret_env and ingest token of the first (the
job prints their SHA-256 only), both runs' output is in the archive with
the `== forge: restart 1 ==` marker between them, the platform sees
RUNNING -> PENDING (requeued, restart_count 1) -> RUNNING -> SUCCEEDED,
and never two live jobs of the launch. The preempted launch asks a
checkpoint signal (USR1): with PreemptParameters=send_user_signal its
first run gets it when the preemption begins, before the requeue. And (c)
by a node failure: the node's slurmd and the job's processes killed at
once, the job requeued by slurmctld, run again once the node is back.

Its launches run in the `faults` partition (h200-f and a100-f, with
`preempt` and `urgent` on them): one h200 node that only this file and
test_retry.py use, one at a time (@pytest.mark.uses), while the other
scenarios run beside them on the shared nodes.
"""

import hashlib
import subprocess
import tarfile
import time

import pytest

from harness import (FAULT_NODES_ENV, StatusReader, Topics, Worker, launch,
                     one_worker, stack_verb, unique_id, wait_until)
from held_jobs import take_node

TICKS = 12  # the command's seconds: its second run must finish them
pytestmark = pytest.mark.uses("fault-nodes")


@pytest.fixture(scope="module")
def requeue(stack, logdir):
    with one_worker(stack, logdir, "requeue",
                    {"FORGE_REQUEUE_CREDENTIALS_WAIT_S": "60",
                     **FAULT_NODES_ENV}) as setup:
        yield setup


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def send_launch(topics, partition, checkpoint=False):
    mark = unique_id("v")
    values = {"token": f"tok-{mark}", "secret": f"sek-{mark}",
              "plain": f"plain-{mark}"}
    lid = unique_id("rq")
    # USR1 reaches the step's processes, this bash and its sleep: the sleep
    # ends, the trap prints at once, and the ticks go on until the requeue's
    # SIGTERM (GraceTime 2 s later)
    trap = "trap 'echo checkpoint signal USR1' USR1; " if checkpoint else ""
    cmd = (trap + 'echo "image $(cat /etc/forge-image)"; '
           'echo "token $(printf %s "$FORGE_INGEST_TOKEN" | sha256sum)"; '
           'echo "secret $(printf %s "$API_KEY" | sha256sum)"; '
           'echo "plain $(printf %s "$PLAIN" | sha256sum)"; '
           f'i=0; while [ $i -lt {TICKS} ]; do echo "tick $i"; '
           'i=$((i + 1)); sleep 1; done')
    req = launch(lid, ["/bin/bash", "-c", cmd], gpus=1,
                 env={"PLAIN": values["plain"]})
    req["secret_env"] = {"API_KEY": values["secret"]}
    req["ingest"] = {"endpoint": "https://ingest.example.org/v1",
                     "token": values["token"]}
    if partition:
        req["partition"] = partition
    if checkpoint:  # far from the 5 min time limit: only the preemption
        req["checkpoint_signal"] = {"signal": "USR1", "seconds_before_end": 60}
    topics.send(lid, req)
    return lid, values


def seconds(events, t0):
    return [(e["data"]["state"], e["data"].get("reason"),
             (e["data"].get("slurm") or {}).get("restart_count"),
             round(e["_received"] - t0, 1)) for e in events]


def check_requeued(stack, slurm, requeue, lid, values, t0, timeout=80):
    """RUNNING, PENDING (requeued), RUNNING, SUCCEEDED, each once, however
    the requeue was seen: a poll of the job pending again, a jobcomp end's
    targeted poll while Slurm still completes the first run (REQUEUED
    beside COMPLETING), or only the restart count of the run after it (the
    PENDING then said first, CONTRACT §3)."""
    topics, worker, status, logs = requeue
    end = status.wait_terminal(lid, timeout=timeout)
    events = status.of(lid)
    print(f"{lid}: {seconds(events, t0)}; Slurm jobs "
          f"{[(j, slurm.jobs[j]['states']) for j in slurm.leaders(lid)]}")
    assert end["data"]["state"] == "SUCCEEDED", seconds(events, t0)
    states = [e["data"]["state"] for e in events]
    first = states.index("RUNNING")
    assert states[first:] == ["RUNNING", "PENDING", "RUNNING",
                              "SUCCEEDED"], seconds(events, t0)
    pending = events[first + 1]["data"]
    assert pending["reason"] == "requeued"
    assert pending["slurm"]["restart_count"] == 1
    assert events[first + 2]["data"]["slurm"]["restart_count"] == 1
    # one job, the same id throughout; never two live
    jobs = {e["data"]["slurm"]["job_id"] for e in events
            if (e["data"].get("slurm") or {}).get("job_id")}
    assert len(jobs) == 1, jobs
    assert len(slurm.leaders(lid)) == 1
    assert slurm.most_alive(lid) == 1
    # both runs' output, the marker between, the same values in each
    event = wait_until(f"{lid}'s logs event", lambda: logs.of(lid), 60)[0]
    with tarfile.open(event["data"]["archive"]["path"], "r:gz") as t:
        out = t.extractfile("main.out").read().decode()
        err = t.extractfile("main.err").read().decode()
    runs = out.split("== forge: restart 1 ==\n")
    assert len(runs) == 2, out
    for run in runs:
        for name, value in values.items():
            assert f"{name} {sha(value)}  -" in run, (name, out)
        assert "tick 0" in run, out
        # each run inside the stack's image (tests/e2e/stack.d/images.sh)
        assert "image forge-python-image" in run, out
    assert f"tick {TICKS - 1}" in runs[1], out
    assert "== forge: restart 1 ==" in err
    for value in values.values():
        assert value not in out and value not in err
    for topic in (topics.state, topics.status, topics.logs):
        for _, v, _ in topics.read_all(topic):
            for secret in (values["token"], values["secret"]):
                assert secret.encode() not in v, f"a secret in {topic}"
    assert any("credentials for restart 1 staged" in line.get("msg", "")
               for line in worker.lines())
    return runs


def running_job(status, lid):
    status.wait_state(lid, "RUNNING", timeout=60)
    return status.of(lid)[-1]["data"]["slurm"]["job_id"]


def scontrol_requeue(stack, job_id):
    """Once its first run has printed a few ticks, what `scontrol requeue`
    does to a running job."""
    time.sleep(3)
    subprocess.run(["chroot", stack.env["FORGE_STACK_SLURM_CHROOT"],
                    "scontrol", "requeue", str(job_id)], check=True)


def test_preempted_launch_runs_again_with_its_credentials(stack, slurm,
                                                          requeue):
    topics, _, status, _ = requeue
    t0 = time.time()
    lid, values = send_launch(topics, "preempt", checkpoint=True)
    running_job(status, lid)
    time.sleep(3)  # its first run prints a few ticks
    # a plain job of the higher tier wants every GPU of the launch's node
    take_node(stack, "e2e-urgent", "urgent", 5, 1)
    runs = check_requeued(stack, slurm, requeue, lid, values, t0)
    # the checkpoint signal came when the preemption began, to the first
    # run only (the second ran to its end, far from its time limit): to
    # the command inside its container, whose trap printed it
    assert "checkpoint signal USR1" in runs[0], runs[0]
    assert "checkpoint signal USR1" not in runs[1], runs[1]


def test_scontrol_requeue_runs_again_with_its_credentials(stack, slurm,
                                                          requeue):
    topics, _, status, _ = requeue
    t0 = time.time()
    lid, values = send_launch(topics, None)
    scontrol_requeue(stack, running_job(status, lid))
    check_requeued(stack, slurm, requeue, lid, values, t0)


@pytest.mark.disrupts("slurmd-h200-f")
def test_failed_node_requeues_and_the_run_comes_back(stack, slurm, requeue):
    """The launch's node dies while it runs (tests/e2e/stack fail: its
    slurmd, slurmstepd and the job's processes KILLed at once, a power
    loss): slurmctld finds the node not answering (SlurmdTimeout 8 s) and
    requeues the job (JobRequeue=1); the platform sees PENDING (requeued),
    the worker stages the restart's credentials, and once the node is back
    the same job runs again from the start and SUCCEEDS. The launch needs
    an h200, which only that node has in its partition: it waits for it."""
    topics, _, status, _ = requeue
    t0 = time.time()
    lid, values = send_launch(topics, None)
    running_job(status, lid)
    time.sleep(3)
    try:
        stack_verb("fail", "slurmd-h200-f")
        wait_until(lambda: f"{lid} requeued after its node failed (events "
                   f"{seconds(status.of(lid), t0)}, Slurm "
                   f"{[(j, slurm.jobs[j]['states']) for j in slurm.leaders(lid)]})",
                   lambda: any(e["data"].get("reason") == "requeued"
                               for e in status.of(lid)), 90)
    finally:
        stack_verb("start", "slurmd-h200-f")
    check_requeued(stack, slurm, requeue, lid, values, t0)


# How long the node's slurmd stays stopped once its job was requeued: the
# run goes on meanwhile, and the requeued job is eligible again
# (requeue_delay 5 s) when the slurmd comes back.
SLURMD_AWAY_S = 30


@pytest.mark.disrupts("slurmd-h200-f")
def test_a_node_whose_slurmd_stopped_under_its_run_ends_succeeded(
        stack, slurm, requeue):
    """The orphan race (issue 39): the launch's node's slurmd stops (the
    job's processes live on), the node is DOWN after SlurmdTimeout and the
    job requeued; when the slurmd is back it reports the old run's step,
    slurmctld kills it as an orphan's, and the requeued job it allocated
    on that node in the same moment (the only h200 of its partition) dies
    by SIGKILL at its start. The worker takes that kill for the node's
    failure (node_fail, CONTRACT §3) and the launch's retry policy tries
    again: it ends SUCCEEDED, once, with every run's output in its archive
    and never two live jobs. (Without the race, the requeued run itself
    succeeds: SUCCEEDED all the same.) A marker in the staging folder,
    which every run and try share, makes the first run long; a later one
    lasts 5 s, long enough for the orphan's kill to reach it."""
    topics, _, status, logs = requeue
    t0 = time.time()
    lid = unique_id("orph")
    cmd = ('if [ -e "$FORGE_STAGING/ran" ]; then sleep 5; echo "run again"; '
           'else touch "$FORGE_STAGING/ran"; echo "first run"; sleep 240; fi')
    req = launch(lid, ["/bin/bash", "-c", cmd], gpus=1)
    req["retry"] = {"max_tries": 2, "on": ["node_fail"], "backoff_s": 0,
                    "exclude_failed_nodes": False}
    topics.send(lid, req)
    running_job(status, lid)
    time.sleep(2)
    try:
        stack_verb("stop", "slurmd-h200-f")  # slurmd alone: the run goes on
        wait_until(f"{lid} requeued after its node went DOWN",
                   lambda: any(e["data"].get("reason") == "requeued"
                               for e in status.of(lid)), 90)
        time.sleep(SLURMD_AWAY_S)
    finally:
        stack_verb("start", "slurmd-h200-f")
    end = status.wait_terminal(lid, 180)
    events = status.of(lid)
    print(f"{lid}: {seconds(events, t0)}; Slurm jobs "
          f"{[(j, slurm.jobs[j]['states']) for j in slurm.leaders(lid)]}")
    assert end["data"]["state"] == "SUCCEEDED", seconds(events, t0)
    states = [e["data"]["state"] for e in events]
    assert states.count("SUCCEEDED") == 1, states
    retried = [e["data"] for e in events if e["data"].get("retry")]
    for r in retried:  # the race: the kill was the node's
        assert r["retry"]["cause"] == "node_fail", r
    assert slurm.most_alive(lid) == 1
    event = wait_until(f"{lid}'s logs event", lambda: logs.of(lid), 60)[0]
    with tarfile.open(event["data"]["archive"]["path"], "r:gz") as t:
        out = t.extractfile("main.out").read().decode()
    assert out.startswith("first run\n"), out
    assert out.rstrip().endswith("run again"), out


def test_a_worker_killed_before_staging_a_restart_leaves_it_to_its_heir(
        stack, slurm, logdir):
    """kill -9 of the worker between the requeue it recorded (PENDING,
    requeued) and the staging of the restart's credentials (test point
    restage.before): its heir finds the record's restart count above the
    staged one and stages them; the run, waiting for them meanwhile, gets
    exactly its values and SUCCEEDS. One job, never two live."""
    topics = Topics(stack, "requeue-crash")
    group = unique_id("g")
    crashing = Worker(stack, topics, unique_id("wa"), group, logdir,
                      {"FORGE_TEST_CRASH_POINT": "restage.before",
                       "FORGE_REQUEUE_CREDENTIALS_WAIT_S": "90",
                       **FAULT_NODES_ENV})
    status = StatusReader(stack, topics.status)
    logs = StatusReader(stack, topics.logs)
    try:
        crashing.wait_ready()
        t0 = time.time()
        lid, values = send_launch(topics, None)
        scontrol_requeue(stack, running_job(status, lid))
        assert crashing.wait_exit(60) == -9, crashing.tail()
        heir = Worker(stack, topics, unique_id("wb"), group, logdir,
                      {"FORGE_REQUEUE_CREDENTIALS_WAIT_S": "90",
                       **FAULT_NODES_ENV})
        check_requeued(stack, slurm, (topics, heir, status, logs), lid, values,
                       t0, timeout=120)
        assert heir.terminate() == 0, heir.tail()
    finally:
        status.close()
        logs.close()
        crashing.stop_quietly()
        if "heir" in locals():
            heir.stop_quietly()
