# SPDX-License-Identifier: Apache-2.0
"""
run_scenarios.py - runs the worker's end-to-end scenarios side by side
against the one stack (scripts/e2e is its command; docs/DEVELOPING.md says
how a scenario joins a group).

The scenarios are collected once (conftest.py writes each one's module and
markers to FORGE_E2E_PLAN) and cut into groups, each one pytest process:

  - a module's scenarios on one build form a group (its module fixtures
    start once); the build is the normal one (build/forge-worker) unless
    the scenario is marked @pytest.mark.sanitized (build-asan/forge-worker:
    a leak or a sanitizer report fails the scenario through the worker's
    exit code);
  - a scenario marked @pytest.mark.disrupts(...) of something the others
    share (a stack daemon, the TLS front, every worker's ACLs) goes to its
    module's alone group: the alone groups run after the side-by-side ones,
    one at a time, with nothing beside them;
  - a group that uses a resource (@pytest.mark.uses: the `faults`
    partition's nodes) never runs beside another group using it;
  - a scenario marked @pytest.mark.replicated needs the three-node Kafka
    cluster (FORGE_STACK_KAFKA_NODES=3 tests/e2e/stack up): its module's
    replicated group runs in a phase of its own, after the alone ones and
    like them one at a time, and only on a stack with three nodes (on one
    node the phase is said to be left out, and how to run it; scripts/test
    does not run it yet: issue 38).

The side-by-side groups run --jobs at a time (default 4: they mostly wait
on Slurm's and Kafka's clocks; the machine has 2 cores), the longest first
(the durations of this machine's last run, $FORGE_CACHE_DIR/e2e-durations.json,
else tests/e2e/worker/durations.json). Each group's output goes to
<logs>/<group>.out, its workers' logs under <logs>/<build>/; a failed
group's output is printed at the end. The last lines: each phase's time,
the slowest scenarios, and "N passed, M failed, K skipped in T s".

The e2e lock (FORGE_E2E_LOCK, default /tmp/forge-e2e.lock, which
scripts/bench takes too) is held shared while groups run side by side and
exclusively for the alone ones. The topics earlier runs left behind are
deleted at the start only when no other run holds it.

  run_scenarios.py [--jobs N] [--logs DIR] [--phase side|alone|replicated|all]
                   [--build release|asan] [--list] [--save-durations]
                   [SELECTION ...]

SELECTION: a module (test_fleet.py) or a scenario's id
(test_fleet.py::test_...); none: every scenario. --phase runs only the
side-by-side or only the alone groups (scripts/test runs the alone ones
once nothing else uses the stack); --build runs every group on one build
(scripts/quick: the normal one).
"""

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILDS = {"release": os.path.join(TOP, "build", "forge-worker"),
          "asan": os.path.join(TOP, "build-asan", "forge-worker")}
COMMITTED_DURATIONS = os.path.join(HERE, "durations.json")
GROUP_TIMEOUT_S = 1800
UNKNOWN_TEST_S = 30  # a group never measured: this per scenario


