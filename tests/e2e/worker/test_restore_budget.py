# SPDX-License-Identifier: Apache-2.0
"""
Restores never keep the loop from polling its group (src/loop/loop.c,
restore_each): one restore takes at most min(M/8, 60 s) of the consumer's
max.poll.interval.ms M, restores in a row at most M/4; a partition whose turn
comes after that waits, paused, for the loop's next pass. Before, each
restore could take 60 s and an abort restored every owned partition in a
row: six partitions whose state topic did not answer held the loop for six
minutes, and the group threw the worker out.

A restore that stalls is the test point FORGE_TEST_RESTORE_STALLS (it waits
out the restore's whole timeout, then fails, as a state topic whose leader
does not answer would; that cannot be had to order on one broker). Here the
first transaction is aborted (FORGE_TEST_ABORT_TXN=1), so every partition is
restored again, and those restores stall: the partitions restored later
must stay paused meanwhile, so no request they hold is skipped.
"""

import re

import pytest

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized

MAX_POLL_MS = 20000
LAUNCHES = 12


def test_stalled_restores_after_an_abort_keep_the_group_and_every_request(
        stack, slurm, logdir):
    topics = Topics(stack, "restore-stall")
    reader = StatusReader(stack, topics.status)
    # restores 1-6 are the assignment's; 7-12 the abort's stall
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir, {
        "FORGE_TEST_ABORT_TXN": "1",
        "FORGE_TEST_RESTORE_STALLS": "7:6",
        "FORGE_KAFKA_PROP_MAX_POLL_INTERVAL_MS": str(MAX_POLL_MS)})
    try:
        worker.wait_ready()
        ids = [unique_id(f"rs{i}") for i in range(LAUNCHES)]
        for launch_id in ids:
            topics.send(launch_id, launch(launch_id, ["/bin/true"]))
        for launch_id in ids:
            done = reader.wait_terminal(launch_id, timeout=240)
            assert done["data"]["state"] == "SUCCEEDED", \
                (launch_id, reader.states(launch_id))
            assert reader.states(launch_id).count("ACCEPTED") == 1
            assert_contiguous(reader.of(launch_id), launch_id)
            assert len(slurm.leaders(launch_id)) == 1, launch_id
        assert worker.logged("aborting transaction 1 on purpose")
        assert worker.logged("restore 12 stalls")
        assert worker.logged("restore waits for the loop's next pass")
        text = open(worker.log_path, errors="replace").read()
        assert "MAXPOLL" not in text, worker.tail()
        moves = [line["msg"] for line in worker.lines()
                 if re.match(r"partition \d+ (revoked|lost)",
                             line.get("msg", ""))]
        assert moves == [], moves
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        worker.stop_quietly()
