# SPDX-License-Identifier: Apache-2.0
"""
test_commands.py - every command of README.md's "Commands" table run as an
operator runs it, against the stack, each documented exit code and output
checked:

  --version             0, the version, librdkafka, the API versions
  validate              0 on deploy/samples/hello-single.json; 2 and one JSON
                        error object on stderr for an invalid request; 64 on
                        a directory (one line on stderr)
  render                --format script and --format payload: 0
  submit                0; the job is released and runs (seen in Slurm), the
                        SUBMITTED line's reason ours (null); Slurm's refusal
                        (no such partition) a REJECTED line, 1
  submit --wait         deploy/samples/hello-single.json to SUCCEEDED (0),
                        deploy/samples/failing.json to FAILED (1); SIGINT
                        (SIGTERM) while waiting: 130 (143), a last line saying
                        the job was left running, and it still runs in Slurm
  ping                  0; 1 with slurmrestd stopped, naming it (the stack's
                        slurmrestd started again right after)
  launches              the table and --json, a worker's launch in both
  replay                a dry run 0; --execute 75 while a worker is a member
  logs                  --follow started before the launch is sent: a job
                        asking for live logs prints numbered lines, a second
                        apart; each is printed once, in order, the first
                        long before the launch's logs are archived; then the
                        archive's path on stderr, 0. Without --follow the
                        same text again, 0; --attempt 2 and a launch with
                        nothing on the topic: 1, one JSON error not_found;
                        the worker fixture's launch (no live logs) followed
                        to its archive, 0
  run                   the worker those use: ready, 0 after SIGTERM
  reconcile             a dry run over the drained worker's topics: 0

The table's first column is read, so a command added there later and not
run here fails this scenario. Everything runs in a storage root of its own
(harness.own_storage): reconcile only takes the jobs of its own staging
folder, and the commands' jobs never meet other scenarios'. The ping
check with slurmrestd stopped stops the stack's slurmrestd for a few
seconds (@pytest.mark.disrupts): scripts/e2e runs it alone, under the e2e
lock (FORGE_E2E_LOCK, /tmp/forge-e2e.lock) taken exclusively.
"""

import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from harness import (TOP, StatusReader, Topics, Worker, command_env, launch,
                     own_storage, stack_verb, unique_id, wait_until)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized

BINARY = os.environ.get("FORGE_WORKER_BIN",
                        os.path.join(TOP, "build", "forge-worker"))
SAMPLES = os.path.join(TOP, "deploy", "samples")
INVALID = os.path.join(TOP, "schemas", "examples", "invalid",
                       "launch-attempt-zero.json")
RAN = set()  # the commands (README's first word after forge-worker) run


def readme_commands():
    """The command of each row of README.md's Commands table."""
    with open(os.path.join(TOP, "README.md")) as f:
        text = f.read()
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in section.splitlines():
        if not line.startswith("| `forge-worker"):
            continue
        cell = re.split(r"(?<!\\)\|", line)[1].strip().strip("`")
        out.append(cell.replace("\\|", "|").split()[1])
    assert out, "no command rows found in README.md's Commands table"
    return out


# What this scenario runs, by README command; a README row not here fails.
SCENARIO = {"run", "validate", "render", "submit", "ping", "launches",
            "replay", "reconcile", "logs", "--version"}


@pytest.fixture(scope="module")
def storage(stack):
    return own_storage(stack, unique_id("commands"))


@pytest.fixture(scope="module")
def topics(stack):
    return Topics(stack, "commands")


