# SPDX-License-Identifier: Apache-2.0
"""
A transaction aborted after its messages reached the broker (test point
FORGE_TEST_ABORT_TXN=1: the worker's first transaction, carrying the first
launch's ACCEPTED event, its state record and its request's offset): a
read_committed reader never sees it, a read_uncommitted one does (proof the
abort really happened with data on the broker), and the worker redoes the
work from the committed offsets: one ACCEPTED, one Slurm job.
"""

import json

from harness import (PARTITIONS, StatusReader, Topics, Worker,
                     assert_contiguous, launch, unique_id)


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


def test_aborted_terminal_event_is_published_again(stack, slurm, logdir):
    """The transaction carrying a launch's SUCCEEDED is aborted (as a broker
    restart or an abortable commit error would): the records go back to
    RUNNING, and the next ticks must see the job's end again and publish
    SUCCEEDED once - not call it unchanged until slurmctld forgets the job
    and the launch ends LOST (seen before the poll memory was rewound with
    the records)."""
    topics = Topics(stack, "abort-terminal")
    committed = StatusReader(stack, topics.status, "read_committed")
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_TEST_ABORT_TXN_STATE": "SUCCEEDED",
                     "FORGE_LOST_GRACE_S": "5"})
    try:
        worker.wait_ready()
        lid = unique_id("abort-end")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 1"]))
        # Well inside MinJobAge (60 s): an answer from the job's end, not
        # from its disappearance.
        done = committed.wait_terminal(lid, timeout=45)
        assert worker.logged("aborting the transaction carrying a SUCCEEDED")
        assert done["data"]["state"] == "SUCCEEDED", committed.states(lid)
        assert_contiguous(committed.of(lid), lid)
        assert committed.states(lid).count("SUCCEEDED") == 1
        assert len(slurm.leaders(lid)) == 1
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
