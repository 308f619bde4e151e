#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_live.py - what following running launches' output (live logs, issue
29, docs/CONTRACT.md section 2 "Live logs") costs a worker, each figure
against the same run with live logs off, on the real local stack
(tests/e2e/stack up). A benchmark, not a test: it prints, it never fails
on speed; it fails only when the chunks do not carry what was written (it
would have measured nothing).

Every run has topics of its own (bench.live.*), whose state topic gets N
launch records as a worker leaves a running launch: RUNNING, a job id, what
is kept of its request sealed (its labels, and secrets of its own: an
ingest token and a secret_env value, which every chunk is redacted of),
made by build/bench/bench_restore seed --running (--bare: no request);
a storage root of its own (a folder under /var/tmp, the worker's
FORGE_STORAGE_ROOT) with each launch's staging folder as the worker stages
attempt 1 (staging/<launch_id>/1/, an empty main.out in it); and one
`forge-worker run` on them with FORGE_LOG_LIVE=on (every launch followed:
the requests do not ask) or off, the other live logs settings their
defaults (a read a second, 64 KiB a chunk, 1 MiB a launch a minute). The
jobs do not exist and the worker's Slurm URL answers nothing
(FORGE_SLURM_REST_URL=http://127.0.0.1:9), so its poll ticks fail and
change nothing: the launches stay RUNNING. Once the worker is ready and
settled (2 s), a writer process (the launches' jobs) appends to every
main.out, and a window is measured:

  steady   --launches (1,000) launches each printing one numbered 80-byte
           line a second (spread over the second), the worker polling at
           its default interval; after a 5 s warm-up, a --window (60 s):
           the worker's CPU (utime + stime of /proc/<pid>/stat) and the
           bytes it produced: the values of the records on the logs and
           the state topics whose timestamps fall in the window, read once
           the worker has stopped by a read_committed consumer (the
           stack's admin), against the bytes the launches printed (their
           files' growth over the window, by stat). With live logs off,
           the same records, writer and window: its CPU is the baseline.
           The chunks are checked: their segments must carry at least 90%
           of the lines written in the window, and none with live logs off
  flood    --flood-launches (100) launches printing as fast as they can,
           the writer capped at --flood-rate bytes a file a second (512
           KiB: 50 MiB/s in all, ~1 GiB over the window, so the disk is
           not filled), the worker polling every second
           (FORGE_POLL_INTERVAL_MS=1000) and logging at debug: over a
           --flood-window (20 s) from the writer's start, how late each
           poll tick came (the worker's "poll tick: N live jobs, X ms
           late" lines), live logs on against off; the worker's CPU; its
           RSS (VmRSS) as the writer starts, its peak (sampled every
           0.2 s) and at the end; what the chunks carried and what they
           skipped (forge_log_skipped_bytes_total of the worker's
           /metrics, FORGE_HTTP_LISTEN). Each launch spends its minute's
           budget in ~16 s (a 64 KiB chunk a second), after which its
           files are not read until the minute has passed: the window
           covers that span (chunk_span_s says it)

Every run's topics are deleted and its storage root removed at its end.

  FORGE_STACK_ENV=... $FORGE_CACHE_DIR/venv/bin/python bench/bench_live.py \\
      [--launches 1000] [--window 60] [--flood-launches 100]
      [--flood-window 20] [--flood-rate 524288] [--bare]
      [--skip steady,flood] [--binary build/forge-worker]

Prints one JSON line last: {"form", "steady": {"launches", "window_s",
"on": RUN, "off": RUN}, "flood": {"launches", "window_s", "rate", "on":
RUN, "off": RUN}}, RUN = {"cpu_s", "window_s", "written", "lines_written",
"produced": {"logs", "state", "keys", "headers"} (bytes), "chunks",
"chunk_bytes", "lines", "skipped", "chunk_span_s", "ticks_ms",
"rss_start_kib", "rss_peak_kib", "rss_end_kib", "metrics": {the live
logs' counters over the window}}.
"""

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: E402
from harness import (PARTITIONS, TOP, Stack, Topics, Worker,  # noqa: E402
                     _epoch, delete_topic_names, free_port, http_get,
                     unique_id)

LOGDIR = os.environ.get("FORGE_BENCH_LOGS", "/tmp/forge-bench-live")
BUILD = os.environ.get("FORGE_BENCH_BUILD", os.path.join(TOP, "build"))
TOOL = os.path.join(BUILD, "bench", "bench_restore")
NOWHERE = "http://127.0.0.1:9"  # nothing listens: every Slurm call fails
# not the scenarios' e2e.: a scenario session starting beside a run deletes
# every e2e. topic it finds (conftest.py), this run's too
PREFIX = "bench."
LINE = 80          # bytes of one printed line, its newline included
SETTLE_S = 2       # after ready: the restore's aftermath, the first tick
WARMUP_S = 5       # steady: the writer's first lines read before the window
SLICES = 20        # steady: the writer spreads a second's lines over these
FLOOD_STEP_S = 0.1
LINES_CARRIED = 0.9  # steady: the chunks must carry this share at least
METRICS = ("forge_log_chunks_total", "forge_log_chunk_bytes_total",
           "forge_log_skipped_bytes_total")
TICK = re.compile(r"^poll tick: (\d+) live jobs, (-?\d+) ms late")


def say(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- the launches' jobs: the writer (a process of its own) ------------------

def write_lines(paths, stop):
    """Steady: one numbered line of LINE bytes a second to each file, the
    files' turns spread over the second (jobs do not print in step)."""
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
    names = [p.split(os.sep)[-3] for p in paths]  # staging/<id>/1/main.out
    per = -(-len(fds) // SLICES)
    start, n = time.monotonic(), 0
    while not stop.is_set():
        for s in range(SLICES):
            for i in range(s * per, min(len(fds), (s + 1) * per)):
                text = f"{names[i]} line {n:08d} at {time.time():.3f}"
                os.write(fds[i], (text.ljust(LINE - 1) + "\n").encode())
            pause = start + n + (s + 1) / SLICES - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        n += 1
    for fd in fds:
        os.close(fd)


def write_flood(paths, rate, stop):
    """Flood: every file appended to as fast as the writer can, at most
    `rate` bytes a second each (a block every FLOOD_STEP_S; a writer that
    fell behind writes on without pausing until it has caught up)."""
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
    lines = max(1, int(rate * FLOOD_STEP_S) // LINE)
    start, step = time.monotonic(), 0
    while not stop.is_set():
        block = "".join(f"flood block {step:06d} line {k:06d}".ljust(LINE - 1)
                        + "\n" for k in range(lines)).encode()
        for fd in fds:
            os.write(fd, block)
        step += 1
        pause = start + step * FLOOD_STEP_S - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    for fd in fds:
        os.close(fd)


class Writer:
    """The writer process (spawned: this process holds Kafka clients)."""

    def __init__(self, target, *args):
        ctx = multiprocessing.get_context("spawn")
        self.stop = ctx.Event()
        self.proc = ctx.Process(target=target, args=(*args, self.stop),
                                daemon=True)
        self.proc.start()

    def close(self):
        self.stop.set()
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


# ---- the worker --------------------------------------------------------------

def cpu_s(pid):
    """utime + stime of a process, in seconds (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class RssPeak:
    """The highest VmRSS of a process, sampled every 0.2 s on a thread."""

    def __init__(self, pid):
        self.pid, self.peak = pid, rss_kib(pid)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                self.peak = max(self.peak, rss_kib(self.pid))
            except (OSError, RuntimeError):
                return  # the worker is gone
            time.sleep(0.2)

    def close(self):
        self.stopping = True
        self.thread.join(5)
        return self.peak


def metrics(port):
    """The live logs' counters of the worker's /metrics."""
    status, body = http_get(port, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics: {status} {body[:200]}")
    out = dict.fromkeys(METRICS, 0.0)
    for line in body.splitlines():
        name, _, value = line.partition(" ")
        if name in out:
            out[name] = float(value)
    return out


def late_ticks(worker, t0, t1):
    """The lateness (ms) of the poll ticks the worker logged in [t0, t1)."""
    out = []
    for line in worker.lines():
        m = TICK.match(line.get("msg", ""))
        if m and t0 <= _epoch(line["ts"]) < t1:
            out.append(int(m.group(2)))
    return out


# ---- what the worker produced ----------------------------------------------

def produced(stack, topics, t0, t1):
    """What the logs and state topics got in [t0, t1) (record timestamps,
    the worker's produce time), read_committed from the beginning to the
    end: the values' bytes per topic, keys' and headers' bytes, and the
    log_chunk events' count, file bytes (segment lengths) and lines."""
    c = Consumer({**stack.kafka_conf("admin"),
                  "group.id": unique_id("bench-live-read"),
                  "isolation.level": "read_committed",
                  "enable.auto.commit": False,
                  "enable.partition.eof": True})
    parts = []
    for topic in (topics.logs, topics.state):
        meta = c.list_topics(topic, timeout=10).topics[topic]
        parts += [TopicPartition(topic, p, 0) for p in meta.partitions]
    c.assign(parts)
    got = {"logs": 0, "state": 0, "keys": 0, "headers": 0, "chunks": 0,
           "chunk_bytes": 0, "lines": 0, "skipped": 0}
    first = last = None  # the window's first and last chunk (ms)
    lo, hi = int(t0 * 1000), int(t1 * 1000)
    ended, deadline = 0, time.monotonic() + 120
    while ended < len(parts) and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            if m.error():
                ended += m.error().code() == KafkaError._PARTITION_EOF
                continue
            if not lo <= m.timestamp()[1] < hi:
                continue
            value = m.value() or b""
            got["logs" if m.topic() == topics.logs else "state"] += len(value)
            got["keys"] += len(m.key() or b"")
            got["headers"] += sum(len(k) + len(v or b"")
                                  for k, v in m.headers() or [])
            if m.topic() == topics.logs and b"log_chunk" in value:
                segments = json.loads(value)["data"]["segments"]
                at = m.timestamp()[1]
                first = at if first is None else min(first, at)
                last = at if last is None else max(last, at)
                got["chunks"] += 1
                got["chunk_bytes"] += sum(s["length"] for s in segments)
                got["lines"] += sum(s["text"].count("\n") for s in segments)
                got["skipped"] += sum(s.get("skipped", 0) for s in segments)
    c.close()
    if ended < len(parts):
        raise RuntimeError("the logs and state topics not read to their end")
    got["chunk_span_s"] = (last - first) / 1000 if got["chunks"] else 0
    return got


# ---- one run -----------------------------------------------------------------

def staged(root, n):
    """The launches' main.out paths, created empty (bench_restore's ids)."""
    paths = []
    for i in range(n):
        folder = os.path.join(root, "staging", f"bench-{i:08d}", "1")
        os.makedirs(folder)
        path = os.path.join(folder, "main.out")
        open(path, "w").close()
        paths.append(path)
    return paths


def size_of(paths):
    return sum(os.stat(p).st_size for p in paths)


def one_run(stack, args, n, live, flood):
    """One worker on n RUNNING launches, live logs on or off, the steady
    or the flood writer: what the window measured (the JSON's RUN)."""
    topics = Topics(stack, "live", prefix=PREFIX)
    root = tempfile.mkdtemp(prefix="forge-bench-live-", dir="/var/tmp")
    worker = writer = None
    try:
        subprocess.run([TOOL, "seed", stack.admin_brokers, topics.state,
                        str(PARTITIONS), str(n),
                        stack.env["FORGE_STATE_KEY_FILE"], "--running"] +
                       (["--bare"] if args.bare else []), check=True,
                       capture_output=True)
        paths = staged(root, n)
        port = free_port()
        worker = Worker(stack, topics, unique_id("wlive"), unique_id("glive"),
                        LOGDIR, {
                            "FORGE_SLURM_REST_URL": NOWHERE,
                            "FORGE_STORAGE_ROOT": root,
                            "FORGE_RUNTIME_ROOT": stack.runtime_root,
                            "FORGE_LOG_LIVE": "on" if live else "off",
                            "FORGE_HTTP_LISTEN": f"127.0.0.1:{port}",
                            # steady: the worker's default interval
                            "FORGE_POLL_INTERVAL_MS":
                                "1000" if flood else None,
                            # flood: its ticks' lateness (debug lines)
                            "FORGE_LOG_LEVEL": "debug" if flood else "info"},
                        binary=args.binary)
        worker.wait_ready(timeout=120)
        time.sleep(SETTLE_S)
        pid = worker.proc.pid
        rss_start = rss_kib(pid)
        if flood:
            writer = Writer(write_flood, paths, args.flood_rate)
            window = args.flood_window
        else:
            writer = Writer(write_lines, paths)
            window = args.window
            time.sleep(WARMUP_S)
        peak = RssPeak(pid)
        t0, cpu0, m0, w0 = time.time(), cpu_s(pid), metrics(port), \
            size_of(paths)
        time.sleep(window)
        t1, cpu1, m1, w1 = time.time(), cpu_s(pid), metrics(port), \
            size_of(paths)
        rss_peak, rss_end = peak.close(), rss_kib(pid)
        writer.close()
        writer = None
        time.sleep(2)  # the window's last chunks into a committed transaction
        ticks = late_ticks(worker, t0, t1)
        assert worker.terminate() == 0, worker.tail()
        got = produced(stack, topics, t0, t1)
        run = {"cpu_s": cpu1 - cpu0, "window_s": t1 - t0,
               "written": w1 - w0, "lines_written": (w1 - w0) // LINE,
               "produced": {k: got[k] for k in ("logs", "state", "keys",
                                                "headers")},
               "chunks": got["chunks"], "chunk_bytes": got["chunk_bytes"],
               "lines": got["lines"], "skipped": got["skipped"],
               "chunk_span_s": got["chunk_span_s"],
               "ticks_ms": ticks, "rss_start_kib": rss_start,
               "rss_peak_kib": rss_peak, "rss_end_kib": rss_end,
               "metrics": {k: m1[k] - m0[k] for k in METRICS}}
        check(run, live, flood)
        return run
    finally:
        if writer:
            writer.close()
        if worker:
            worker.stop_quietly()
        delete_topic_names(stack, topics.names())
        shutil.rmtree(root, ignore_errors=True)


def check(run, live, flood):
    """The chunks carry what was written (steady: at least LINES_CARRIED
    of the window's lines; flood: something), and nothing with live logs
    off: else the figures would be of nothing."""
    if not live:
        if run["chunks"] or run["metrics"]["forge_log_chunks_total"]:
            raise RuntimeError(f"live logs off, yet {run['chunks']} chunks")
        return
    if flood:
        if not run["chunks"] or not run["metrics"][
                "forge_log_skipped_bytes_total"]:
            raise RuntimeError(f"flood: {run['chunks']} chunks, "
                               f"{run['metrics']} skipped")
        return
    if run["lines"] < LINES_CARRIED * run["lines_written"]:
        raise RuntimeError(f"the chunks carried {run['lines']} lines of the "
                           f"{run['lines_written']} written in the window")


def summary(name, r):
    p = r["produced"]
    ticks = r["ticks_ms"]
    return (f"{name}: CPU {r['cpu_s']:.2f} s over {r['window_s']:.0f} s; "
            f"written {r['written']:,} B; logs {p['logs']:,} B, state "
            f"{p['state']:,} B; {r['chunks']:,} chunks carrying "
            f"{r['chunk_bytes']:,} B, {r['lines']:,} lines of "
            f"{r['lines_written']:,} over {r['chunk_span_s']:.0f} s; ticks "
            f"late (ms) median "
            f"{statistics.median(ticks) if ticks else '-'}, max "
            f"{max(ticks) if ticks else '-'} ({len(ticks)}); RSS "
            f"{r['rss_start_kib']} -> {r['rss_peak_kib']} KiB, "
            f"{r['rss_end_kib']} KiB at the end; {r['metrics']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--window", type=float, default=60)
    ap.add_argument("--flood-launches", type=int, default=100)
    ap.add_argument("--flood-window", type=float, default=20)
    ap.add_argument("--flood-rate", type=int, default=512 * 1024)
    ap.add_argument("--bare", action="store_true",
                    help="records without their request")
    ap.add_argument("--skip", default="")
    ap.add_argument("--binary", default=os.path.join(BUILD, "forge-worker"))
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    os.makedirs(LOGDIR, exist_ok=True)
    stack = Stack()
    out = {"form": "bare" if args.bare else "sealed"}
    if "steady" not in skip:
        out["steady"] = {"launches": args.launches, "window_s": args.window}
        for name, live in (("on", True), ("off", False)):
            r = one_run(stack, args, args.launches, live, flood=False)
            say(summary(f"steady, {args.launches} launches, live logs {name}",
                        r))
            out["steady"][name] = r
    if "flood" not in skip:
        out["flood"] = {"launches": args.flood_launches,
                        "window_s": args.flood_window,
                        "rate": args.flood_rate}
        for name, live in (("on", True), ("off", False)):
            r = one_run(stack, args, args.flood_launches, live, flood=True)
            say(summary(f"flood, {args.flood_launches} launches, live logs "
                        f"{name}", r))
            out["flood"][name] = r
    print(json.dumps(out))


if __name__ == "__main__":
    main()
