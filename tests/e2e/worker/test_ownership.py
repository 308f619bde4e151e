# SPDX-License-Identifier: Apache-2.0
"""
Work for a partition that is no longer the worker's never reaches Slurm
(issue 11, src/record/generation.h): submits queued in a worker's Slurm pool
when its partitions move to another worker (the group throws it out), or
when an aborted transaction rewinds its memory, are dropped right before
their POST; a submit whose launch is cancelled after it was posted is
withdrawn before its POST. The watcher never sees a second Slurm job for
a tag (beyond the one already on the wire when ownership changed, which
the next owner cancels by its tag), every launch ends exactly once.

Between the worker and the real slurmrestd sits a proxy that forwards
every call at once and, from the first submit on, holds back every answer
until the test lets go: the submit has reached Slurm while the worker
still waits, and the next items wait in the worker's Slurm pool behind it
(fault injection the real slurmrestd cannot do; every answer is the real
one). A worker submits on FORGE_SLURM_MAX_CONNECTIONS connections at once,
any free one taking the next launch (src/loop/submit.c): the workers
here have one, so each launch waits behind the one before.
"""

import http.server
import json
import os
import signal
import threading
import urllib.error
import urllib.request

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     unique_id, wait_until)

SLEEP = ["/bin/sh", "-c", "sleep 15"]
LANES = 1  # the workers' FORGE_SLURM_MAX_CONNECTIONS, set explicitly below


def queued_ids(prefixes):
    """A unique id per prefix (one connection: each waits behind the one
    before)."""
    return [unique_id(p) for p in prefixes]


class HoldingProxy:
    """Forwards at once; from the first submit on, answers wait for
    release(). `tags` lists the comment tag of every submit forwarded."""

    def __init__(self, upstream):
        self.tags = []
        self.holding = threading.Event()  # a submit arrived: hold answers
        self.released = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self):
                body = None
                if "Content-Length" in self.headers:
                    body = self.rfile.read(int(self.headers["Content-Length"]))
                req = urllib.request.Request(
                    upstream + self.path, data=body, method=self.command,
                    headers={k: v for k, v in self.headers.items()
                             if k.lower() not in ("host", "connection")})
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                if self.command == "POST" and self.path.endswith("/job/submit"):
                    proxy.tags.append(_tag(body))
                    proxy.holding.set()
                if proxy.holding.is_set():
                    proxy.released.wait(300)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def release(self):
        self.released.set()

    def close(self):
        self.released.set()
        self.server.shutdown()


def _tag(body):
    try:
        job = json.loads(body).get("job") or json.loads(body)["jobs"][0]
        return job.get("comment")
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def send_to(topics, partition, lid, request):
    topics.producer.produce(topics.requests, key=lid, partition=partition,
                            value=json.dumps(request))
    topics.producer.flush(10)


def dropped(worker, lid):
    return worker.logged(f"submit of {lid} dropped before Slurm")


def test_queued_submits_stay_behind_when_the_partitions_move(stack, slurm,
                                                             logdir):
    """The old owner (SIGSTOP) is thrown out of the group with one submit in
    slow flight and three queued behind it; the heir cleans and submits all
    four, adopting the one whose POST reached Slurm (held: released).
    Resumed, the old owner learns its partitions are lost, then Slurm
    answers: its queued submits must not POST (before the fix they did, and
    each launch had two live jobs), and it cancels nothing."""
    proxy = HoldingProxy(stack.plain_slurm_url)
    topics = Topics(stack, "own-move")
    group = unique_id("g")
    reader = StatusReader(stack, topics.status)
    old = Worker(stack, topics, unique_id("wa"), group, logdir,
                 {"FORGE_SLURM_REST_URL": proxy.url,
                  "FORGE_SLURM_MAX_CONNECTIONS": str(LANES)})
    ids = queued_ids([f"mv{p}" for p in range(4)])
    heir = None
    try:
        old.wait_ready()
        for p, lid in enumerate(ids):
            send_to(topics, p, lid, launch(lid, SLEEP))
        for lid in ids:
            reader.wait_state(lid, "ACCEPTED", timeout=60)
        assert proxy.holding.wait(30), old.tail()
        # the one on the wire: whichever the worker took first (the four
        # partitions' requests may come in one fetch, in any order)
        assert len(proxy.tags) == 1, proxy.tags
        flying = next(lid for lid in ids if proxy.tags[0] == f"forge:{lid}:1")
        queued = [lid for lid in ids if lid != flying]

        os.kill(old.proc.pid, signal.SIGSTOP)
        heir = Worker(stack, topics, unique_id("wb"), group, logdir)
        for lid in ids:  # the heir adopted by the tag or submitted
            reader.wait_state(lid, "SUBMITTED", timeout=120)
        os.kill(old.proc.pid, signal.SIGCONT)
        wait_until("the old owner to learn its partitions are lost",
                   lambda: sum("lost: dropped without commit" in
                               line.get("msg", "") for line in old.lines())
                   >= 6, 60)
        proxy.release()  # the held answer: the queued submits go next

        wait_until(f"{old.worker_id} to be done with its queued submits",
                   lambda: len(proxy.tags) > 1 or
                   all(dropped(old, lid) for lid in queued), 60)
        for lid in ids:
            done = reader.wait_terminal(lid, timeout=180)
            assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        assert proxy.tags == [f"forge:{flying}:1"], \
            f"the old owner posted again: {proxy.tags}"
        for lid in queued:
            assert len(slurm.leaders(lid)) == 1, (lid, slurm.leaders(lid))
        # the submit on the wire reached Slurm; the heir adopted its job
        assert len(slurm.leaders(flying)) == 1, slurm.leaders(flying)
        assert heir.logged(f"adopted job {slurm.leaders(flying)[0]} of "
                           f"{flying}")
        for lid in ids:
            events = reader.of(lid)
            assert_contiguous(events, lid)
            assert [e["data"]["state"] for e in events].count("SUCCEEDED") == 1
            assert slurm.most_alive(lid) == 1, (lid, slurm.jobs)
            assert len(slurm.ran(lid)) == 1, (lid, slurm.jobs)
        for lid in queued:
            assert dropped(old, lid), old.tail()
        assert old.terminate() == 0, old.tail()
        assert heir.terminate() == 0, heir.tail()
    finally:
        reader.close()
        proxy.close()
        if old.proc.poll() is None:
            os.kill(old.proc.pid, signal.SIGCONT)
        old.stop_quietly()
        if heir:
            heir.stop_quietly()


