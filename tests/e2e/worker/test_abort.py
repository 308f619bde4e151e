# SPDX-License-Identifier: Apache-2.0
"""
A transaction aborted after its messages reached the broker (test point
FORGE_TEST_ABORT_TXN=1: the worker's first transaction, carrying the first
launch's ACCEPTED event, its state record and its request's offset): a
read_committed reader never sees it, a read_uncommitted one does (proof the
abort really happened with data on the broker), and the worker redoes the
work from the committed offsets: one ACCEPTED, one Slurm job. Then each
later transaction of a launch aborted in turn.
"""

import json

import pytest

from harness import (PARTITIONS, StatusReader, Topics, Worker,
                     assert_contiguous, launch, unique_id)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized


def test_read_committed_reader_sees_no_aborted_event(stack, slurm, logdir):
    topics = Topics(stack, "abort")
    committed = StatusReader(stack, topics.status, "read_committed")
    uncommitted = StatusReader(stack, topics.status, "read_uncommitted")
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_TEST_ABORT_TXN": "1"})
    try:
        worker.wait_ready()
        lid = unique_id("abort")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 1"]))
        done = committed.wait_terminal(lid)
        assert done["data"]["state"] == "SUCCEEDED", committed.states(lid)
        assert worker.logged("aborting transaction 1 on purpose")
        assert_contiguous(committed.of(lid), lid)
        assert committed.states(lid).count("ACCEPTED") == 1
        uncommitted.wait_terminal(lid)
        seen = [e["data"]["seq"] for e in uncommitted.of(lid)
                if e["data"]["state"] == "ACCEPTED"]
        assert seen == [1, 1], f"the aborted ACCEPTED should be there: {seen}"
        assert len(slurm.leaders(lid)) == 1
        assert worker.terminate() == 0, worker.tail()
    finally:
        committed.close()
        uncommitted.close()
        worker.stop_quietly()


@pytest.mark.parametrize("state", ["SUBMITTED", "RUNNING", "SUCCEEDED"])
def test_each_aborted_transaction_of_a_launch_is_redone_once(stack, slurm,
                                                              logdir, state):
    """The transaction carrying a launch's SUBMITTED, then RUNNING, then
    SUCCEEDED is aborted (as a broker restart or an abortable commit error
    would; the first, ACCEPTED's, is the test above): the records go back to
    what committed, and the launch still ends in its true state with each
    event once and exactly one Slurm job having run its command.
    SUBMITTED's abort leaves an intent whose job runs: it is adopted by its
    tag, not cancelled and submitted again (issue 26: a training run was
    killed and restarted from zero by a broker hiccup). SUCCEEDED's: the
    next ticks see the job's end again and publish SUCCEEDED once, not call
    it unchanged until slurmctld forgets the job (LOST)."""
    topics = Topics(stack, "abort-" + state.lower())
    committed = StatusReader(stack, topics.status, "read_committed")
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_TEST_ABORT_TXN_STATE": state,
                     "FORGE_LOST_GRACE_S": "5"})
    try:
        worker.wait_ready()
        lid = unique_id("abort-" + state.lower())
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 4"]))
        # Well inside MinJobAge (30 s): an answer from the job's end, not
        # from its disappearance.
        done = committed.wait_terminal(lid, timeout=60)
        assert worker.logged(f"aborting the transaction carrying a {state}")
        assert done["data"]["state"] == "SUCCEEDED", committed.states(lid)
        events = committed.of(lid)
        assert_contiguous(events, lid)
        for s in ("ACCEPTED", "SUBMITTED", "SUCCEEDED"):
            assert committed.states(lid).count(s) == 1, committed.states(lid)
        assert len(slurm.leaders(lid)) == 1, slurm.leaders(lid)
        assert slurm.ran(lid) == slurm.leaders(lid)
        job_ids = {e["data"]["slurm"]["job_id"] for e in events
                   if (e["data"].get("slurm") or {}).get("job_id")}
        assert job_ids == set(slurm.leaders(lid)), job_ids
        if state == "SUBMITTED":
            assert worker.logged(f"adopted job {job_ids.pop()} of {lid}")
        assert worker.terminate() == 0, worker.tail()
    finally:
        committed.close()
        worker.stop_quietly()


def test_failed_restore_is_retried(stack, logdir):
    """The first restores fail (as if the state topic's end was out of reach
    for a moment): those partitions stay paused, nothing is taken from
    them, and they are restored again after a backoff - never left paused
    for good. A launch on every partition then runs."""
    topics = Topics(stack, "restore-fail")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_TEST_RESTORE_FAILS": "3"})
    try:
        worker.wait_ready(timeout=60)
        assert worker.logged("restore 3 fails on purpose")
        assert worker.logged("restored again in")
        ids = []
        for p in range(PARTITIONS):
            lid = unique_id(f"p{p}")
            topics.producer.produce(topics.requests, key=lid, partition=p,
                                    value=json.dumps(launch(lid, ["/bin/true"])))
            ids.append(lid)
        topics.producer.flush(10)
        for lid in ids:
            assert reader.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        worker.stop_quietly()
