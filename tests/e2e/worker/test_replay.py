# SPDX-License-Identifier: Apache-2.0
"""
Replay: the requests topic re-read from the start, by a new consumer group
and by the same group reset to the earliest offsets. The state topic already
knows every launch: zero new Slurm jobs, zero new events.
"""

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from harness import (StatusReader, Topics, Worker, launch, unique_id,
                     wait_until)


def committed_to_end(stack, topics, group):
    """Whether the group committed every requests partition to its end."""
    c = Consumer({**stack.kafka_conf("operator"), "group.id": group,
                  "enable.auto.commit": False})
    try:
        meta = c.list_topics(topics.requests, timeout=10).topics[topics.requests]
        parts = [TopicPartition(topics.requests, p) for p in meta.partitions]
        done = c.committed(parts, timeout=10)
        for tp in done:
            low, high = c.get_watermark_offsets(tp, timeout=10)
            if high > 0 and tp.offset < high:
                return False
        return True
    finally:
        c.close()


def reset_to_earliest(stack, topics, group):
    admin = AdminClient(stack.kafka_conf("operator"))  # replay's
    parts = [TopicPartition(topics.requests, p, 0) for p in range(6)]
    for f in admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, parts)]).values():
        f.result(30)


@pytest.mark.parametrize("how", ["new group", "same group reset"])
def test_replay_redrives_nothing(stack, slurm, logdir, how):
    topics = Topics(stack, "replay")
    group = unique_id("g")
    reader = StatusReader(stack, topics.status)
    first = Worker(stack, topics, unique_id("w1"), group, logdir)
    ids = [unique_id("r") for _ in range(4)]
    try:
        first.wait_ready()
        topics.send(ids[0], launch(ids[0], ["/bin/true"]))
        topics.send(ids[1], launch(ids[1], ["/bin/sh", "-c", "exit 2"]))
        bad = launch(ids[2], ["/bin/true"])
        bad["pools"][0]["series"] = "no-such-series"
        topics.send(ids[2], bad)
        topics.send(ids[3], launch(ids[3], ["/bin/true"]))
        for lid in ids:
            reader.wait_terminal(lid)
        assert first.terminate() == 0, first.tail()
        before = {k: len(v) for k, v in reader.all().items()}
        jobs_before = {lid: slurm.leaders(lid) for lid in ids}

        if how == "new group":
            group = unique_id("g-replay")
        else:
            reset_to_earliest(stack, topics, group)
        second = Worker(stack, topics, unique_id("w2"), group, logdir)
        second.wait_ready()
        wait_until("the replay to reach the end of the requests topic",
                   lambda: committed_to_end(stack, topics, group), 60, 1.0)
        time.sleep(2)  # a few poll ticks
        after = {k: len(v) for k, v in reader.all().items()}
        assert after == before
        assert {lid: slurm.leaders(lid) for lid in ids} == jobs_before
        assert second.terminate() == 0, second.tail()
    finally:
        reader.close()
        first.stop_quietly()
        if "second" in locals():
            second.stop_quietly()