def test_queued_submit_is_dropped_when_an_abort_rewinds(stack, slurm, logdir):
    """Three launches, each in its own transaction; the third transaction is
    aborted (test point) while the first submit waits for Slurm's answer
    and the second is queued. The rewind restores the partitions: the
    queued submit was made before it and must not POST (before the fix it
    did, then the rewound intent's clean found and cancelled that job and
    submitted another: two jobs for one tag). The first, on the wire when
    the rewind came, is adopted by its tag."""
    proxy = HoldingProxy(stack.plain_slurm_url)
    topics = Topics(stack, "own-rewind")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_SLURM_REST_URL": proxy.url,
                     "FORGE_SLURM_MAX_CONNECTIONS": str(LANES),
                     "FORGE_TEST_ABORT_TXN": "3"})
    ids = queued_ids([f"rw{p}" for p in range(3)])
    try:
        worker.wait_ready()
        for p, lid in enumerate(ids[:2]):  # transactions 1 and 2
            send_to(topics, p, lid, launch(lid, SLEEP))
            reader.wait_state(lid, "ACCEPTED", timeout=60)
        assert proxy.holding.wait(30), worker.tail()
        send_to(topics, 2, ids[2], launch(ids[2], SLEEP))  # 3: aborted
        wait_until("the third transaction's abort",
                   lambda: worker.logged("aborting transaction 3"), 60)
        reader.wait_state(ids[2], "ACCEPTED", timeout=60)  # replayed
        proxy.release()

        for lid in ids:
            done = reader.wait_terminal(lid, timeout=180)
            assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        assert proxy.tags.count(f"forge:{ids[1]}:1") == 1, \
            f"the queued submit posted after the rewind: {proxy.tags}"
        assert len(slurm.leaders(ids[1])) == 1, slurm.leaders(ids[1])
        assert len(slurm.leaders(ids[2])) == 1, slurm.leaders(ids[2])
        # the first was on the wire: its job adopted by its tag
        assert len(slurm.leaders(ids[0])) == 1, slurm.leaders(ids[0])
        for lid in ids:
            assert len(slurm.ran(lid)) == 1, (lid, slurm.jobs)
            assert_contiguous(reader.of(lid), lid)
            assert reader.states(lid).count("ACCEPTED") == 1
            assert slurm.most_alive(lid) == 1, (lid, slurm.jobs)
        assert dropped(worker, ids[1]), worker.tail()
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        proxy.close()
        worker.stop_quietly()


def test_cancel_withdraws_a_posted_submit(stack, slurm, logdir):
    """A launch cancelled while its submit waits in the pool behind a slow
    one: the submit is withdrawn before its POST, the launch goes CANCELLED
    (requested) and Slurm never sees a job of it (before, the job was
    submitted, then cancelled)."""
    proxy = HoldingProxy(stack.plain_slurm_url)
    topics = Topics(stack, "own-withdraw")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w"), unique_id("g"), logdir,
                    {"FORGE_SLURM_REST_URL": proxy.url,
                     "FORGE_SLURM_MAX_CONNECTIONS": str(LANES)})
    first, second = queued_ids(["wd-first", "wd-second"])
    try:
        worker.wait_ready()
        send_to(topics, 0, first, launch(first, ["/bin/true"]))
        reader.wait_state(first, "ACCEPTED", timeout=60)
        assert proxy.holding.wait(30), worker.tail()
        send_to(topics, 1, second, launch(second, SLEEP))
        reader.wait_state(second, "ACCEPTED", timeout=60)
        send_to(topics, 1, second, {"kind": "cancel", "launch_id": second})
        wait_until("the cancel to be recorded",
                   lambda: len(topics.read_all(topics.state, 2)) >= 3, 60)
        proxy.release()

        done = reader.wait_terminal(second, timeout=120)
        assert reader.wait_terminal(first)["data"]["state"] == "SUCCEEDED"
        assert proxy.tags == [f"forge:{first}:1"], \
            f"the cancelled launch was submitted: {proxy.tags}"
        assert slurm.leaders(second) == [], slurm.leaders(second)
        assert done["data"]["state"] == "CANCELLED", reader.states(second)
        assert done["data"]["reason"] == "requested"
        assert reader.states(second) == ["ACCEPTED", "CANCELLED"]
        assert_contiguous(reader.of(second), second)
        assert worker.logged(f"submit of {second} withdrawn before its POST")
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        proxy.close()
        worker.stop_quietly()
