# SPDX-License-Identifier: Apache-2.0
"""
chaos.py - the pieces of the chaos scenarios (test_chaos.py): a fleet of
workers that can be killed and restarted, a driver that sends a mix of
launches and cancels at a steady pace, the faults (kill -9 of a worker; one
stack daemon stopped, started or restarted through tests/e2e/stack; random
transaction aborts are the worker's test point FORGE_TEST_ABORT_TXN_RANDOM),
and the verdict, read back from the topics (read_committed) and from what
SlurmWatch saw of Slurm.

Nothing here is a fake: real workers, the real broker and Slurm, the real
stack daemons stopped and restarted. The only injected fault is the random
abort (a test point of the worker's test builds), standing in for the
abortable commit errors a flaky broker gives.

The figures of each scenario (launches sent / terminal / lost / duplicate
terminal events / duplicate live jobs / false LOST or FAILED / time from
the last fault to all terminal, and more) are kept in SUMMARY, printed,
appended to chaos-summary.txt under FORGE_E2E_LOGS (or the scenario's log
folder), and shown by conftest.py at the end of the pytest run.
"""

import collections
import hashlib
import heapq
import json
import os
import random
import subprocess
import tarfile
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from harness import (TERMINAL, TOP, StatusReader, Topics, Worker, free_port,
                     het_launch, launch, stack_verb, unique_id)

SUMMARY = []  # one line per scenario run, for conftest's terminal summary
# The test's own Kafka clients say nothing below critical: a broker restart
# is what the scenario does, not news (the workers' logs keep theirs).
QUIET = {"log_level": 2}

# What each kind of launch must end as; cancels target a job that would run
# far longer than the cancel takes to arrive.
EXPECTED = {"success": "SUCCEEDED", "failure": "FAILED", "het": "SUCCEEDED",
            "cancel": "CANCELLED"}
# The mix, per 20 launches: 10 short successes, 3 failures, 3 het, 4 cancels.
MIX = ["success"] * 10 + ["failure"] * 3 + ["het"] * 3 + ["cancel"] * 4


def long_mode():
    return os.environ.get("FORGE_CHAOS_LONG", "") not in ("", "0")


# ---- the launches ------------------------------------------------------------

class Planned:
    def __init__(self, lid, kind, request, cancel_after=None):
        self.lid = lid
        self.kind = kind
        self.request = request
        self.cancel_after = cancel_after  # seconds after the launch is sent
        self.sent_at = None


def plan(prefix, count, rng):
    """count launches of the mix, shuffled by rng."""
    kinds = [MIX[i % len(MIX)] for i in range(count)]
    rng.shuffle(kinds)
    out = []
    for i, kind in enumerate(kinds):
        lid = f"{prefix}-{i:03d}-{kind[:2]}-{unique_id('x')[2:8]}"
        if kind == "success":
            cmd = f"sleep {rng.choice([0, 1, 2, 3])}; echo ok {lid}"
            req = launch(lid, ["/bin/sh", "-c", cmd],
                         series=rng.choice(["h200", "a100"]))
            out.append(Planned(lid, kind, req))
        elif kind == "failure":
            cmd = "sleep 1; echo failing on purpose >&2; exit 3"
            out.append(Planned(lid, kind, launch(lid, ["/bin/sh", "-c", cmd])))
        elif kind == "het":
            cmd = 'sleep 1; echo "het $FORGE_POOL"'
            out.append(Planned(lid, kind, het_launch(lid, ["/bin/sh", "-c", cmd])))
        else:
            # Cancelled at once (often before its submit) or once it runs.
            after = rng.choice([0.2, 0.5, 2.0, 4.0, 6.0, 8.0])
            req = launch(lid, ["/bin/sh", "-c", "sleep 280"],
                         series=rng.choice(["h200", "a100"]))
            out.append(Planned(lid, kind, req, after))
    return out


