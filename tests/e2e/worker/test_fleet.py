# SPDX-License-Identifier: Apache-2.0
"""
A fleet: two workers, a third joining while launches run, then one leaving
on SIGTERM. Every launch ends with exactly one terminal event, no seq twice,
one Slurm job per launch, and no partition (so no launch) is owned, hence
polled, by two workers at once: the ownership intervals read from the
workers' logs (restore start to revoke) never overlap for a partition.
"""

import time

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id)

LAUNCHES = 12


def overlaps(workers):
    spans = {}
    for w in workers:
        for p, start, end in w.ownership():
            spans.setdefault(p, []).append((start, end, w.worker_id))
    bad = []
    for p, items in spans.items():
        items.sort()
        for (s1, e1, w1), (s2, e2, w2) in zip(items, items[1:]):
            if w1 != w2 and s2 < e1:
                bad.append((p, w1, e1, w2, s2))
    return spans, bad


def test_join_and_leave_lose_and_double_nothing(stack, slurm, logdir):
    topics = Topics(stack, "fleet")
    group = unique_id("g")
    reader = StatusReader(stack, topics.status)
    workers = [Worker(stack, topics, unique_id(f"w{i}"), group, logdir)
               for i in (1, 2)]
    ids = [unique_id("f") for _ in range(LAUNCHES)]
    try:
        for w in workers:
            w.wait_ready()
        for lid in ids[:6]:
            topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 8"]))
        time.sleep(2)
        workers.append(Worker(stack, topics, unique_id("w3"), group, logdir))
        for lid in ids[6:]:
            topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 6"]))
            time.sleep(0.3)
        time.sleep(2)
        assert workers[0].terminate() == 0, workers[0].tail()

        for lid in ids:
            done = reader.wait_terminal(lid, timeout=180)
            assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        time.sleep(2)  # a late duplicate would show now
        for lid in ids:
            assert_contiguous(reader.of(lid), lid)
            assert len(slurm.leaders(lid)) == 1, (lid, slurm.leaders(lid))
            assert slurm.most_alive(lid) == 1
        spans, bad = overlaps(workers)
        assert not bad, f"partitions owned twice at once: {bad}"
        assert sorted(spans) == list(range(6))
        owners = {e["source"] for lid in ids for e in reader.of(lid)}
        assert len(owners) >= 2, owners
        for w in workers[1:]:
            assert w.terminate() == 0, w.tail()
    finally:
        reader.close()
        for w in workers:
            w.stop_quietly()
