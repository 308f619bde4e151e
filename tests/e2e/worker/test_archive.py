# SPDX-License-Identifier: Apache-2.0
"""
Log archiving after a terminal state (issue 6): the archive holds exactly
what the job wrote, the logs_archived event describes it, the staging folder
is gone afterwards; a missing log is listed; a launch that never reached
Slurm has no archive; a 1 GiB log does not delay the poll ticks; kill -9
between archive and event, and between event and cleanup, still gives one
event and loses nothing.
"""

import hashlib
import os
import re
import tarfile
import time

import pytest

from harness import (_epoch, StatusReader, Topics, Worker, het_launch, launch,
                     one_worker, unique_id, wait_until)


@pytest.fixture(scope="module")
def arch(stack, logdir):
    with one_worker(stack, logdir, "archive", {"FORGE_LOG_LEVEL": "debug"}) as setup:
        yield setup


def staging(stack, lid, attempt=1):
    return os.path.join(stack.env["FORGE_STORAGE_ROOT"], "staging", lid,
                        str(attempt))


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def the_logs_event(logs, lid, timeout=120):
    return wait_until(f"the logs event of {lid}", lambda: logs.of(lid), timeout)[0]


def check_archive(stack, event):
    """The event's archive: exists, its sha256 and size, its entries."""
    a = event["data"]["archive"]
    assert a["path"] == os.path.join(stack.env["FORGE_STORAGE_ROOT"],
                                     a["relative_path"])
    assert os.path.getsize(a["path"]) == a["bytes"]
    assert sha256_of(a["path"]) == a["sha256"]
    with tarfile.open(a["path"], "r:gz") as t:
        members = {m.name: t.extractfile(m).read() for m in t.getmembers()}
    listed = [(f["name"], f["bytes"]) for f in event["data"]["files"]]
    assert listed == sorted((n, len(b)) for n, b in members.items())
    return members


def test_archive_holds_what_the_job_wrote(stack, arch):
    topics, _, status, logs = arch
    lid = unique_id("logs")
    cmd = ('echo "out of $FORGE_POOL"; echo "err of $FORGE_POOL" >&2; '
           'seq 1 500 | sed "s/^/line /" > "$FORGE_STAGING/metrics-$FORGE_POOL.log"')
    topics.send(lid, het_launch(lid, ["/bin/sh", "-c", cmd]))
    assert status.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"
    event = the_logs_event(logs, lid)
    assert event["id"] == f"{lid}/1/logs"
    assert event["type"] == "forge.launch.logs_archived"
    members = check_archive(stack, event)
    assert sorted(members) == ["metrics-rollout.log", "metrics-trainer.log",
                               "rollout.err", "rollout.out", "trainer.err",
                               "trainer.out"]
    assert members["trainer.out"] == b"out of trainer\n"
    assert members["rollout.err"] == b"err of rollout\n"
    assert members["metrics-trainer.log"].count(b"\n") == 500
    assert event["data"]["missing"] == []
    assert event["data"]["tail"] == {"name": "trainer.out",
                                     "text": "out of trainer\n"}
    wait_until("the staging folder to go",
               lambda: not os.path.exists(staging(stack, lid)), 30)
    time.sleep(1.5)
    assert len(logs.of(lid)) == 1


def test_missing_log_is_listed(stack, arch):
    topics, _, status, logs = arch
    lid = unique_id("missing")
    topics.send(lid, launch(lid, ["/bin/sh", "-c",
                                  'rm -f "$FORGE_STAGING/main.err"; echo bye']))
    status.wait_terminal(lid)
    event = the_logs_event(logs, lid)
    assert event["data"]["missing"] == ["main.err"]
    assert [f["name"] for f in event["data"]["files"]] == ["main.out"]
    check_archive(stack, event)


def test_never_ran_has_no_archive(stack, arch):
    topics, worker, status, logs = arch
    refused = unique_id("refused")
    req = launch(refused, ["/bin/true"])
    req["partition"] = "no-such-partition"  # Slurm refuses: staging was made
    topics.send(refused, req)
    invalid = unique_id("invalid")
    bad = launch(invalid, ["/bin/true"])
    bad["image"]["format"] = "sqsh"
    topics.send(invalid, bad)
    assert status.wait_terminal(refused)["data"]["state"] == "REJECTED"
    assert status.wait_terminal(invalid)["data"]["state"] == "REJECTED"
    wait_until("the refused launch's staging folder to go",
               lambda: not os.path.exists(staging(stack, refused)), 30)
    time.sleep(2)  # a few ticks: nothing to archive, nothing said
    assert logs.of(refused) == [] and logs.of(invalid) == []
    for lid in (refused, invalid):
        assert not os.path.exists(os.path.join(
            stack.env["FORGE_STORAGE_ROOT"], "artifacts", lid))


