# SPDX-License-Identifier: Apache-2.0
"""
A commit that keeps failing with retriable errors holds the consume loop no
longer than its budget, derived from the group's max.poll.interval.ms
(src/kafka/kafka.c: attempts for a quarter of it, then abort and rewind): the
worker gives up on the transaction, aborts it, rewinds, and carries on. It
is never thrown out of its group for not polling (no partition lost or
moved), and the launch whose transaction stalled completes exactly once.

The stall is the test point FORGE_TEST_COMMIT_STALLS=1 (src/testpoint/testpoint.h):
every commit attempt of the worker's first transaction waits out its whole
timeout and fails with a retriable timeout, as with a transaction
coordinator that does not answer (a broker fault that cannot be made to
order for one transaction). Before the budget, the commit retried such an
error 10 times 30 s: the group threw the worker out after 20 s.

A call that never returns is bounded too: librdkafka's
send_offsets_to_transaction can wait forever after a broker restart
(src/kafka/kafka_guard.h; the chaos scenarios' long mode saw a worker frozen
five minutes, then thrown out of its group). FORGE_TEST_OFFSETS_HANG=1
makes the first one hang (its thread waits an hour before calling: the
real hang is a race on a broker's restart that cannot be had to order);
the worker gives the producer up within the budget, replaces it, rewinds,
and the launch completes exactly once.
"""

import re
from datetime import datetime

import pytest

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized

MAX_POLL_MS = 20000


def assert_stayed_in_group(worker):
    """Never thrown out of the group: each partition assigned once, kept."""
    text = open(worker.log_path, errors="replace").read()
    assert "maximum poll interval" not in text, worker.tail()
    assert "MAXPOLL" not in text, worker.tail()
    moves = [line["msg"] for line in worker.lines()
             if re.match(r"partition \d+ (revoked|lost)",
                         line.get("msg", ""))]
    assert moves == [], moves


def survive_fault(stack, slurm, logdir, tag, env, check):
    """One worker with env's fault: a first launch ends SUCCEEDED, once
    (one ACCEPTED, contiguous seq, one Slurm job) after the fault, check
    (worker) says the fault happened as it should, a second launch after it
    succeeds, the worker never left its group and exits 0."""
    topics = Topics(stack, tag)
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    env)
    try:
        worker.wait_ready()
        first, second = unique_id(tag), unique_id("after")
        topics.send(first, launch(first, ["/bin/sh", "-c", "sleep 1"]))
        done = reader.wait_terminal(first, timeout=180)
        assert done["data"]["state"] == "SUCCEEDED", reader.states(first)
        check(worker)
        # the rewound request is taken again, once
        assert reader.states(first).count("ACCEPTED") == 1
        assert_contiguous(reader.of(first), first)
        assert len(slurm.leaders(first)) == 1, slurm.leaders(first)
        topics.send(second, launch(second, ["/bin/true"]))
        done = reader.wait_terminal(second, timeout=120)
        assert done["data"]["state"] == "SUCCEEDED", reader.states(second)
        assert_stayed_in_group(worker)
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        worker.stop_quietly()


def seconds_between(a, b):
    """Seconds from log timestamp a to b (ISO 8601, Z)."""
    def parse(ts):
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return (parse(b) - parse(a)).total_seconds()


def test_stalled_commit_is_aborted_within_the_poll_interval(stack, slurm,
                                                            logdir):
    def check(worker):
        assert worker.logged("transaction 1 stalls at its commit")
        gave_up = [line["msg"] for line in worker.lines()
                   if "the transaction is aborted and rewound" in
                   line.get("msg", "")]
        assert len(gave_up) == 1, worker.tail()
        spent, budget = map(int, re.search(r"in (\d+) ms \(budget (\d+) ms",
                                           gave_up[0]).groups())
        assert budget == MAX_POLL_MS // 4, gave_up[0]
        assert spent < MAX_POLL_MS // 2, gave_up[0]  # generous: the bound
    survive_fault(stack, slurm, logdir, "stall", {
        "FORGE_TEST_COMMIT_STALLS": "1",
        "FORGE_KAFKA_PROP_MAX_POLL_INTERVAL_MS": str(MAX_POLL_MS)}, check)


def test_offsets_that_never_return_replace_the_producer(stack, slurm, logdir):
    def check(worker):
        assert worker.logged("sending offsets 1 never returns")
        replaced = [line for line in worker.lines()
                    if "producer replaced (its call never returned)" in
                    line.get("msg", "")]
        assert len(replaced) == 1, worker.tail()
        hung = next(line for line in worker.lines()
                    if "sending offsets 1 never returns" in
                    line.get("msg", ""))
        # given up on within the attempts' budget (a quarter of M), and the
        # new producer ready within the abort's (an eighth): generous bound
        spent = seconds_between(hung["ts"], replaced[0]["ts"])
        assert spent < MAX_POLL_MS / 2000, (spent, worker.tail())
    # the hung call's thread still holds the old producer: exit is clean
    survive_fault(stack, slurm, logdir, "hang", {
        "FORGE_TEST_OFFSETS_HANG": "1",
        "FORGE_KAFKA_PROP_MAX_POLL_INTERVAL_MS": str(MAX_POLL_MS)}, check)


def test_a_fatal_producer_error_replaces_the_producer(stack, slurm, logdir):
    """A fatal error that is not a fence (INVALID_TXN_STATE, seen after a
    broker restart; raised here by librdkafka's own rd_kafka_test_fatal_error
    through FORGE_TEST_PRODUCER_FATAL) costs the producer, not the worker:
    before, the worker exited 1."""
    def check(worker):
        assert worker.logged("the producer takes a fatal error")
        assert worker.logged("producer replaced (fatal error)")
    survive_fault(stack, slurm, logdir, "fatal",
                  {"FORGE_TEST_PRODUCER_FATAL": "1"}, check)
