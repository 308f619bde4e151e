#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_worker.py - the worker's throughput and event latency against the
real local stack (tests/e2e/stack up), each next to a baseline measured in
the same run. A benchmark, not a test: it prints, it never fails on speed.

  launches/s   N launches produced to the requests topic, timed until the
               N-th SUBMITTED event is readable (read_committed) - against
               the same N submit bodies (`forge-worker render --format
               payload`) POSTed to slurmrestd by curl, one after the other,
               with nothing else: no Kafka, no staging, no intent record
  latency      for M jobs that stamp the time (date +%s.%N, on the shared
               storage) as their last act: from that stamp to the SUCCEEDED
               event being readable by a read_committed consumer (median,
               p90), next to the poll interval the worker was given

  FORGE_STACK_ENV=... $FORGE_CACHE_DIR/venv/bin/python bench/bench_worker.py [N] [M]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

from harness import (TOP, Stack, StatusReader, Topics, Worker,  # noqa: E402
                     launch, unique_id, wait_until)

POLL_MS = 500


def curl_baseline(stack, n, binary):
    """n submits of rendered bodies with curl; returns submits/s."""
    env = dict(os.environ, **stack.env)
    bodies = []
    for _ in range(n):
        lid = unique_id("bench-curl")
        req = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(launch(lid, ["/bin/true"]), req)
        req.close()
        os.makedirs(os.path.join(stack.env["FORGE_STORAGE_ROOT"], "staging",
                                 lid, "1"), exist_ok=True)
        bodies.append(subprocess.run([binary, "render", "--format", "payload",
                                      req.name], env=env, check=True,
                                     capture_output=True).stdout)
        os.unlink(req.name)
    with open(stack.env["FORGE_SLURM_JWT_FILE"]) as f:
        token = f.read().strip().removeprefix("SLURM_JWT=")
    url = f"{stack.slurm_url}/slurm/{stack.api}/job/submit"
    tls = (["--cacert", stack.env["FORGE_SLURM_TLS_CA_FILE"]]
           if "FORGE_SLURM_TLS_CA_FILE" in stack.env else [])
    t0 = time.monotonic()
    for body in bodies:
        subprocess.run(["curl", "-sf", *tls, "-H", "Content-Type: application/json",
                        "-H", f"X-SLURM-USER-NAME: {stack.env['FORGE_SLURM_REST_USER']}",
                        "-H", f"X-SLURM-USER-TOKEN: {token}",
                        "--data-binary", "@-", url], input=body, check=True,
                       capture_output=True)
    return n / (time.monotonic() - t0)


def worker_rate(topics, reader, n):
    ids = [unique_id("bench") for _ in range(n)]
    t0 = time.monotonic()
    for lid in ids:
        topics.producer.produce(topics.requests, key=lid,
                                value=json.dumps(launch(lid, ["/bin/true"])))
    topics.producer.flush(10)
    for lid in ids:
        reader.wait_state(lid, "SUBMITTED", timeout=600)
    return n / (time.monotonic() - t0)


def latencies(stack, topics, reader, m):
    stamps = os.path.join(stack.env["FORGE_STORAGE_ROOT"], "bench-stamps")
    os.makedirs(stamps, exist_ok=True)
    os.chmod(stamps, 0o1777)
    cluster = stamps.replace(stack.env["FORGE_STORAGE_ROOT"],
                             stack.env["FORGE_SLURM_STORAGE_ROOT"], 1)
    out = []
    for _ in range(m):
        lid = unique_id("lat")
        cmd = f"sleep 1; date +%s.%N > {cluster}/{lid}"
        topics.send(lid, launch(lid, ["/bin/sh", "-c", cmd]))
        done = reader.wait_state(lid, "SUCCEEDED", timeout=120)
        path = os.path.join(stamps, lid)
        wait_until("the stamp", lambda: os.path.exists(path), 10)
        with open(path) as f:
            out.append(done["_received"] - float(f.read()))
        os.unlink(path)
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    stack = Stack()
    binary = os.environ.get("FORGE_WORKER_BIN",
                            os.path.join(TOP, "build", "forge-worker"))
    topics = Topics(stack, "bench")
    logdir = tempfile.mkdtemp(prefix="forge-bench-")
    worker = Worker(stack, topics, unique_id("wb"), unique_id("g"), logdir,
                    {"FORGE_POLL_INTERVAL_MS": str(POLL_MS)}, binary)
    reader = StatusReader(stack, topics.status)
    try:
        worker.wait_ready()
        curl = curl_baseline(stack, n, binary)
        rate = worker_rate(topics, reader, n)
        print(f"submits/s: worker {rate:.1f} (Kafka in, intent committed, "
              f"staging, submit, job id committed), curl {curl:.1f} (bare "
              f"POSTs); ratio worker/curl {rate / curl:.2f}")
        lat = sorted(latencies(stack, topics, reader, m))
        p90 = lat[int(0.9 * (len(lat) - 1))]
        print(f"job end -> SUCCEEDED readable: median {statistics.median(lat) * 1000:.0f} ms, "
              f"p90 {p90 * 1000:.0f} ms over {m} jobs (poll interval {POLL_MS} ms; "
              f"ratio median/interval {statistics.median(lat) * 1000 / POLL_MS:.2f})")
    finally:
        reader.close()
        worker.terminate()
        worker.stop_quietly()


if __name__ == "__main__":
    main()
