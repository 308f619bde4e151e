#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_all.py - every benchmark of scripts/bench, as one table of ratios,
each figure next to its baseline measured in the same run; printed, and
written to docs/BENCHMARKS.md. A benchmark, not a test: it never fails on
speed (a target missed is said in the table).

  submits      bench_submit.py: submits/s through one worker against raw
               POSTs of the same bodies over 1 and N keep-alive connections
               (and N fresh ones), ACCEPTED -> SUBMITTED latency against
               one POST's round trip; the worker's Slurm client alone
               (held submit: POST + release) against bare libcurl's POST +
               release on as many keep-alive connections; all over https
               through the stack's TLS front when its env file says so
  render       build/bench/bench_render: parse+validate+render against a
               bare jansson parse of the same request
  archive      build/bench/bench_archive: forge_archive_logs against
               `tar czf` over the same files; an archive tail's redaction
               with 100,000 secrets registered against none
  restore      bench_restore.py: a worker restoring N launches against a
               plain consumer of the same state-topic partitions, and its
               RSS per launch over an idle worker (records with a sealed
               request, and without one as held_jobs.py writes them)
  poll         bench_poll.py: a poll tick's slurmrestd calls, bytes and
               worker CPU at --poll-sizes owned live jobs against per-job
               polling and one GET /jobs; job end -> terminal event
               latency (median, p99) poll only at 1 s and 30 s, and with
               Slurm's jobcomp/kafka records (push) at a 30 s poll;
               slurmrestd calls per hour for 1,000 live jobs, push with
               a 60 s poll against poll only at 5 s
  live         bench_live.py: live logs (issue 29): the worker's CPU and
               the bytes it produces (logs + state topics) per followed
               launch, 1,000 launches each printing a line a second,
               against live logs off and the bytes the launches printed;
               poll-tick lateness, CPU and RSS while 100 launches print as
               fast as they can, against live logs off
  container    bench_container.py: starting a task in its container
               (apptainer exec --cleanenv of the stack's python image),
               warm and with the image's pages dropped from the page
               cache, against a bare exec of the same /bin/true in the
               same cluster root, per task
  group        bench_group.py: the longest time a moved partition has no
               owner when a fourth worker joins three and when one of
               them leaves, launches flowing, with the consumer group
               protocol (KIP-848) against classic cooperative-sticky

  $FORGE_CACHE_DIR/venv/bin/python bench/bench_all.py [--launches 300]
      [--connections 4] [--rounds 3] [--archive-mib 64] [--out FILE]
      [--restore-sizes 1000,10000,100000] [--poll-sizes 1000,10000,100000]
      [--skip submits,render,archive,restore,poll,live,container,group]
      [--merge]

--merge keeps the rows of the benchmarks skipped: this run's rows and
notes go into the existing --out (merge_into says how), with a paragraph
saying when they were measured, so a run of some benchmarks alone does not
drop the others' figures.

Each benchmark runs under the e2e lock (FORGE_E2E_LOCK), shared; the
poll ticks take it exclusively, one size at a time (bench_poll.py).
"""

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
BUILD = os.environ.get("FORGE_BENCH_BUILD", os.path.join(TOP, "build"))



@contextlib.contextmanager
def shared_lock():
    """The e2e lock, shared (scripts/bench no longer holds it: the poll
    ticks take it exclusively themselves)."""
    path = os.environ.get("FORGE_E2E_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          **kw).stdout


def number(pattern, text):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError(f"no {pattern!r} in:\n{text}")
    return float(m.group(1))


def default_budget():
    """FORGE_SLURM_MAX_RPS's default, from the configuration's table."""
    with open(os.path.join(TOP, "src", "config", "config_table.c")) as f:
        m = re.search(r'"FORGE_SLURM_MAX_RPS",[^}]*?\.default_value = "(\d+)"',
                      f.read())
    return m.group(1) if m else "its default"


def submits(args):
    out = run([sys.executable, os.path.join(HERE, "bench_submit.py"),
               "--launches", str(args.launches), "--connections",
               str(args.connections), "--rounds", str(args.rounds)])
    r = json.loads(out.strip().splitlines()[-1])
    n, c = r["launches"], r["connections"]
    raw_n, raw_1 = r["raw_n"]["rate"], r["raw_1"]["rate"]
    budget = default_budget()
    rows = []
    # the default budget caps the worker's requests (a submit is two: the
    # POST and the release of the held job it made): the
    # target is the worker's own pace, without it
    # the ratio: the median of each round's own (a round runs raw N and
    # the worker back to back, under the same background load)
    for key, what, target in (
            ("worker_unlimited", "no budget (FORGE_SLURM_MAX_RPS=0)",
             ">= 0.8"),
            ("worker", f"default budget (FORGE_SLURM_MAX_RPS={budget})",
             f"- (at most {budget}/s by design)")):
        w = r[key]["rate"]
        rows.append((f"submits/s, {n} launches through 1 worker, "
                     f"{c} connections, {what}; ratio: median of the "
                     f"rounds' own",
                     f"{w:.0f}",
                     f"raw POSTs of the same bodies, {c} keep-alive "
                     f"connections: {raw_n:.0f}",
                     statistics.median(r["ratios"][key]), target))
    w = r["worker_unlimited"]["rate"]
    rel = r["raw_n_release"]["rate"]
    rows.append((f"submits/s, 1 worker, no budget, against the two calls "
                 f"it makes per launch (every job submitted held, then "
                 f"released); ratio: median of the rounds' own",
                 f"{w:.0f}",
                 f"raw POST + release of the same bodies, {c} keep-alive "
                 f"connections: {rel:.0f}",
                 statistics.median(r["ratios"]["worker_unlimited_vs_release"]),
                 "-"))
    # what any client that submits held can reach: the release is a
    # second slurmctld RPC per job (no slurmrestd call releases several)
    rows.append((f"raw POST + release/s, {c} keep-alive connections (the "
                 f"most a held submit allows); ratio: median of the rounds' "
                 f"own",
                 f"{rel:.0f}",
                 f"raw POSTs of the same bodies, {c} keep-alive "
                 f"connections: {raw_n:.0f}",
                 statistics.median(
                     x / y for x, y in zip(r["raw_n_release"]["rates"],
                                           r["raw_n"]["rates"])), "-"))
    scheme = r.get("scheme", "http")
    client = r["client_n_release"]["rate"]
    rows.append((f"submits/s over {scheme}, the worker's Slurm client alone "
                 f"(its held submit: POST + release), {c} connections, a "
                 f"client each; ratio: median of the rounds' own",
                 f"{client:.0f}",
                 f"bare libcurl POST + release of the same bodies over "
                 f"{scheme}, {c} keep-alive connections: "
                 f"{r['curl_n_release']['rate']:.0f}",
                 statistics.median(r["ratios"]["client_vs_curl"]), ">= 0.8"))
    rows.append((f"submits/s over {scheme}, the worker's Slurm client alone, "
                 f"{c} connections; ratio: median of the rounds' own",
                 f"{client:.0f}",
                 f"raw POST + release (Python) of the same bodies over "
                 f"{scheme}, {c} keep-alive connections: {rel:.0f}",
                 statistics.median(r["ratios"]["client_vs_raw"]), "-"))
    rows.append((f"submits/s, 1 worker, no budget", f"{w:.0f}",
                 f"raw POSTs, 1 keep-alive connection: {raw_1:.0f}",
                 w / raw_1, "-"))
    fresh = r["raw_n_fresh"]["rate"]
    rows.append((f"raw POSTs/s, {c} connections, a new one per POST (as a "
                 f"worker's submit was before it kept them)", f"{fresh:.0f}",
                 f"{c} keep-alive connections: {raw_n:.0f}",
                 fresh / raw_n, "-"))
    trip = r["raw_1"]["latency"]
    alone = r["alone"]
    for lat, what in ((alone["latency"], f"one at a time ({alone['launches']}"
                                         " launches, an idle worker)"),
                      (r["worker_unlimited"]["latency"], f"{n} at once")):
        rows.append((f"ACCEPTED -> SUBMITTED, median per launch, {what}",
                     f"{lat * 1000:.0f} ms",
                     f"one POST's round trip, keep-alive: "
                     f"{trip * 1000:.1f} ms", lat / trip, "-"))
    rounds = "; ".join(f"{k} {', '.join(f'{x:.0f}' for x in r[k]['rates'])}"
                       for k in ("raw_1", "raw_n", "raw_n_fresh",
                                 "raw_n_release", "client_n_release",
                                 "curl_n_release", "worker",
                                 "worker_unlimited"))
    ratios = "; ".join(f"{k} {', '.join(f'{x:.2f}' for x in r['ratios'][k])}"
                       for k in ("worker_unlimited", "worker"))
    return rows, (f"submits/s of each round (median kept; the phases of "
                  f"a round run back to back): {rounds}. Worker / raw "
                  f"{c} keep-alive of the same round: {ratios}.")


def render(args):
    out = run([os.path.join(BUILD, "bench", "bench_render"), "2"])
    base = number(r"baseline\s+jansson parse only\s+([0-9.]+)", out)
    prep = number(r"measured\s+parse\+validate\+render\s+([0-9.]+)", out)
    ratio = number(r"ratio\s+prepare cost / parse cost\s+([0-9.]+)x", out)
    kernel = re.search(r"kernel\s+share of CPU time: (.*) \(", out)
    return [("requests/s (CPU time), parse+validate+render (one ~2 KiB "
             "request)", f"{prep:.0f}", f"bare jansson parse: {base:.0f}",
             ratio, "<= 2 (cost)")], (
        "The two loops alternate in rounds; CPU time, median of the rounds' "
        "ratios. Kernel share of CPU time: "
        f"{kernel.group(1) if kernel else '?'}.")


def archive(args):
    out = run([os.path.join(BUILD, "bench", "bench_archive"),
               str(args.archive_mib), "4"])
    tar = number(r"baseline\s+tar czf \(gzip -6\)\s+([0-9.]+)", out)
    ours = number(r"measured\s+forge_archive_logs\s+([0-9.]+)", out)
    none = number(r"tail\s+of a 64 KiB log: none registered ([0-9.]+) us", out)
    many = number(r"secrets registered ([0-9.]+) us", out)
    listed = number(r"searched one by one ([0-9.]+) us", out)
    return [(f"MiB/s, logs archived ({args.archive_mib} MiB, 4 files)",
             f"{ours:.1f}", f"tar czf: {tar:.1f}", ours / tar, ">= 0.8"),
            ("an archive's tail (64 KiB log) with 100,000 secrets registered"
             " (a worker holding 100,000 launches)", f"{many:.0f} us",
             f"none registered: {none:.0f} us", many / none, "-"),
            ("the same tail, the 100,000 secrets searched one by one",
             f"{listed:.0f} us", f"registered: {many:.0f} us",
             listed / many, "-")], None


def restore(args):
    rows, notes = [], []
    forms = ((None, "sealed request, as a worker writes it with a job id"),
             ("--whole", "whole sealed request, as workers before issue 13 "
                         "wrote it"),
             ("--bare", "no request, as held_jobs.py writes"))
    for form, what in forms:
        out = run([sys.executable, os.path.join(HERE, "bench_restore.py"),
                   "--sizes", args.restore_sizes] + ([form] if form else []))
        r = json.loads(out.strip().splitlines()[-1])
        over = r.get("listener", "PLAINTEXT")  # SASL_SSL: the secured stack
        for s in r["sizes"]:
            n = s["n"]
            rows.append((f"restore over {over}, {n:,} launches ({what})",
                         f"{s['restore_ms']:.0f} ms",
                         f"plain consumer over {over}, same partitions: "
                         f"{s['baseline_ms']:.0f} ms", s["ratio"],
                         "<= 1.2" if n >= 100000 else "-"))
            rows.append((f"restore, {n:,} launches ({what}), against a "
                         "consumer that asks the leaders first",
                         f"{s['restore_ms']:.0f} ms",
                         "the same consumer, the topic's leaders asked "
                         "before it assigns (as the worker's reader): "
                         f"{s['leaders_first_ms']:.0f} ms",
                         s["ratio_leaders_first"], "-"))
            if form is None and over != "PLAINTEXT":
                rows.append((f"restore over {over}, {n:,} launches",
                             f"{s['restore_ms']:.0f} ms",
                             "the same records restored over PLAINTEXT: "
                             f"{s['restore_plaintext_ms']:.0f} ms",
                             s["restore_ms"] / s["restore_plaintext_ms"],
                             "-"))
                rows.append((f"plain consumer over {over}, {n:,} launches",
                             f"{s['baseline_ms']:.0f} ms",
                             "the same consumer over PLAINTEXT: "
                             f"{s['plaintext_ms']:.0f} ms",
                             s["baseline_ms"] / s["plaintext_ms"], "-"))
            rows.append((f"RSS per tracked launch, {n:,} launches ({what})",
                         f"{s['per_launch_bytes']:.0f} B",
                         f"1 KiB over the idle worker ({s['idle_kib']} KiB)",
                         s["per_launch_bytes"] / 1024.0, "<= 1"))
        notes.append(f"restore ({what}): the worker's restore is the time "
                     "its restore passes took, by its log (reading and "
                     "decoding, then the table); the plain consumer "
                     "assigns before it knows the leaders and waits ~500 ms "
                     "for librdkafka's offset query timer, which the "
                     "worker's reader no longer does: the second ratio "
                     "leaves that wait out; the jobs named do not "
                     "exist and the worker's Slurm URL answers nothing, so "
                     "nothing is polled")
    return rows, "; ".join(notes)


def kib(b):
    return f"{b / 1024:,.0f} KiB" if b < 1 << 20 else f"{b / (1 << 20):,.1f} MiB"


def poll_rows(z):
    """The rows of one size of bench_poll.py's ticks."""
    n, st, first = z["jobs"], z["steady"], z["first"]
    pj, alljobs, target = z["per_job"], z["all_jobs"], z["target_calls"]
    ok = "met" if st["calls"] <= target else "NOT met"
    every = ("one GET /jobs (estimated: N x the job/{id} answer, not asked "
             "at this size)" if alljobs["estimated"] else
             f"one GET /jobs ({alljobs['jobs']:,} jobs, "
             f"{alljobs['wall_s']:.1f} s)")
    cpu = st["cpu_s"]
    return [
        (f"poll tick, {n:,} owned live jobs: slurmrestd calls per steady "
         "tick", f"{st['calls']}",
         f"per-job polling: {n:,} calls", st["calls"] / n,
         f"<= ceil(N/256) = {target} calls ({ok})"),
        (f"poll tick, {n:,} jobs: bytes answered per steady tick",
         kib(st["bytes"]),
         f"per-job polling: {kib(pj['bytes'])} (sample of {pj['sample']} "
         "scaled)", st["bytes"] / pj["bytes"], "-"),
        (f"poll tick, {n:,} jobs: bytes answered per steady tick",
         kib(st["bytes"]), f"{every}: {kib(alljobs['bytes'])}",
         st["bytes"] / alljobs["bytes"], "-"),
        (f"poll tick, {n:,} jobs: wall time of a steady tick",
         f"{st['wall_s'] * 1000:,.0f} ms",
         f"per-job polling: {pj['wall_s']:,.1f} s (sample scaled)",
         st["wall_s"] / pj["wall_s"], "-"),
        (f"poll tick, {n:,} jobs: worker CPU per steady tick (mean of "
         f"{st['ticks']})", f"{cpu * 1000:,.0f} ms",
         f"the tick's wall time: {st['wall_s'] * 1000:,.0f} ms",
         cpu / st["wall_s"] if st["wall_s"] else 0,
         f"every tick's CPU <= 1 s "
         f"({'met' if st['cpu_max_s'] <= 1 else 'NOT met'})"),
        (f"first poll tick after a restart (the restore), {n:,} jobs: "
         f"calls ({', '.join(f'{v} {k}' for k, v in first['kinds'].items())})",
         f"{first['calls']}", f"a steady tick: {st['calls']}",
         first["calls"] / st["calls"], "<= 1"),
    ]


def latency_rows(runs):
    """Job end -> terminal event: push against poll only, each against
    poll only at the same interval when there is one, else the interval."""
    rows = []
    polled = {r["interval_ms"]: r for r in runs if not r.get("push")}
    for r in runs:
        iv = r["interval_ms"] / 1000
        how = (f"with jobcomp/kafka (push), poll every {iv:g} s"
               if r.get("push") else f"poll only, every {iv:g} s")
        base = polled.get(r["interval_ms"]) if r.get("push") else None
        for stat in ("median", "p99"):
            got = r[f"{stat}_s"]
            if base:
                against = (f"poll only every {iv:g} s: "
                           f"{base[f'{stat}_s']:.2f} s", base[f"{stat}_s"])
            else:
                against = (f"the interval: {iv:g} s", iv)
            target = "-"
            if r.get("push") and stat == "median":
                # an absolute goal, not a ratio (verdict() reads "<= N")
                target = f"median <= 1 s ({'met' if got <= 1 else 'NOT met'})"
            rows.append((f"job end -> terminal event, {how}, "
                         f"{r['launches']} jobs ending at random phase ({stat})",
                         f"{got:.2f} s", against[0], got / against[1], target))
    return rows


def rate_rows(runs):
    push = next((r for r in runs if r["push"]), None)
    poll_only = next((r for r in runs if not r["push"]), None)
    if not push or not poll_only:
        return []
    return [(f"slurmrestd requests per hour, {push['jobs']:,} live jobs, "
             f"jobcomp push + a {push['interval_ms'] / 1000:g} s poll "
             f"(counted over {push['window_s']} s)", f"{push['per_hour']:,.0f}",
             f"poll only every {poll_only['interval_ms'] / 1000:g} s: "
             f"{poll_only['per_hour']:,.0f}",
             push["per_hour"] / poll_only["per_hour"], "-")]


def poll(args):
    env = dict(os.environ)
    env.pop("FORGE_BENCH_LOCKED", None)
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "bench_poll.py"), "--sizes",
         args.poll_sizes], check=True, stdout=subprocess.PIPE, text=True,
        env=env)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = []
    for z in r["sizes"]:
        rows.extend(poll_rows(z))
    rows.extend(latency_rows(r["latency"]))
    rows.extend(rate_rows(r.get("rate") or []))
    note = ("poll ticks: held jobs owned through records without "
            "slurm_states; worker CPU from /proc/<pid>/stat (10 ms steps) "
            "over each tick's calls + 0.3 s; " + "; ".join(
                f"{z['jobs']:,} jobs submitted in {z['submitted_s']:.0f} s, "
                f"restored and ready in {z['restored_s']:.0f} s, tick every "
                f"{z['poll_ms']} ms" for z in r["sizes"]) +
            "; latency: " + "; ".join(
                f"{lat['interval_ms']} ms{' push' if lat.get('push') else ''}: "
                f"min {lat['min_s']:.2f} s, mean {lat['mean_s']:.2f} s, "
                f"max {lat['max_s']:.2f} s" for lat in r["latency"]))
    return rows, note


