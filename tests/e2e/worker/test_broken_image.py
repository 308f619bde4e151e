# SPDX-License-Identifier: Apache-2.0
"""
A broken image is a clear failure (issue 37): the batch script checks the
image with the cluster's real apptainer before anything of the job runs
(src/render/render.h), and the worker reads the check's note into the
FAILED event (src/loop/image_note.c). Each case ends FAILED, reason
`image_invalid`, its error naming `$.image.path` with apptainer's own
word, exit code 66, and the command never ran (it would have printed
COMMAND RAN): a file of zeros, a SIF cut short, a SquashFS named .sif (the
image's own root file system, taken out of the stack's shell.sif), and an
image deleted after the submit while its job waited for its node.

The waiting job needs a node it cannot have yet: the `faults` partition's
h200 node, held by a plain job of this scenario's until the image is gone
(@pytest.mark.uses: test_requeue.py and test_retry.py use that node too,
never at the same time).
"""

import os
import shutil
import subprocess

import pytest

from harness import (FAULT_NODES_ENV, TOP, archived_files, launch,
                     one_worker, unique_id, wait_until)
from held_jobs import slurm_call, take_node

pytestmark = pytest.mark.uses("fault-nodes")
COMMAND = ["/bin/sh", "-c", "echo COMMAND RAN"]
SLURM_STACK = os.path.join(TOP, "tests", "e2e", "stack.d", "slurm.sh")


@pytest.fixture(scope="module")
def broken(stack, logdir):
    with one_worker(stack, logdir, "broken-image", FAULT_NODES_ENV) as setup:
        yield setup


@pytest.fixture(scope="module")
def image_dir(stack):
    """A folder of this module's under the runtime root: {name: (relative
    path for the request, host path)}."""
    rel = unique_id("broken")
    host = os.path.join(stack.runtime_root, rel)
    os.makedirs(host)
    os.chmod(host, 0o755)
    yield lambda name: (f"{rel}/{name}", os.path.join(host, name))
    shutil.rmtree(host, ignore_errors=True)


def as_job(*argv):
    """argv as a job runs (the cluster's root, the job user); its stdout."""
    r = subprocess.run(["bash", SLURM_STACK, "as-job", *argv],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout


def squashfs_of(stack, name):
    """The root file system of the stack's image `name`, a SquashFS: the
    partition `apptainer sif list` shows as FS, dumped."""
    cluster = f"{stack.env['FORGE_SLURM_STORAGE_ROOT']}/runtimes/images/{name}"
    listing = as_job("apptainer", "sif", "list", cluster).decode()
    ids = [line.split("|")[0].strip() for line in listing.splitlines()
           if "|FS" in line]
    assert ids, listing
    data = as_job("apptainer", "sif", "dump", ids[0], cluster)
    assert data[:4] == b"hsqs", data[:16]  # SquashFS's magic
    return data


def refused(broken, req, why):
    """Sends req; its end is FAILED, image_invalid, why in the error; the
    command never ran and the job's stderr says why."""
    topics = broken[0]
    lid = req["launch_id"]
    topics.send(lid, req)
    return lambda: check_refused(broken, lid, why)


def check_refused(broken, lid, why):
    _, _, status, logs = broken
    done = status.wait_terminal(lid, timeout=180)
    data = done["data"]
    assert data["state"] == "FAILED", (status.states(lid), data)
    assert data["reason"] == "image_invalid", data
    assert data["error"]["code"] == "image_invalid", data
    assert data["error"]["field"] == "$.image.path", data
    assert why in data["error"]["message"], data["error"]
    assert data["slurm"]["exit_code"] == 66, data["slurm"]
    files = archived_files(logs, lid)
    assert "COMMAND RAN" not in files.get("main.out", ""), files
    assert "forge: image refused: " in files["main.err"], files["main.err"]
    assert why in files["main.err"], files["main.err"]
    assert why in files["image.error"], files
    return data


def test_files_that_are_not_whole_sifs_fail_naming_the_image(stack, broken,
                                                             image_dir):
    shell = os.path.join(stack.image_dir, "shell.sif")
    size = os.path.getsize(shell)
    cases = {
        "zeros.sif": (bytes(size), "invalid SIF magic"),
        "cut.sif": (open(shell, "rb").read()[:size // 2],
                    f"cut short: the file has {size // 2} bytes"),
        "squashfs.sif": (squashfs_of(stack, "shell.sif"),
                         "invalid SIF magic"),
    }
    checks = []
    for name, (content, why) in cases.items():
        rel, host = image_dir(name)
        with open(host, "wb") as f:
            f.write(content)
        os.chmod(host, 0o644)
        req = launch(unique_id("img"), COMMAND, gpus=1)
        req["image"] = {"path": rel, "format": "sif"}
        checks.append(refused(broken, req, why))
    for check in checks:
        check()


def test_an_image_deleted_after_the_submit_fails_naming_it(stack, broken,
                                                           image_dir):
    topics, _, status, _ = broken
    rel, host = image_dir("gone.sif")
    shutil.copyfile(os.path.join(stack.image_dir, "shell.sif"), host)
    os.chmod(host, 0o644)
    # every GPU of the partition's h200 node, taken until the image is gone
    blocker = take_node(stack, "e2e-blocker", "faults", 300, 5)
    try:
        wait_until("the blocker running", lambda: "RUNNING" in slurm_call(
            stack, "GET", f"job/{blocker}")["jobs"][0]["job_state"], 60)
        req = launch(unique_id("gone"), COMMAND, gpus=1)
        req["image"] = {"path": rel, "format": "sif"}
        check = refused(broken, req, "gone.sif: no such file or directory")
        status.wait_state(req["launch_id"], "PENDING", timeout=60)
        os.unlink(host)
    finally:
        slurm_call(stack, "DELETE", f"job/{blocker}")
    data = check()
    assert "PENDING" in status.states(req["launch_id"])
    assert data["slurm"]["job_id"]
