# SPDX-License-Identifier: Apache-2.0
"""
Live logs (issue 29) on the real stack: a launch that asks for them
(`logs.live`) has its output published as forge.launch.log_chunk events on
the logs topic while it runs, read from its staging folder on the shared
storage by the worker that owns it (docs/CONTRACT.md section 2):

- a job printing a numbered line each second: the platform reads every
  line live (within 3 s of the job writing it on an idle machine, 5 s
  allowed beside the rest of the suite), in order; the worker is killed -9
  mid-run, and once the next owner has taken over, every line is there
  once (a chunk sent again is identifiable by file and offset), none
  missing; a file the job writes under $FORGE_STAGING is followed too; the
  final chunk comes before logs_archived;
- the secret the job prints never appears in a chunk; a link and a FIFO the
  job plants in its staging folder are never read (nor do they stall it);
- a job writing 1 GiB as fast as it can: the chunks keep within the
  launch's budget per minute and say how much they skipped, the worker's
  resident memory stays flat, and its ticks go on.
"""

from datetime import datetime
import re
import time
import uuid

import pytest

from harness import (StatusReader, Topics, Worker, launch, unique_id,
                     wait_until)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized

LINES = 24
BUDGET = 262144
CHUNK = 65536


def live_launch(launch_id, script, secret=None):
    req = launch(launch_id, ["/bin/sh", "-c", script], time_limit=5)
    req["logs"] = {"live": True}
    if secret:
        req["secret_env"] = {"E2E_LIVE_SECRET": secret}
    return req


def chunks_of(logs, lid):
    return [e for e in logs.of(lid) if e["type"] == "forge.launch.log_chunk"]


def rebuild(chunks, name):
    """The file as its segments say, and how many were sent again: each
    (offset, length) once, no gap, nothing overlapping but duplicates."""
    seen, text, at, again = {}, [], 0, 0
    for c in sorted(chunks, key=lambda c: c["data"]["n"]):
        for s in c["data"]["segments"]:
            if s["file"] != name:
                continue
            key = (s["offset"], s["length"])
            if key in seen:
                assert seen[key] == s["text"], "a re-sent segment differs"
                again += 1
                continue
            assert not s.get("restarted"), s
            assert s["offset"] - s.get("skipped", 0) == at, (at, s)
            seen[key] = s["text"]
            text.append(s["text"])
            at = s["offset"] + s["length"]
    return "".join(text), again


def at_s(chunk):
    """When the worker read the files for a chunk (epoch seconds)."""
    return datetime.fromisoformat(
        chunk["data"]["at"].replace("Z", "+00:00")).timestamp()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


@pytest.fixture
def topics(stack):
    return Topics(stack, "live")


def start_worker(stack, topics, logdir, group, extra=None):
    w = Worker(stack, topics, unique_id("wl"), group, logdir,
               {"FORGE_LOG_LIVE": "opt-in", **(extra or {})})
    w.wait_ready()
    return w


def test_lines_arrive_live_in_order_and_once_across_a_kill_9(
        stack, topics, logdir):
    lid = unique_id("live")
    secret = f"s3cret-{uuid.uuid4().hex}"
    script = (
        'ln -s /etc/hostname "$FORGE_STAGING/planted.out"; '
        'mkfifo "$FORGE_STAGING/fifo.out"; '
        'echo "the secret is $E2E_LIVE_SECRET"; '
        f'for i in $(seq 1 {LINES}); do '
        '  echo "line $i at $(date +%s.%N)"; '
        '  echo "$i,0.$i" >> "$FORGE_STAGING/metrics.csv"; '
        '  sleep 1; '
        'done; echo "stderr says $E2E_LIVE_SECRET" >&2')
    group = unique_id("g")
    status = StatusReader(stack, topics.status)
    logs = StatusReader(stack, topics.logs)
    first = start_worker(stack, topics, logdir, group)
    second = None
    try:
        topics.send(lid, live_launch(lid, script, secret))
        # the first lines, read live: each within 3 s of being written
        wait_until("line 6 live", lambda: "line 6 at" in rebuild(
            chunks_of(logs, lid), "main.out")[0], 60)
        first.kill9()
        second = start_worker(stack, topics, logdir, group)
        taken_over = time.time()
        end = status.wait_terminal(lid, timeout=120)
        assert end["data"]["state"] == "SUCCEEDED", end
        archived = wait_until("logs_archived", lambda: next(
            (e for e in logs.of(lid)
             if e["type"] == "forge.launch.logs_archived"), None), 60)
        events = logs.of(lid)
        chunks = chunks_of(logs, lid)
        # the final chunk, then logs_archived: nothing after
        assert events[-1] is archived, [e["type"] for e in events]
        assert chunks[-1]["data"]["final"] is True
        assert [c["data"]["final"] for c in chunks].count(True) == 1
        ns = sorted({c["data"]["n"] for c in chunks})
        assert ns == list(range(1, len(ns) + 1)), ns
        for c in chunks:
            assert c["id"] == f"{lid}/1/log/{c['data']['n']}"
            assert c["subject"] == lid

        text, again = rebuild(chunks, "main.out")
        numbers = [int(m) for m in re.findall(r"^line (\d+) at", text, re.M)]
        assert numbers == list(range(1, LINES + 1)), numbers
        metrics, _ = rebuild(chunks, "metrics.csv")
        assert metrics.splitlines() == [f"{i},0.{i}" for i in range(1, LINES + 1)]
        err, _ = rebuild(chunks, "main.err")
        assert "stderr says [REDACTED]" in err, err
        assert "the secret is [REDACTED]" in text, text[:200]
        for c in chunks:
            for s in c["data"]["segments"]:
                assert secret not in s["text"] and secret[:12] not in s["text"]
                assert s["file"] not in ("planted.out", "fifo.out"), s
        # latency: every line written while a worker owned the launch (the
        # first before its kill, the second once it had taken over)
        killed = first.ended_at
        late = []
        for c in chunks:
            for s in c["data"]["segments"]:
                for m in re.finditer(r"^line (\d+) at ([0-9.]+)$", s["text"], re.M):
                    written = float(m.group(2))
                    if written < killed - 1.5 or written > taken_over + 1.0:
                        late.append(c["_received"] - written)
        assert len(late) >= 10, late
        # Live, not at the end: a chunk leaves every
        # FORGE_LOG_LIVE_INTERVAL_MS (1 s), so a line arrives within 3 s on
        # an idle machine (issue 29); one held back to the job's end would
        # be late by up to LINES seconds. The bound is 5 s, not 3: beside
        # three broker JVMs on the ASan build CI saw one line 3.08 s late,
        # the others under 2 s.
        assert max(late) <= 5.0, sorted(late)[-5:]
        print(f"live lines: {len(late)} measured, the latest after "
              f"{max(late):.2f} s; {again} segment(s) sent again")
        # the archive has it all, the tail is redacted too
        assert secret not in str(archived["data"]["tail"])
        assert second.proc.poll() is None, second.tail()
    finally:
        status.close()
        logs.close()
        for w in (first, second):
            if w:
                w.stop_quietly()


