# SPDX-License-Identifier: Apache-2.0
"""
Secrets out of Kafka and out of the tails (issue 10): the state topic holds
each launch's request sealed (no ingest token, no env value in clear in any
record, request gone once archived); the logs_archived tail redacts the
launch's own token and the token of another launch the worker holds; the
worker's log never shows either. Key rotation across a crash: an heir given
the old key as FORGE_STATE_KEY_FILE_PREVIOUS resubmits an interrupted
submit; an heir without it cancels the orphan and fails the launch
(request_unavailable) instead of guessing.
"""

import json
import os

import pytest

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     one_worker, unique_id, wait_until)


@pytest.fixture(scope="module")
def sec(stack, logdir):
    with one_worker(stack, logdir, "secrets", {"FORGE_LOG_LEVEL": "debug"}) as setup:
        yield setup


def with_token(req, token):
    req["ingest"] = {"endpoint": "https://ingest.example.org/v1", "token": token}
    return req


def records_of(topics, lid):
    return [v for k, v, _ in topics.read_all(topics.state)
            if k == lid.encode() and v]


def the_logs_event(logs, lid, timeout=120):
    return wait_until(f"the logs event of {lid}", lambda: logs.of(lid),
                      timeout)[0]


def test_state_records_hold_the_request_sealed(stack, sec):
    topics, worker, status, logs = sec
    lid = unique_id("sealed")
    token = "ingest-tok-" + unique_id("t")
    env_value = "env-value-" + unique_id("v")
    req = with_token(launch(lid, ["/bin/sh", "-c", 'echo "token=' + token +
                                  ' env=$PLAIN_VALUE"'],
                            env={"PLAIN_VALUE": env_value}), token)
    topics.send(lid, req)
    assert status.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"
    event = the_logs_event(logs, lid)
    assert event["data"]["tail"]["text"] == (
        f"token=[REDACTED] env={env_value}\n")
    wait_until("the cleaned record", lambda: any(
        json.loads(v).get("cleaned") for v in records_of(topics, lid)), 30)
    records = records_of(topics, lid)
    for raw in records:
        assert token.encode() not in raw and env_value.encode() not in raw
    parsed = [json.loads(v) for v in records]
    live = [r for r in parsed if not r["archived"]]
    assert live and all(r["request"] is None and
                        set(r["request_sealed"]) == {"kid", "iv", "ct"}
                        for r in live)
    assert len({r["request_sealed"]["iv"] for r in live}) == len(live), \
        "a fresh IV for every record written"
    archived = [r for r in parsed if r["archived"]]
    assert archived and all(r["request"] is None and "request_sealed" not in r
                            for r in archived)
    for line in worker.lines():
        assert token not in json.dumps(line)


def test_another_launchs_token_is_redacted_in_the_tail(stack, sec):
    topics, worker, status, logs = sec
    holder = unique_id("holder")
    token = "other-launch-tok-" + unique_id("t")
    topics.send(holder, with_token(launch(holder, ["/bin/sleep", "120"]),
                                   token))
    wait_until(f"{holder} to run",
               lambda: "RUNNING" in status.states(holder), 120)
    printer = unique_id("printer")
    topics.send(printer, launch(printer, ["/bin/sh", "-c",
                                          f'echo "found {token} here"']))
    assert status.wait_terminal(printer)["data"]["state"] == "SUCCEEDED"
    event = the_logs_event(logs, printer)
    assert event["data"]["tail"]["text"] == "found [REDACTED] here\n"
    topics.send(holder, {"kind": "cancel", "launch_id": holder})
    assert status.wait_terminal(holder)["data"]["state"] == "CANCELLED"
    for line in worker.lines():
        assert token not in json.dumps(line)


def new_key(folder, name):
    path = os.path.join(folder, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(os.urandom(32))
    return path


@pytest.mark.parametrize("heir_has_old_key", [True, False])
def test_an_heir_opens_old_records_only_with_the_previous_key(
        stack, slurm, logdir, heir_has_old_key):
    topics = Topics(stack, "rotate")
    group = unique_id("g")
    old_key = new_key(logdir, unique_id("old") + ".key")
    new = new_key(logdir, unique_id("new") + ".key")
    crashing = Worker(stack, topics, unique_id("wa"), group, logdir,
                      {"FORGE_TEST_CRASH_POINT": "submit.after",
                       "FORGE_STATE_KEY_FILE": old_key})
    reader = StatusReader(stack, topics.status)
    heir_env = {"FORGE_STATE_KEY_FILE": new}
    if heir_has_old_key:
        heir_env["FORGE_STATE_KEY_FILE_PREVIOUS"] = old_key
    try:
        crashing.wait_ready()
        lid = unique_id("rot")
        token = "rotated-tok-" + unique_id("t")
        topics.send(lid, with_token(launch(lid, ["/bin/sh", "-c", "sleep 20"]),
                                    token))
        assert crashing.wait_exit(60) == -9, crashing.tail()
        wait_until("the orphan job", lambda: slurm.leaders(lid), 10)
        heir = Worker(stack, topics, unique_id("wb"), group, logdir, heir_env)
        done = reader.wait_terminal(lid, timeout=120)
        events = reader.of(lid)
        assert_contiguous(events, lid)
        leaders = slurm.leaders(lid)
        if heir_has_old_key:  # the held job adopted: staged, released
            assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
            assert len(leaders) == 1, leaders
            assert slurm.ran(lid) == leaders
        else:
            # The cancel was sent before the terminal event; the watcher
            # samples Slurm every 0.3 s: it may see CANCELLED a moment later.
            wait_until("the orphan to show CANCELLED",
                       lambda: "CANCELLED" in
                       slurm.jobs[leaders[0]]["states"][-1], 15)
            assert done["data"]["state"] == "FAILED", reader.states(lid)
            assert done["data"]["reason"] == "request_unavailable"
            assert len(leaders) == 1, "nothing submitted without the request"
            assert heir.logged("cannot be read back")
        # the orphan was submitted held and the crash came right after its
        # POST: never released, it could not run until the heir (with the
        # key to its request) released it
        assert slurm.most_alive(lid) == (1 if heir_has_old_key else 0)
        for line in heir.lines():
            assert token not in json.dumps(line)
        assert heir.terminate() == 0, heir.tail()
    finally:
        reader.close()
        crashing.stop_quietly()
        if "heir" in locals():
            heir.stop_quietly()
