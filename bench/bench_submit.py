#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_submit.py - submits per second through one worker against the real
local stack (tests/e2e/stack up), next to baselines measured in the same
run: the same submit bodies POSTed straight to slurmrestd by a bare client
(no Kafka, no intent, no staging), over 1 and over N keep-alive
connections (https through the stack's TLS front when its env file says
so, verified with its CA, as the worker does), and over N connections opened afresh for every POST (what the
worker did for a submit until it could keep its connections without ever
re-sending a POST).
A benchmark, not a test: it prints, it never fails on speed.

  raw 1 / raw N    the bodies (`forge-worker render --format payload` of
                   such requests) POSTed one after the other on one
                   connection, or by N threads with a connection each
  raw N fresh      the same, a new connection for every POST
  raw N release    raw N, each POST followed on its connection by the
                   release of the held job it made (POST job/{id}
                   {"hold": false}): the two calls the worker makes per
                   launch since every job is submitted held
  client N         the worker's Slurm client alone (build/bench/
                   bench_slurm_submit client: slurm/submit_held.h, the POST
                   and the release) submitting the same bodies from N
                   threads, a client (a kept connection) each
  curl N release   raw N release made with bare libcurl from C instead
                   (bench_slurm_submit raw: the same library and TLS
                   settings as the client, nothing else): client N's
                   baseline, Python's TLS being slower than the client
  worker           N launches produced to the requests topic at once, timed
                   from the first ACCEPTED event to the last SUBMITTED one
                   (the events' own times, written by the worker), with the
                   worker's default FORGE_SLURM_MAX_RPS, then without a
                   budget (FORGE_SLURM_MAX_RPS=0); both with the default
                   FORGE_SLURM_MAX_CONNECTIONS
  latency          ACCEPTED -> SUBMITTED per launch (median) of the N at
                   once, and of --alone launches sent one at a time to an
                   idle worker, next to one POST's round trip on a
                   keep-alive connection (median)

Every phase runs `rounds` times (median kept), the phases interleaved:
each round runs every phase once, so a worker round and the raw rounds
it is compared with see the same background load (the machine and the
stack are shared). Between phases the jobs of the last one are cancelled
in one call and Slurm is let go idle, so a phase never pays for the one
before. Jobs are /bin/true on one GPU. Per round, the worker's rate over
raw N's of the same round is also printed (`ratios`).

Prints one JSON object (scripts/bench reads it):
  FORGE_STACK_ENV=... $FORGE_CACHE_DIR/venv/bin/python bench/bench_submit.py \\
      [--launches 300] [--connections 4] [--rounds 3] [--alone 20]
"""

import argparse
import http.client
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

from harness import (TOP, Stack, StatusReader, Topics, Worker,  # noqa: E402
                     _epoch, launch, unique_id, wait_until)

COMMAND = ["/bin/true"]
BUILD = os.environ.get("FORGE_BENCH_BUILD", os.path.join(TOP, "build"))
LIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")


class Slurm:
    """The raw client: slurmrestd with the stack's token, nothing else."""

    def __init__(self, stack):
        self.stack = stack
        with open(stack.env["FORGE_SLURM_JWT_FILE"]) as f:
            token = f.read().strip().removeprefix("SLURM_JWT=")
        self.headers = {"Content-Type": "application/json",
                        "Accept": "application/json",
                        "X-SLURM-USER-NAME": stack.env["FORGE_SLURM_REST_USER"],
                        "X-SLURM-USER-TOKEN": token}
        self.prefix = f"/slurm/{stack.api}"

    def connect(self):
        # the worker's URL: https through the stack's TLS front, its CA
        return self.stack.connection(timeout=60)

    def call(self, conn, method, path, body=None):
        conn.request(method, self.prefix + path, body=body,
                     headers=self.headers)
        r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {r.status}: {data[:300]}")
        return json.loads(data)

    def cancel(self, job_ids):
        """Every job of job_ids in one call (DELETE jobs), then until none
        of them is live: the next phase starts on an idle controller."""
        ids = [str(j) for j in job_ids]
        conn = self.connect()
        for at in range(0, len(ids), 500):
            try:
                self.call(conn, "DELETE", "/jobs",
                          json.dumps({"jobs": ids[at:at + 500]}))
            except RuntimeError:
                pass  # every job already ended
        wanted = set(int(j) for j in job_ids)

        def idle():
            jobs = self.call(conn, "GET", "/jobs/state")["jobs"]
            return not any(int(str(j["job_id"]).split("+")[0]) in wanted and
                           set(j.get("state") or []) & set(LIVE) for j in jobs)
        wait_until("the phase's jobs to end", idle, 300, step=0.5)
        conn.close()


def body_maker(stack, binary):
    """bodies(n): the submit bodies the worker would send for n new
    launches of COMMAND (rendered once by `forge-worker render --format
    payload`, the launch id put in; ids of one length), each with its
    staging folder made as the worker would (the job writes its output
    there)."""
    template = unique_id("raw")  # raw-<10 hex>, as every id below
    env = dict(os.environ, **stack.env)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as req:
        json.dump(launch(template, COMMAND), req)
        req.flush()
        text = subprocess.run([binary, "render", "--format", "payload",
                               req.name], env=env, check=True,
                              capture_output=True).stdout.decode()
    owner = os.stat(stack.env["FORGE_STORAGE_ROOT"])

    def bodies(n):
        out = []
        for _ in range(n):
            lid = unique_id("raw")
            folder = os.path.join(stack.env["FORGE_STORAGE_ROOT"], "staging",
                                  lid, "1")
            os.makedirs(folder, exist_ok=True)
            os.chown(folder, owner.st_uid, owner.st_gid)
            out.append(text.replace(template, lid).encode())
        return out
    return bodies


def raw(slurm, bodies, connections, fresh=False, release=False):
    """(submits/s, median POST round trip s, job ids) for bodies POSTed by
    `connections` threads, each on one keep-alive connection (fresh: a new
    connection per POST; release: each job released after its POST)."""
    work = queue.Queue()
    for b in bodies:
        work.put(b)
    ids, trips, errors = [], [], []
    lock = threading.Lock()

    def run():
        conn = slurm.connect()
        try:
            while True:
                try:
                    body = work.get_nowait()
                except queue.Empty:
                    return
                if fresh:
                    conn.close()
                    conn = slurm.connect()
                t = time.monotonic()
                answer = slurm.call(conn, "POST", "/job/submit", body)
                if release:
                    slurm.call(conn, "POST", f"/job/{answer['job_id']}",
                               b'{"hold": false}')
                with lock:
                    trips.append(time.monotonic() - t)
                    ids.append(answer["job_id"])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=run) for _ in range(connections)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    if errors:
        raise errors[0]
    return len(bodies) / elapsed, statistics.median(trips), ids