def live(args):
    out = run([sys.executable, os.path.join(HERE, "bench_live.py")])
    r = json.loads(out.strip().splitlines()[-1])
    rows, notes = [], []
    records = ("records without a request" if r["form"] == "bare" else
               "records as a worker leaves a running launch (a job id, what "
               "is kept of its request sealed: labels and two secrets of "
               "its own, redacted from every chunk)")
    if "steady" in r:
        st = r["steady"]
        n, on, off = st["launches"], st["on"], st["off"]
        per_min = 60.0 / on["window_s"]
        printed = on["written"] / n * per_min
        p = on["produced"]
        logs, state = p["logs"] / n * per_min, p["state"] / n * per_min
        cpu_on = on["cpu_s"] * 60.0 / on["window_s"]
        cpu_off = off["cpu_s"] * 60.0 / off["window_s"]
        extra_ms = (cpu_on - cpu_off) * 1000 / n
        what = f"{n:,} launches each printing an 80-byte line a second"
        rows += [
            (f"worker CPU per minute, {what}, live logs on (every launch "
             f"followed)", f"{cpu_on:.2f} s ({extra_ms:.1f} ms a launch "
             "over off)", "live logs off, same launches, writer and "
             f"window: {cpu_off:.2f} s", cpu_on / cpu_off, "-"),
            (f"bytes produced per followed launch per minute ({what}): "
             "record values on the logs and state topics",
             f"{logs + state:,.0f} B", "bytes the job printed per minute: "
             f"{printed:,.0f} B", (logs + state) / printed, "-"),
            ("of which the log_chunk events (logs topic)",
             f"{logs:,.0f} B ({on['chunks'] / n * per_min:.0f} chunks)",
             f"printed: {printed:,.0f} B", logs / printed, "-"),
            ("of which the launch's record, written with each chunk (state "
             "topic: the files' cursors)", f"{state:,.0f} B",
             f"printed: {printed:,.0f} B", state / printed, "-"),
            ("file bytes the chunks carried per launch per minute (the "
             "lines, checked)", f"{on['chunk_bytes'] / n * per_min:,.0f} B",
             f"printed: {printed:,.0f} B",
             on["chunk_bytes"] / on["written"], "-")]
        notes.append(
            f"live logs, {n:,} launches: {records} seeded into fresh topics "
            "(FORGE_LOG_LIVE=on follows them all), each launch's staging "
            "folder under the run's own storage root, a writer process "
            "appending one numbered 80-byte line a second to each main.out; "
            "the worker's Slurm URL answers nothing, so its ticks change "
            f"nothing. Over a {on['window_s']:.0f} s window after a 5 s "
            "warm-up: the worker's CPU from /proc/<pid>/stat (utime + "
            "stime), the bytes from the record values whose timestamps fall "
            "in the window (read_committed, after the run); keys and "
            f"headers add {(p['keys'] + p['headers']) / n * per_min:,.0f} B "
            f"a launch a minute. The chunks ({on['chunks']:,}) carried "
            f"{on['lines']:,} lines of the {on['lines_written']:,} written "
            "in the window; with live logs off, none")
    if "flood" in r:
        fl = r["flood"]
        n, on, off = fl["launches"], fl["on"], fl["off"]
        cap = f"{fl['rate'] // 1024} KiB/s a file"
        what = (f"{n} launches printing as fast as they can (the writer "
                f"capped at {cap}), poll every 1 s")
        for stat, of in (("median", statistics.median), ("max", max)):
            a, b = of(on["ticks_ms"]), of(off["ticks_ms"])
            rows.append((f"poll tick lateness ({stat}), {what}, live logs on",
                         f"{a:.0f} ms ({len(on['ticks_ms'])} ticks)",
                         f"live logs off, same launches and writer: "
                         f"{b:.0f} ms", a / b if b else 0, "-"))
        rows.append((f"worker CPU over the window, {what}, live logs on",
                     f"{on['cpu_s']:.2f} s in {on['window_s']:.0f} s",
                     f"live logs off: {off['cpu_s']:.2f} s",
                     on["cpu_s"] / off["cpu_s"], "-"))
        rows.append((f"worker RSS, its peak over the window, {what}, live "
                     "logs on", f"{on['rss_peak_kib'] / 1024:.1f} MiB",
                     "as the writer started: "
                     f"{on['rss_start_kib'] / 1024:.1f} MiB",
                     on["rss_peak_kib"] / on["rss_start_kib"], "-"))
        carried, wrote = on["chunk_bytes"] / n, on["written"] / n
        ok = "met" if carried <= 1 << 20 else "NOT met"
        rows.append((f"file bytes the chunks carried per launch over the "
                     f"window, {n} launches printing as fast as they can",
                     f"{carried / (1 << 20):.2f} MiB",
                     f"bytes each launch wrote: {wrote / (1 << 20):.1f} MiB",
                     carried / wrote,
                     f"within the budget, 1 MiB a launch in any 60 s ({ok})"))
        skipped = on["metrics"]["forge_log_skipped_bytes_total"]
        notes.append(
            f"With {n} launches printing as fast as they can: the "
            "same set-up, a writer appending to each main.out at most "
            f"{cap} ({on['written'] / on['window_s'] / (1 << 20):.0f} MiB/s "
            "in all, the disk spared), the worker polling every second "
            "(FORGE_POLL_INTERVAL_MS=1000) and logging at debug; over "
            f"{on['window_s']:.0f} s from the writer's start: the ticks' "
            "lateness from the worker's \"poll tick: N live jobs, X ms "
            "late\" lines (a tick waits for the loop's next step: up to "
            "~100 ms by design), its RSS (VmRSS, every 0.2 s; "
            f"{on['rss_end_kib'] / 1024:.1f} MiB at the window's end, peak "
            f"{off['rss_peak_kib'] / 1024:.1f} MiB with live logs off). The "
            f"chunks ({on['chunks']:,}, over {on['chunk_span_s']:.0f} s of "
            "the window: then every launch's minute's budget was spent) "
            f"carried {on['chunk_bytes'] / (1 << 20):.0f} MiB and skipped "
            f"{skipped / (1 << 20):,.0f} MiB (forge_log_skipped_bytes_total)")
    return rows, ". ".join(notes)


