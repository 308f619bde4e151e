#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_restart.py - what a restart and a SIGTERM cost a worker that owns many
live jobs, against the real local stack (tests/e2e/stack up). A benchmark,
not a test: it prints, it never fails on speed.

The jobs are real Slurm jobs submitted held (tests/e2e/worker/held_jobs.py:
PENDING, no resources taken), owned through launch records written straight
into a fresh state topic; every Slurm call goes through a counting proxy
(tests/e2e/worker/slurm_proxy.py).

  restart   three workers one after the other (each restores the
            partitions, runs its first poll tick, then gets SIGTERM):
            details calls and duration of each first tick, exit time
  sigterm   SIGTERM in the middle of a first tick that asks every job's
            details (records SUBMITTED, the jobs PENDING: every job
            moved): exit time, calls
            made after the signal
  hang      slurmrestd stops answering (it takes calls and answers none)
            in the middle of such a tick, then SIGTERM: exit time (the
            worker is killed after --hang-limit s)

  FORGE_STACK_ENV=... $FORGE_CACHE_DIR/venv/bin/python bench/bench_restart.py \
      [--jobs 5000] [--binary build/forge-worker ...] [restart|sigterm|hang ...]
"""

import argparse
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

import held_jobs  # noqa: E402
from harness import (PARTITIONS, TOP, Stack, Topics, Worker,  # noqa: E402
                     unique_id, wait_until)
from slurm_proxy import SlurmProxy  # noqa: E402

LOGDIR = os.environ.get("FORGE_BENCH_LOGS", "/tmp/forge-bench-restart")
POLL_MS = 3000  # ticks far enough apart to tell them by the pause
GAP_S = 1.0


def start(stack, topics, proxy, group, binary):
    w = Worker(stack, topics, unique_id("wb"), group, LOGDIR,
               {"FORGE_SLURM_REST_URL": proxy.url,
                "FORGE_LOG_LEVEL": "debug",
                "FORGE_POLL_INTERVAL_MS": str(POLL_MS)}, binary=binary)
    w.wait_ready(timeout=300)
    return w


def first_tick(proxy, since, timeout=600):
    """(details calls, seconds) of the first tick whose calls arrive after
    `since`: it begins with its jobs/state calls (back to back, one per 256
    jobs) and ends where the next tick's begin (a jobs/state call after
    another kind of call, or after a pause longer than GAP_S)."""
    def ticks():
        calls = proxy.calls(since=since)
        starts = [i for i, (t, _, p) in enumerate(calls)
                  if "/jobs/state" in p and
                  (i == 0 or "/jobs/state" not in calls[i - 1][2] or
                   t - calls[i - 1][0] > GAP_S)]
        return calls, starts
    wait_until("two poll ticks", lambda: len(ticks()[1]) >= 2, timeout)
    calls, starts = ticks()
    tick = calls[starts[0]:starts[1]]
    details = sum(1 for _, _, p in tick if "/job/" in p and "/slurmdb/" not in p)
    return details, tick[-1][0] - tick[0][0]


def sigterm(worker, limit):
    t0 = time.monotonic()
    worker.proc.send_signal(signal.SIGTERM)
    try:
        rc = worker.proc.wait(limit)
    except Exception:
        worker.proc.kill()
        worker.proc.wait(10)
        rc = None
    return rc, time.monotonic() - t0


def topics_with(stack, ids, state_of=lambda i: "PENDING"):
    topics = Topics(stack, "bench-restart")
    records = [held_jobs.record(unique_id("held"), jid, state_of(i),
                                seq=2 if state_of(i) == "SUBMITTED" else 3)
               for i, jid in enumerate(ids)]
    held_jobs.write_records(topics, records, PARTITIONS)
    return topics


def bench_restart(stack, ids, binary):
    topics = topics_with(stack, ids)
    proxy, group = SlurmProxy(stack.plain_slurm_url), unique_id("g")
    total = 0
    try:
        for n in range(1, 4):
            since = time.monotonic()
            w = start(stack, topics, proxy, group, binary)
            details, seconds = first_tick(proxy, since)
            total += details
            rc, took = sigterm(w, 120)
            w.stop_quietly()
            print(f"restart {n}: first tick {details} details calls for "
                  f"{len(ids)} jobs, {seconds:.1f} s; SIGTERM to exit "
                  f"{took:.1f} s (exit {rc})", flush=True)
        print(f"restart: {total} details calls over three restarts")
    finally:
        proxy.close()


def bench_sigterm(stack, ids, binary):
    topics = topics_with(stack, ids, lambda i: "SUBMITTED")
    proxy = SlurmProxy(stack.plain_slurm_url)
    try:
        w = start(stack, topics, proxy, unique_id("g"), binary)
        wait_until("100 details calls", lambda: proxy.count("details") >= 100,
                   300)
        t0 = time.monotonic()
        rc, took = sigterm(w, 300)
        w.stop_quietly()
        print(f"sigterm mid-tick ({len(ids)} jobs): exit {rc} after "
              f"{took:.1f} s, {proxy.count('details', since=t0)} details "
              "calls after the signal", flush=True)
    finally:
        proxy.close()


def bench_hang(stack, ids, binary, limit):
    topics = topics_with(stack, ids, lambda i: "SUBMITTED")
    proxy = SlurmProxy(stack.plain_slurm_url)
    try:
        w = start(stack, topics, proxy, unique_id("g"), binary)
        wait_until("100 details calls", lambda: proxy.count("details") >= 100,
                   300)
        proxy.hang()  # in the middle of a tick asking every job's details
        t_hang = time.monotonic()
        wait_until("a call left unanswered",
                   lambda: proxy.count(since=t_hang) >= 1, 60)
        rc, took = sigterm(w, limit)
        w.stop_quietly()
        print(f"hang ({len(ids)} jobs, slurmrestd answering nothing): "
              + (f"exit {rc} after {took:.1f} s" if rc is not None else
                 f"still running after {limit} s (killed)"), flush=True)
    finally:
        proxy.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--binary", action="append",
                    help="a forge-worker to measure (repeat to compare "
                    "builds on the same jobs; default build/forge-worker)")
    ap.add_argument("--hang-limit", type=int, default=300)
    ap.add_argument("what", nargs="*", default=["restart", "sigterm", "hang"])
    args = ap.parse_args()
    binaries = args.binary or [os.path.join(TOP, "build", "forge-worker")]
    os.makedirs(LOGDIR, exist_ok=True)
    stack = Stack()
    tag = held_jobs.tag()
    t0 = time.monotonic()
    ids = held_jobs.submit_held(stack, args.jobs, tag)
    print(f"{len(ids)} held jobs submitted in {time.monotonic() - t0:.1f} s",
          flush=True)
    try:
        for binary in binaries:
            print(f"== {binary}", flush=True)
            for what in args.what:
                if what == "restart":
                    bench_restart(stack, ids, binary)
                elif what == "sigterm":
                    bench_sigterm(stack, ids, binary)
                elif what == "hang":
                    bench_hang(stack, ids, binary, args.hang_limit)
    finally:
        held_jobs.cancel(stack, ids)


if __name__ == "__main__":
    main()
