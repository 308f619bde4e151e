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
jobs the tag finds again and cancels the late one; that sweep is due in
the launch's record, so a heir killed before it leaves it to the next.

The proxy in front of the real slurmrestd keeps that first POST until
told (fault injection slurmrestd cannot do on cue); every answer given is
the real one.
"""

import contextlib

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id, wait_until)
from held_jobs import cancel
from slurm_proxy import SlurmProxy

SWEEP_S = 15  # the launch runs 40 s: swept while it runs


@contextlib.contextmanager
def first_post_late(stack, slurm, logdir):
    """A launch whose first worker POSTed through a withholding proxy and
    was killed: (topics, group, reader, launch id, proxy, workers started:
    the caller appends its own)."""
    proxy = SlurmProxy(stack.plain_slurm_url)
    topics = Topics(stack, "late")
    group = unique_id("g")
    reader = StatusReader(stack, topics.status)
    lid = unique_id("late")
    workers = [Worker(stack, topics, unique_id("wa"), group, logdir,
                      {"FORGE_SLURM_REST_URL": proxy.url})]
    try:
        workers[0].wait_ready()
        proxy.withhold("submit")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 40"]))
        assert proxy.withheld.wait(60), "the worker never submitted"
        workers[0].kill9()
        reader.wait_state(lid, "ACCEPTED", timeout=30)  # committed first
        assert reader.states(lid) == ["ACCEPTED"]
        yield topics, group, reader, lid, proxy, workers
    finally:
        proxy.close()
        reader.close()
        for w in workers:
            w.stop_quietly()
        cancel(stack, slurm.leaders(lid))  # whatever is left: nobody's


def deliver_late(proxy, slurm, lid):
    """The first POST reaches slurmctld now; the late job's id."""
    proxy.deliver()
    wait_until("the late job in Slurm", lambda: len(slurm.leaders(lid)) == 2,
               60)
    return max(slurm.leaders(lid))


def assert_swept_once(reader, slurm, lid, late, sweeper):
    wait_until("the late job swept",
               lambda: "CANCELLED" in slurm.jobs[late]["states"][-1],
               SWEEP_S + 30)
    assert reader.states(lid)[-1] == "RUNNING", reader.states(lid)
    assert sweeper.logged(f"cancelled job {late} left by an interrupted "
                          f"submit of {lid} (sweep for late jobs)")
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


def test_a_submit_landing_after_its_worker_died_never_starts(stack, slurm,
                                                              logdir):
    with first_post_late(stack, slurm, logdir) as (topics, group, reader,
                                                   lid, proxy, workers):
        heir = Worker(stack, topics, unique_id("wb"), group, logdir,
                      {"FORGE_LATE_JOB_SWEEP_S": str(SWEEP_S)})
        workers.append(heir)
        reader.wait_state(lid, "RUNNING", timeout=120)
        late = deliver_late(proxy, slurm, lid)
        assert_swept_once(reader, slurm, lid, late, heir)
        assert heir.terminate() == 0, heir.tail()


def test_a_sweep_its_worker_did_not_live_to_do_is_done_by_the_next(
        stack, slurm, logdir):
    with first_post_late(stack, slurm, logdir) as (topics, group, reader,
                                                   lid, proxy, workers):
        heir = Worker(stack, topics, unique_id("wb"), group, logdir,
                      {"FORGE_LATE_JOB_SWEEP_S": "3600"})
        workers.append(heir)
        reader.wait_state(lid, "RUNNING", timeout=120)
        late = deliver_late(proxy, slurm, lid)
        heir.kill9()  # its sweep an hour away: the record says it is due
        third = Worker(stack, topics, unique_id("wc"), group, logdir,
                       {"FORGE_LATE_JOB_SWEEP_S": str(SWEEP_S)})
        workers.append(third)
        assert_swept_once(reader, slurm, lid, late, third)
        assert third.terminate() == 0, third.tail()