def container(args):
    out = run([sys.executable, os.path.join(HERE, "bench_container.py"),
               "--rounds", str(args.rounds * 7)])
    r = json.loads(out.strip().splitlines()[-1])
    rows = []
    for kind, what in (("warm", "warm (its pages cached)"),
                       ("cold", "cold (its pages dropped first)")):
        c = statistics.median(r[kind]["container"]) * 1000
        b = statistics.median(r[kind]["bare"]) * 1000
        rows.append((f"a task's start in its container, {what}: apptainer "
                     f"exec --cleanenv of {r['image']} "
                     f"({r['bytes'] / (1 << 20):.0f} MiB), /bin/true, median",
                     f"{c:.0f} ms", f"a bare exec of /bin/true in the same "
                     f"root: {b:.1f} ms", c / b, "-"))
    note = (f"container starts: {len(r['warm']['container'])} of each, in "
            "the stack's cluster root entered as its jobs are (pivot_root, "
            "the job user: tests/e2e/stack.d/slurm.sh as-job), timed by "
            "bash's EPOCHREALTIME around each exec; cold: "
            "posix_fadvise(DONTNEED) on the image file before each start. "
            "Max warm "
            f"{max(r['warm']['container']) * 1000:.0f} ms, max cold "
            f"{max(r['cold']['container']) * 1000:.0f} ms: a task pays "
            "this once, at its start")
    return rows, note


