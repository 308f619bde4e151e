# SPDX-License-Identifier: Apache-2.0
"""
A backup slurmctld (issue 39): the stack runs two controllers, as sites do
(slurm.conf's SlurmctldHost twice, one StateSaveLocation): the backup takes
control SlurmctldTimeout (10 s here) after the primary stopped answering,
and hands it back when the primary starts again. slurmrestd tries the
controllers in order; while neither has control it holds the call (or the
worker's call times out and is retried within its budget; a submit whose
answer was lost is adopted by its tag, never sent twice: CONTRACT §1).

The primary is killed (-9) while launches run (settled: running for
seconds) and right after others were submitted (fresh); more are sent
while no controller has control, and reach RUNNING under the backup; the
primary is started again and takes control back; launches sent after that
run too. Every launch ends in its true state once (SUCCEEDED for exit 0;
FAILED with exit code 3 for exit 3), its events contiguous, with one Slurm
job (every job slurmctld listed, by the try's tag), which slurmdbd holds
(by id: seen with 26.05, a job that ran under the backup while it handed
control back is in slurmdbd as "allocation", without its comment).
A fresh one may come back from the backup held again (released again by
the poll) or not at all (the primary's last moment was not saved): it
ends in its true state, or LOST, once, never with a second job, never
stuck. A launch already PENDING when its job comes back held shows no
change in jobs/state (PENDING either way; CI saw one stuck so): queued
waits behind a blocker for the a100 nodes, and its job gets the user hold
a restore from a state saved before its release would bring back
(`scontrol uhold`, saved before the kill: that race cannot be timed);
the worker looks at PENDING launches again once no controller answered,
releases it, and it ends SUCCEEDED. Then the backup is killed (-9): the primary goes on alone, and
the backup starts again. It kills shared daemons (@pytest.mark.disrupts): scripts/e2e runs
it alone.
"""

import subprocess
import time

import pytest

from harness import (StatusReader, Topics, Worker, assert_contiguous, launch,
                     stack_verb, unique_id, wait_until)

# slurmctld saves a change a moment after it makes it (a primary killed -9
# within that moment takes the change along: CONTRACT §1); a job running
# this long is in the state the backup reads.
SAVED_S = 6


def user_hold(stack, job_id):
    """`scontrol uhold`: the job held as by its user (JobHeldUser), as a
    controller restores a submit hold saved before its release."""
    subprocess.run(["chroot", stack.env["FORGE_STACK_SLURM_CHROOT"],
                    "scontrol", "uhold", str(job_id)],
                   check=True, capture_output=True, timeout=60)


def controllers(stack):
    """{mode: responding} of slurmrestd's ping of the controllers."""
    return {p["mode"]: p["responding"]
            for p in stack.slurm_get("ping").get("pings", [])}


@pytest.mark.disrupts("slurmctld", "slurmctld-backup")
def test_the_backup_takes_over_and_every_launch_ends_once(stack, slurm,
                                                           logdir):
    topics = Topics(stack, "ctldha")
    status = StatusReader(stack, topics.status)
    w = Worker(stack, topics, unique_id("ha"), unique_id("g"), logdir)
    expected = {}  # launch id -> (state, exit code)
    killed = backup_down = False

    def send(n, secs, failing=1, series="h200", gpus=1, nodes=1):
        sent = []
        for i in range(n):
            lid = unique_id("ha")
            code = 3 if i < failing else 0
            req = launch(lid, ["/bin/sh", "-c", f"sleep {secs}; exit {code}"],
                         series=series, gpus=gpus)
            req["pools"][0]["nodes"] = nodes
            topics.send(lid, req)
            expected[lid] = ("FAILED", 3) if code else ("SUCCEEDED", 0)
            sent.append(lid)
        return sent

    try:
        w.wait_ready()
        settled = send(3, 20)
        # a whole a100 node for 20 s: queued (every a100 GPU) waits for it
        blocker = send(1, 20, failing=0, series="a100", gpus=8)
        for lid in settled + blocker:
            status.wait_state(lid, "RUNNING", 90)
        queued = send(1, 1, failing=0, series="a100", gpus=8, nodes=3)
        status.wait_state(queued[0], "PENDING", 90)
        user_hold(stack, status.of(queued[0])[-1]["data"]["slurm"]["job_id"])
        time.sleep(SAVED_S)  # their state saved, which the backup reads
        fresh = send(3, 6, failing=0)
        for lid in fresh:
            status.wait_state(lid, "SUBMITTED", 90)
        stack_verb("fail", "slurmctld")  # right after fresh's release
        killed = True
        during = send(3, 4)  # while no controller has control
        for lid in during:  # submitted to the backup, which runs them
            status.wait_state(lid, "RUNNING", 120)
        assert controllers(stack) == {"primary": False, "backup": True}
        stack_verb("start", "slurmctld")  # ready: it has control back
        killed = False
        after = send(2, 2)
        for lid in settled + blocker + queued + during + after + fresh:
            done = status.wait_terminal(lid, 240)
            state, code = expected[lid]
            if lid in fresh and done["data"]["state"] == "LOST":
                # unknown to the backup (saved before its submit): its run
                # killed as an orphan, the launch LOST (CONTRACT §1)
                state, code = "LOST", None
            assert done["data"]["state"] == state, (lid, status.states(lid))
            if code is not None:
                assert done["data"]["slurm"]["exit_code"] == code, done
            assert_contiguous(status.of(lid), lid)
            terminal = [s for s in status.states(lid) if s == state]
            assert terminal == [state], status.states(lid)
            # one Slurm job, the one the events name
            assert len(slurm.leaders(lid)) <= 1, slurm.tries(lid)
        for lid in settled + blocker + queued + during + after:
            job = status.of(lid)[-1]["data"]["slurm"]["job_id"]
            assert slurm.leaders(lid) == [job], slurm.tries(lid)
            wait_until(f"slurmdbd to hold {lid}'s job {job}",
                       lambda: stack.accounting(job), 60)
        # the backup lost: the primary goes on alone; started again
        stack_verb("fail", "slurmctld-backup")
        backup_down = True
        alone = send(1, 1, failing=0)[0]
        assert status.wait_terminal(alone, 120)["data"]["state"] == "SUCCEEDED"
        stack_verb("start", "slurmctld-backup")
        backup_down = False
        assert controllers(stack) == {"primary": True, "backup": True}
        assert w.terminate() == 0, w.tail()
    finally:
        if killed:
            stack_verb("start", "slurmctld")
        if backup_down:
            stack_verb("start", "slurmctld-backup")
        status.close()
        w.stop_quietly()
