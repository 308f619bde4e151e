# SPDX-License-Identifier: Apache-2.0
"""
A worker the group has moved on from cannot commit what it decided before
it heard: its poll tick's terminal event goes nowhere, and the launch has
one terminal event and one logs_archived, from the worker that owns it now.

A long chaos run found the case (a broker outage): worker A, thrown out of
the group without knowing it yet, committed a poll tick's SUCCEEDED after
worker B, the partition's new owner, had published its own. That
transaction consumed nothing, so it carried no offsets and nothing tied it
to the group's generation: two terminal events, two archives. Since
5b47856 such a transaction carries the committed offsets as they are
(src/kafka/txn.c, fence_by_generation), and the group coordinator refuses
them from an older generation.

The pause is the test point FORGE_TEST_HOLD_STATE=SUCCEEDED:<file>
(src/testpoint/testpoint.h): A's loop stops right before it writes the launch's
SUCCEEDED, after the transition was made and before any of it was sent, as
a worker stalled there would (a broker outage cannot be made to stop one
worker at that instant). A's max.poll.interval.ms is short, so the group
throws it out while it holds; B takes the partitions, restores the launch,
sees the job ended and publishes it. Then A goes on: its commit must fail.
"""

import os
import time

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id, wait_until)

MAX_POLL_MS = 10000


def test_a_worker_thrown_out_of_its_group_commits_nothing(stack, slurm,
                                                          logdir):
    topics = Topics(stack, "fence")
    status = StatusReader(stack, topics.status)
    logs = StatusReader(stack, topics.logs)
    group = unique_id("g")
    hold = os.path.join(logdir, unique_id("hold"))
    open(hold, "w").close()
    a = Worker(stack, topics, unique_id("a"), group, logdir, {
        "FORGE_TEST_HOLD_STATE": f"SUCCEEDED:{hold}",
        "FORGE_KAFKA_PROP_MAX_POLL_INTERVAL_MS": str(MAX_POLL_MS)})
    b = None
    try:
        a.wait_ready()
        lid = unique_id("fence")
        # long enough that RUNNING commits in a tick of its own: A holds no
        # open transaction, so B's restore is not waiting for it to end
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 4"]))
        status.wait_state(lid, "RUNNING", timeout=120)
        wait_until("A holds the SUCCEEDED event",
                   lambda: a.logged("the loop holds a SUCCEEDED event"), 120)

        b = Worker(stack, topics, unique_id("b"), group, logdir)
        done = status.wait_terminal(lid, timeout=120)
        assert done["data"]["state"] == "SUCCEEDED", status.states(lid)
        assert done["data"]["worker_id"] == b.worker_id, done
        wait_until("B archived the logs", lambda: logs.of(lid), 120)

        os.unlink(hold)  # A goes on, from where it stopped
        wait_until("A wrote the held event",
                   lambda: a.logged("the SUCCEEDED event goes on"), 30)
        wait_until("A gave its partitions up",
                   lambda: a.logged("(lost)") or a.logged("revoked"), 60)
        time.sleep(2)  # what A may have committed is in the topics by now

        states = status.states(lid)
        assert states.count("SUCCEEDED") == 1, states
        assert_contiguous(status.of(lid), lid)
        assert len(logs.of(lid)) == 1, logs.of(lid)
        assert len(slurm.leaders(lid)) == 1, slurm.leaders(lid)
        # refused by the group coordinator: A was no longer a member
        assert a.logged("transaction aborted"), a.tail()
        assert b.terminate() == 0, b.tail()
        b = None
    finally:
        status.close()
        logs.close()
        a.stop_quietly()
        if b:
            b.stop_quietly()
