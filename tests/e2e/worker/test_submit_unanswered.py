# SPDX-License-Identifier: Apache-2.0
"""
A submit on a kept connection that closes without an answer after
slurmrestd took it (the race every keep-alive connection has): the worker
never sends that POST again, says nothing went wrong, and finds the job by
its tag among the jobs above the connection's last job id (one jobs/state
and a details call per job above it, never the whole GET /jobs list).
Every call of the worker goes through the proxy in front of the real
slurmrestd (slurm_proxy.py), which carries that one submit out and then
closes the connection unanswered: fault injection the real slurmrestd
cannot do on cue; every answer given is the real one.
"""

import time

from harness import StatusReader, Topics, Worker, launch, unique_id, wait_until
from slurm_proxy import SlurmProxy


def test_an_unanswered_submit_is_found_by_its_tag_not_sent_again(
        stack, slurm, logdir):
    proxy = SlurmProxy(stack.plain_slurm_url)
    topics = Topics(stack, "unanswered")
    # one lane: the second submit goes on the first one's kept connection
    worker = Worker(stack, topics, unique_id("wu"), unique_id("g"), logdir,
                    {"FORGE_SLURM_REST_URL": proxy.url,
                     "FORGE_SLURM_MAX_CONNECTIONS": "1"})
    reader = StatusReader(stack, topics.status)
    try:
        worker.wait_ready()
        first = unique_id("ua")
        topics.send(first, launch(first, ["/bin/sh", "-c", "sleep 5"]))
        floor = reader.wait_state(first, "SUBMITTED", 60)
        floor = floor["data"]["slurm"]["job_id"]

        proxy.unanswer("submit")
        since = time.monotonic()
        lid = unique_id("ub")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 5"]))
        submitted = reader.wait_state(lid, "SUBMITTED", 60)
        job = submitted["data"]["slurm"]["job_id"]

        sent = proxy.count("submit", since=since)
        assert sent == 1, f"the submit reached slurmrestd {sent} times"
        wait_until("the job in Slurm", lambda: slurm.leaders(lid), 15)
        assert slurm.leaders(lid) == [job], slurm.leaders(lid)
        assert job > floor
        assert proxy.count("jobs", since=since) == 0, "the whole list was read"
        lookups = [p for _, _, p in proxy.calls("states", since=since)
                   if "?" not in p]
        assert lookups, proxy.calls(since=since)
        assert reader.states(lid)[:2] == ["ACCEPTED", "SUBMITTED"]
        done = reader.wait_terminal(lid, timeout=120)
        assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        worker.stop_quietly()
        proxy.close()
