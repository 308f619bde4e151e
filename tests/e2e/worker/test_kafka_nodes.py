# SPDX-License-Identifier: Apache-2.0
"""
The fleet on a replicated Kafka cluster under broker faults (issue 38): the
stack's three KRaft nodes (FORGE_STACK_KAFKA_NODES=3: every topic with
replication factor 3 and min.insync.replicas=2, the offsets and
transaction state topics too, producers with acks=all), three workers of
one group taking a steady stream of launches (chaos.py's mix) while

  leaders       the node leading the most requests partitions is killed
                (SIGKILL) and started again 10 s later (the workers'
                fetches, produces and commits move to the new leaders),
                then the node coordinating a worker's transactional id,
                then the one coordinating the group (its transactions and
                the group's offsets move)
  rolling       every node in turn stopped (a clean shutdown, as an upgrade
                does it), started again, and the next one only once every
                partition has its three replicas in sync
  min-isr       two of the three nodes killed for 40 s: nothing can
                commit; the workers say why (/readyz 503 naming it,
                forge_kafka_commit_failing_seconds) and go on by
                themselves once the nodes are back

and the verdict is chaos.py's: every launch one terminal event, as its kind
must end; no command run twice, never two live Slurm jobs of a launch,
every archive once; plus the longest stall (no status event published)
in the figures line.

These scenarios need the three nodes (@pytest.mark.replicated): scripts/e2e
runs them in its replicated phase, alone, on a stack with three nodes
(FORGE_STACK_KAFKA_NODES=3 tests/e2e/stack up; scripts/e2e --phase
replicated); run by hand on one node, they are skipped. scripts/test
brings the stack to three nodes for them after the alone phase.
"""

import json
import time

import pytest

from chaos import at, figure, run_scenario, sleep_watching, stack_verb
from harness import http_get
from confluent_kafka.admin import AdminClient

# The session outlasts a node's absence by far: a partition's owner
# keeps it while its fetches move to the new leader.
SESSION = {"FORGE_KAFKA_PROP_SESSION_TIMEOUT_MS": "45000"}


pytestmark = pytest.mark.replicated


def nodes(stack):
    return int(stack.env.get("FORGE_STACK_KAFKA_NODES", "1"))


@pytest.fixture
def replicated(stack):
    """The stack, when its Kafka has three nodes."""
    if nodes(stack) < 3:
        pytest.skip("needs the three-node stack (FORGE_STACK_KAFKA_NODES=3 "
                    "tests/e2e/stack up)")
    return stack


def admin(stack):
    return AdminClient({"bootstrap.servers": stack.admin_brokers,
                        "log_level": 2})


def metadata(stack):
    return admin(stack).list_topics(timeout=10)


def java_hash(text):
    """Java's String.hashCode, which Kafka's coordinator lookup uses."""
    h = 0
    for ch in text:  # the ids here are ASCII: one UTF-16 unit each
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_of(stack, key, topic):
    """The node leading the partition of Kafka's internal topic (the
    offsets' or the transactions') that coordinates key: abs(hashCode) mod
    its partition count."""
    md = metadata(stack).topics[topic]
    part = abs(java_hash(key)) % len(md.partitions)
    return md.partitions[part].leader


def all_in_sync(stack):
    """Every partition of every topic has all its replicas in sync."""
    for t in metadata(stack).topics.values():
        for p in t.partitions.values():
            if set(p.isrs) != set(p.replicas):
                return False
    return True


def wait_in_sync(fleet, stack, timeout=120):
    deadline = time.monotonic() + timeout
    while not all_in_sync(stack):
        assert time.monotonic() < deadline, "replicas not back in sync"
        sleep_watching(fleet, 1)


def down_for(fleet, faults, stack, node, seconds, verb="fail"):
    """Node `node` failed (or stopped) for `seconds`, then started again
    and waited for until its replicas are back in sync."""
    start = time.time()
    stack_verb(verb, f"kafka-{node}")
    try:
        sleep_watching(fleet, seconds)
    finally:
        stack_verb("start", f"kafka-{node}")
    wait_in_sync(fleet, stack)
    faults.record(f"{verb} kafka-{node} for {seconds} s", start)


def busiest_leader(stack):
    """The node leading the most partitions of the requests topic."""
    md = metadata(stack).topics[stack.env["FORGE_KAFKA_TOPIC_REQUESTS"]]
    counts = {}
    for p in md.partitions.values():
        counts[p.leader] = counts.get(p.leader, 0) + 1
    return max(counts, key=counts.get)


