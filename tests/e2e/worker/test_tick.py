# SPDX-License-Identifier: Apache-2.0
"""
Poll ticks across a restart and a SIGTERM, with a worker that owns many
live jobs: real Slurm jobs submitted held (held_jobs.py), owned through
launch records written into the scenario's state topic. Every Slurm call
of the workers goes through a proxy in front of the real slurmrestd
(slurm_proxy.py) that counts the calls and, where a scenario says so,
delays each answer or answers none: fault injection the real slurmrestd
cannot do; every answer given is the real one.

  - a worker asks details only of jobs whose states no longer map to the
    state their records hold: none at all of unchanged jobs after a
    restart (contract section 1);
  - SIGTERM in the middle of a long tick stops it between two calls;
  - SIGTERM while slurmrestd answers nothing exits in seconds, and with a
    submit in flight within the drain's bound (docs/OPERATING.md: "A worker leaving").
"""

import time

import pytest

import held_jobs
from harness import (PARTITIONS, StatusReader, Topics, Worker, launch,
                     unique_id, wait_until)
from slurm_proxy import SlurmProxy

HELD = 150
DRAIN_S = 45  # FORGE_WORKER_DRAIN_MS (worker/compose.h)


@pytest.fixture(scope="module")
def held(stack):
    ids = held_jobs.submit_held(stack, HELD, held_jobs.tag())
    yield ids
    held_jobs.cancel(stack, ids)


@pytest.fixture
def proxy(stack):
    p = SlurmProxy(stack.plain_slurm_url)
    yield p
    p.close()


def owning(stack, ids, tag, state=lambda i: "PENDING"):
    """Fresh topics whose state topic names ids (records without
    slurm_states, as written before the field existed); the records."""
    topics = Topics(stack, tag)
    records = [held_jobs.record(unique_id("held"), jid, state(i),
                                seq=2 if state(i) == "SUBMITTED" else 3)
               for i, jid in enumerate(ids)]
    held_jobs.write_records(topics, records, PARTITIONS)
    return topics, records


def test_restart_asks_no_details_of_unchanged_jobs(stack, held, proxy, logdir):
    """The first worker finds half the records SUBMITTED, half PENDING (no
    slurm_states: as written before the field existed), every job PENDING
    in Slurm: it asks the details of the SUBMITTED half only (they moved)
    and moves them to PENDING. Its successor, after a restart, asks no
    details at all while the jobs stay as they were (before issue 11: one
    details call per job at every restart)."""
    half = len(held) // 2
    topics, records = owning(stack, held, "tick-restart",
                             lambda i: "SUBMITTED" if i < half else "PENDING")
    reader = StatusReader(stack, topics.status)
    group, env = unique_id("g"), {"FORGE_SLURM_REST_URL": proxy.url}
    first = Worker(stack, topics, unique_id("wa"), group, logdir, env)
    try:
        first.wait_ready()
        wait_until("a details call for every SUBMITTED job",
                   lambda: proxy.count("details") >= half, 120)
        for rec in records[:half]:
            reader.wait_state(rec["launch_id"], "PENDING", timeout=60)
        t = time.monotonic()
        wait_until("the next tick", lambda: proxy.count("states", since=t), 30)
        assert proxy.count("details") == half, \
            f"{proxy.count('details')} details calls, {half} jobs moved"
        assert first.terminate() == 0, first.tail()

        restart = time.monotonic()
        second = Worker(stack, topics, unique_id("wb"), group, logdir, env)
        second.wait_ready()
        wait_until("three ticks of the restarted worker",
                   lambda: proxy.count("states", since=restart) >= 3, 60)
        details = proxy.count("details", since=restart)
        assert details == 0, (f"{details} details calls after a restart for "
                              f"{len(held)} jobs that did not change")
        assert second.terminate() == 0, second.tail()
        for rec in records:
            assert reader.states(rec["launch_id"]).count("PENDING") == \
                (1 if rec["state"] == "SUBMITTED" else 0)
    finally:
        reader.close()
        first.stop_quietly()
        if "second" in locals():
            second.stop_quietly()


def test_sigterm_stops_a_long_tick_between_calls(stack, held, proxy, logdir):
    """A first tick that asks every job's details (records SUBMITTED, the
    jobs PENDING: every one moved), each answer 0.2 s late: a tick of 30 s.
    SIGTERM in its middle: the tick stops at its next call (before: every
    remaining call was made, and the worker exited once the tick was
    over)."""
    topics, _ = owning(stack, held, "tick-sigterm", lambda i: "SUBMITTED")
    proxy.set_delay(0.2)
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_SLURM_REST_URL": proxy.url})
    try:
        worker.wait_ready(timeout=90)
        wait_until("the tick's details calls",
                   lambda: proxy.count("details") >= 5, 60)
        signalled = time.monotonic()
        assert worker.terminate(timeout=120) == 0, worker.tail()
        after = proxy.calls(since=signalled)
        assert len(after) <= 2, (f"{len(after)} calls after SIGTERM "
                                 f"(tick of {len(held)} jobs): {after[:5]}")
        assert proxy.count("details") < len(held) // 2
    finally:
        worker.stop_quietly()


def test_sigterm_with_slurmrestd_answering_nothing(stack, held, proxy,
                                                   logdir):
    """slurmrestd stops answering (connections still accepted: a stopped
    process behind a live socket) while a tick is under way: SIGTERM exits
    in seconds (before: the call's 30 s timeout, four times, backoff
    between, before the tick even ended)."""
    topics, _ = owning(stack, held[:20], "tick-hang")
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_SLURM_REST_URL": proxy.url})
    try:
        worker.wait_ready()
        wait_until("a first tick", lambda: proxy.count("states"), 30)
        proxy.hang()
        hung = time.monotonic()
        wait_until("a call left unanswered",
                   lambda: proxy.count(since=hung), 30)
        signalled = time.monotonic()
        assert worker.terminate(timeout=30) == 0, worker.tail()
        assert proxy.count(since=signalled) == 0, proxy.calls(since=signalled)
    finally:
        worker.stop_quietly()


def test_sigterm_with_a_submit_to_slurmrestd_answering_nothing(stack, proxy,
                                                               logdir):
    """A submit is out to a slurmrestd that answers nothing: the drain waits
    for it up to its bound (FORGE_WORKER_DRAIN_MS), then the call is
    interrupted and the worker exits (before: the submit's 30 s timeout,
    then the tag lookup's four, after the drain). The launch stays an
    intent for the next owner to settle by its tag."""
    topics = Topics(stack, "tick-drain")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_SLURM_REST_URL": proxy.url})
    try:
        worker.wait_ready()
        proxy.hang()
        lid = unique_id("drain")
        topics.send(lid, launch(lid, ["/bin/true"]))
        reader.wait_state(lid, "ACCEPTED", timeout=30)
        wait_until("the submit", lambda: proxy.count("submit"), 30)
        assert worker.terminate(timeout=DRAIN_S + 30) == 0, worker.tail()
        assert worker.logged("stopping: no new requests")
        assert reader.states(lid) == ["ACCEPTED"]
    finally:
        reader.close()
        worker.stop_quietly()
