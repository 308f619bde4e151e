# SPDX-License-Identifier: Apache-2.0
"""
The retry policy for infrastructure failures (issue 26): a try that ends
with a cause the launch's policy names, while a try is left, is tried
again as a new Slurm job of the same attempt (tagged
forge:<launch_id>:<attempt>:<try>), into the same staging folder, its logs
appended after `== forge: try N ==`; the platform sees PENDING (reason
retrying, `try`, `retry`) in place of the end.

  (a)+(b) one node failure (`tests/e2e/stack fail`, a power loss: the node
      is DOWN within ~30 s) under two launches on that node, both asking
      for failed nodes to be excluded (so Slurm's own requeue is off and
      the job ends NODE_FAIL): A (max_tries 2, a series either node has)
      goes RUNNING -> PENDING (retrying, try 2, node_fail, the node
      excluded) -> a new job on the other node -> SUCCEEDED; B (max_tries
      1) has no try left: FAILED (node_fail, try 1). Exactly the Slurm jobs
      expected (A: two, the first NODE_FAIL; B: one), never two of one
      launch live at once. The node is started again whatever happens.
  (c) a job exiting 3 under a policy of the infrastructure's causes:
      FAILED (failed), never retried: one Slurm job.
  (d) kill -9 of the worker right after a retry's decision committed,
      before the next try's POST (test point retry.before): the heir
      submits try 2 exactly once (its tag finds nothing), SUCCEEDED, one
      terminal event, the archive holding both tries' output.

Its launches run in the `faults` partition (h200-f and a100-f): the nodes
that only this file and test_requeue.py use, one at a time
(@pytest.mark.uses), while the other scenarios run beside them.
"""

import json
import os
import tarfile
import time

import pytest

from harness import (FAULT_NODES_ENV, StatusReader, Topics, Worker,
                     assert_contiguous, launch, one_worker, stack_verb,
                     unique_id, wait_until)

pytestmark = pytest.mark.uses("fault-nodes")
FAULT_NODES = ("h200-f", "a100-f")
# A series either node has (the `faults` partition has one node of each of
# h200 and a100): a retry that excludes the failed node can run on the other.
SERIES = {"series": {
    "h200": {"slurm_constraint": "h200", "gpus_per_node": 8},
    "a100": {"slurm_constraint": "a100", "gpus_per_node": 8},
    "any": {"slurm_constraint": "h200|a100", "gpus_per_node": 8}}}
# The first try marks the shared staging folder (every try runs in it) and
# waits for the node failure; the second finds the mark and ends at once.
TWO_RUNS = ('if [ -e "$FORGE_STAGING/ran" ]; then echo "try two"; exit 0; fi; '
            'touch "$FORGE_STAGING/ran"; echo "try one"; sleep 240')


@pytest.fixture(scope="module")
def retries(stack, logdir):
    series = os.path.join(logdir, "series.json")
    with open(series, "w") as f:
        json.dump(SERIES, f)
    with one_worker(stack, logdir, "retry",
                    {"FORGE_GPU_SERIES_FILE": series,
                     **FAULT_NODES_ENV}) as setup:
        yield setup


def send(topics, command, series, retry):
    lid = unique_id("rt")
    req = launch(lid, ["/bin/bash", "-c", command], series=series)
    req["retry"] = retry
    topics.send(lid, req)
    return lid


def seen(events, t0):
    """What the platform saw, for the failure messages and the notes."""
    return [(e["data"]["state"], e["data"].get("reason"), e["data"].get("try"),
             (e["data"].get("slurm") or {}).get("job_id"),
             round(e["_received"] - t0, 1)) for e in events]


def node_of(event):
    return event["data"]["slurm"]["components"][0]["nodes"]


def archived_out(logs, lid):
    event = wait_until(f"{lid}'s logs event", lambda: logs.of(lid), 60)[0]
    with tarfile.open(event["data"]["archive"]["path"], "r:gz") as t:
        return t.extractfile("main.out").read().decode()


