# SPDX-License-Identifier: Apache-2.0
"""
test_kafka_security.py - the secured Kafka of the stack (issue 27): the
broker's SASL_SSL listener (SCRAM-SHA-512, the stack's CA), KRaft's
StandardAuthorizer and the ACLs of deploy/kafka/acls.tsv, one worker at a
time, kept short (under a minute):

  plaintext smoke   a worker on the PLAINTEXT listener, none of the security
                    variables set, runs one launch to its end
  outsider          a principal with no ACL: no topic's metadata (requests,
                    state, status, logs, dlq), no read, no join of the
                    workers' group, no write of a request
  platform          writes requests, reads status and logs; not the state
                    topic, and no status event of its own
  wrong password    the worker stops at start (78, never ready), its log
                    naming the SASL authentication failure and the variable
  wrong CA          the same, naming the certificate failure
  renewed cert      the broker's certificate renewed (new key and
                    certificate, same CA and names) while a worker runs a
                    live launch: loaded without a restart through the
                    listener's dynamic ssl.keystore.location
                    (tests/e2e/stack.d/kafka.sh renew-cert); the launch ends,
                    new connections see the new certificate and a launch
                    sent through them ends too; the cached certificate is put
                    back after (restore-cert)
"""

import hashlib
import os
import ssl
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from harness import (TOP, StatusReader, Topics, Worker, launch, unique_id,
                     wait_until)

KAFKA_SH = os.path.join(TOP, "tests", "e2e", "stack.d", "kafka.sh")
TOPIC_NAMES = ("requests", "state", "status", "logs", "dlq")


@pytest.fixture(scope="module")
def secured(stack):
    if not stack.secured:
        pytest.skip("the stack's env file has no SASL_SSL listener")
    return stack


@pytest.fixture(scope="module")
def topics(secured):
    return Topics(secured, "ksec")


def metadata_error(stack, role, topic):
    """The error the broker gives this principal for the topic's metadata
    (None: it may see it)."""
    c = Consumer({**stack.kafka_conf(role), "group.id": f"platform-e2e-{role}"})
    try:
        t = c.list_topics(topic, timeout=10).topics[topic]
        return t.error.code() if t.error else None
    finally:
        c.close()


def produce_error(stack, role, topic):
    """The delivery error of one message this principal sends (None: sent)."""
    p = Producer({**stack.kafka_conf(role), "message.timeout.ms": 8000})
    got = []
    p.produce(topic, key=b"k", value=b"{}",
              on_delivery=lambda err, _m: got.append(err))
    p.flush(10)
    assert got, f"no delivery report for {topic}"
    return got[0].code() if got[0] else None


def test_plaintext_smoke(secured, topics, logdir):
    """The plain configuration: the PLAINTEXT listener, no security
    variable, one launch to its end."""
    plain = {"FORGE_KAFKA_BROKERS": secured.admin_brokers,
             **{k: None for k in secured.env
                if k.startswith(("FORGE_KAFKA_SASL_", "FORGE_KAFKA_SSL_"))},
             "FORGE_KAFKA_SECURITY_PROTOCOL": None}
    reader = StatusReader(secured, topics.status)
    w = Worker(secured, topics, unique_id("w-plain"), unique_id("g"), logdir,
               extra_env=plain)
    try:
        w.wait_ready()
        lid = unique_id("plain")
        topics.send(lid, launch(lid, ["/bin/true"]))
        assert reader.wait_terminal(lid, 90)["data"]["state"] == "SUCCEEDED"
        assert w.terminate() == 0
    finally:
        reader.close()
        w.stop_quietly()


def test_outsider_reads_writes_and_joins_nothing(secured, topics):
    for kind in TOPIC_NAMES:
        topic = getattr(topics, kind)
        assert metadata_error(secured, "outsider", topic) == \
            KafkaError.TOPIC_AUTHORIZATION_FAILED, topic
    # a read by hand: nothing (the status topic has events by now)
    c = Consumer({**secured.kafka_conf("outsider"), "group.id": "platform-x",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topics.status, p, 0) for p in range(3)])
    got, errors, until = 0, set(), time.monotonic() + 3
    while time.monotonic() < until:
        m = c.poll(0.2)
        if m is not None:
            if m.error():
                errors.add(m.error().code())
            else:
                got += 1
    c.close()
    assert got == 0, "the outsider read status events"
    # the workers' group: not joined
    joined = []
    c = Consumer({**secured.kafka_conf("outsider"),
                  "group.id": unique_id("g"),
                  "error_cb": lambda e: joined.append(e.code())})
    c.subscribe([topics.requests],
                on_assign=lambda *_: joined.append("assigned"))
    until = time.monotonic() + 4
    while time.monotonic() < until and not joined:
        m = c.poll(0.2)
        if m is not None and m.error():
            joined.append(m.error().code())
    c.close()
    assert "assigned" not in joined and joined, joined
    assert set(joined) & {KafkaError.GROUP_AUTHORIZATION_FAILED,
                          KafkaError.TOPIC_AUTHORIZATION_FAILED}, joined
    assert produce_error(secured, "outsider", topics.requests) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_platform_writes_requests_reads_status_and_logs_only(secured, topics):
    assert produce_error(secured, "platform", topics.requests) is None
    for kind in ("status", "logs", "dlq"):
        assert metadata_error(secured, "platform", getattr(topics, kind)) \
            is None, kind
    events = topics.read_all(topics.status, timeout=3)  # as the platform
    assert events, "the platform read no status event"
    assert metadata_error(secured, "platform", topics.state) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(secured, "platform", topics.status) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED


