# SPDX-License-Identifier: Apache-2.0
"""
Recovery commands against the real stack (CONTRACT §4, docs/RECOVERY.md):

- `launches --json` agrees with the status topic: each launch's record has
  the state and seq of its last committed status event;
- `replay` while a worker is in the group: a dry run prints the counts and
  changes nothing, `--execute` is refused with exit 75 (`group_active`);
- with the workers stopped, `replay --to-earliest --execute` moves the
  group's offsets back to the start; a worker of the same group then
  re-reads every request: zero new Slurm jobs, zero new status events (the
  state topic knows every launch: records are never tombstoned, so a
  finished launch's record is still there to say so);
- usage errors, a bad offsets file, an unreachable broker and a missing
  key exit as the contract says, with one JSON error on stderr.
"""

import json
import os
import subprocess
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from harness import (PARTITIONS, TOP, StatusReader, Topics, Worker, cancel,
                     launch, unique_id, wait_until)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized

BINARY = os.environ.get("FORGE_WORKER_BIN",
                        os.path.join(TOP, "build", "forge-worker"))


def run_cli(stack, topics, group, *args, env=None, timeout=120):
    """forge-worker <args> with the stack's and the scenario's settings."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("FORGE_")}
    full.update(stack.env)
    full.update(stack.principal_env("operator"))  # the operator's commands
    full.update(topics.env())
    full.update({"FORGE_KAFKA_GROUP_ID": group, "FORGE_LOG_FORMAT": "json"})
    full.update(env or {})
    for name in [k for k, v in full.items() if v is None]:
        del full[name]
    stack.grant(full, group)  # a missing topic's too: missing, not refused
    return subprocess.run([BINARY, *args], env=full, capture_output=True,
                          text=True, timeout=timeout)


def error_of(proc):
    """The JSON error object: the last line of stderr."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines, f"nothing on stderr (rc {proc.returncode})"
    return json.loads(lines[-1])


def committed(stack, topics, group):
    c = Consumer({**stack.kafka_conf("operator"), "group.id": group,
                  "enable.auto.commit": False})
    try:
        parts = [TopicPartition(topics.requests, p) for p in range(PARTITIONS)]
        # nothing committed (a partition that never had a request) reads 0
        return {tp.partition: max(tp.offset, 0)
                for tp in c.committed(parts, timeout=10)}
    finally:
        c.close()


def high_marks(stack, topics):
    c = Consumer({**stack.kafka_conf("operator"),
                  "group.id": "forge-worker-recovery-scan"})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topics.requests, p),
                                           timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        c.close()


def members(stack, group):
    admin = AdminClient(stack.kafka_conf("operator"))
    try:
        desc = admin.describe_consumer_groups([group])[group].result(30)
        return len(desc.members)
    except Exception:  # no such group yet
        return 0


def tagged_jobs(stack, launch_id, attempt=1):
    """The Slurm jobs (het leaders) slurmctld lists with the launch's tag."""
    tag = f"forge:{launch_id}:{attempt}"

    def listing():
        try:
            return stack.slurm_get("jobs")["jobs"]
        except Exception:  # slurmrestd busy (a shared stack): ask again
            return None
    jobs = wait_until("slurmrestd's job list", listing, 60, 1.0)
    return sorted({(j.get("het_job_id") or {}).get("number") or j["job_id"]
                   for j in jobs if j.get("comment") == tag})


