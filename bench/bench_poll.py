#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_poll.py - what a poll tick costs a worker that owns N live jobs, and
how long a job's end takes to become its terminal event, against the real
local stack (tests/e2e/stack up). A benchmark, not a test: it prints, it
never fails on speed.

  ticks     at each --sizes N: N real Slurm jobs submitted held
            (tests/e2e/worker/held_jobs.py: PENDING, no resources taken,
            over --connections keep-alive connections), owned through
            launch records written straight into a fresh state topic (no
            slurm_states: as an old worker left them); one worker restores
            them and polls through a counting proxy
            (tests/e2e/worker/slurm_proxy.py). Per tick: slurmrestd calls,
            bytes answered, wall time, and the worker's CPU (utime+stime
            from /proc/<pid>/stat, sampled every 20 ms, over the tick's
            calls plus 0.3 s for the answer onto the records). The first
            tick (right after the restore) against the steady ones.
            Baselines from the same run, on the same jobs: per-job polling
            (one GET job/{id} each, timed on a sample of --sample jobs over
            one keep-alive connection and scaled to N: said so) and one GET
            /jobs of everything slurmctld holds (asked up to 10,000 jobs:
            at 100,000 slurmrestd would build ~800 MB and take ~7 GB for
            it). Each size holds the e2e lock exclusively (it loads the
            shared slurmctld), and cancels every job it made before it
            lets go, then waits until slurmctld has forgotten them
            (MinJobAge): until then any GET /jobs answers them all.
  latency   --launches real jobs (50) that sleep a random time (random
            phase against the ticks) and print their end (date +%s.%N) as
            their last act, tagged and owned the same way; latency = the
            terminal event's arrival at a read_committed consumer - that
            end; median and p99. Poll only (FORGE_KAFKA_JOBCOMP_TOPIC
            unset) at each --intervals, and, when the stack runs Slurm's
            jobcomp/kafka, with its records (push) at --push-interval.
  rate      slurmrestd calls per hour of a worker owning --rate-jobs held
            jobs (1,000), counted through the proxy over --rate-window
            seconds after its first tick: push with a 60 s poll against
            poll only at 5 s (held jobs never end: the steady cost).

The last line of stdout is the JSON bench_all.py reads.

  FORGE_STACK_ENV=... $FORGE_CACHE_DIR/venv/bin/python bench/bench_poll.py \\
      [--sizes 1000,10000,100000] [--intervals 1000,30000]
      [--push-interval 30000] [--launches 50] [--skip latency,rate,ticks]
