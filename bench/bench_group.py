#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_group.py - how long a moved partition has no owner (issue 38), with
the classic consumer group protocol (cooperative-sticky, the workers
assigning among themselves) and with Kafka 4's consumer protocol (KIP-848,
FORGE_KAFKA_GROUP_PROTOCOL=consumer: the group coordinator assigns), in
the same run, against the stack's Kafka. Each round, per protocol: three
workers of a fresh group on fresh topics, launches flowing (RATE a second,
each a short command), then

  join   a fourth worker starts: the partitions it takes
  leave  one of the first three stops (SIGTERM, a clean leave): its
         partitions go to the others

and for each moved partition the time from its revoke on the worker that
had it ("partition P revoked: committed and dropped") to its restore on
the one that takes it ("partition P: restored (N records)"): no worker
takes its requests or polls its jobs in between. Both protocols with the
clients' and brokers' defaults for the session and heartbeat (classic:
librdkafka's session.timeout.ms 45 s, heartbeat.interval.ms 3 s;
consumer: the broker's group.consumer.heartbeat.interval.ms 5 s), as a
site runs them.

Prints one JSON line: {"classic"|"consumer": {"join": [s...], "leave":
[s...], "moved": {"join": [n...], "leave": [n...]}}}, each list a round's
longest ownerless time. A benchmark, not a test: it never fails on speed.

  bench_group.py [--rounds 3] [--rate 2]
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

from harness import (Stack, Topics, Worker, _epoch, launch,  # noqa: E402
                     unique_id, wait_until)

PROTOCOLS = {
    "classic": {"FORGE_KAFKA_GROUP_PROTOCOL": "classic"},
    "consumer": {"FORGE_KAFKA_GROUP_PROTOCOL": "consumer"},
}
# the harness's quick session and heartbeat left out: the defaults, as a
# site runs them (the consumer protocol refuses them anyway)
DEFAULTS = {"FORGE_KAFKA_PROP_SESSION_TIMEOUT_MS": None,
            "FORGE_KAFKA_PROP_HEARTBEAT_INTERVAL_MS": None}


def events(worker, word):
    """[(partition, epoch)] of the worker's "partition P revoked: ..."
    (word "revoked:") or "partition P: restored (...)" (word
    "restored")."""
    out = []
    for line in worker.lines():
        parts = line.get("msg", "").split()
        if len(parts) >= 3 and parts[0] == "partition" and \
                parts[1].rstrip(":").isdigit() and parts[2] == word:
            out.append((int(parts[1].rstrip(":")), _epoch(line["ts"])))
    return out


def ownerless(workers, since):
    """For each partition revoked after `since`, the time to its restore
    on another worker after the revoke; None for one not restored yet."""
    revoked = [(p, t, w) for w in workers for p, t in events(w, "revoked:")
               if t >= since]
    gaps = []
    for p, t, old in revoked:
        restored = [rt for w in workers if w is not old
                    for q, rt in events(w, "restored") if q == p and rt >= t]
        gaps.append(min(restored) - t if restored else None)
    return gaps


def settled(workers, since, moved_at_least):
    gaps = ownerless(workers, since)
    return len(gaps) >= moved_at_least and None not in gaps


class Driver(threading.Thread):
    """Launches at `rate` a second until stopped."""

    def __init__(self, topics, rate):
        super().__init__(daemon=True)
        self.topics, self.rate, self.done = topics, rate, threading.Event()

    def run(self):
        while not self.done.wait(1.0 / self.rate):
            lid = unique_id("bgrp")
            self.topics.send(lid, launch(lid, ["/bin/true"]))


def one_round(stack, protocol, rate, logdir):
    topics = Topics(stack, f"bgrp-{protocol}")
    group = unique_id("g")
    env = {**DEFAULTS, **PROTOCOLS[protocol]}
    workers = [Worker(stack, topics, unique_id(f"b{i}"), group, logdir, env)
               for i in range(3)]
    driver = Driver(topics, rate)
    try:
        for w in workers:
            w.wait_ready(120)
        wait_until("every partition restored",
                   lambda: len({p for w in workers
                                for p, _ in events(w, "restored")}) >= 6, 120)
        driver.start()
        time.sleep(3)
        t_join = time.time()
        workers.append(Worker(stack, topics, unique_id("b3"), group, logdir,
                              env))
        wait_until("the joiner's partitions restored",
                   lambda: settled(workers, t_join, 1), 180)
        time.sleep(2)  # any later move of the same rebalance
        join = [g for g in ownerless(workers, t_join) if g is not None]
        time.sleep(3)
        t_leave = time.time()
        leaver = workers[0]
        assert leaver.terminate() == 0, leaver.tail()
        wait_until("the leaver's partitions restored elsewhere",
                   lambda: settled(workers, t_leave, 1), 180)
        time.sleep(2)
        leave = [g for g in ownerless(workers, t_leave) if g is not None]
        return join, leave
    finally:
        driver.done.set()
        for w in workers:
            if w.proc.poll() is None:
                w.terminate()
            w.stop_quietly()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=2.0)
    args = ap.parse_args()
    stack = Stack()
    logdir = tempfile.mkdtemp(prefix="bench-group-")
    out = {p: {"join": [], "leave": [], "moved": {"join": [], "leave": []}}
           for p in PROTOCOLS}
    for r in range(args.rounds):
        for protocol in PROTOCOLS:  # interleaved: the same machine's noise
            join, leave = one_round(stack, protocol, args.rate, logdir)
            o = out[protocol]
            o["join"].append(max(join))
            o["leave"].append(max(leave))
            o["moved"]["join"].append(len(join))
            o["moved"]["leave"].append(len(leave))
            print(f"round {r + 1} {protocol}: join {max(join):.2f} s "
                  f"({len(join)} moved), leave {max(leave):.2f} s "
                  f"({len(leave)} moved)", file=sys.stderr, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