def refused_at_start(secured, topics, logdir, name, env, words):
    """A worker that cannot get through: never ready, exit 78 (a
    configuration error, kafka_access.c) within its first init attempt,
    its log naming why."""
    w = Worker(secured, topics, unique_id(name), unique_id("g"), logdir,
               extra_env=env)
    try:
        rc = w.wait_exit(40)
        text = open(w.log_path, errors="replace").read()
        assert rc == 78, w.tail()
        assert all(wd in text for wd in words), w.tail()
        assert not any(line.get("msg", "").startswith("ready: ")
                       for line in w.lines()), w.tail()
    finally:
        w.stop_quietly()


def test_wrong_password_refused_at_start(secured, topics, logdir, tmp_path):
    bad = tmp_path / "bad.password"
    bad.write_text(uuid.uuid4().hex + "\n")
    bad.chmod(0o600)
    refused_at_start(secured, topics, logdir, "w-badpass",
                     {"FORGE_KAFKA_SASL_PASSWORD_FILE": str(bad)},
                     ["SASL authentication error", "invalid credentials",
                      "see FORGE_KAFKA_SASL_USERNAME"])


def test_wrong_ca_refused_at_start(secured, topics, logdir, tmp_path):
    ca = tmp_path / "other-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-days", "1", "-subj", "/CN=another CA",
                    "-keyout", str(tmp_path / "other-ca.key"),
                    "-out", str(ca)], check=True, capture_output=True)
    refused_at_start(secured, topics, logdir, "w-badca",
                     {"FORGE_KAFKA_SSL_CA_FILE": str(ca)},
                     ["certificate verify failed",
                      "see FORGE_KAFKA_SSL_CA_FILE"])


def served_cert(stack):
    """The SHA-256 of the certificate each node's SASL_SSL listener serves
    (one node, or each of three), in node order."""
    out = []
    for address in stack.env["FORGE_STACK_KAFKA_SASL_SSL"].split(","):
        host, port = address.rsplit(":", 1)
        pem = ssl.get_server_certificate((host, int(port)))
        out.append(hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest())
    return out


def test_renewed_broker_certificate_while_a_launch_runs(secured, topics,
                                                        logdir):
    reader = StatusReader(secured, topics.status)
    w = Worker(secured, topics, unique_id("w-renew"), unique_id("g"), logdir)
    before = served_cert(secured)
    renewed = False
    try:
        w.wait_ready()
        first = unique_id("renew-a")
        topics.send(first, launch(first, ["/bin/sleep", "6"]))
        reader.wait_state(first, "RUNNING", 60)
        r = subprocess.run(["bash", KAFKA_SH, "renew-cert"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        renewed = True
        wait_until("every node to serve the renewed certificate",
                   lambda: all(now != then for now, then in
                               zip(served_cert(secured), before)), 30, 0.5)
        # new connections (a new producer and reader) verify the new one
        fresh = Topics.__new__(Topics)
        fresh.__dict__.update(topics.__dict__)
        fresh.producer = Producer({**secured.kafka_conf("platform"),
                                   "partitioner": "murmur2_random"})
        later = StatusReader(secured, topics.status)
        second = unique_id("renew-b")
        fresh.send(second, launch(second, ["/bin/true"]))
        try:
            assert reader.wait_terminal(first, 90)["data"]["state"] == \
                "SUCCEEDED"
            assert later.wait_terminal(second, 90)["data"]["state"] == \
                "SUCCEEDED"
        finally:
            later.close()
        assert w.proc.poll() is None, w.tail()
        assert w.terminate() == 0
    finally:
        reader.close()
        w.stop_quietly()
        if renewed:
            subprocess.run(["bash", KAFKA_SH, "restore-cert"],
                           capture_output=True, timeout=120)