def through_client(stack, bodies, connections, mode="client"):
    """(submits/s, median s per submit, job ids) of the worker's Slurm
    client alone (build/bench/bench_slurm_submit client): the held submit
    (POST + release) of each body, from `connections` threads, a client
    each; mode "raw": the same two requests with bare libcurl."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        for body in bodies:
            f.write(json.dumps(json.loads(body)) + "\n")
        f.flush()
        out = subprocess.run(
            [os.path.join(BUILD, "bench", "bench_slurm_submit"),
             mode, str(connections), f.name],
            env=dict(os.environ, **stack.env),
            check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["rate"], r["latency"], [j for j in r["job_ids"] if j]


def through_worker(stack, binary, n, logdir, extra_env):
    """(submits/s, median ACCEPTED -> SUBMITTED s, job ids) of n launches
    through one fresh worker (its own topics and group)."""
    topics = Topics(stack, "bench-submit")
    reader = None
    worker = Worker(stack, topics, unique_id("wb"), unique_id("g"), logdir,
                    dict({"FORGE_POLL_INTERVAL_MS": "5000"}, **extra_env),
                    binary)
    ids = [unique_id("bs") for _ in range(n)]
    try:
        worker.wait_ready(timeout=120)
        for lid in ids:
            topics.producer.produce(topics.requests, key=lid,
                                    value=json.dumps(launch(lid, COMMAND)))
        topics.producer.flush(30)
        # the events carry their own times: read them once the burst is
        # (mostly) over, so this reader takes no CPU from the phase (on 2
        # cores it would slow slurmctld down, and the raw phases have none)
        time.sleep(n / 150)
        reader = StatusReader(stack, topics.status)
        submitted = [reader.wait_state(lid, "SUBMITTED", timeout=600)
                     for lid in ids]
        accepted = [reader.wait_state(lid, "ACCEPTED", timeout=10)
                    for lid in ids]
        t_acc = [_epoch(e["time"]) for e in accepted]
        t_sub = [_epoch(e["time"]) for e in submitted]
        rate = n / max(max(t_sub) - min(t_acc), 1e-3)
        latency = statistics.median(s - a for a, s in zip(t_acc, t_sub))
        jobs = [e["data"]["slurm"]["job_id"] for e in submitted]
        return rate, latency, jobs
    finally:
        worker.terminate()
        worker.stop_quietly()
        if reader:
            reader.close()


def latency_through_worker(stack, binary, n, logdir):
    """ACCEPTED -> SUBMITTED of n launches sent one at a time to an idle
    worker (each the only one in flight): median s, and the job ids."""
    topics = Topics(stack, "bench-latency")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("wl"), unique_id("g"), logdir,
                    {"FORGE_POLL_INTERVAL_MS": "5000"}, binary)
    out, jobs = [], []
    try:
        worker.wait_ready(timeout=120)
        for _ in range(n):
            lid = unique_id("bl")
            topics.send(lid, launch(lid, COMMAND))
            sub = reader.wait_state(lid, "SUBMITTED", timeout=120)
            acc = reader.wait_state(lid, "ACCEPTED", timeout=10)
            out.append(_epoch(sub["time"]) - _epoch(acc["time"]))
            jobs.append(sub["data"]["slurm"]["job_id"])
        return statistics.median(out), jobs
    finally:
        worker.terminate()
        worker.stop_quietly()
        reader.close()


def one_round(phase, slurm):
    """phase() -> (rate, latency, jobs); its jobs cancelled after it."""
    rate, lat, jobs = phase()
    slurm.cancel(jobs)
    return rate, lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=300)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--alone", type=int, default=20)
    ap.add_argument("--only-client", action="store_true",
                    help="the POST + release phases only")
    args = ap.parse_args()
    stack = Stack()
    binary = os.environ.get("FORGE_WORKER_BIN",
                            os.path.join(TOP, "build", "forge-worker"))
    logdir = tempfile.mkdtemp(prefix="forge-bench-submit-")
    slurm = Slurm(stack)
    n, c = args.launches, args.connections
    result = {"launches": n, "connections": c, "rounds": args.rounds,
              "scheme": stack.slurm_url.split(":", 1)[0]}

    bodies = body_maker(stack, binary)

    phases = {  # in this order, each round: raw N next to the worker's
        "raw_n": lambda: raw(slurm, bodies(n), c),
        "worker_unlimited": lambda: through_worker(
            stack, binary, n, logdir, {"FORGE_SLURM_MAX_RPS": "0"}),
        "raw_1": lambda: raw(slurm, bodies(n), 1),
        "raw_n_fresh": lambda: raw(slurm, bodies(n), c, fresh=True),
        "raw_n_release": lambda: raw(slurm, bodies(n), c, release=True),
        "client_n_release": lambda: through_client(stack, bodies(n), c),
        "curl_n_release": lambda: through_client(stack, bodies(n), c, "raw"),
        "worker": lambda: through_worker(stack, binary, n, logdir, {}),
    }
    if args.only_client:
        phases = {k: v for k, v in phases.items()
                  if k.endswith("_n_release")}
    seen = {name: ([], []) for name in phases}
    for _ in range(args.rounds):
        for name, phase in phases.items():
            rate, lat = one_round(phase, slurm)
            seen[name][0].append(rate)
            seen[name][1].append(lat)
    for name, (rates, lats) in seen.items():
        result[name] = {"rate": statistics.median(rates),
                        "latency": statistics.median(lats), "rates": rates}
    result["ratios"] = {
        f"client_vs_{base}": [
            w / r for w, r in zip(seen["client_n_release"][0],
                                  seen[f"{base}_n_release"][0])]
        for base in ("raw", "curl")}
    if args.only_client:
        print(json.dumps(result))
        return
    result["ratios"].update({
        name: [w / r for w, r in zip(seen[name][0], seen["raw_n"][0])]
        for name in ("worker", "worker_unlimited")})
    result["ratios"]["worker_unlimited_vs_release"] = [
        w / r for w, r in zip(seen["worker_unlimited"][0],
                              seen["raw_n_release"][0])]
    lat, jobs = latency_through_worker(stack, binary, args.alone, logdir)
    slurm.cancel(jobs)
    result["alone"] = {"latency": lat, "launches": args.alone}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