def log(msg):
    print(f"[e2e {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- the plan ------------------------------------------------------------------

def collect(selection):
    """[{nodeid, module, name, disrupts, uses, sanitized}] of the selection."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", *selection],
            cwd=HERE, env={**os.environ, "FORGE_E2E_PLAN": path},
            capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr)
            raise SystemExit(f"collecting the scenarios failed (exit {r.returncode})")
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def kafka_nodes():
    """The node count of the stack's Kafka cluster (its env file)."""
    return int(os.environ.get("FORGE_STACK_KAFKA_NODES", "1"))


def shared_faults(item):
    """What the scenario disrupts that others running beside it share."""
    import harness
    return [d for d in item["disrupts"] if d not in harness.OWN_DAEMONS]


class Group:
    def __init__(self, module, build, alone, replicated=False):
        self.module, self.build, self.alone = module, build, alone
        self.replicated = replicated
        self.items, self.uses = [], set()
        self.proc = self.started = self.ended = None
        self.result = None

    @property
    def name(self):
        base = self.module[:-3] if self.module.endswith(".py") else self.module
        return (f"{base}.{self.build}" + (".alone" if self.alone else "")
                + (".replicated" if self.replicated else ""))

    def expected_s(self, durations):
        return durations.get(self.name, UNKNOWN_TEST_S * len(self.items))


def plan(items, build_override=None):
    """The groups, in collection order."""
    groups = {}
    for item in items:
        build = build_override or ("asan" if item["sanitized"] else "release")
        replicated = bool(item.get("replicated"))
        alone = bool(shared_faults(item)) or replicated
        key = (item["module"], build, alone, replicated)
        if key not in groups:
            groups[key] = Group(*key)
        groups[key].items.append(item)
        groups[key].uses.update(item["uses"])
    return list(groups.values())


def load_durations():
    out = {}
    for path in (COMMITTED_DURATIONS, cache_durations_path()):
        try:
            with open(path) as f:
                out.update(json.load(f))
        except (OSError, ValueError):
            pass
    return out


def cache_durations_path():
    return os.path.join(os.environ.get("FORGE_CACHE_DIR", "/var/cache/forge-worker"),
                        "e2e-durations.json")


def save_durations(groups, path):
    try:
        with open(path) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    for g in groups:
        if g.ended and g.result and g.result["complete"]:
            known[g.name] = round(g.ended - g.started, 1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(dict(sorted(known.items())), f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


# ---- running a group -----------------------------------------------------------

def start(group, logs, side_by_side):
    env = dict(os.environ)
    env.update({"FORGE_WORKER_BIN": BUILDS[group.build],
                "FORGE_E2E_LOGS": os.path.join(logs, group.build),
                "FORGE_E2E_GROUP": group.name})
    env.pop("FORGE_E2E_SIDE_BY_SIDE", None)
    if side_by_side:
        env["FORGE_E2E_SIDE_BY_SIDE"] = "1"
    os.makedirs(env["FORGE_E2E_LOGS"], exist_ok=True)
    out = open(os.path.join(logs, f"{group.name}.out"), "w")
    group.xml = os.path.join(logs, f"{group.name}.xml")
    group.out_path = out.name
    group.started = time.monotonic()
    group.proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "--durations=5",
         f"--junitxml={group.xml}", *[i["nodeid"] for i in group.items]],
        cwd=HERE, env=env, stdout=out, stderr=subprocess.STDOUT,
        start_new_session=True)
    out.close()


def finish(group):
    group.ended = time.monotonic()
    group.result = read_junit(group)


def read_junit(group):
    """passed/failed/skipped and each scenario's time, from the group's
    JUnit file; a group that died without one counts as failed."""
    res = {"passed": 0, "failed": 0, "skipped": 0, "times": [],
           "complete": False, "rc": group.proc.returncode}
    try:
        root = ET.parse(group.xml).getroot()
    except (OSError, ET.ParseError):
        res["failed"] = len(group.items)
        return res
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        t = float(case.get("time") or 0)
        res["times"].append((t, f"{case.get('classname')}::{case.get('name')}"))
        if kinds & {"failure", "error"}:
            res["failed"] += 1
        elif "skipped" in kinds:
            res["skipped"] += 1
        else:
            res["passed"] += 1
    # pytest ran to its end: 0 (all passed) or 1 (some failed)
    res["complete"] = res["rc"] in (0, 1)
    if not res["complete"] and not res["failed"]:
        res["failed"] = 1  # pytest itself failed (an internal error, a kill)
    return res


def kill(group):
    try:
        os.killpg(group.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    group.proc.wait()


def describe(group):
    r = group.result
    parts = [f"{r['passed']} passed"]
    if r["failed"]:
        parts.append(f"{r['failed']} failed")
    if r["skipped"]:
        parts.append(f"{r['skipped']} skipped")
    return (f"{group.name}: {', '.join(parts)} in "
            f"{group.ended - group.started:.0f} s")


def run_side_by_side(groups, jobs, logs, durations):
    """The longest first, jobs at a time, no resource used twice at once."""
    waiting = sorted(groups, key=lambda g: -g.expected_s(durations))
    running = []
    while waiting or running:
        busy = set().union(*(g.uses for g in running)) if running else set()
        for g in list(waiting):
            if len(running) >= jobs:
                break
            if g.uses & busy:
                continue
            start(g, logs, side_by_side=True)
            running.append(g)
            waiting.remove(g)
            busy |= g.uses
        time.sleep(0.5)
        for g in list(running):
            timed_out = time.monotonic() - g.started > GROUP_TIMEOUT_S
            if timed_out:
                log(f"{g.name}: over {GROUP_TIMEOUT_S} s, killed")
                kill(g)
            if g.proc.poll() is None:
                continue
            finish(g)
            running.remove(g)
            log(f"{describe(g)} [{len(running)} running, {len(waiting)} waiting]")


def run_alone(groups, logs):
    for g in groups:
        start(g, logs, side_by_side=False)
        try:
            g.proc.wait(GROUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log(f"{g.name}: over {GROUP_TIMEOUT_S} s, killed")
            kill(g)
        finish(g)
        log(f"{describe(g)} (alone)")


class E2eLock:
    """FORGE_E2E_LOCK, shared or exclusive, for what scripts/bench runs."""

    def __init__(self):
        self.f = open(os.environ.get("FORGE_E2E_LOCK", "/tmp/forge-e2e.lock"), "a")

    def hold(self, exclusive):
        fcntl.flock(self.f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def alone_now(self):
        """Exclusive at once if nobody else holds it (then True)."""
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False


def clean_leftovers(lock):
    """The topics of earlier runs, deleted only while no other run holds
    the lock (its scenarios' topics are alive)."""
    import harness
    if lock.alone_now():
        harness.delete_leftover_topics(harness.Stack())
    else:
        log("another run holds the e2e lock: earlier runs' topics left alone")


# ---- the report ----------------------------------------------------------------

def report(groups, phases, t0, logs):
    failed = [g for g in groups if g.result and g.result["failed"]]
    for g in failed:
        print(f"\n===== {g.name} failed: its output ({g.out_path}) =====")
        with open(g.out_path, errors="replace") as f:
            text = f.read()
        print(text[-20000:])
    chaos = os.path.join(logs, "release", "chaos-summary.txt")
    if os.path.exists(chaos):
        print("chaos figures:")
        with open(chaos) as f:
            print(f.read().rstrip())
    for name, secs, count in phases:
        print(f"phase {name}: {count} groups in {secs:.0f} s")
    times = sorted((t for g in groups if g.result for t in g.result["times"]),
                   reverse=True)
    print("slowest scenarios:")
    for t, name in times[:12]:
        print(f"  {t:6.1f} s  {name}")
    print("groups by time:")
    for g in sorted((g for g in groups if g.ended), key=lambda g: g.started):
        print(f"  {g.ended - g.started:6.1f} s  {describe(g)}")
    passed = sum(g.result["passed"] for g in groups if g.result)
    nfailed = sum(g.result["failed"] for g in groups if g.result)
    skipped = sum(g.result["skipped"] for g in groups if g.result)
    line = f"{passed} passed"
    if nfailed:
        line += f", {nfailed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(f"{line} in {time.monotonic() - t0:.0f} s")
    return nfailed


def run_phase(phases, name, groups, lock, exclusive, what, run):
    """One phase of groups (none: nothing), under the e2e lock held shared
    or exclusively; its time goes into phases."""
    if not groups:
        return
    lock.hold(exclusive=exclusive)
    log(what)
    t = time.monotonic()
    run()
    phases.append((name, time.monotonic() - t, len(groups)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int,
                    default=int(os.environ.get("FORGE_E2E_JOBS", "4")))
    ap.add_argument("--logs", default=os.environ.get(
        "FORGE_E2E_LOGS", os.path.join(TOP, "build", "e2e-logs")))
    ap.add_argument("--phase", choices=("side", "alone", "replicated", "all"),
                    default="all")
    ap.add_argument("--build", choices=sorted(BUILDS))
    ap.add_argument("--list", action="store_true",
                    help="print the groups and exit")
    ap.add_argument("--save-durations", action="store_true",
                    help="write this run's group times to durations.json")
    ap.add_argument("selection", nargs="*")
    args = ap.parse_args()
    if args.jobs < 1:
        raise SystemExit("--jobs must be 1 or more")

    t0 = time.monotonic()
    groups = plan(collect(args.selection), args.build)
    durations = load_durations()
    side = [g for g in groups if not g.alone and args.phase in ("side", "all")]
    alone = [g for g in groups if g.alone and not g.replicated
             and args.phase in ("alone", "all")]
    replicated = [g for g in groups if g.replicated
                  and args.phase in ("replicated", "all")]
    if replicated and kafka_nodes() < 3:
        log(f"{len(replicated)} replicated groups left out: they need the "
            "three-node Kafka cluster (FORGE_STACK_KAFKA_NODES=3 "
            "tests/e2e/stack up, then scripts/e2e --phase replicated)")
        replicated = []
    groups = side + alone + replicated
    if args.list:
        for g in (sorted(side, key=lambda g: -g.expected_s(durations))
                  + alone + replicated):
            kind = ("replicated" if g.replicated
                    else "alone" if g.alone else "side by side")
            uses = f", uses {','.join(sorted(g.uses))}" if g.uses else ""
            print(f"{g.name}: {len(g.items)} scenarios, {kind}{uses}, "
                  f"~{g.expected_s(durations):.0f} s")
        return 0
    os.makedirs(args.logs, exist_ok=True)
    lock = E2eLock()
    clean_leftovers(lock)
    phases = []
    run_phase(phases, "side by side", side, lock, False,
              f"{len(side)} groups side by side, {args.jobs} at a time",
              lambda: run_side_by_side(side, args.jobs, args.logs, durations))
    run_phase(phases, "alone", alone, lock, True,
              f"{len(alone)} groups alone, one at a time",
              lambda: run_alone(alone, args.logs))
    run_phase(phases, "replicated", replicated, lock, True,
              f"{len(replicated)} groups on the three Kafka nodes, one at a time",
              lambda: run_alone(replicated, args.logs))
    save_durations(groups, cache_durations_path())
    if args.save_durations:
        save_durations(groups, COMMITTED_DURATIONS)
    return 1 if report(groups, phases, t0, args.logs) else 0


if __name__ == "__main__":
    sys.exit(main())
