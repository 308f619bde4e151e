# SPDX-License-Identifier: Apache-2.0
"""
Least privilege, each line of it exercised (issue 27): the worker's lines
of deploy/kafka/acls.tsv (docs/KAFKA_ACLS.md), on the secured stack.

  (a) At start: each of the worker's lines removed in turn (this
      scenario's topics and group; the lines every worker shares, the
      transactional-id prefix, the restore reader's group id and READ on
      the stack's jobcomp topic, for the stack's worker principal, for the
      few seconds of one start): the worker exits 78, its log naming that
      line's operation and resource; the line is put back. Launches sent
      before the first start wait in the requests topic: once every line is back, one worker takes them,
      each ends SUCCEEDED once, with one Slurm job that ran once: nothing
      lost, nothing submitted twice.
  (b) While running: WRITE on the status topic removed under a worker with
      a launch in flight. Its end cannot commit: the transaction aborts
      and is redone, the log and /readyz (503, kafka_denied) name "WRITE
      on topic <status>", forge_kafka_denied is 1; the line put back,
      /readyz is 200 again and the launch ends SUCCEEDED once, its events
      contiguous, one Slurm job.
"""

import time

import pytest

from harness import (SHARED_ACL_VARS, StatusReader, Topics, Worker,
                     acl_lines, assert_contiguous, free_port, http_get,
                     launch, unique_id, wait_until)

KINDS = {"topic": "topic", "group": "group",
         "transactional-id": "transactional id"}


@pytest.fixture(scope="module")
def secured(stack):
    if not stack.secured:
        pytest.skip("the stack's Kafka is not secured (an old env file)")
    return stack


def named(line, values, worker_id):
    """What the worker's refusal names for one acls.tsv line."""
    name = line.resolve(values)
    if line.resource == "transactional-id":
        name = f"forge-worker-{worker_id}"
    return f"{line.operation} on {KINDS[line.resource]} {name}"


@pytest.mark.disrupts("kafka-acls")
def test_each_missing_acl_stops_the_start_naming_it(secured, slurm, logdir):
    stack = secured
    topics = Topics(stack, "acl")
    group = unique_id("g")
    values = {**{v: stack.env[v] for v in SHARED_ACL_VARS if stack.env.get(v)},
              **topics.env(), "FORGE_KAFKA_GROUP_ID": group}
    stack.grant(topics, group)
    status = StatusReader(stack, topics.status)
    lids = [unique_id("acl") for _ in range(2)]
    for lid in lids:
        topics.send(lid, launch(lid, ["/bin/echo", "granted"]))
    lines = acl_lines("worker")
    assert len(lines) >= 10, lines
    refused = []
    try:
        for line in lines:
            wid = unique_id("wa")
            stack.revoke([line], topics, group)
            try:
                w = Worker(stack, topics, wid, group, logdir)
                rc = w.wait_exit(60)
            finally:
                stack.grant(topics, group, lines=[line])
            want = named(line, values, wid)
            assert rc == 78, f"{line}: exit {rc}\n{w.tail()}"
            assert w.logged(want), f"{line}: no '{want}' in\n{w.tail()}"
            refused.append(want)
        assert not status.all(), "a refused worker published something"
        w = Worker(stack, topics, unique_id("wa"), group, logdir)
        for lid in lids:
            done = status.wait_terminal(lid, 120)
            assert done["data"]["state"] == "SUCCEEDED", status.states(lid)
            assert_contiguous(status.of(lid), lid)
            assert len(slurm.ran(lid)) == 1, slurm.tries(lid)
        assert w.terminate() == 0, w.tail()
    finally:
        status.close()
    print("refused at start, one line each:", *refused, sep="\n  ")


def test_a_write_acl_removed_while_running_is_named_and_waited_for(
        secured, slurm, logdir):
    stack = secured
    topics = Topics(stack, "aclrun")
    group = unique_id("g")
    port = free_port()
    status = StatusReader(stack, topics.status)
    w = Worker(stack, topics, unique_id("wr"), group, logdir,
               {"FORGE_HTTP_LISTEN": f"127.0.0.1:{port}"})
    line = next(l for l in acl_lines("worker")
                if l.resource == "topic" and l.operation == "WRITE" and
                l.name == "${FORGE_KAFKA_TOPIC_STATUS}")
    want = f"WRITE on topic {topics.status}"
    revoked = False
    try:
        w.wait_ready()
        lid = unique_id("aclrun")
        topics.send(lid, launch(lid, ["/bin/bash", "-c", "sleep 4; echo done"]))
        status.wait_state(lid, "RUNNING", 60)
        stack.revoke([line], topics, group)
        revoked = True
        t0 = time.monotonic()
        wait_until("/readyz to name the refused write",
                   lambda: want in http_get(port, "/readyz")[1], 60)
        code, body = http_get(port, "/readyz")
        assert code == 503, body
        assert "forge_kafka_denied 1" in http_get(port, "/metrics")[1]
        assert w.logged(f"Kafka denies User:{stack.user('worker')}: {want}")
        assert "SUCCEEDED" not in status.states(lid)
        named_after = time.monotonic() - t0
        stack.grant(topics, group, lines=[line])
        revoked = False
        wait_until("/readyz 200 again", lambda: http_get(port, "/readyz")[0] == 200,
                   60)
        done = status.wait_terminal(lid, 60)
        assert done["data"]["state"] == "SUCCEEDED", status.states(lid)
        assert_contiguous(status.of(lid), lid)
        assert len(slurm.ran(lid)) == 1, slurm.tries(lid)
        assert "forge_kafka_denied 0" in http_get(port, "/metrics")[1]
        assert w.terminate() == 0, w.tail()
        print(f"named {named_after:.1f} s after the revoke")
    finally:
        if revoked:
            stack.grant(topics, group, lines=[line])
        status.close()
        w.stop_quietly()