class Driver:
    """Sends the planned launches, spread evenly over span seconds, and each
    cancel cancel_after seconds after its launch, on its own thread. Its
    producer is idempotent: a broker restart never reorders a cancel before
    its launch, and messages sent while the broker is down wait in its queue."""

    def __init__(self, stack, topics, planned, span):
        self.topics = topics
        self.planned = planned
        self.span = span
        self.producer = Producer({**stack.kafka_conf("platform"),
                                  "partitioner": "murmur2_random",
                                  "enable.idempotence": True,
                                  "linger.ms": 5,
                                  **QUIET})
        self.delivered = 0
        self.failed = []
        self.cancels_sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, err, msg):
        if err is None:
            self.delivered += 1
        else:
            self.failed.append((msg.key(), str(err)))

    def _send(self, key, value):
        while True:
            try:
                self.producer.produce(self.topics.requests, key=key,
                                      value=json.dumps(value).encode(),
                                      on_delivery=self._report)
                return
            except BufferError:
                self.producer.poll(0.5)

    def _run(self):
        start = time.monotonic()
        step = self.span / max(1, len(self.planned))
        cancels = []
        for i, p in enumerate(self.planned):
            due = start + i * step
            while True:
                now = time.monotonic()
                while cancels and cancels[0][0] <= now:
                    _, lid = heapq.heappop(cancels)
                    self._send(lid, {"kind": "cancel", "launch_id": lid})
                    self.cancels_sent += 1
                if now >= due:
                    break
                self.producer.poll(min(0.1, due - now))
            self._send(p.lid, p.request)
            p.sent_at = time.time()
            if p.cancel_after is not None:
                heapq.heappush(cancels, (time.monotonic() + p.cancel_after, p.lid))
        while cancels:
            due, lid = heapq.heappop(cancels)
            while time.monotonic() < due:
                self.producer.poll(0.1)
            self._send(lid, {"kind": "cancel", "launch_id": lid})
            self.cancels_sent += 1
        self.producer.flush(300)

    def start(self):
        self.thread.start()

    def join(self, timeout):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the driver did not finish sending"
        assert not self.failed, f"requests not delivered: {self.failed[:5]}"


# ---- the fleet ----------------------------------------------------------------

class Fleet:
    """size workers of one group. kill9 kills one and starts it again under
    the same worker id (as a restarted pod would: it fences its zombie's
    transactions); a worker that exits without being told is a crash,
    counted and started again so the scenario goes on."""

    def __init__(self, stack, topics, logdir, size=3, extra_env=None):
        self.stack, self.topics, self.logdir = stack, topics, logdir
        self.extra_env = extra_env or {}
        self.group = unique_id("g")
        self.workers = {}
        self.crashes = []  # (worker_id, exit code, log tail)
        self.kills = 0
        self.lock = threading.Lock()
        for i in range(size):
            wid = unique_id(f"chaos{i}")
            self.workers[wid] = self._spawn(wid)

    def _spawn(self, wid):
        """A worker with its own listener (/readyz, /metrics): its port is
        the worker's http_port."""
        port = free_port()
        w = Worker(self.stack, self.topics, wid, self.group, self.logdir,
                   {**self.extra_env, "FORGE_HTTP_LISTEN": f"127.0.0.1:{port}"})
        w.http_port = port
        return w

    def wait_ready(self):
        for w in self.workers.values():
            w.wait_ready(timeout=90)

    def kill9(self, rng):
        with self.lock:
            wid = rng.choice(sorted(self.workers))
            w = self.workers[wid]
            w.kill9()
            w.stop_quietly()
            self.workers[wid] = self._spawn(wid)
            self.kills += 1
        return wid

    def check(self):
        """Counts and restarts a worker that exited on its own."""
        with self.lock:
            for wid, w in list(self.workers.items()):
                rc = w.proc.poll()
                if rc is None:
                    continue
                self.crashes.append((wid, rc, w.tail(15)))
                w.stop_quietly()
                self.workers[wid] = self._spawn(wid)

    def lines(self):
        out = []
        for w in self.workers.values():
            out.extend(w.lines())
        return out

    def stop(self):
        """SIGTERM to each; their exit codes."""
        rcs = {}
        for wid, w in self.workers.items():
            try:
                rcs[wid] = w.terminate(timeout=90)
            except subprocess.TimeoutExpired:
                rcs[wid] = "no exit within 90 s"
        return rcs

    def stop_quietly(self):
        for w in self.workers.values():
            w.stop_quietly()


