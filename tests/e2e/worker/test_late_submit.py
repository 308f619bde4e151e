# SPDX-License-Identifier: Apache-2.0
"""
A submit that reaches slurmctld after its worker is gone: the worker POSTed
while slurmctld was away, slurmrestd held the request, the worker was
killed, and its heir, finding the intent with no job and no job carrying
the launch's tag, submitted afresh; then the first POST landed. The long
chaos run saw that make a second live job (two starts of one launch).

Every job is submitted held and released by the worker that got its id:
the late one stays held, never starts, and the launch ends once with the
heir's job. FORGE_LATE_JOB_SWEEP_S after its clean, the heir looks for
jobs the tag finds again and cancels the late one. The proxy in front of the real slurmrestd keeps that first
POST until told (fault injection slurmrestd cannot do on cue); every
answer given is the real one.
"""

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id, wait_until)
from held_jobs import cancel
from slurm_proxy import SlurmProxy


SWEEP_S = 15  # the launch runs 40 s: swept while it runs


def test_a_submit_landing_after_its_worker_died_never_starts(stack, slurm,
                                                              logdir):
    proxy = SlurmProxy(stack.env["FORGE_SLURM_REST_URL"])
    topics = Topics(stack, "late")
    group = unique_id("g")
    first = Worker(stack, topics, unique_id("wa"), group, logdir,
                   {"FORGE_SLURM_REST_URL": proxy.url})
    reader = StatusReader(stack, topics.status)
    heir = None
    lid = unique_id("late")
    try:
        first.wait_ready()
        proxy.withhold("submit")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 40"]))
        assert proxy.withheld.wait(60), "the worker never submitted"
        first.kill9()
        reader.wait_state(lid, "ACCEPTED", timeout=30)  # committed first
        assert reader.states(lid) == ["ACCEPTED"]

        heir = Worker(stack, topics, unique_id("wb"), group, logdir,
                      {"FORGE_LATE_JOB_SWEEP_S": str(SWEEP_S)})
        reader.wait_state(lid, "RUNNING", timeout=120)
        proxy.deliver()  # the first POST reaches slurmctld now
        wait_until("the late job in Slurm",
                   lambda: len(slurm.leaders(lid)) == 2, 60)
        late = max(slurm.leaders(lid))
        wait_until("the late job swept",
                   lambda: "CANCELLED" in slurm.jobs[late]["states"][-1],
                   SWEEP_S + 30)
        assert reader.states(lid)[-1] == "RUNNING", reader.states(lid)
        assert heir.logged(f"cancelled job {late} left by an interrupted "
                           "submit")
        done = reader.wait_terminal(lid, timeout=120)

        events = reader.of(lid)
        assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        assert_contiguous(events, lid)
        submitted = events[1]["data"]["slurm"]["job_id"]
        assert slurm.leaders(lid) == [submitted, late], slurm.leaders(lid)
        seen = slurm.jobs[late]["states"]
        assert seen[0] == ["PENDING"] and "CANCELLED" in seen[-1] and \
            not any("RUNNING" in s for s in seen), seen
        assert slurm.most_alive(lid) == 1
        assert heir.terminate() == 0, heir.tail()
    finally:
        proxy.close()
        reader.close()
        first.stop_quietly()
        if heir:
            heir.stop_quietly()
        cancel(stack, slurm.leaders(lid))  # the late job: nobody's