TICK = re.compile(r"poll tick: \d+ live jobs, (-?\d+) ms late")


def tick_lateness(worker, start, end):
    out = []
    for line in worker.lines():
        m = TICK.match(line.get("msg", ""))
        if m and start <= _epoch(line["ts"]) <= end:
            out.append(int(m.group(1)))
    return out


def test_one_gib_log_does_not_delay_poll_ticks(stack, arch):
    topics, worker, status, logs = arch
    idle_from = time.time()
    time.sleep(3)
    idle = tick_lateness(worker, idle_from, time.time())
    lid = unique_id("big")
    line = "step 123456 loss 0.123456 lr 3.0e-04 tokens/s 81234 gpu_mem 71.3GiB"
    cmd = f'yes "{line}" | head -c 1073741824'
    topics.send(lid, launch(lid, ["/bin/sh", "-c", cmd], time_limit=10))
    done = status.wait_terminal(lid, timeout=300)
    assert done["data"]["state"] == "SUCCEEDED"
    event = the_logs_event(logs, lid, timeout=300)
    assert [(f["name"], f["bytes"]) for f in event["data"]["files"]] == [
        ("main.err", 0), ("main.out", 1 << 30)]
    archiving_ms = (_epoch(event["time"]) - _epoch(done["time"])) * 1000
    busy = tick_lateness(worker, _epoch(done["time"]), _epoch(event["time"]))
    assert len(idle) >= 3 and len(busy) >= 3, (idle, busy)
    # The loop comes to its ticks while a 1 GiB archive is written beside
    # it. A loop blocked by the archive would be late by the archive's whole
    # time (tens of seconds here); a loaded machine (three broker JVMs,
    # scenarios side by side) makes one tick late by up to a second or two.
    # So no tick may be late by a quarter of the archive's time (at least
    # 2 s: gzip writes 1 GiB in no less than that): a bound that tells the
    # two apart without timing the machine.
    print(f"tick lateness idle max {max(idle)} ms, archiving max {max(busy)} ms "
          f"over {len(busy)} ticks; the archive took {archiving_ms:.0f} ms")
    assert max(busy) < max(archiving_ms / 4, 2000), (idle, busy, archiving_ms)
    assert sha256_of(event["data"]["archive"]["path"]) == \
        event["data"]["archive"]["sha256"]
    assert event["data"]["tail"]["text"].endswith(line[:10]) or \
        line[:20] in event["data"]["tail"]["text"]
    wait_until("the 1 GiB staging folder to go",
               lambda: not os.path.exists(staging(stack, lid)), 60)


@pytest.mark.parametrize("point", ["archive.after", "cleanup.before"])
def test_kill9_while_finishing_gives_one_event(stack, slurm, logdir, point):
    topics = Topics(stack, "finish-crash")
    group = unique_id("g")
    status = StatusReader(stack, topics.status)
    logs = StatusReader(stack, topics.logs)
    crashing = Worker(stack, topics, unique_id("wa"), group, logdir,
                      {"FORGE_TEST_CRASH_POINT": point})
    try:
        crashing.wait_ready()
        lid = unique_id("fin")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "echo precious"]))
        assert crashing.wait_exit(120) == -9, crashing.tail()
        # Committed before the crash point; the reader may lag the commit
        # (CI once read RUNNING last at the worker's exit).
        status.wait_state(lid, "SUCCEEDED", 30)
        assert status.states(lid)[-1] == "SUCCEEDED"
        archive = os.path.join(stack.env["FORGE_STORAGE_ROOT"], "artifacts",
                               lid, "1", "logs.tar.gz")
        assert os.path.exists(archive)
        assert os.path.exists(staging(stack, lid))  # nothing deleted yet
        if point == "archive.after":
            assert logs.of(lid) == []
        heir = Worker(stack, topics, unique_id("wb"), group, logdir)
        event = the_logs_event(logs, lid)
        wait_until("the staging folder to go",
                   lambda: not os.path.exists(staging(stack, lid)), 60)
        time.sleep(2)
        assert len(logs.of(lid)) == 1
        members = check_archive(stack, event)
        assert members["main.out"] == b"precious\n"
        assert heir.terminate() == 0, heir.tail()
    finally:
        status.close()
        logs.close()
        crashing.stop_quietly()
        if "heir" in locals():
            heir.stop_quietly()