# ---- faults -------------------------------------------------------------------

class Faults:
    """What was done to the system, when: (what, start, end), epoch seconds."""

    def __init__(self):
        self.done = []

    def record(self, what, start):
        self.done.append((what, start, time.time()))

    def last_end(self):
        return max((end for _, _, end in self.done), default=None)


def sleep_watching(fleet, seconds):
    """Sleeps, noticing workers that die on their own."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        fleet.check()
        time.sleep(min(0.5, max(0.0, end - time.monotonic())))


# ---- settling and the verdict ------------------------------------------------

def first_terminal(events):
    return next((e for e in events if e["data"]["state"] in TERMINAL), None)


def wait_all_terminal(fleet, reader, planned, timeout):
    """Waits until every launch has a terminal event; the time the last one
    arrived, or None when some never did."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        fleet.check()
        if all(first_terminal(reader.of(p.lid)) for p in planned):
            break
        time.sleep(0.5)
    times = [first_terminal(reader.of(p.lid)) for p in planned]
    if not all(times):
        return None
    return max(e["_received"] for e in times)


def slurm_jobs(slurm, lid, attempt=1):
    """{leader: [final states of its components]} for one attempt's tag."""
    tag = f"forge:{lid}:{attempt}"
    out = {}
    with slurm.lock:
        for rec in slurm.jobs.values():
            if rec["comment"] == tag:
                out.setdefault(rec["leader"], []).append(list(rec["states"][-1]))
    return out


ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED")


def ended(state):
    return any(word in state for word in ENDED)


def still_completing(slurm, planned):
    """Whether a job of the scenario is still COMPLETING in Slurm."""
    return any("COMPLETING" in s for p in planned
               for finals in slurm_jobs(slurm, p.lid).values()
               for s in finals)


def knew_job(events):
    return any((e["data"].get("slurm") or {}).get("job_id") for e in events)


def slurm_end(jobs):
    """What Slurm says the attempt's last job ended as: COMPLETED when every
    component completed, else the first other final state, or None."""
    if not jobs:
        return None
    finals = jobs[max(jobs)]
    if all("COMPLETED" in s for s in finals):
        return "COMPLETED"
    for word in ("FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY"):
        if any(word in s for s in finals):
            return word
    return None  # still live when last sampled


# What srun prints when slurmctld goes away under a job that is starting.
SRUN_LOST_CTLD = ("srun: error: Unable to confirm allocation",
                  "srun: error: Unable to create step",
                  "Unable to contact slurm controller")


def killed_by_outage(end, truth, faults, archived):
    """A job that Slurm itself saw fail because its srun could not reach
    slurmctld while the scenario had it stopped: the end is the truth, and
    the fault's, not the worker's. Its archived logs say so."""
    if end != "FAILED" or truth != "FAILED" or not archived:
        return False
    if not any(what.startswith("slurmctld") for what, _, _ in faults.done):
        return False
    text = ""
    try:  # srun writes to the job's .err: read the archive itself
        with tarfile.open(archived[0]["data"]["archive"]["path"]) as tar:
            for member in tar.getmembers():
                f = tar.extractfile(member) if member.isfile() else None
                text += f.read(65536).decode("utf-8", "replace") if f else ""
    except (OSError, tarfile.TarError):
        return False
    return any(m in text for m in SRUN_LOST_CTLD)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Verdict:
    """Everything checked after a scenario settled, as counts and details."""

    def __init__(self, kind):
        self.kind = kind
        self.n = collections.Counter()
        self.states = collections.Counter()
        self.problems = []  # "<check>: <launch>: <detail>"
        self.notes = []  # what was seen and is no fault of the worker
        self.settle_s = None
        self.stall_s = None  # the longest time no status event came

    def bad(self, check, lid, detail):
        self.n[check] += 1
        self.problems.append(f"{check}: {lid}: {detail}")

    def line(self):
        n = self.n
        settle = ("never (some launch has no terminal event)"
                  if self.settle_s is None else f"{self.settle_s:.1f} s")
        states = " ".join(f"{k}={v}" for k, v in sorted(self.states.items()))
        return (f"chaos {self.kind}: sent {n['sent']} / terminal {n['terminal']}"
                f" / lost {n['lost']} / duplicate terminal events {n['dup_terminal']}"
                f" / duplicate live jobs {n['dup_live']}"
                f" / commands run twice {n['ran_twice']}"
                f" / false LOST/FAILED {n['false_lost']}"
                f" / last fault to all terminal {settle}"
                f" / longest stall {self.stall_s or 0:.1f} s"
                f" | faults {n['faults']}, seq breaks {n['seq']},"
                f" wrong end {n['wrong_end']},"
                f" failed by the slurmctld outage {n['outage_failed']},"
                f" logs events missing {n['logs_missing']},"
                f" logs events doubled {n['logs_dup']}, sha256 mismatches {n['sha256']},"
                f" staging left {n['staging_left']}, Slurm jobs left live {n['jobs_left']},"
                f" worker crashes {n['crashes']},"
                f" transactions aborted {n['aborts']}; ends: {states}")