def group(args):
    out = run([sys.executable, os.path.join(HERE, "bench_group.py"),
               "--rounds", str(args.rounds)])
    r = json.loads(out.strip().splitlines()[-1])
    rows = []
    for event, what in (("join", "a fourth worker joins"),
                        ("leave", "one of three leaves (SIGTERM)")):
        c = statistics.median(r["consumer"][event])
        b = statistics.median(r["classic"][event])
        rows.append((f"the longest time a moved partition has no owner when "
                     f"{what}, 3 workers, launches flowing: the consumer "
                     f"group protocol (KIP-848), median of "
                     f"{len(r['consumer'][event])} rounds",
                     f"{c:.2f} s", f"classic, cooperative-sticky: {b:.2f} s",
                     c / b, "-"))
    note = ("group protocols: each round a fresh group of three workers on "
            "fresh topics (6 partitions), launches sent 2 a second, the "
            "protocols interleaved; ownerless = a partition's revoke on "
            "the worker that had it to its restore on the one that takes "
            "it (the workers' logs), the defaults for session and "
            "heartbeat (librdkafka's 45 s / 3 s for classic, the broker's "
            "group.consumer.heartbeat.interval.ms 5 s for consumer). Per "
            "round, join classic "
            + ", ".join(f"{x:.2f}" for x in r["classic"]["join"])
            + " s, consumer "
            + ", ".join(f"{x:.2f}" for x in r["consumer"]["join"])
            + " s; leave classic "
            + ", ".join(f"{x:.2f}" for x in r["classic"]["leave"])
            + " s, consumer "
            + ", ".join(f"{x:.2f}" for x in r["consumer"]["leave"]) + " s")
    return rows, note