"""

import argparse
import contextlib
import fcntl
import http.client
import json
import math
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

import held_jobs  # noqa: E402
from harness import (PARTITIONS, TOP, Stack, StatusReader,  # noqa: E402
                     Topics, Worker, unique_id, wait_until)
from slurm_proxy import SlurmProxy  # noqa: E402

LOGDIR = os.environ.get("FORGE_BENCH_LOGS", "/tmp/forge-bench-poll")
LOCK = os.environ.get("FORGE_E2E_LOCK", "/tmp/forge-e2e.lock")

def steady_ticks(n):
    """Steady ticks measured: more of the small ones (/proc counts CPU in
    10 ms steps: their median is over enough of them to see)."""
    return 10 if n <= 10000 else 3


def say(*a):
    print(*a, file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(how):
    """The e2e lock (flock(1)'s), shared or exclusive, unless the caller
    holds it already (FORGE_BENCH_LOCKED=1)."""
    if os.environ.get("FORGE_BENCH_LOCKED") == "1":
        yield
        return
    with open(LOCK, "a") as f:
        t = time.monotonic()
        fcntl.flock(f, how)
        if time.monotonic() - t > 1:
            say(f"bench_poll: waited {time.monotonic() - t:.0f} s for {LOCK}")
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class Rest:
    """One keep-alive connection to slurmrestd, as the stack's user: the
    plain one behind the TLS front, as the worker's proxy reaches it."""

    def __init__(self, stack):
        url = urllib.parse.urlsplit(stack.plain_slurm_url)
        self.host, self.port = url.hostname, url.port or 80
        self.api = stack.api
        with open(stack.env["FORGE_SLURM_JWT_FILE"]) as f:
            token = f.read().strip().removeprefix("SLURM_JWT=")
        self.headers = {
            "X-SLURM-USER-NAME": stack.env["FORGE_SLURM_REST_USER"],
            "X-SLURM-USER-TOKEN": token,
            "Content-Type": "application/json"}
        self.conn = None

    def call(self, method, rest, body=None, plugin="slurm", timeout=300):
        """(HTTP status, answer bytes)."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port,
                                                       timeout=timeout)
            try:
                self.conn.request(method, f"/{plugin}/{self.api}/{rest}",
                                  body=data, headers=self.headers)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                time.sleep(1)

    def close(self):
        if self.conn:
            self.conn.close()


def held_body(tag):
    return {"script": "#!/bin/sh\ntrue\n",
            "job": {"name": "e2e-held", "partition": "batch", "hold": True,
                    "comment": f"e2e-held:{tag}",
                    "current_working_directory": "/tmp",
                    "environment": ["PATH=/bin:/usr/bin"],
                    "time_limit": {"set": True, "number": 1}}}


def submit_held(stack, n, tag, connections):
    """n held jobs over `connections` keep-alive connections; their ids."""
    ids, lock, errors = [], threading.Lock(), []
    share = [n // connections + (i < n % connections)
             for i in range(connections)]

    def one(count):
        rest = Rest(stack)
        body = held_body(tag)
        body["job"]["partition"] = stack.env.get("FORGE_SLURM_PARTITION",
                                                 "batch")
        try:
            for _ in range(count):
                status, data = rest.call("POST", "job/submit", body)
                jid = json.loads(data).get("job_id") if data else None
                if not jid:
                    errors.append(f"HTTP {status}: {data[:300]!r}")
                    return
                with lock:
                    ids.append(int(jid))
        except Exception as e:  # noqa: BLE001 - said, then raised below
            errors.append(repr(e))
        finally:
            rest.close()

    threads = [threading.Thread(target=one, args=(c,)) for c in share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        cancel(stack, ids)
        raise RuntimeError(f"held submits failed: {errors[:3]}")
    return sorted(ids)


def cancel(stack, ids, chunk=1000):
    rest = Rest(stack)
    try:
        for at in range(0, len(ids), chunk):
            rest.call("DELETE", "jobs",
                      {"jobs": [str(i) for i in ids[at:at + chunk]]})
    finally:
        rest.close()


def still_held(stack, ids, live_only=True):
    """How many of ids slurmctld still holds (PENDING or RUNNING, or in any
    state), by one jobs/state call of everything."""
    rest = Rest(stack)
    try:
        _, data = rest.call("GET", "jobs/state")
    finally:
        rest.close()
    mine = set(ids)
    return sum(1 for j in json.loads(data).get("jobs", [])
               if int(str(j.get("job_id")).split("+")[0]) in mine and
               (not live_only or
                {"PENDING", "RUNNING"} & set(j.get("state") or [])))


def cancel_checked(stack, ids):
    """Every job cancelled, then gone from slurmctld: a cancelled job stays
    in its memory for MinJobAge, and a GET /jobs from anyone meanwhile
    answers all of them (seen: three at once over 100,000 cancelled jobs
    took slurmrestd to 22 GB, and the kernel killed it). The caller holds
    the lock until then."""
    left = len(ids)
    for _ in range(5):
        cancel(stack, ids)
        left = wait_gone(stack, ids, True, 60)
        if not left:
            break
    if left:
        raise RuntimeError(f"{left} of the bench's jobs are still live")
    t = time.monotonic()
    left = wait_gone(stack, ids, False, 900)
    say(f"bench_poll: {len(ids)} jobs cancelled, none left live; "
        f"{left} still in slurmctld's memory after "
        f"{time.monotonic() - t:.0f} s more")


def wait_gone(stack, ids, live_only, timeout):
    end = time.monotonic() + timeout
    while True:
        left = still_held(stack, ids, live_only)
        if not left or time.monotonic() > end:
            return left
        time.sleep(5)


class CpuSampler:
    """A process's utime+stime (seconds), every 20 ms, on its own thread."""

    def __init__(self, pid):
        self.path = f"/proc/{pid}/stat"
        self.tick = os.sysconf("SC_CLK_TCK")
        self.samples = []
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick

    def _run(self):
        while not self.stopping:
            try:
                self.samples.append((time.monotonic(), self._read()))
            except OSError:
                return
            time.sleep(0.02)

    def at(self, t):
        """CPU seconds at the last sample at or before t."""
        best = self.samples[0][1]
        for when, cpu in self.samples:
            if when > t:
                break
            best = cpu
        return best

    def stop(self):
        self.stopping = True
        self.thread.join()


def ticks(proxy, since):
    """The ticks seen since `since`: each begins with the jobs/state call of
    its first chunk (a tick asks its jobs in the same order every time).
    [(start, end, calls, {kind: calls}, answer bytes)]; the last one may be
    incomplete."""
    calls = proxy.answers(since)
    first = next((a[3] for a in calls if a[2] == "states"), None)
    out = []
    for a in calls:
        if a[2] == "states" and a[3] == first:
            out.append([a[0], a[1], 0, {}, 0])
        if not out:
            continue
        t = out[-1]
        t[1] = max(t[1], a[1])
        t[2] += 1
        t[3][a[2]] = t[3].get(a[2], 0) + 1
        t[4] += a[5]
    return out


def per_job_baseline(stack, ids, sample):
    """One GET job/{id} per job: (seconds, answer bytes) per job, measured
    on a sample over one keep-alive connection."""
    rest = Rest(stack)
    chosen = random.sample(ids, min(sample, len(ids)))
    size = 0
    t0 = time.monotonic()
    try:
        for jid in chosen:
            _, data = rest.call("GET", f"job/{jid}")
            size += len(data)
    finally:
        rest.close()
    return (time.monotonic() - t0) / len(chosen), size / len(chosen)


def all_jobs_baseline(stack):
    """One GET /jobs of everything: (seconds, answer bytes, jobs)."""
    rest = Rest(stack)
    t0 = time.monotonic()
    try:
        status, data = rest.call("GET", "jobs", timeout=600)
    finally:
        rest.close()
    took = time.monotonic() - t0
    try:
        count = len(json.loads(data).get("jobs", []))
    except ValueError:
        count = -1
    return took, len(data), count, status


def bench_size(stack, n, args):
    with locked(fcntl.LOCK_EX):
        t0 = time.monotonic()
        ids = submit_held(stack, n, held_jobs.tag(), args.connections)
        held_jobs.hold_as_operator(stack, ids)  # the worker leaves those
        submitted = time.monotonic() - t0
        say(f"bench_poll: {n} held jobs submitted in {submitted:.0f} s")
        try:
            return measure_size(stack, ids, args, submitted)
        finally:
            cancel_checked(stack, ids)


def measure_size(stack, ids, args, submitted):
    n = len(ids)
    topics = Topics(stack, f"bench-poll-{n}")
    held_jobs.write_records(
        topics, [held_jobs.record(unique_id("held"), jid) for jid in ids],
        PARTITIONS)
    proxy = SlurmProxy(stack.plain_slurm_url)
    poll_ms = args.poll_ms or max(2000, n // 10)
    worker = sampler = None
    try:
        t_start = time.monotonic()
        worker = Worker(stack, topics, unique_id("wp"), unique_id("g"),
                        LOGDIR, {"FORGE_SLURM_REST_URL": proxy.url,
                                 "FORGE_POLL_INTERVAL_MS": str(poll_ms)},
                        binary=args.binary)
        sampler = CpuSampler(worker.proc.pid)
        worker.wait_ready(timeout=900)
        ready = time.monotonic() - t_start
        k = steady_ticks(n)
        wait_until(f"{k + 1} whole ticks",
                   lambda: len(ticks(proxy, t_start)) >= k + 2,
                   k * (poll_ms / 1000 + 60) + 600, step=1)
        seen = ticks(proxy, t_start)[:k + 1]
        time.sleep(0.5)  # the last tick's answer onto the records
        cpu = [sampler.at(t[1] + 0.3) - sampler.at(t[0] - 0.05) for t in seen]
    finally:
        if sampler:
            sampler.stop()
        if worker:
            worker.stop_quietly()
        proxy.close()
    first, steady = seen[0], seen[1:]
    one, size = per_job_baseline(stack, ids, args.sample)
    estimated = n > args.all_jobs_max
    if not estimated:
        all_s, all_b, all_n, all_status = all_jobs_baseline(stack)
    else:  # a job object of /jobs is about that of job/{id}
        all_s, all_b, all_n, all_status = None, size * n, n, None
    r = {"jobs": n, "submitted_s": submitted, "restored_s": ready,
         "poll_ms": poll_ms,
         "first": {"calls": first[2], "kinds": first[3], "bytes": first[4],
                   "wall_s": first[1] - first[0], "cpu_s": cpu[0]},
         "steady": {"calls": max(t[2] for t in steady),
                    "kinds": steady[-1][3],
                    "bytes": statistics.median(t[4] for t in steady),
                    "wall_s": statistics.median(t[1] - t[0] for t in steady),
                    # the mean: a median of 10 ms steps says 0 or 10
                    "cpu_s": statistics.mean(cpu[1:]),
                    "cpu_max_s": max(cpu[1:]), "ticks": len(steady)},
         "target_calls": math.ceil(n / 256),
         "per_job": {"sample": min(args.sample, n), "call_s": one,
                     "call_bytes": size, "calls": n, "bytes": size * n,
                     "wall_s": one * n},
         "all_jobs": {"calls": 1, "bytes": all_b, "wall_s": all_s,
                      "jobs": all_n, "status": all_status,
                      "estimated": estimated}}
    say(f"bench_poll: {json.dumps(r)}")
    return r


def ended_at(stack, jid, timeout=30):
    path = os.path.join(stack.env.get("FORGE_STACK_SLURM_CHROOT", "/"),
                        f"tmp/forge-bench-poll-{jid}.out")
    text = wait_until(f"{path}", lambda: os.path.exists(path) and
                      open(path).read().strip(), timeout)
    return float(text.split()[-1])


def submit_tagged(stack, rest, lids, interval_ms):
    """One real job per launch id, tagged as the worker tags its own
    (forge:<launch_id>:1) and run below this deployment's staging root as
    jobs see it (so a jobcomp record of it is the launch's), each ending at
    a random point between two ticks and printing its end (date +%s.%N)."""
    ids = []
    staging = stack.env["FORGE_SLURM_STORAGE_ROOT"] + "/staging"
    for lid in lids:
        sleep = 5 + random.uniform(0, max(interval_ms / 1000, 3))
        status, data = rest.call("POST", "job/submit", {
            "script": f"#!/bin/sh\nsleep {sleep:.3f}\ndate +%s.%N\n",
            "job": {"name": "bench-poll", "partition":
                    stack.env.get("FORGE_SLURM_PARTITION", "batch"),
                    "comment": f"forge:{lid}:1",
                    "current_working_directory": staging,
                    "standard_output": "/tmp/forge-bench-poll-%j.out",
                    "environment": ["PATH=/bin:/usr/bin"],
                    "time_limit": {"set": True, "number": 5}}})
        ids.append(int(json.loads(data)["job_id"]))
    return ids


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def bench_latency(stack, interval_ms, push, args):
    """--launches jobs owned by one worker polling every interval_ms, with
    the jobcomp records (push) or without (poll only)."""
    mode = "push" if push else "poll"
    topics = Topics(stack, f"bench-latency-{mode}-{interval_ms}")
    reader = StatusReader(stack, topics.status)
    rest = Rest(stack)
    env = {"FORGE_POLL_INTERVAL_MS": str(interval_ms),
           "FORGE_LOG_LEVEL": "debug"}
    if not push:
        env["FORGE_KAFKA_JOBCOMP_TOPIC"] = None
    ids, worker = [], None
    try:
        lids = [unique_id("lat") for _ in range(args.launches)]
        ids = submit_tagged(stack, rest, lids, interval_ms)
        held_jobs.write_records(
            topics, [held_jobs.record(lid, jid) for lid, jid in zip(lids, ids)],
            PARTITIONS)
        worker = Worker(stack, topics, unique_id("wl"), unique_id("g"),
                        LOGDIR, env, binary=args.binary)
        worker.wait_ready(timeout=120)
        lat = []
        for lid, jid in zip(lids, ids):
            ev = reader.wait_terminal(lid, timeout=600)
            lat.append(ev["_received"] - ended_at(stack, jid))
    finally:
        if worker:
            worker.stop_quietly()
        reader.close()
        rest.close()
        cancel(stack, ids)
    r = {"interval_ms": interval_ms, "push": push, "launches": len(lat),
         "median_s": statistics.median(lat), "p99_s": percentile(lat, 0.99),
         "mean_s": statistics.mean(lat), "max_s": max(lat), "min_s": min(lat)}
    say(f"bench_poll: {json.dumps(r)}")
    return r


def bench_rate(stack, n, interval_ms, push, window_s, args):
    """slurmrestd calls a worker makes for n owned live (held) jobs over
    window_s seconds after its first tick, per hour: every call it makes
    goes through a counting proxy (slurm_proxy.py)."""
    with locked(fcntl.LOCK_EX):
        ids = submit_held(stack, n, held_jobs.tag(), args.connections)
        held_jobs.hold_as_operator(stack, ids)  # the worker leaves those
        topics = Topics(stack, f"bench-rate-{n}-{interval_ms}")
        proxy = SlurmProxy(stack.plain_slurm_url)
        env = {"FORGE_SLURM_REST_URL": proxy.url,
               "FORGE_POLL_INTERVAL_MS": str(interval_ms)}
        if not push:
            env["FORGE_KAFKA_JOBCOMP_TOPIC"] = None
        worker = None
        try:
            held_jobs.write_records(
                topics, [held_jobs.record(unique_id("held"), j) for j in ids],
                PARTITIONS)
            t0 = time.monotonic()
            worker = Worker(stack, topics, unique_id("wr"), unique_id("g"),
                            LOGDIR, env, binary=args.binary)
            worker.wait_ready(timeout=300)
            first = wait_until("the first tick", lambda: ticks(proxy, t0), 300)
            since = first[0][1] + 0.001  # after the first tick's last call
            time.sleep(window_s)
            calls = len(proxy.answers(since))
        finally:
            if worker:
                worker.stop_quietly()
            proxy.close()
            cancel_checked(stack, ids)
    r = {"jobs": n, "interval_ms": interval_ms, "push": push,
         "window_s": window_s, "calls": calls,
         "per_hour": calls * 3600 / window_s}
    say(f"bench_poll: {json.dumps(r)}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--intervals", default="1000,30000",
                    help="poll-only latency runs (FORGE_POLL_INTERVAL_MS)")
    ap.add_argument("--push-interval", type=int, default=30000,
                    help="the poll interval of the push latency run")
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--rate-jobs", type=int, default=1000)
    ap.add_argument("--rate-window", type=int, default=240,
                    help="seconds of calls counted per rate run")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--poll-ms", type=int, default=0,
                    help="FORGE_POLL_INTERVAL_MS of the tick runs "
                    "(default: max(2000, N/10))")
    ap.add_argument("--all-jobs-max", type=int, default=10000,
                    help="largest N whose GET /jobs baseline is asked (at "
                    "100,000 its answer would be ~800 MB from the shared "
                    "slurmrestd: estimated from the per-job answer "
                    "instead, and said so)")
    ap.add_argument("--binary", default=os.environ.get(
        "FORGE_WORKER_BIN", os.path.join(TOP, "build", "forge-worker")))
    ap.add_argument("--skip", default="")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    os.makedirs(LOGDIR, exist_ok=True)
    stack = Stack()
    out = {"sizes": [], "latency": [], "rate": []}
    # latency first: slurmctld cleaning up after 10,000 cancelled jobs
    # keeps jobs COMPLETING for tens of seconds (seen)
    pushes = bool(stack.env.get("FORGE_KAFKA_JOBCOMP_TOPIC"))
    if "latency" not in skip:
        with locked(fcntl.LOCK_SH):
            for iv in (int(x) for x in args.intervals.split(",") if x):
                out["latency"].append(bench_latency(stack, iv, False, args))
            if pushes:
                out["latency"].append(
                    bench_latency(stack, args.push_interval, True, args))
    if "rate" not in skip and pushes:
        out["rate"] = [
            bench_rate(stack, args.rate_jobs, 60000, True, args.rate_window, args),
            bench_rate(stack, args.rate_jobs, 5000, False, args.rate_window, args)]
    if "ticks" not in skip:
        for n in (int(x) for x in args.sizes.split(",") if x):
            out["sizes"].append(bench_size(stack, n, args))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