def cli(env, *args, timeout=180):
    """forge-worker <args> as an operator runs it."""
    RAN.add(args[0])
    return subprocess.run([BINARY, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def one_json_error(stderr):
    """stderr is exactly one JSON error object (README: exit 2)."""
    rows = [line for line in stderr.splitlines() if line.strip()]
    assert len(rows) == 1, f"stderr is not one line: {stderr!r}"
    err = json.loads(rows[0])
    assert set(err) == {"error", "field", "message"}, err
    return err


def sample_as(name, launch_id, tmp_path, **changes):
    """deploy/samples/<name> under its own launch id (written in tmp_path)."""
    with open(os.path.join(SAMPLES, name)) as f:
        req = json.load(f)
    req.update(launch_id=launch_id, **changes)
    path = tmp_path / f"{launch_id}.json"
    path.write_text(json.dumps(req))
    return str(path)


def slurm_job(stack, job_id):
    return stack.slurm_get(f"job/{job_id}")["jobs"][0]


def test_readme_lists_only_commands_this_scenario_runs():
    missing = set(readme_commands()) - SCENARIO
    assert not missing, (f"README's Commands table lists {sorted(missing)}: "
                         "run them in test_commands.py")


def test_version(stack, storage):
    p = cli(command_env(stack, extra=storage), "--version")
    assert p.returncode == 0, p.stderr
    assert "forge-worker" in p.stdout and "librdkafka" in p.stdout, p.stdout
    assert stack.api in p.stdout, p.stdout


def test_validate(stack, storage):
    env = command_env(stack, extra=storage)
    p = cli(env, "validate", os.path.join(SAMPLES, "hello-single.json"))
    assert p.returncode == 0, p.stderr
    assert lines(p.stdout) == [{"valid": True, "kind": "launch",
                                "launch_id": "demo-hello", "attempt": 1}]
    p = cli(env, "validate", INVALID)
    assert p.returncode == 2, p.stderr
    assert one_json_error(p.stderr)["field"] == "$.attempt"
    assert p.stdout == ""
    p = cli(env, "validate", SAMPLES)  # a directory: cannot be read
    assert p.returncode == 64
    assert len(p.stderr.splitlines()) == 1 and SAMPLES in p.stderr, p.stderr


def test_render(stack, storage):
    env = command_env(stack, extra=storage)
    hello = os.path.join(SAMPLES, "hello-single.json")
    p = cli(env, "render", "--format", "script", hello)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("#!"), p.stdout[:200]
    p = cli(env, "render", "--format", "payload", hello)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["job"]
    assert job["comment"] == "forge:demo-hello:1"
    assert job["hold"] is True  # released by submit, never by Slurm alone
    p = cli(env, "render", "--format", "payload", INVALID)
    assert p.returncode == 2
    one_json_error(p.stderr)


def test_submit_releases_the_job_and_it_runs(stack, storage, tmp_path):
    lid = unique_id("cmd-submit")
    p = cli(command_env(stack, extra=storage), "submit",
            sample_as("hello-single.json", lid, tmp_path))
    assert p.returncode == 0, p.stderr
    accepted, submitted = lines(p.stdout)
    assert accepted["state"] == "ACCEPTED" and accepted["launch_id"] == lid
    assert submitted["state"] == "SUBMITTED"
    assert submitted["reason"] is None, submitted  # ours, no Slurm warning
    job_id = submitted["slurm"]["job_id"]
    job = wait_until(f"job {job_id} to complete",
                     lambda: (lambda j: j if "COMPLETED" in j["job_state"]
                              else None)(slurm_job(stack, job_id)), 60)
    assert job["comment"] == f"forge:{lid}:1"


def test_submit_refused_by_slurm_is_rejected(stack, storage, tmp_path):
    """Slurm's refusal mapped as the worker maps it: the launch's REJECTED
    line, our reason, Slurm's text in error; exit 1."""
    lid = unique_id("cmd-refused")
    extra = dict(storage, FORGE_SLURM_PARTITION="no-such-partition")
    p = cli(command_env(stack, extra=extra), "submit",
            sample_as("hello-single.json", lid, tmp_path))
    assert p.returncode == 1, p.stdout + p.stderr
    last = lines(p.stdout)[-1]
    assert last["state"] == "REJECTED" and last["reason"] == "slurm_refused"
    assert "partition" in last["error"]["message"], last


def test_submit_wait_to_succeeded_and_to_failed(stack, storage):
    env = command_env(stack, extra=storage)
    p = cli(env, "submit", "--wait", os.path.join(SAMPLES, "hello-single.json"))
    assert p.returncode == 0, p.stdout + p.stderr
    states = [s["state"] for s in lines(p.stdout)]
    assert states[:2] == ["ACCEPTED", "SUBMITTED"] and states[-1] == "SUCCEEDED"
    assert all(s["reason"] is None for s in lines(p.stdout)[:2])

    p = cli(env, "submit", "--wait", os.path.join(SAMPLES, "failing.json"))
    assert p.returncode == 1, p.stdout + p.stderr
    last = lines(p.stdout)[-1]
    assert last["state"] == "FAILED", p.stdout
    assert last["slurm"]["exit_code"] == 3


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130),
                                      (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_submit_wait_interrupted_leaves_the_job_running(stack, storage,
                                                        tmp_path, sig, code):
    lid = unique_id("cmd-signal")
    RAN.add("submit")
    proc = subprocess.Popen(
        [BINARY, "submit", "--wait",
         sample_as("long-running.json", lid, tmp_path)],
        env=command_env(stack, extra=storage), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    seen = []
    reader = threading.Thread(
        target=lambda: seen.extend(json.loads(l) for l in proc.stdout),
        daemon=True)
    reader.start()
    job_id = None
    try:
        wait_until(f"{lid} to run", lambda: any(
            s["state"] == "RUNNING" for s in list(seen)), 60)
        job_id = seen[1]["slurm"]["job_id"]
        proc.send_signal(sig)
        assert proc.wait(15) == code, proc.stderr.read()
        reader.join(5)
        last = seen[-1]
        assert last["left_running"] is True and last["launch_id"] == lid
        assert last["slurm"]["job_id"] == job_id
        assert signal.Signals(sig).name in last["reason"], last
        assert "RUNNING" in slurm_job(stack, job_id)["job_state"]
    finally:
        if proc.poll() is None:
            proc.kill()
        if job_id:
            stack.slurm_get(f"job/{job_id}", method="DELETE")


def test_ping(stack, storage, topics):
    # ping probes as the worker it checks: the env file as written
    env = command_env(stack, topics, extra=storage, role="worker")
    p = cli(env, "ping")
    assert json.loads(p.stdout)["kafka"]["topics_ok"], p.stdout
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["ok"] and out["slurmrestd"]["ok"] and out["kafka"]["ok"], out


@pytest.mark.disrupts("slurmrestd")
def test_ping_with_slurmrestd_stopped(stack, storage, topics):
    """The stack's slurmrestd stopped for a few seconds: scripts/e2e runs
    this one alone."""
    env = command_env(stack, topics, extra=storage, role="worker")
    stack_verb("stop", "slurmrestd")
    try:
        p = cli(env, "ping")
    finally:
        stack_verb("start", "slurmrestd")
    assert p.returncode != 0, p.stdout
    out = json.loads(p.stdout)
    assert out["ok"] is False and out["slurmrestd"]["ok"] is False, out
    assert out["slurmrestd"]["error"], out
    assert out["kafka"]["ok"] is True, out


ENDS = {}  # launch id -> its terminal event (the worker fixture's launch)


@pytest.fixture(scope="module")
def worker(stack, storage, topics, logdir):
    """One `forge-worker run` (the launches, replay and run checks share
    it) that has carried one launch to its end."""
    group = unique_id("g-commands")
    reader = StatusReader(stack, topics.status)
    w = Worker(stack, topics, unique_id("w-commands"), group, logdir,
               extra_env=storage)
    RAN.add("run")
    lid = unique_id("cmd-worker")
    try:
        w.wait_ready()
        topics.send(lid, launch(lid, ["/bin/true"]))
        end = reader.wait_terminal(lid)
        assert end["data"]["state"] == "SUCCEEDED"
        ENDS[lid] = end
        yield w, group, lid
    finally:
        reader.close()
        w.stop_quietly()


def test_launches(stack, storage, topics, worker):
    _, group, lid = worker
    env = command_env(stack, topics, group, storage)
    p = cli(env, "launches")
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert len(rows) == 2 and lid in rows[1] and "SUCCEEDED" in rows[1], rows
    p = cli(env, "launches", "--json")
    assert p.returncode == 0, p.stderr
    (rec,) = lines(p.stdout)
    assert rec["launch_id"] == lid and rec["state"] == "SUCCEEDED", rec
    # the GPU-hours of its terminal event's usage (whole GPU-seconds kept)
    usage = ENDS[lid]["data"]["usage"]
    assert abs(rec["gpu_hours"] - usage["gpu_hours"]) < 1 / 3600, (rec, usage)
    head, row = rows[0].split(), rows[1].split()
    assert "GPU_H" in head, rows
    assert row[head.index("GPU_H")] == f"{rec['gpu_hours']:.2f}", rows


def test_replay(stack, storage, topics, worker):
    _, group, _ = worker
    env = command_env(stack, topics, group, storage)
    p = cli(env, "replay", "--to-earliest", "--json")
    assert p.returncode == 0, p.stderr
    assert lines(p.stdout), p.stdout  # the plan
    p = cli(env, "replay", "--to-earliest", "--execute")
    assert p.returncode == 75, p.stdout + p.stderr
    assert json.loads(p.stderr.splitlines()[-1])["error"] == "group_active"


LIVE_LINES = 8


def archive_lines(stderr):
    """logs' line naming the archive (a warning at start may come too)."""
    return [line for line in stderr.splitlines()
            if line.startswith("forge-worker: archive /")]


def test_logs_follow(stack, storage, topics, worker):
    """logs --follow as an operator tails a running launch: started before
    the launch exists, it prints the job's lines as the worker publishes
    them, then names the archive and exits 0 at its logs_archived."""
    _, group, done_lid = worker
    env = command_env(stack, topics, group, storage)
    lid = unique_id("cmd-logs")
    RAN.add("logs")
    proc = subprocess.Popen([BINARY, "logs", lid, "--follow"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen = []  # (monotonic time, line) as the command printed them
    reader = threading.Thread(
        target=lambda: seen.extend((time.monotonic(), line)
                                   for line in proc.stdout),
        daemon=True)
    reader.start()
    try:
        req = launch(lid, ["/bin/sh", "-c",
                           f"for i in $(seq 1 {LIVE_LINES}); do "
                           "echo line $i; sleep 1; done"])
        req["logs"] = {"live": True}
        topics.send(lid, req)
        assert proc.wait(240) == 0, proc.stderr.read()
        ended = time.monotonic()
        reader.join(5)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    numbered = [(t, line) for t, line in seen if line.startswith("line ")]
    assert [line for _, line in numbered] == [
        f"line {i}\n" for i in range(1, LIVE_LINES + 1)], seen
    # live: the first line long before the job's end and its archive
    assert ended - numbered[0][0] > LIVE_LINES / 2, seen
    (archive,) = archive_lines(err)
    assert archive.endswith(f"/artifacts/{lid}/1/logs.tar.gz"), err
    followed = "".join(line for _, line in seen)

    # the same again from the topic, without --follow
    p = cli(env, "logs", lid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == followed, (p.stdout, followed)
    assert archive_lines(p.stderr) == [archive], p.stderr

    # nothing of that attempt, nothing of that launch: 1, not_found
    for args in ([lid, "--attempt", "2"], [unique_id("cmd-nobody")]):
        p = cli(env, "logs", *args)
        assert p.returncode == 1, p.stdout + p.stderr
        assert json.loads(p.stderr.splitlines()[-1])["error"] == \
            "not_found", p.stderr
        assert p.stdout == "", p.stdout

    # the worker fixture's launch asked for no live logs: its archive's
    # tail (followed: its archive may still be on its way)
    p = cli(env, "logs", done_lid, "--follow", timeout=120)
    assert p.returncode == 0, p.stderr
    (archive,) = archive_lines(p.stderr)
    assert archive.endswith(f"/artifacts/{done_lid}/1/logs.tar.gz"), p.stderr


def test_run_drains_on_sigterm(worker):
    w, _, _ = worker
    assert w.terminate() == 0, w.tail()


def test_reconcile(stack, storage, topics, worker):
    _, group, lid = worker
    p = cli(command_env(stack, topics, group, storage), "reconcile", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert lid in p.stdout, p.stdout


def test_every_readme_command_ran():
    assert set(readme_commands()) <= RAN, (
        f"not run: {sorted(set(readme_commands()) - RAN)}")