def launches_json(stack, topics, group, *args):
    proc = run_cli(stack, topics, group, "launches", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return {r["launch_id"]: r for r in map(json.loads, proc.stdout.splitlines())}


def replay_json(stack, topics, group, *args):
    proc = run_cli(stack, topics, group, "replay", *args, "--json")
    return proc, (json.loads(proc.stdout) if proc.returncode == 0 else None)


@pytest.fixture
def scenario(stack, slurm, logdir):
    """One worker has handled a mix of requests; one launch still runs."""
    topics = Topics(stack, "recovery")
    group = unique_id("g")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w1"), group, logdir)
    ids = {"ok": unique_id("ok"), "fails": unique_id("fails"),
           "refused": unique_id("refused"), "ok2": unique_id("ok2"),
           "live": unique_id("live")}
    state = {"topics": topics, "group": group, "reader": reader,
             "worker": worker, "ids": ids, "workers": [worker]}
    try:
        worker.wait_ready()
        topics.send(ids["ok"], launch(ids["ok"], ["/bin/true"]))
        topics.send(ids["fails"], launch(ids["fails"], ["/bin/sh", "-c", "exit 2"]))
        bad = launch(ids["refused"], ["/bin/true"])
        bad["pools"][0]["series"] = "no-such-series"
        topics.send(ids["refused"], bad)
        topics.send(ids["ok2"], launch(ids["ok2"], ["/bin/true"]))
        topics.send(ids["live"], launch(ids["live"], ["/bin/sleep", "280"]))
        topics.send("no-id", b"not json at all")  # to the DLQ
        for key in ("ok", "fails", "refused", "ok2"):
            reader.wait_terminal(ids[key])
        topics.send(ids["ok"], cancel(ids["ok"]))  # of a finished launch
        reader.wait_state(ids["live"], "RUNNING", 120)
        wait_until("the worker to commit every request",
                   lambda: committed(stack, topics, group) ==
                   high_marks(stack, topics), 60, 1.0)
        yield state
    finally:
        if not reader.states(ids["live"]) or \
                reader.states(ids["live"])[-1] not in ("CANCELLED",):
            topics.send(ids["live"], cancel(ids["live"]))
            time.sleep(3)
        reader.close()
        for w in state["workers"]:
            w.stop_quietly()


def test_recovery_launches_and_replay(stack, slurm, scenario):
    topics, group = scenario["topics"], scenario["group"]
    reader, ids, first = scenario["reader"], scenario["ids"], scenario["worker"]

    # launches --json: the record of each launch is its last status event
    records = launches_json(stack, topics, group)
    assert set(ids.values()) <= set(records)
    for lid in ids.values():
        last = reader.of(lid)[-1]["data"]
        assert (records[lid]["state"], records[lid]["seq"]) == \
            (last["state"], last["seq"]), lid
        assert records[lid]["request"] in ("held", "none")
    assert reader.states(ids["ok"])[-1] == "SUCCEEDED"
    assert records[ids["live"]]["job_ids"] and records[ids["live"]]["request"] == "held"
    # archived after its terminal event, in a transaction of its own
    wait_until("ok's archive in its record",
               lambda: launches_json(stack, topics, group, "--launch", ids["ok"])
               [ids["ok"]]["archive"] == f"artifacts/{ids['ok']}/1/logs.tar.gz",
               60, 1.0)
    assert list(launches_json(stack, topics, group, "--state", "REJECTED")) == \
        [ids["refused"]]
    assert list(launches_json(stack, topics, group, "--launch", ids["ok2"])) == \
        [ids["ok2"]]
    table = run_cli(stack, topics, group, "launches")
    assert table.returncode == 0 and ids["live"] in table.stdout
    assert table.stdout.splitlines()[0].split()[:3] == ["LAUNCH_ID", "ATTEMPT", "STATE"]

    # a worker is in the group: a dry run tells, --execute is refused
    offsets = committed(stack, topics, group)
    proc, plan = replay_json(stack, topics, group, "--to-earliest")
    assert proc.returncode == 0, proc.stderr
    assert plan["members"] == 1 and not plan["executed"]
    proc = run_cli(stack, topics, group, "replay", "--to-earliest", "--execute")
    assert proc.returncode == 75, proc.stderr
    assert error_of(proc)["error"] == "group_active"
    assert committed(stack, topics, group) == offsets

    # the workers stopped: a dry run counts and changes nothing
    assert first.terminate() == 0, first.tail()
    wait_until("the group to have no members", lambda: members(stack, group) == 0,
               60, 1.0)
    events_before = {k: len(v) for k, v in reader.all().items()}
    records_before = launches_json(stack, topics, group)
    jobs_before = {lid: slurm.leaders(lid) for lid in ids.values()}
    proc, plan = replay_json(stack, topics, group, "--to-earliest")
    assert proc.returncode == 0, proc.stderr
    sent = sum(high_marks(stack, topics).values())
    assert sent == 7
    assert plan["members"] == 0 and not plan["executed"]
    assert plan["group_state"] == "Empty"
    assert plan["state_cleanup_policy"] == "compact"
    assert plan["total"] == {"requests": sent, "known": sent - 1, "unknown": 0,
                             "dlq": 1}
    for part in plan["partitions"]:
        assert part["from"] == offsets[part["partition"]]
        assert part["to"] == 0
        assert part["direction"] == ("reread" if part["from"] else "none")
    assert committed(stack, topics, group) == offsets
    human = run_cli(stack, topics, group, "replay", "--to-earliest")
    assert human.returncode == 0 and "dry run: nothing changed" in human.stdout
    assert f"{sent} request(s) in range: {sent - 1} known" in human.stdout
    assert committed(stack, topics, group) == offsets

    # an offsets file: only the partitions it names move
    moved = next(p for p, o in offsets.items() if o > 0)
    path = os.path.join(os.path.dirname(first.log_path), f"{group}.offsets")
    with open(path, "w") as f:
        f.write(f"# partition {moved} back by one\n"
                f"{topics.requests},{moved},{offsets[moved] - 1}\n")
    proc, plan = replay_json(stack, topics, group, "--to-offsets", path)
    assert proc.returncode == 0, proc.stderr
    assert [p["partition"] for p in plan["partitions"] if p["moves"]] == [moved]
    assert plan["total"]["requests"] == 1
    # a time after every request: every partition at its end
    proc, plan = replay_json(stack, topics, group, "--to-datetime",
                             "2099-01-01T00:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert all(p["to"] == p["high"] for p in plan["partitions"])

    # --execute: the offsets go back to the start
    proc, plan = replay_json(stack, topics, group, "--to-earliest", "--execute")
    assert proc.returncode == 0, proc.stderr
    assert plan["executed"]
    assert set(committed(stack, topics, group).values()) == {0}

    # a worker of the group re-reads every request: nothing new happens
    second = Worker(stack, topics, unique_id("w2"), group,
                    os.path.dirname(first.log_path))
    scenario["workers"].append(second)
    second.wait_ready()
    wait_until("the worker to re-read every request",
               lambda: committed(stack, topics, group) == offsets, 90, 1.0)
    time.sleep(3)  # a few poll ticks
    assert {k: len(v) for k, v in reader.all().items()} == events_before
    # not one record rewritten: same offsets, seqs and job ids
    assert launches_json(stack, topics, group) == records_before
    assert {lid: slurm.leaders(lid) for lid in ids.values()} == jobs_before
    # slurmctld itself: the live launch's tag names one job, its record's
    live_job = records[ids["live"]]["job_id"]
    assert tagged_jobs(stack, ids["live"]) == [live_job]
    assert launches_json(stack, topics, group, "--launch", ids["live"])[
        ids["live"]]["job_ids"] == [live_job]
    # and it still owns the live launch: a cancel ends it
    topics.send(ids["live"], cancel(ids["live"]))
    reader.wait_state(ids["live"], "CANCELLED", 120)
    after = launches_json(stack, topics, group, "--launch", ids["live"])
    assert after[ids["live"]]["state"] == "CANCELLED"
    assert after[ids["live"]]["seq"] == reader.of(ids["live"])[-1]["data"]["seq"]
    assert second.terminate() == 0, second.tail()


def test_recovery_errors(stack, tmp_path):
    topics = Topics(stack, "recovery-err")
    group = unique_id("g")
    cases = [
        (["replay"], 2, "usage"),
        (["replay", "--to-earliest", "--to-datetime", "2026-01-01T00:00:00Z"],
         2, "usage"),
        (["replay", "--to-datetime", "yesterday"], 2, "usage"),
        (["replay", "--to-earliest", "--bogus"], 2, "usage"),
        (["launches", "--state", "DONE"], 2, "usage"),
        (["launches", "extra"], 2, "usage"),
        (["replay", "--to-offsets", str(tmp_path / "missing.csv")], 2,
         "offsets_file"),
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{topics.requests},99,0\n")
    cases.append((["replay", "--to-offsets", str(bad)], 2, "offsets_file"))
    other = tmp_path / "other.csv"
    other.write_text("some.other.topic,0,0\n")
    cases.append((["replay", "--to-offsets", str(other)], 2, "offsets_file"))
    for args, rc, code in cases:
        proc = run_cli(stack, topics, group, *args)
        assert proc.returncode == rc, (args, proc.stdout, proc.stderr)
        error = error_of(proc)
        assert error["error"] == code and error["message"], (args, error)
        assert proc.stdout == ""

    # no state key: launches cannot open records, exit 78
    proc = run_cli(stack, topics, group, "launches",
                   env={"FORGE_STATE_KEY_FILE": None})
    assert proc.returncode == 78 and error_of(proc)["error"] == "config"
    # a topic the broker does not have
    proc = run_cli(stack, topics, group, "launches",
                   env={"FORGE_KAFKA_TOPIC_STATE": unique_id("e2e.none")})
    assert proc.returncode == 69 and error_of(proc)["error"] == "topic_missing"
    # a broker nobody listens on
    proc = run_cli(stack, topics, group, "replay", "--to-earliest",
                   env={"FORGE_KAFKA_BROKERS": "127.0.0.1:9"})
    assert proc.returncode == 69, proc.stderr
    assert error_of(proc)["error"] == "kafka_unavailable"
    assert len(proc.stderr.splitlines()) == 1, proc.stderr  # only the JSON
    # an empty state topic: no launch, exit 0
    assert launches_json(stack, topics, group) == {}