def verify(kind, stack, slurm, fleet, reader, logs, planned, faults,
           all_terminal_at, logdir):
    v = Verdict(kind)
    v.n["sent"] = len(planned)
    v.n["faults"] = len(faults.done)
    last = faults.last_end()
    if all_terminal_at is not None and last is not None:
        v.settle_s = max(0.0, all_terminal_at - last)
    elif all_terminal_at is not None:
        v.settle_s = 0.0
    storage = stack.env["FORGE_STORAGE_ROOT"]

    reached = {}
    for p in planned:
        events = [e for e in reader.of(p.lid) if e["data"]["attempt"] == 1]
        jobs = slurm_jobs(slurm, p.lid)
        ends = [e for e in events if e["data"]["state"] in TERMINAL]
        if not ends:
            v.bad("lost", p.lid, f"no terminal event; states "
                  f"{[e['data']['state'] for e in events]}, slurm {jobs}")
            continue
        v.n["terminal"] += 1
        end = ends[0]["data"]["state"]
        v.states[end] += 1
        if len(ends) > 1:
            v.n["dup_terminal"] += len(ends) - 1
            v.problems.append(f"dup_terminal: {p.lid}: "
                              f"{[e['data']['state'] for e in ends]}")
        seqs = [e["data"]["seq"] for e in events]
        if seqs != list(range(1, len(seqs) + 1)):
            v.bad("seq", p.lid, f"seqs {seqs} states "
                  f"{[e['data']['state'] for e in events]}")
        if slurm.most_alive(p.lid) > 1:
            v.bad("dup_live", p.lid, f"{slurm.most_alive(p.lid)} live jobs at "
                  f"once: {jobs}")
        if len(slurm.ran(p.lid)) > 1:  # an interrupted submit is adopted
            v.bad("ran_twice", p.lid, f"jobs {slurm.ran(p.lid)} each ran the "
                  f"command: {jobs}")
        # LOST says Slurm had no record: false when SlurmWatch saw the job
        # end (any way); FAILED is false when the job completed.
        truth = slurm_end(jobs)
        if (end == "LOST" and truth) or (end == "FAILED" and truth == "COMPLETED"):
            v.bad("false_lost", p.lid, f"ended {end} ({ends[0]['data'].get('reason')})"
                  f" while SlurmWatch saw the job end {truth}: {jobs}")
        if end != EXPECTED[p.kind] and killed_by_outage(end, truth, faults,
                                                        logs.of(p.lid)):
            v.n["outage_failed"] += 1
            v.notes.append(f"outage_failed (not a fault of the worker): "
                           f"{p.lid}: {p.kind} ended FAILED as Slurm did, "
                           f"its srun lost slurmctld: {jobs}")
        elif end != EXPECTED[p.kind]:
            v.bad("wrong_end", p.lid, f"{p.kind} ended {end} "
                  f"({ends[0]['data'].get('reason')}); states "
                  f"{[e['data']['state'] for e in events]}, slurm {jobs}")
        # Reached Slurm as the platform was told (a job id in an event);
        # a job only SlurmWatch saw (an interrupted submit's) must have
        # been cancelled, and has no logs by the contract (§6).
        if knew_job(events):
            reached[p.lid] = jobs
        alive = [leader for leader, finals in jobs.items()
                 if not all(ended(s) for s in finals)]
        if alive:
            v.bad("jobs_left", p.lid, f"{end}, yet Slurm jobs {alive} still "
                  f"live: {jobs}")
    v.n["reached_slurm"] = len(reached)
    v.stall_s = longest_stall(reader, planned)

    for lid, jobs in reached.items():
        got = logs.of(lid)
        if not got:
            v.bad("logs_missing", lid, f"reached Slurm ({jobs}), no logs_archived")
            continue
        if len(got) > 1:
            v.bad("logs_dup", lid, f"{len(got)} logs_archived events")
        a = got[0]["data"]["archive"]
        try:
            if sha256_of(a["path"]) != a["sha256"]:
                v.bad("sha256", lid, f"{a['path']} does not match {a['sha256']}")
        except OSError as e:
            v.bad("sha256", lid, f"{a['path']}: {e}")
    for p in planned:
        if os.path.exists(os.path.join(storage, "staging", p.lid)):
            v.bad("staging_left", p.lid, "staging folder still there")
    v.n["crashes"] = len(fleet.crashes)
    for wid, rc, tail in fleet.crashes:
        v.problems.append(f"crash: {wid} exited {rc} on its own: {tail}")
    v.n["aborts"] = sum(1 for line in fleet.lines()
                        if "transaction aborted" in line.get("msg", ""))
    return v