def test_a_gigabyte_keeps_within_the_budget_and_the_worker_flat(
        stack, topics, logdir):
    lid = unique_id("flood")
    quiet = unique_id("quiet")
    group = unique_id("g")
    status = StatusReader(stack, topics.status)
    logs = StatusReader(stack, topics.logs)
    # The ASan build keeps freed memory in its quarantine (256 MiB by
    # default) before reusing it: the RSS would measure the quarantine, not
    # the worker (it grew 84 MiB once under CI's load). A small one keeps
    # the measure the worker's own; the release build ignores the variable.
    w = start_worker(stack, topics, logdir, group, {
        "FORGE_LOG_LIVE_BUDGET_BYTES": str(BUDGET),
        "FORGE_LOG_LIVE_CHUNK_BYTES": str(CHUNK),
        "FORGE_LOG_LEVEL": "debug",
        "ASAN_OPTIONS": "quarantine_size_mb=8"})
    try:
        rss_before = rss_kib(w.proc.pid)
        topics.send(lid, live_launch(
            lid, "yes 'a line of output, printed as fast as the job can' "
                 "| head -c 1073741824; sleep 3"))
        # a launch beside it still gets its states on time
        topics.send(quiet, launch(quiet, ["/bin/sh", "-c", "sleep 2"]))
        peak = rss_before
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            peak = max(peak, rss_kib(w.proc.pid))
            if any(e["type"] == "forge.launch.logs_archived"
                   for e in logs.of(lid)):
                break
            time.sleep(0.2)
        assert status.wait_terminal(lid, 10)["data"]["state"] == "SUCCEEDED"
        assert status.wait_terminal(quiet, 60)["data"]["state"] == "SUCCEEDED"
        chunks = chunks_of(logs, lid)
        assert chunks and chunks[-1]["data"]["final"], len(chunks)
        segs = [(c, s) for c in chunks for s in c["data"]["segments"]]
        skipped = sum(s.get("skipped", 0) for _, s in segs)
        covered = sum(s["length"] for _, s in segs)
        assert skipped > 0, "a skip marker"
        assert skipped + covered == 1073741824, (skipped, covered)
        for c, s in segs:
            assert s["length"] <= CHUNK
        assert len(chunks) > 3, len(chunks)
        # within the budget: any minute's chunks carry at most a minute's
        # budget (+ the final chunk's, which may go beyond it)
        times = sorted((at_s(c), sum(s["length"] for s in c["data"]["segments"]))
                       for c in chunks if not c["data"]["final"])
        for i, (t0, _) in enumerate(times):
            window = sum(n for t, n in times[i:] if t < t0 + 60)
            assert window <= BUDGET + CHUNK, (window, BUDGET)
        grew = peak - rss_before
        print(f"1 GiB: {len(chunks)} chunks, {covered} bytes published, "
              f"{skipped} skipped; worker RSS {rss_before} -> {peak} KiB")
        assert grew < 64 * 1024, f"RSS grew {grew} KiB"
        ticks = [l for l in w.lines() if l.get("msg", "").startswith("poll tick:")]
        late = [int(re.search(r"(\d+) ms late", l["msg"]).group(1)) for l in ticks]
        # a loop that read the gigabyte itself would be late by all of it;
        # a loaded machine (CI: four groups beside the ASan build) made one
        # tick 2.5 s late, so the bound is 5 s, not 2
        assert late and max(late) < 5000, late
    finally:
        status.close()
        logs.close()
        w.stop_quietly()
