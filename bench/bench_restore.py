#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_restore.py - what restoring N launches costs a worker, in time and in
memory, against the real local Kafka (tests/e2e/stack up). A benchmark, not
a test: it prints, it never fails on speed.

For each size N: a fresh state topic (the stack's partition count) gets N
launch records as a worker leaves a live launch (PENDING, a job id, what is
kept of the request sealed: build/bench/bench_restore seed, libforge's own
encoder; --whole the whole request, as workers before issue 13 wrote it;
--bare none);
then, in the same run,

  baseline  a plain librdkafka consumer with the restore reader's fetch
            settings (read_committed, partition EOF, fetch.wait.max.ms 10)
            reads every partition to its end, all at once (bench_restore
            consume; twice, the faster kept); and the same consumer
            asking the topic's leaders before it assigns, as the
            worker's reader does (consume --leaders-first: without it
            each partition waits ~500 ms for librdkafka's offset query
            timer, a wait the plain consumer's figure carries)
            On the secured stack (issue 27) both run over the SASL_SSL
            listener as the worker's principal (forge-worker, the restore
            reader's group id): the worker as the env file says, the
            consumer given the same settings (BENCH_KAFKA_PROPS); the plain
            consumer over the PLAINTEXT listener is measured too
            (plaintext_ms: what TLS and SASL cost the consumer itself),
            and so is a second worker's restore of the same records over
            PLAINTEXT, no security variable set (restore_plaintext_ms).
            The records are seeded over the PLAINTEXT (admin) listener.
  worker    `forge-worker run` is started on that topic: its restore is the
            time its restore passes took (its log says each: reading and
            decoding, then filling the table); its RSS (VmRSS) is read once
            it is ready, and compared with an idle worker's (empty topics,
            same settings) measured in the same run

The jobs named do not exist in Slurm, and the worker is pointed at a port
where nothing listens (FORGE_SLURM_REST_URL), so its poll ticks fail and
change nothing: no job is marked missing, nothing reaches the shared
slurmctld, and what is measured is the restore and the table it leaves.

  FORGE_STACK_ENV=... $FORGE_CACHE_DIR/venv/bin/python bench/bench_restore.py \
      [--sizes 1000,10000,100000] [--bare | --whole]
      [--binary build/forge-worker]

Prints one JSON line last: {"listener", "sizes": [{"n", "restore_ms",
"baseline_ms", "ratio", "leaders_first_ms", "ratio_leaders_first",
"plaintext_ms", "restore_plaintext_ms", "rss_kib", "idle_kib",
"per_launch_bytes"}...]}.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

from confluent_kafka.admin import AdminClient  # noqa: E402
from harness import (PARTITIONS, TOP, Stack, Topics, Worker,  # noqa: E402
                     unique_id)

LOGDIR = os.environ.get("FORGE_BENCH_LOGS", "/tmp/forge-bench-restore")
BUILD = os.environ.get("FORGE_BENCH_BUILD", os.path.join(TOP, "build"))
TOOL = os.path.join(BUILD, "bench", "bench_restore")
NOWHERE = "http://127.0.0.1:9"  # nothing listens: every Slurm call fails


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def plain_env(stack):
    """A worker on the PLAINTEXT listener, no security variable set."""
    env = {k: None for k in stack.env
           if k.startswith(("FORGE_KAFKA_SASL_", "FORGE_KAFKA_SSL_"))}
    env.update({"FORGE_KAFKA_BROKERS": stack.admin_brokers,
                "FORGE_KAFKA_SECURITY_PROTOCOL": None})
    return env


def start(stack, topics, binary, plaintext=False):
    w = Worker(stack, topics, unique_id("wr"), unique_id("gr"), LOGDIR,
               {"FORGE_SLURM_REST_URL": NOWHERE,
                "FORGE_POLL_INTERVAL_MS": "60000",
                "FORGE_LOG_LEVEL": "debug",
                **(plain_env(stack) if plaintext else {})}, binary=binary)
    w.wait_ready(timeout=900)
    time.sleep(2)  # what follows the restore settles (the first tick fails)
    return w


def restore_span_ms(worker):
    """(ms, records): the restore's time and the records it restored. The
    time is the sum of the worker's restore passes (its debug line "restore
    of N partition(s): read and decoded in A ms, into the table in B ms"):
    the group may assign the partitions in more than one step, and the wait
    between them is the group's, not the restore's."""
    spent = 0.0
    records = 0
    for line in worker.lines():
        msg = line.get("msg", "")
        if msg.startswith("restore of "):
            ms = [int(w) for w in msg.replace(",", " ").split() if w.isdigit()]
            spent += ms[-2] + ms[-1]
        words = msg.split()
        if len(words) >= 4 and words[0] == "partition" and \
                words[2] == "restored":
            records += int(words[3].strip("("))
    return spent, records