def longest_stall(reader, planned):
    """The longest time between two status events of the scenario's
    launches, from the first to the last: how long the pipeline published
    nothing while launches were on their way."""
    times = sorted(e["_received"] for p in planned for e in reader.of(p.lid))
    return max((b - a for a, b in zip(times, times[1:])), default=0.0)


def settle_and_verify(kind, stack, slurm, fleet, reader, logs, planned,
                      faults, logdir, timeout):
    """Waits for every terminal event, then (a little longer, so a late
    duplicate would show) for the logs events and the staging cleanup,
    then checks; records and prints the figures whatever they are."""
    all_terminal_at = wait_all_terminal(fleet, reader, planned, timeout)
    sleep_watching(fleet, 5)

    def logs_and_staging_done():
        fleet.check()
        storage = stack.env["FORGE_STORAGE_ROOT"]
        for p in planned:
            if knew_job(reader.of(p.lid)) and not logs.of(p.lid):
                return False
            if os.path.exists(os.path.join(storage, "staging", p.lid)):
                return False
            if not all(ended(s) for finals in slurm_jobs(slurm, p.lid).values()
                       for s in finals):
                return False
        return True

    # 90 s once no job is COMPLETING any more: a cancelled job's completion
    # can take Slurm a minute (slurmd answering its TERMINATE_JOB late, seen
    # under load), and the worker asks again about a job still COMPLETING
    # at most every 60 s (loop/jobcomp.c's gates) before it archives.
    wait = 90 if all_terminal_at is not None else 5
    deadline = time.monotonic() + wait
    hard_deadline = deadline + 240
    while not logs_and_staging_done():
        now = time.monotonic()
        if still_completing(slurm, planned):
            deadline = min(max(deadline, now + wait), hard_deadline)
        if now >= deadline:
            break  # verify counts what is missing
        time.sleep(1.0)
    sleep_watching(fleet, 3)
    v = verify(kind, stack, slurm, fleet, reader, logs, planned, faults,
               all_terminal_at, logdir)
    figure(logdir, v.line(), v.problems + v.notes + ["faults: " + "; ".join(
        f"{what} at {time.strftime('%T', time.localtime(s))} for {e - s:.1f} s"
        for what, s, e in faults.done)])
    return v