def check_retried(slurm, status, logs, lid, node, t0):
    """A: PENDING (retrying) at try 2 with the node excluded, a new job on
    the other node, SUCCEEDED; both tries' output in the archive."""
    end = status.wait_terminal(lid, timeout=180)
    events = status.of(lid)
    print(f"A {lid}: {seen(events, t0)}; Slurm jobs {slurm.tries(lid)}")
    assert end["data"]["state"] == "SUCCEEDED", seen(events, t0)
    assert end["data"]["try"] == 2
    assert_contiguous(events, lid)
    retrying = [e["data"] for e in events if e["data"]["reason"] == "retrying"]
    assert len(retrying) == 1, seen(events, t0)
    r = retrying[0]
    assert r["state"] == "PENDING" and r["previous_state"] == "RUNNING"
    assert r["try"] == 2
    assert r["retry"]["try"] == 2 and r["retry"]["max_tries"] == 2
    assert r["retry"]["cause"] == "node_fail"
    assert r["retry"]["excluded_nodes"] == [node]
    first = r["slurm"]["job_id"]
    # usage per try: the failed try's own, then every try's at the end
    assert r["usage"]["components"][0]["job_id"] == first, r
    assert r["usage"]["gpus"] >= 1, r
    done = end["data"]["usage"]
    assert done["all_tries"]["tries"] == 2, done
    assert abs(done["all_tries"]["gpu_hours"] - r["usage"]["gpu_hours"]
               - done["gpu_hours"]) < 1e-5, (r["usage"], done)
    after = events[events.index(next(e for e in events
                                     if e["data"]["reason"] == "retrying")) + 1:]
    assert after[0]["data"]["state"] == "SUBMITTED", seen(events, t0)
    assert all(e["data"]["try"] == 2 for e in after)
    second = after[0]["data"]["slurm"]["job_id"]
    assert second != first
    ran = [node_of(e) for e in after if e["data"]["state"] == "SUCCEEDED"]
    assert ran and ran[0] and ran[0] != node, ran
    jobs = slurm.tries(lid)
    assert sorted(jobs) == sorted([first, second]), jobs
    assert jobs[first][0] == 1 and jobs[second][0] == 2, jobs
    assert jobs[second][1] and jobs[second][1] != node, jobs
    assert any("NODE_FAIL" in s for s in jobs[first][2]), jobs
    assert slurm.most_alive(lid) == 1
    out = archived_out(logs, lid)
    assert out.index("try one") < out.index("== forge: try 2 ==") < \
        out.index("try two"), out


def check_exhausted(slurm, status, lid, t0):
    """B: no try left: FAILED (node_fail) at its only try, one job."""
    end = status.wait_terminal(lid, timeout=180)
    events = status.of(lid)
    print(f"B {lid}: {seen(events, t0)}; Slurm jobs {slurm.tries(lid)}")
    assert end["data"]["state"] == "FAILED", seen(events, t0)
    assert end["data"]["reason"] == "node_fail"
    assert end["data"]["try"] == 1
    assert "retrying" not in [e["data"]["reason"] for e in events]
    jobs = slurm.tries(lid)
    assert len(jobs) == 1, jobs
    assert any("NODE_FAIL" in s for _, _, states in jobs.values()
               for s in states), jobs


@pytest.mark.disrupts(*(f"slurmd-{n}" for n in FAULT_NODES))
def test_node_failure_retries_a_launch_and_ends_one_without_tries(
        stack, slurm, retries):
    topics, worker, status, logs = retries
    t0 = time.time()
    a = send(topics, TWO_RUNS, "any",
             {"max_tries": 2, "on": ["node_fail"], "backoff_s": 2,
              "exclude_failed_nodes": True})
    node = node_of(status.wait_state(a, "RUNNING", timeout=90))
    assert node in FAULT_NODES, node
    # B on the same node (its series is that node's only): no try left
    b = send(topics, 'echo "b runs"; sleep 240', node.split("-")[0],
             {"max_tries": 1, "on": ["node_fail"],
              "exclude_failed_nodes": True})
    assert node_of(status.wait_state(b, "RUNNING", timeout=90)) == node
    time.sleep(2)  # A printed its line
    try:
        stack_verb("fail", f"slurmd-{node}")
        check_retried(slurm, status, logs, a, node, t0)
        check_exhausted(slurm, status, b, t0)
    finally:
        stack_verb("start", f"slurmd-{node}")
    assert any("try 2 of 2" in line.get("msg", "") for line in worker.lines())