BENCHES = {"submits": submits, "render": render, "archive": archive,
           "restore": restore, "poll": poll, "live": live,
           "container": container, "group": group}
UNLOCKED = {"poll"}  # takes the lock itself, exclusively


def verdict(ratio, target):
    m = re.match(r"(>=|<=) ([0-9.]+)", target)
    if not m:
        return ""
    ok = ratio >= float(m.group(2)) if m.group(1) == ">=" else \
        ratio <= float(m.group(2))
    return " (met)" if ok else " (NOT met)"


def table(rows):
    lines = ["| measure | measured | baseline, same run | ratio | target |",
             "|---|---|---|---|---|"]
    for what, value, base, ratio, target in rows:
        shown = f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"
        lines.append(f"| {what} | {value} | {base} | {shown} | "
                     f"{target}{verdict(ratio, target)} |")
    return "\n".join(lines)


def measure_of(line):
    """A table row's measure (its first cell)."""
    return line[2:].split(" | ", 1)[0]


def merge_into(path, text, notes, ran, host):
    """--merge: the existing file with this run's rows and notes in it. A
    row whose measure this run measured again is replaced where it stands,
    a new one appended; a note that begins as one of this run's (its text
    up to the first ':') is replaced, else this run's is appended; and a
    paragraph before the table says when these rows were measured (one an
    earlier merge of the same benchmarks wrote is replaced)."""
    with open(path) as f:
        lines = f.read().rstrip("\n").split("\n")
    first = next(i for i, line in enumerate(lines)
                 if line.startswith("| measure |"))
    last = first
    while last + 1 < len(lines) and lines[last + 1].startswith("|"):
        last += 1
    head = "\n".join(lines[:first]).strip().split("\n\n")
    rows = lines[first + 2:last + 1]
    old_notes = [p for p in "\n".join(lines[last + 1:]).strip().split("\n\n")
                 if p]
    at = {measure_of(line): i for i, line in enumerate(rows)}
    for line in text.split("\n")[2:]:
        if measure_of(line) in at:
            rows[at[measure_of(line)]] = line
        else:
            rows.append(line)
    for note in (f"{n.rstrip('.')}." for n in notes):
        key = note.split(":", 1)[0]
        same = [i for i, p in enumerate(old_notes)
                if p.split(":", 1)[0] == key]
        if same:
            old_notes[same[0]] = note
        else:
            old_notes.append(note)
    which = f"The {', '.join(ran)} rows and their note"
    said = (f"{which}: {host}, a run of those rows alone (`bench/"
            f"bench_all.py {' '.join(sys.argv[1:])}`); the other rows from "
            "the last full run above.")
    head = [p for p in head if not p.startswith(which + ":")] + [said]
    table_text = "\n".join(lines[first:first + 2] + rows)
    return "\n\n".join(head + [table_text] + old_notes) + "\n\n"