def secured_props(stack):
    """BENCH_KAFKA_PROPS of the plain consumer: the worker's principal
    and security settings, the restore reader's group id ({} plain)."""
    if not stack.secured:
        return {}
    conf = stack.kafka_conf("worker")
    conf.pop("bootstrap.servers")
    conf["group.id"] = "forge-worker-restore"
    return {"BENCH_KAFKA_PROPS": "\n".join(f"{k}={v}"
                                            for k, v in conf.items())}


def baseline_ms(stack, topic, *flags, plaintext=False):
    best = None
    brokers = stack.admin_brokers if plaintext else stack.brokers
    env = dict(os.environ, **({} if plaintext else secured_props(stack)))
    for _ in range(2):
        out = subprocess.run([TOOL, "consume", brokers, topic,
                              str(PARTITIONS), *flags], check=True, env=env,
                             capture_output=True, text=True).stdout
        ms = float(out.split(" in ")[1].split()[0])
        best = ms if best is None else min(best, ms)
    return best


def drop_topics(stack, topics):
    admin = AdminClient(stack.kafka_conf("admin"))
    names = [topics.requests, topics.state, topics.status, topics.logs,
             topics.dlq]
    for f in admin.delete_topics(names).values():
        try:
            f.result(30)
        except Exception:  # noqa: BLE001 - best effort, the stack's own
            pass


def one_size(stack, n, form, binary, idle):
    topics = Topics(stack, "bench-restore")
    try:
        cmd = [TOOL, "seed", stack.admin_brokers, topics.state, str(PARTITIONS),
               str(n), stack.env["FORGE_STATE_KEY_FILE"]]
        subprocess.run(cmd + ([form] if form else []), check=True,
                       capture_output=True)
        base = baseline_ms(stack, topics.state)
        first = baseline_ms(stack, topics.state, "--leaders-first")
        plain = (baseline_ms(stack, topics.state, plaintext=True)
                 if stack.secured else base)
        w = start(stack, topics, binary)
        try:
            span, records = restore_span_ms(w)
            rss = rss_kib(w.proc.pid)
        finally:
            w.terminate()
            w.stop_quietly()
        if records != n:
            raise RuntimeError(f"restored {records} records of {n}")
        plain_span = span
        if stack.secured:
            w = start(stack, topics, binary, plaintext=True)
            try:
                plain_span, records = restore_span_ms(w)
            finally:
                w.terminate()
                w.stop_quietly()
            if records != n:
                raise RuntimeError(f"restored {records} records of {n} "
                                   "over PLAINTEXT")
        return {"n": n, "restore_ms": span, "baseline_ms": base,
                "ratio": span / base, "leaders_first_ms": first,
                "ratio_leaders_first": span / first,
                "plaintext_ms": plain, "restore_plaintext_ms": plain_span,
                "rss_kib": rss, "idle_kib": idle,
                "per_launch_bytes": (rss - idle) * 1024.0 / n}
    finally:
        drop_topics(stack, topics)


def idle_rss(stack, binary):
    topics = Topics(stack, "bench-restore-idle")
    try:
        w = start(stack, topics, binary)
        try:
            return rss_kib(w.proc.pid)
        finally:
            w.terminate()
            w.stop_quietly()
    finally:
        drop_topics(stack, topics)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--bare", action="store_true",
                    help="records without their request")
    ap.add_argument("--whole", action="store_true",
                    help="records with the whole request sealed, as workers "
                         "before issue 13 wrote them with a job id")
    ap.add_argument("--binary", default=os.path.join(BUILD, "forge-worker"))
    args = ap.parse_args()
    os.makedirs(LOGDIR, exist_ok=True)
    stack = Stack()
    idle = idle_rss(stack, args.binary)
    print(f"idle worker: {idle} KiB", file=sys.stderr)
    sizes = []
    for n in (int(x) for x in args.sizes.split(",")):
        r = one_size(stack, n,
                     "--bare" if args.bare else "--whole" if args.whole
                     else None, args.binary, idle)
        print(f"{n} launches: restore {r['restore_ms']:.0f} ms, plain "
              f"consumer {r['baseline_ms']:.0f} ms ({r['ratio']:.2f}x), "
              f"asking the leaders first {r['leaders_first_ms']:.0f} ms "
              f"({r['ratio_leaders_first']:.2f}x), over PLAINTEXT "
              f"{r['plaintext_ms']:.0f} ms, the worker's restore over "
              f"PLAINTEXT {r['restore_plaintext_ms']:.0f} ms; "
              f"RSS {r['rss_kib']} KiB, {r['per_launch_bytes']:.0f} B per "
              f"launch over idle", file=sys.stderr, flush=True)
        sizes.append(r)
    print(json.dumps({"listener": "SASL_SSL" if stack.secured else "PLAINTEXT",
                      "bare": args.bare, "whole": args.whole,
                      "sizes": sizes}))


if __name__ == "__main__":
    main()
