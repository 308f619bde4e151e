# SPDX-License-Identifier: Apache-2.0
"""
Operating a fleet (src/observe/, docs/OPERATING.md): two workers with
listeners on FORGE_HTTP_LISTEN take launches while both are scraped.

- /readyz is 503 while a worker's partitions restore (the first two restores
  of one worker stall, FORGE_TEST_RESTORE_STALLS, so that is seen for
  seconds), then 200; /healthz stays 200 through the restores;
- /metrics passes `promtool check metrics` on both, and its counters move by
  the launches sent (summed over both workers: transitions, REJECTED by
  reason, DLQ, submits, archives), lag is reported for every partition;
- slurmrestd stopped (tests/e2e/stack stop slurmrestd): /healthz stays 200
  on both, /readyz turns 503 within FORGE_READY_SLURM_S (and a ping period),
  and back to 200 once it is started again;
- a stalled loop (the test point FORGE_TEST_LOOP_STALL) turns that worker's
  /healthz 503 within FORGE_HEALTH_STALL_S while the other's stays 200, and
  200 again once it goes on;
- systemd's notifications (a datagram socket bound here as NOTIFY_SOCKET):
  READY=1 once, WATCHDOG=1 from the loop, STOPPING=1 on SIGTERM.

It stops a daemon of the shared stack (@pytest.mark.disrupts): scripts/e2e
runs it alone; where other runs share the stack, run this file under the
exclusive lock (flock -x /tmp/forge-e2e.lock ...), as the chaos scenarios.
"""

import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

from harness import (TOP, StatusReader, Topics, Worker, free_port, http_get,
                     launch, stack_verb, unique_id, wait_until)

STALL_S = 8          # FORGE_HEALTH_STALL_S
READY_SLURM_S = 6    # FORGE_READY_SLURM_S: the probe pings every 2 s
MAX_POLL_MS = 20000  # a restore then stalls 2.5 s (M/8), a pass 5 s (M/4)
SUCCEEDING, FAILING = 6, 1