def test_a_non_zero_exit_is_never_retried(stack, slurm, retries):
    topics, _, status, _ = retries
    t0 = time.time()
    lid = send(topics, 'echo "exiting 3"; exit 3', "h200",
               {"max_tries": 3, "on": ["node_fail", "boot_fail",
                                        "launch_failed", "preempted"],
                "backoff_s": 1})
    end = status.wait_terminal(lid, timeout=90)
    events = status.of(lid)
    assert end["data"]["state"] == "FAILED", seen(events, t0)
    assert end["data"]["reason"] == "failed"
    assert end["data"]["slurm"]["exit_code"] == 3
    assert end["data"]["try"] == 1
    time.sleep(3)  # a retry would have been submitted by now
    assert "retrying" not in [e["data"]["reason"] for e in status.of(lid)]
    assert len(slurm.leaders(lid)) == 1, slurm.tries(lid)


def test_kill_9_between_a_retry_and_its_post(stack, slurm, logdir):
    """The retry committed (PENDING retrying, the next try's intent), the
    worker killed before the next try's POST: its heir submits it once."""
    topics = Topics(stack, "retry-crash")
    group = unique_id("g")
    crashing = Worker(stack, topics, unique_id("wa"), group, logdir,
                      {"FORGE_TEST_CRASH_POINT": "retry.before",
                       **FAULT_NODES_ENV})
    status = StatusReader(stack, topics.status)
    logs = StatusReader(stack, topics.logs)
    try:
        crashing.wait_ready()
        t0 = time.time()
        # the job's own failure, named by the policy: a retry without a
        # node failure; the second try finds the first's mark
        lid = send(topics,
                   'if [ -e "$FORGE_STAGING/tried" ]; then echo "second try"; '
                   'exit 0; fi; touch "$FORGE_STAGING/tried"; '
                   'echo "first try"; exit 3',
                   "h200", {"max_tries": 2, "on": ["failed"], "backoff_s": 1})
        assert crashing.wait_exit(120) == -9, crashing.tail()
        wait_until(f"{lid}'s retry (so far: {status.states(lid)})",
                   lambda: [e for e in status.of(lid)
                            if e["data"]["reason"] == "retrying"],
                   30)  # the reader's lag
        assert len(slurm.leaders(lid)) == 1, slurm.tries(lid)

        heir = Worker(stack, topics, unique_id("wb"), group, logdir,
                      FAULT_NODES_ENV)
        end = status.wait_terminal(lid, timeout=120)
        events = status.of(lid)
        print(f"{lid}: {seen(events, t0)}; Slurm jobs {slurm.tries(lid)}")
        assert end["data"]["state"] == "SUCCEEDED", seen(events, t0)
        assert end["data"]["try"] == 2
        assert_contiguous(events, lid)
        assert [e["data"]["state"] for e in events].count("SUCCEEDED") == 1
        retrying = [e for e in events if e["data"]["reason"] == "retrying"]
        assert len(retrying) == 1, seen(events, t0)
        assert retrying[0]["data"]["retry"]["cause"] == "failed"
        assert retrying[0]["source"] == f"forge-worker/{crashing.worker_id}"
        after = events[events.index(retrying[0]) + 1:]
        assert after[0]["data"]["state"] == "SUBMITTED"
        assert after[0]["source"] == f"forge-worker/{heir.worker_id}"
        jobs = slurm.tries(lid)
        assert sorted(t for t, _, _ in jobs.values()) == [1, 2], jobs
        assert slurm.most_alive(lid) == 1
        assert not heir.logged("left by an interrupted submit"), heir.tail()
        out = archived_out(logs, lid)
        assert out.index("first try") < out.index("== forge: try 2 ==") < \
            out.index("second try"), out
        assert heir.terminate() == 0, heir.tail()
    finally:
        status.close()
        logs.close()
        crashing.stop_quietly()
        if "heir" in locals():
            heir.stop_quietly()