def figure(logdir, line, details=()):
    """A scenario's figures: in SUMMARY (the terminal summary) and in the
    run's chaos-summary.txt, which scripts/e2e prints at its end."""
    SUMMARY.append(line)
    print(line)
    root = os.environ.get("FORGE_E2E_LOGS") or logdir
    with open(os.path.join(root, "chaos-summary.txt"), "a") as f:
        f.write(f"{time.strftime('%FT%T')} {line}\n")
        for d in details:
            f.write(f"    {d}\n")


def readers(stack, topics):
    return (StatusReader(stack, topics.status, conf=QUIET),
            StatusReader(stack, topics.logs, conf=QUIET))


def delete_topics(stack, topics):
    """A scenario's five topics, once it is over: a broker holding fewer
    partitions restarts faster for the next one."""
    admin = AdminClient({**stack.kafka_conf("admin"), **QUIET})
    names = [topics.requests, topics.state, topics.status, topics.logs,
             topics.dlq]
    for future in admin.delete_topics(names, operation_timeout=30).values():
        try:
            future.result(60)
        except Exception as e:  # noqa: BLE001 - kept for the next run's broker only
            print(f"chaos: deleting a topic: {e}")


def new_rng(kind):
    seed = int(os.environ.get("FORGE_CHAOS_SEED") or random.randrange(1 << 30))
    print(f"chaos {kind}: seed {seed} (FORGE_CHAOS_SEED repeats it)")
    return random.Random(seed)


# ---- one scenario ----------------------------------------------------------

SETTLE_TIMEOUT = 300
# A late POST's job (held, never started) is swept this long after the
# clean that preceded it: inside the settle wait, which waits for every
# tagged job to end.
LATE_JOB_SWEEP_S = 20


def run_scenario(kind, size, stack, slurm, logdir, faults_during,
                 extra_env=None):
    """size = (launches, seconds over which they are sent) through three
    workers of one group on fresh topics, faults_during(fleet, faults, rng,
    t0, span) doing the scenario's faults meanwhile; then the verdict,
    which must find no problem, and each worker must exit 0 on SIGTERM."""
    count, span = size
    rng = new_rng(kind)
    topics = Topics(stack, f"chaos-{kind}")
    reader, logs = readers(stack, topics)
    env = dict(extra_env(span) if extra_env else {})
    env.setdefault("FORGE_LATE_JOB_SWEEP_S", str(LATE_JOB_SWEEP_S))
    fleet = Fleet(stack, topics, logdir, 3, env)
    planned = plan(kind, count, rng)
    faults = Faults()
    try:
        fleet.wait_ready()
        driver = Driver(stack, topics, planned, span)
        t0 = time.monotonic()
        driver.start()
        faults_during(fleet, faults, rng, t0, span)
        driver.join(600)
        verdict = settle_and_verify(kind, stack, slurm, fleet, reader, logs,
                                    planned, faults, logdir, SETTLE_TIMEOUT)
        rcs = fleet.stop()
        assert not verdict.problems, (
            f"{verdict.line()}\n" + "\n".join(verdict.problems[:40]))
        assert all(rc == 0 for rc in rcs.values()), rcs
    finally:
        reader.close()
        logs.close()
        fleet.stop_quietly()
        delete_topics(stack, topics)


def at(fleet, t0, offset):
    """Sleeps until offset seconds after t0, watching the workers."""
    sleep_watching(fleet, max(0.0, t0 + offset - time.monotonic()))


def timeline(*steps, gap=40):
    """Faults at offsets (a fraction of the span): [(fraction, fn(fleet,
    faults))], each at least gap seconds after the one before ended (one
    outage at a time: two back to back would be one outage longer than
    slurmctld keeps a finished job); returns once the span is over."""
    def faults_during(fleet, faults, rng, t0, span):
        ready = 0.0
        for fraction, fn in steps:
            at(fleet, t0, max(fraction * span, ready))
            fn(fleet, faults)
            ready = time.monotonic() - t0 + gap
        at(fleet, t0, span)
    return faults_during
