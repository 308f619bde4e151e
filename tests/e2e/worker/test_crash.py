"""
kill -9 of a worker between the committed intent (ACCEPTED) and the recorded
job id, at the two test points of src/testpoint.h: before the Slurm call,
and after Slurm took the job. The partition's next owner finds the intent
at restore, cancels whatever carries the launch's comment tag, and submits
afresh: exactly one live Slurm job at any time, one terminal event.
"""

import pytest

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id, wait_until)


@pytest.mark.parametrize("point", ["submit.after", "submit.before"])
def test_next_owner_cleans_and_resubmits(stack, slurm, logdir, point):
    topics = Topics(stack, "crash")
    group = unique_id("g")
    crashing = Worker(stack, topics, unique_id("wa"), group, logdir,
                      {"FORGE_TEST_CRASH_POINT": point})
    reader = StatusReader(stack, topics.status)
    try:
        crashing.wait_ready()
        lid = unique_id("crash")
        # long enough for the orphan to be alive when the heir takes over
        # (session timeout 6 s, then rebalance and restore)
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 20"]))
        assert crashing.wait_exit(60) == -9, crashing.tail()
        assert reader.states(lid) == ["ACCEPTED"]
        if point == "submit.after":  # the orphan Slurm took before the crash
            wait_until("the orphan job", lambda: slurm.leaders(lid), 10)

        heir = Worker(stack, topics, unique_id("wb"), group, logdir)
        done = reader.wait_terminal(lid, timeout=120)
        events = reader.of(lid)
        assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        assert_contiguous(events, lid)
        assert events[0]["source"] == f"forge-worker/{crashing.worker_id}"
        assert events[1]["source"] == f"forge-worker/{heir.worker_id}"
        leaders = slurm.leaders(lid)
        submitted = events[1]["data"]["slurm"]["job_id"]
        assert leaders[-1] == submitted
        if point == "submit.after":
            assert len(leaders) == 2, leaders
            orphan = slurm.jobs[leaders[0]]["states"]
            assert "CANCELLED" in orphan[-1], orphan
            assert heir.logged(f"cancelled job {leaders[0]} left by an "
                               "interrupted submit")
        else:
            assert len(leaders) == 1, leaders
        assert slurm.most_alive(lid) == 1
        assert heir.terminate() == 0, heir.tail()
    finally:
        reader.close()
        crashing.stop_quietly()
        if "heir" in locals():
            heir.stop_quietly()