@pytest.mark.disrupts("kafka-1", "kafka-2", "kafka-3")
def test_leaders_and_coordinators_killed(replicated, slurm, logdir):
    """kill -9 of the node leading the most requests partitions, then of
    the one coordinating a worker's transactional id, then of the one
    coordinating the group: each down 10 s, started again, and the next
    only once every replica is back in sync."""
    stack = replicated

    def faults_during(fleet, faults, rng, t0, span):
        at(fleet, t0, 0.1 * span)
        down_for(fleet, faults, stack, busiest_leader(stack), 10)
        wid = sorted(fleet.workers)[0]
        down_for(fleet, faults, stack,
                 coordinator_of(stack, f"forge-worker-{wid}",
                                "__transaction_state"), 10)
        down_for(fleet, faults, stack,
                 coordinator_of(stack, fleet.group, "__consumer_offsets"), 10)
        at(fleet, t0, span)
    run_scenario("leaders", (36, 60), stack, slurm, logdir, faults_during,
                 lambda span: SESSION)


@pytest.mark.disrupts("kafka-1", "kafka-2", "kafka-3")
def test_a_rolling_restart(replicated, slurm, logdir):
    """Every node in turn stopped as an upgrade stops it, started again,
    the next one only once every replica is back in sync."""
    stack = replicated

    def faults_during(fleet, faults, rng, t0, span):
        at(fleet, t0, 0.1 * span)
        for node in range(1, nodes(stack) + 1):
            down_for(fleet, faults, stack, node, 3, verb="stop")
        at(fleet, t0, span)
    run_scenario("rolling", (30, 40), stack, slurm, logdir, faults_during,
                 lambda span: SESSION)


def readiness(fleet):
    """Each worker's /readyz, parsed, with its
    forge_kafka_commit_failing_seconds: {worker: (code, body, failing)}."""
    out = {}
    for wid, w in list(fleet.workers.items()):
        code, body = http_get(w.http_port, "/readyz")
        metrics = http_get(w.http_port, "/metrics")[1]
        failing = [float(l.split()[-1]) for l in metrics.splitlines()
                   if l.startswith("forge_kafka_commit_failing_seconds ")]
        try:
            body = json.loads(body)
        except ValueError:
            body = {"unanswered": body}
        out[wid] = (code, body, failing[0] if failing else None)
    return out


def said_why(snapshots):
    """The snapshots in which a worker answered 503 naming failing
    commits, with the metric counting."""
    return [(wid, body["commit_failing_reason"], body["commit_error"])
            for snap in snapshots
            for wid, (code, body, failing) in snap.items()
            if code == 503 and body.get("commit_failing_reason") and
            failing and failing > 0]


@pytest.mark.disrupts("kafka-1", "kafka-2", "kafka-3")
def test_two_of_three_nodes_down(replicated, slurm, logdir):
    """Two of the three nodes killed (-9) for 40 s: no partition has
    min.insync.replicas in sync (and, the nodes being controllers too, the
    controller quorum is gone), nothing commits. The workers stop
    committing (nothing lost, nothing run twice: the verdict), /readyz
    (503) and forge_kafka_commit_failing_seconds say why, and they resume
    by themselves once the nodes are back: /readyz 200, the gauge 0."""
    stack = replicated
    during, after = [], []

    def faults_during(fleet, faults, rng, t0, span):
        at(fleet, t0, 0.2 * span)
        start = time.time()
        stack_verb("fail", "kafka-2")
        stack_verb("fail", "kafka-3")
        try:
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                during.append(readiness(fleet))
                sleep_watching(fleet, 2)
        finally:
            stack_verb("start", "kafka-2")
            stack_verb("start", "kafka-3")
        faults.record("fail kafka-2 and kafka-3 for 40 s", start)
        wait_in_sync(fleet, stack)
        deadline = time.monotonic() + 120
        while True:
            snap = readiness(fleet)
            if all(code == 200 and failing == 0
                   for code, _, failing in snap.values()):
                break
            assert time.monotonic() < deadline, f"not ready again: {snap}"
            sleep_watching(fleet, 1)
        after.append((time.time() - start, snap))
        at(fleet, t0, span)
    run_scenario("min-isr", (24, 60), stack, slurm, logdir, faults_during,
                 lambda span: SESSION)
    why = said_why(during)
    assert why, f"no worker said why while nothing committed: {during}"
    figure(logdir, f"min-isr readiness: {len(why)} answers named failing "
           f"commits while two nodes were down, e.g. {why[0]}; all ready "
           f"again {after[0][0]:.1f} s after the fault began")