def describe_host():
    commit = run(["git", "-C", TOP, "describe", "--always", "--dirty"]).strip()
    load = os.getloadavg()
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
            f"UTC, commit {commit}, {os.cpu_count()} cores, load "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=300)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--archive-mib", type=int, default=64)
    ap.add_argument("--restore-sizes", default="1000,10000,100000")
    ap.add_argument("--out", default=os.path.join(TOP, "docs",
                                                  "BENCHMARKS.md"))
    ap.add_argument("--poll-sizes", default="1000,10000,100000")
    ap.add_argument("--skip", default="")
    ap.add_argument("--merge", action="store_true",
                    help="this run's rows into --out, the others kept")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    rows, notes, ran = [], [], []
    for name, bench in BENCHES.items():
        if name in skip:
            continue
        ran.append(name)
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        with (contextlib.nullcontext() if name in UNLOCKED
              else shared_lock()):
            r, note = bench(args)
        rows.extend(r)
        if note:
            notes.append(note)
    text = table(rows)
    print(text)
    host = describe_host()  # before the file is opened: a clean tree
    if args.merge and os.path.exists(args.out):
        merged = merge_into(args.out, text, notes, ran, host)
        with open(args.out, "w") as f:
            f.write(merged)
        print(f"merged into {args.out}", file=sys.stderr)
        return
    with open(args.out, "w") as f:
        f.write("# Benchmarks\n\n"
                "Written by `scripts/bench` (never by hand; not part of "
                "`scripts/test`): each figure next to a baseline measured "
                "in the same run on the same machine, so the ratio is what "
                "carries from one machine to another. Ratios are "
                "measured / baseline, but for render, where it is the "
                "cost ratio (baseline rate / measured rate).\n\n"
                f"Last run: {host}.\n\n"
                f"{text}\n\n"
                + "".join(f"{n.rstrip('.')}.\n\n" for n in notes))
    print(f"written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
