# SPDX-License-Identifier: Apache-2.0
"""
One worker, driven only through its topics: the launch kinds of issue 5's
first proof (single pool, failing, heterogeneous, cancel of a running job,
invalid, garbage, duplicate), each checked against the events a
read_committed reader sees and the jobs slurmctld really ran.
"""

import json
import time

import pytest

from harness import (assert_contiguous, cancel, het_launch, launch, one_worker,
                     unique_id, wait_until)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized


@pytest.fixture(scope="module")
def one(stack, logdir):
    with one_worker(stack, logdir, "one", logs=False) as setup:
        yield setup


def test_single_pool_launch_succeeds_with_contiguous_seq(one, slurm):
    topics, worker, reader = one
    lid = unique_id("single")
    topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 2; echo hello"]))
    done = reader.wait_terminal(lid)
    events = reader.of(lid)
    states = [e["data"]["state"] for e in events]
    assert done["data"]["state"] == "SUCCEEDED", states
    assert states[:2] == ["ACCEPTED", "SUBMITTED"], states
    assert "RUNNING" in states, states
    assert set(states) <= {"ACCEPTED", "SUBMITTED", "PENDING", "RUNNING",
                           "SUCCEEDED"}, states
    assert_contiguous(events, lid)
    job = events[1]["data"]["slurm"]["job_id"]
    assert slurm.leaders(lid) == [job]
    assert done["data"]["slurm"]["exit_code"] == 0
    assert done["source"] == f"forge-worker/{worker.worker_id}"


def test_failing_command_is_failed_with_its_exit_code(one):
    topics, _, reader = one
    lid = unique_id("fails")
    topics.send(lid, launch(lid, ["/bin/sh", "-c", "echo failing >&2; exit 3"]))
    done = reader.wait_terminal(lid)
    assert done["data"]["state"] == "FAILED", reader.states(lid)
    assert done["data"]["slurm"]["exit_code"] == 3
    assert_contiguous(reader.of(lid), lid)


def test_het_launch_succeeds_with_two_components(one, slurm):
    topics, _, reader = one
    lid = unique_id("het")
    topics.send(lid, het_launch(lid, ["/bin/sh", "-c", "echo $FORGE_POOL"]))
    done = reader.wait_terminal(lid)
    assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
    components = done["data"]["slurm"]["components"]
    assert len(components) == 2, components
    assert len(slurm.leaders(lid)) == 1
    assert_contiguous(reader.of(lid), lid)


def test_cancel_of_a_running_launch(one, slurm):
    topics, _, reader = one
    lid = unique_id("cancel")
    topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 300"]))
    reader.wait_state(lid, "RUNNING")
    topics.send(lid, cancel(lid))
    done = reader.wait_terminal(lid, timeout=60)
    assert done["data"]["state"] == "CANCELLED", reader.states(lid)
    assert done["data"]["reason"] == "requested"
    assert_contiguous(reader.of(lid), lid)
    leaders = slurm.leaders(lid)
    assert len(leaders) == 1
    wait_until("Slurm to show the job cancelled",
               lambda: "CANCELLED" in (slurm.jobs[leaders[0]]["states"][-1]), 20)


def test_cancel_before_submit_never_reaches_slurm(one, slurm):
    topics, _, reader = one
    lid = unique_id("early-cancel")
    # Same key, same partition: the cancel is read right behind the launch,
    # mostly in the same batch, before the intent's transaction commits (the
    # submit is withdrawn); otherwise the submit is in flight and its job is
    # cancelled as soon as its id is known. CANCELLED either way.
    topics.producer.produce(topics.requests, key=lid,
                            value=json.dumps(launch(lid, ["sleep", "60"])))
    topics.producer.produce(topics.requests, key=lid,
                            value=json.dumps(cancel(lid)))
    topics.producer.flush(10)
    done = reader.wait_terminal(lid)
    assert done["data"]["state"] == "CANCELLED", reader.states(lid)
    assert_contiguous(reader.of(lid), lid)
    time.sleep(2)
    # Either never submitted, or submitted and cancelled at once.
    leaders = slurm.leaders(lid)
    assert len(leaders) <= 1
    states = reader.states(lid)
    assert states in (["ACCEPTED", "CANCELLED"],
                      ["ACCEPTED", "SUBMITTED", "CANCELLED"]) or (
        leaders and "CANCELLED" in slurm.jobs[leaders[0]]["states"][-1]), states


def test_invalid_request_is_rejected_with_code_and_field(one, slurm):
    topics, _, reader = one
    lid = unique_id("invalid")
    req = launch(lid, ["/bin/true"])
    req["env"] = {"SLURM_JOB_ID": "1"}  # reserved name
    topics.send(lid, req)
    done = reader.wait_terminal(lid, timeout=30)
    assert done["data"]["state"] == "REJECTED"
    error = done["data"]["error"]
    assert error["field"].startswith("$.env"), error
    assert error["code"], error
    assert reader.states(lid) == ["REJECTED"]
    assert slurm.leaders(lid) == []


def test_garbage_goes_to_the_dlq_with_the_error_in_headers(one):
    topics, _, reader = one
    junk = b"\x00\xffnot json at all {"
    topics.send("garbage-key", junk)
    records = wait_until("the DLQ record",
                         lambda: topics.read_all(topics.dlq, timeout=1), 30)
    key, value, headers = records[0]
    assert key == b"garbage-key"
    assert value == junk
    assert headers.get("forge.error.code"), headers
    assert headers.get("forge.error.message"), headers
    # the partition keeps going: a valid launch behind it still runs
    lid = unique_id("after-garbage")
    topics.send("garbage-key", launch(lid, ["/bin/true"]))
    assert reader.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"


def test_duplicate_request_starts_no_second_job(one, slurm):
    topics, _, reader = one
    lid = unique_id("dup")
    req = launch(lid, ["/bin/sh", "-c", "sleep 3"])
    topics.send(lid, req)
    reader.wait_state(lid, "SUBMITTED")
    topics.send(lid, req)  # while it runs
    done = reader.wait_terminal(lid)
    assert done["data"]["state"] == "SUCCEEDED"
    topics.send(lid, req)  # after it ended
    marker = unique_id("marker")  # same key: read after the duplicate
    topics.send(lid, launch(marker, ["/bin/true"]))
    reader.wait_terminal(marker)
    time.sleep(1)
    assert len(slurm.leaders(lid)) == 1
    assert_contiguous(reader.of(lid), lid)
    assert [e["data"]["state"] for e in reader.of(lid)].count("ACCEPTED") == 1


def test_a_request_near_one_mib_is_recorded_and_runs(one, slurm):
    """The state record carries the request, escaped once more inside the
    record: a ~920 KB request full of quotes makes a record over 1.3 MB,
    past librdkafka's 1 MB default; it must reach the state topic (4 MiB
    messages) and the job."""
    topics, _, reader = one
    lid = unique_id("big-request")
    env = {f"BLOB_{i}": 'ab"' * 5000 for i in range(45)}
    req = launch(lid, ["/bin/sh", "-c", 'echo "${#BLOB_44}"'], env=env)
    assert 850_000 < len(json.dumps(req)) < 1024 * 1024
    topics.send(lid, req)
    done = reader.wait_terminal(lid)
    assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
    assert_contiguous(reader.of(lid), lid)
    assert len(slurm.leaders(lid)) == 1
    records = [json.loads(v) for k, v, _ in topics.read_all(topics.state)
               if k == lid.encode() and v]
    assert records and max(len(json.dumps(r)) for r in records) > 1_000_000
    assert records[-1]["state"] in ("SUCCEEDED",), records[-1]["state"]