def parse(text):
    """{(name, ((label, value), ...)): value} from the text format."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        pairs = []
        for item in labels.rstrip("}").split('",') if labels else []:
            k, _, v = item.partition('="')
            pairs.append((k, v.rstrip('"')))
        out[(name, tuple(sorted(pairs)))] = float(value)
    return out


def total(metrics_list, name, **labels):
    """The sum over workers and series of name whose labels include these."""
    want = set(labels.items())
    return sum(v for m in metrics_list for (n, ls), v in m.items()
               if n == name and want <= set(ls))


def scrape_all(ports):
    out = []
    for port in ports:
        status, text = http_get(port, "/metrics")
        assert status == 200, (port, status, text)
        out.append(parse(text))
    return out


def promtool_check(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()


class Timeline:
    """/readyz and /healthz of some ports, every 0.1 s, on a thread."""

    def __init__(self, ports):
        self.ports, self.seen, self.stopping = ports, [], False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            for port in self.ports:
                self.seen.append((time.monotonic(), port, "/readyz",
                                  *http_get(port, "/readyz")))
                self.seen.append((time.monotonic(), port, "/healthz",
                                  *http_get(port, "/healthz")[:1], ""))
            time.sleep(0.1)

    def of(self, port, path):
        return [(t, s, b) for t, p, q, s, b in self.seen
                if p == port and q == path]

    def stop(self):
        self.stopping = True
        self.thread.join(10)


class NotifySocket:
    """What systemd listens on for a Type=notify service: every datagram
    read, on a thread, as it comes."""

    def __init__(self):
        self.path = f"/tmp/forge-ops-notify-{uuid.uuid4().hex[:8]}.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages, self.stopping = [], False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except (socket.timeout, BlockingIOError):
                pass

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()
        os.unlink(self.path)


def wait_status(port, path, status, timeout, what):
    return wait_until(f"{what}: {path} on {port} to answer {status}",
                      lambda: http_get(port, path)[0] == status, timeout, step=0.25)


def owning_ready(port):
    """/readyz is 200 and the worker owns a partition (not a standby)."""
    status, body = http_get(port, "/readyz")
    return status == 200 and '"owned": 0,' not in body


@pytest.mark.disrupts("slurmrestd")
def test_probes_metrics_and_notifications_of_two_workers(stack, slurm, logdir):
    topics = Topics(stack, "ops")
    reader = StatusReader(stack, topics.status)
    group = unique_id("g")
    port_a, port_b = free_port(), free_port()
    stall_file = os.path.join(logdir, f"stall-{uuid.uuid4().hex[:8]}")
    notify = NotifySocket()
    common = {"FORGE_HEALTH_STALL_S": str(STALL_S),
              "FORGE_READY_SLURM_S": str(READY_SLURM_S),
              "FORGE_KAFKA_PROP_MAX_POLL_INTERVAL_MS": str(MAX_POLL_MS)}
    timeline = Timeline([port_a, port_b])
    a = Worker(stack, topics, unique_id("wa"), group, logdir, {
        **common, "FORGE_HTTP_LISTEN": f"127.0.0.1:{port_a}",
        "FORGE_TEST_RESTORE_STALLS": "1:2",
        "NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"})
    workers = [a]
    slurmrestd_stopped = False
    try:
        # ---- restoring, then ready ---------------------------------------
        # A starts alone so the group gives it every partition and its
        # stalled restores are seen; started together, the group may answer
        # B first and leave A a ready standby with nothing to restore.
        wait_until("A ready owning partitions",
                   lambda: owning_ready(port_a), 90, step=0.25)
        b = Worker(stack, topics, unique_id("wb"), group, logdir, {
            **common, "FORGE_HTTP_LISTEN": f"127.0.0.1:{port_b}",
            "FORGE_TEST_LOOP_STALL": stall_file})
        workers.append(b)
        wait_until("B ready owning partitions",
                   lambda: owning_ready(port_b), 90, step=0.25)
        wait_status(port_a, "/readyz", 200, 90, "A ready after B joined")
        timeline.stop()
        ready_a = timeline.of(port_a, "/readyz")
        restoring = [b_ for _, s, b_ in ready_a
                     if s == 503 and '"restoring": 0' not in b_]
        assert restoring, f"A's /readyz never said restoring: {ready_a[:20]}"
        assert "owned partitions are restoring" in restoring[0]
        first_ok = next(t for t, s, _ in ready_a if s == 200)
        assert any(t < first_ok for t, s, b_ in ready_a if b_ in restoring)
        for port in (port_a, port_b):  # a restore is no stall
            lives = [s for _, s, _ in timeline.of(port, "/healthz")]
            assert 503 not in lives, (port, lives)
        assert a.logged("restore 2 stalls"), a.tail()

        # ---- metrics move by the launches sent -----------------------------
        for port in (port_a, port_b):
            promtool_check(http_get(port, "/metrics")[1])
        before = scrape_all([port_a, port_b])
        ok_ids = [unique_id("ok") for _ in range(SUCCEEDING)]
        fail_ids = [unique_id("fail") for _ in range(FAILING)]
        bad_id = unique_id("oci")
        for lid in ok_ids:
            topics.send(lid, launch(lid, ["/bin/true"]))
        for lid in fail_ids:
            topics.send(lid, launch(lid, ["/bin/false"]))
        bad = launch(bad_id, ["/bin/true"])
        bad["image"] = {"path": "docker://nginx:latest", "format": "sif"}
        topics.send(bad_id, bad)
        topics.send(None, b"\x00 not a request")
        for lid in ok_ids:
            assert reader.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"
        for lid in fail_ids:
            assert reader.wait_terminal(lid)["data"]["state"] == "FAILED"
        refused = reader.wait_terminal(bad_id)["data"]
        assert refused["state"] == "REJECTED", refused
        reached = SUCCEEDING + FAILING

        def moved(name, **labels):
            return (total(scrape_all([port_a, port_b]), name, **labels) -
                    total(before, name, **labels))

        # every launch that reached Slurm is archived, then counted
        wait_until("the archives to be counted",
                   lambda: moved("forge_archives_total") == reached, 60)
        wait_until("the DLQ record to be counted",
                   lambda: moved("forge_dlq_records_total") == 1, 30)
        after = scrape_all([port_a, port_b])

        def delta(name, **labels):
            return total(after, name, **labels) - total(before, name, **labels)

        tr = "forge_launch_transitions_total"
        assert delta(tr, to="ACCEPTED") == reached
        assert delta(tr, to="SUCCEEDED") == SUCCEEDING
        assert delta(tr, to="FAILED") == FAILING
        assert delta(tr, to="REJECTED") == 1
        assert delta(tr, **{"from": "NONE", "to": "REJECTED"}) == 1
        assert delta("forge_launches_rejected_total",
                     reason=refused["reason"]) == 1
        assert delta("forge_launches_rejected_total") == 1
        assert delta("forge_slurm_requests_total", operation="submit",
                     code="200") == reached
        assert delta("forge_slurm_request_duration_seconds_count",
                     operation="submit") == reached
        assert delta("forge_kafka_transactions_total", outcome="committed") > 0
        assert delta("forge_kafka_transactions_total", outcome="aborted") == 0
        assert delta("forge_archive_bytes_total") > 0
        assert delta("forge_poll_tick_duration_seconds_count") > 0
        assert total(after, "forge_partitions_owned") == 6
        assert total(after, "forge_partitions_restoring") == 0
        assert total(after, "forge_ready") == 2
        # the census is counted at each tick (every 500 ms here): a launch
        # a jobcomp record ended since the last one is still counted live
        wait_until("no live launch in the census",
                   lambda: total(scrape_all([port_a, port_b]),
                                 "forge_launches_live") == 0, 10)
        for m in after:
            assert total([m], "forge_build_info", slurm_api=stack.api) == 1
            jwt = [(dict(ls), v) for (n, ls), v in m.items()
                   if n == "forge_slurm_jwt_expiry_seconds"]
            source = ("minted" if stack.env.get("FORGE_SLURM_JWT_KEY_FILE")
                      else "file")
            assert len(jwt) == 1 and jwt[0][0] == {"source": source} and \
                jwt[0][1] > 0, jwt

        def lag_partitions():
            return {dict(labels)["partition"]
                    for m in scrape_all([port_a, port_b])
                    for (name, labels) in m
                    if name == "forge_kafka_consumer_lag"}

        wait_until("consumer lag for every partition (statistics every 5 s)",
                   lambda: lag_partitions() == {str(p) for p in range(6)}, 30)
        wait_until("the lag to drain to 0",
                   lambda: total(scrape_all([port_a, port_b]),
                                 "forge_kafka_consumer_lag") == 0, 30)
        for port in (port_a, port_b):
            promtool_check(http_get(port, "/metrics")[1])

        # ---- slurmrestd away: alive, not ready; back: ready ---------------
        stack_verb("stop", "slurmrestd")
        slurmrestd_stopped = True
        stopped_at = time.monotonic()
        not_ready = {}
        while len(not_ready) < 2:
            assert time.monotonic() - stopped_at < READY_SLURM_S + 10, \
                f"/readyz still 200 on {set((port_a, port_b)) - set(not_ready)}"
            for port in (port_a, port_b):
                assert http_get(port, "/healthz")[0] == 200, port
                status, body = http_get(port, "/readyz")
                if status == 503 and port not in not_ready:
                    assert "slurmrestd has not answered within the bound" \
                        in body, body
                    not_ready[port] = time.monotonic() - stopped_at
            time.sleep(0.25)
        for port in (port_a, port_b):  # still alive after the turn
            assert http_get(port, "/healthz")[0] == 200, port
        stack_verb("start", "slurmrestd")
        slurmrestd_stopped = False
        for port in (port_a, port_b):
            wait_status(port, "/readyz", 200, READY_SLURM_S + 10,
                        "slurmrestd back")
            assert http_get(port, "/healthz")[0] == 200

        # ---- a stalled loop: B not alive, A unaffected ---------------------
        open(stall_file, "w").close()
        stalled_at = time.monotonic()
        wait_status(port_b, "/healthz", 503, STALL_S + 5, "B's loop stalls")
        assert time.monotonic() - stalled_at >= STALL_S - 1
        assert http_get(port_a, "/healthz")[0] == 200
        status, body = http_get(port_b, "/readyz")
        assert status == 503 and "the loop is stalled" in body, body
        status, text = http_get(port_b, "/metrics")  # the listener still answers
        assert status == 200 and "\nforge_live 0\n" in text
        os.unlink(stall_file)
        wait_status(port_b, "/healthz", 200, 5, "B's loop goes on")
        assert b.logged("test point: the loop stalls while")

        # ---- systemd's notifications ---------------------------------------
        assert a.terminate() == 0, a.tail()
        time.sleep(0.5)
        messages = list(notify.messages)
        assert sum(m.startswith("READY=1") for m in messages) == 1, messages
        assert messages.count("WATCHDOG=1") >= 3, messages
        assert any(m.startswith("STOPPING=1") for m in messages), messages
        ready_i = next(i for i, m in enumerate(messages)
                       if m.startswith("READY=1"))
        stop_i = next(i for i, m in enumerate(messages)
                      if m.startswith("STOPPING=1"))
        assert ready_i < stop_i
        assert b.terminate() == 0, b.tail()
    finally:
        if slurmrestd_stopped:
            stack_verb("start", "slurmrestd")
        if os.path.exists(stall_file):
            os.unlink(stall_file)
        timeline.stop()
        reader.close()
        notify.close()
        for w in workers:
            w.stop_quietly()
