# SPDX-License-Identifier: Apache-2.0
"""
The launch inside its container (issue 37): every command here runs through
the cluster's real apptainer in a SIF image the stack built
(tests/e2e/stack.d/images.sh: shell.sif holds busybox alone, python.sif a
Debian root with python3; each names itself in /etc/forge-image). What the
user sees first is proved from inside: the image's root and not the node's
files; each mount at its target, a read_only one refusing writes, a file
written to a writable one at its source on the storage root; env and
secret_env there and the node's environment not (--cleanenv); the workdir;
every task of every het component in the image with its rank; what the
containerised process printed in the live logs and the archive; exit 3 is
FAILED with exit code 3.
"""

import json
import os
import uuid

import pytest

from harness import archived_files, het_launch, launch, one_worker, unique_id


@pytest.fixture(scope="module")
def one(stack, logdir):
    with one_worker(stack, logdir, "container",
                    {"FORGE_LOG_LIVE": "opt-in"}) as setup:
        yield setup


def in_image(req, name):
    req["image"] = {"path": f"images/{name}.sif", "format": "sif"}
    return req


def storage_dirs(stack, tag, job_writable=()):
    """Folders of this launch's own under the storage root: {name: path},
    the job user owning those in job_writable (the job runs as that user
    and writes there through its mount)."""
    root = stack.env["FORGE_STORAGE_ROOT"]
    owner = os.stat(root)
    top = os.path.join(root, tag)
    out = {}
    for name in ("data", "out", *job_writable):
        path = os.path.join(top, name)
        os.makedirs(path, exist_ok=True)
        if name in job_writable:
            os.chown(path, owner.st_uid, owner.st_gid)
        out[name] = path
    return out


def finished(one, req, state="SUCCEEDED"):
    """Sends req, waits for its terminal event and its logs; returns the
    terminal event and the archive's files {name: text}."""
    topics, _, status, logs = one
    lid = req["launch_id"]
    topics.send(lid, req)
    done = status.wait_terminal(lid, timeout=180)
    assert done["data"]["state"] == state, (status.states(lid), done)
    return done, archived_files(logs, lid)


def test_the_command_sees_its_image_and_not_the_node(one):
    lid = unique_id("root")
    script = ('cat /etc/forge-image; '
              '[ -e /etc/slurm/slurm.conf ] && echo node-slurm || echo no-slurm; '
              '[ -e /bin/bash ] && echo bash || echo no-bash; '
              'id -u')
    _, files = finished(one, in_image(launch(lid, ["/bin/sh", "-c", script]),
                                      "shell"))
    assert files["main.out"].split() == ["forge-shell-image", "no-slurm",
                                         "no-bash", "2001"], files
    # the python image: another root, under the same command
    lid = unique_id("root")
    _, files = finished(one, in_image(launch(lid, ["/bin/sh", "-c", script]),
                                      "python"))
    assert files["main.out"].split()[:3] == ["forge-python-image", "no-slurm",
                                             "bash"], files


def test_mounts_env_secrets_and_workdir_inside_the_container(stack, one):
    lid = unique_id("mounts")
    tag = unique_id("ctr")
    dirs = storage_dirs(stack, tag, job_writable=("out",))
    with open(os.path.join(dirs["data"], "input.txt"), "w") as f:
        f.write("the input\n")
    secret = f"s3cret-{uuid.uuid4().hex}"
    script = (
        'cat /etc/forge-image; pwd; cat /data/input.txt; '
        '( echo x > /data/new.txt ) 2>/dev/null && echo ro-written || echo ro-refused; '
        'echo written-inside > result.txt; '
        'echo "GREETING=$GREETING"; '
        '[ -n "$E2E_KEY" ] && echo "key-length=${#E2E_KEY}"; '
        'env | cut -d= -f1 | sort > /out/env-names.txt')
    req = launch(lid, ["/bin/sh", "-c", script])
    req["mounts"] = [
        {"source": f"{tag}/data", "target": "/data", "read_only": True},
        {"source": f"{tag}/out", "target": "/out"}]
    req["workdir"] = "/out"
    req["env"] = {"GREETING": "hello from the request"}
    req["secret_env"] = {"E2E_KEY": secret}
    _, files = finished(one, req)
    assert files["main.out"].splitlines() == [
        "forge-python-image", "/out", "the input", "ro-refused",
        "GREETING=hello from the request", f"key-length={len(secret)}"], files
    assert secret not in "".join(files.values())
    # written inside, at the mount's target: found at its source
    with open(os.path.join(dirs["out"], "result.txt")) as f:
        assert f.read() == "written-inside\n"
    assert not os.path.exists(os.path.join(dirs["data"], "new.txt"))
    with open(os.path.join(dirs["out"], "env-names.txt")) as f:
        names = set(f.read().split())
    assert {"GREETING", "E2E_KEY", "FORGE_POOL", "SLURM_PROCID"} <= names, names
    # --cleanenv: nothing of the node's job environment but what the
    # render hands in (APPTAINERENV_ variables, Slurm's per-task ones)
    leaked = {n for n in names if n.startswith(("SLURMD_", "APPTAINERENV_",
                                                "FORGE_E_", "SSH_", "MAIL"))}
    assert not leaked, leaked


def test_exit_3_inside_the_container_is_failed_with_exit_code_3(one):
    lid = unique_id("exit3")
    done, files = finished(one, launch(
        lid, ["/bin/sh", "-c", "cat /etc/forge-image >&2; exit 3"]),
        state="FAILED")
    assert done["data"]["slurm"]["exit_code"] == 3, done
    # the container's line, then srun's own words about the task's exit
    assert files["main.err"].startswith("forge-python-image\n"), files
    assert "Exited with exit code 3" in files["main.err"], files


def test_every_task_of_every_component_runs_in_the_image_with_its_rank(one):
    lid = unique_id("ranks")
    req = het_launch(lid, ["/bin/sh", "-c",
                           'echo "$FORGE_POOL rank=$SLURM_PROCID '
                           'image=$(cat /etc/forge-image)"'])
    req["pools"][0]["tasks_per_node"] = 2
    req["pools"][1]["tasks_per_node"] = 3
    _, files = finished(one, req)
    # one step across the components: ranks 0-1 the trainer's, 2-4 the
    # rollout's
    assert sorted(files["trainer.out"].splitlines()) == [
        f"trainer rank={r} image=forge-python-image" for r in range(2)], files
    assert sorted(files["rollout.out"].splitlines()) == [
        f"rollout rank={r} image=forge-python-image" for r in range(2, 5)], files


TRAIN = r"""
import json, os, sys
rows = [float(x) for x in open("/data/train.txt").read().split()]
loss = sum((x - 0.5) ** 2 for x in rows) / len(rows)
for step in range(1, 4):
    print(f"step {step} loss {loss / step:.4f}", flush=True)
with open("/artifacts/checkpoint.json", "w") as f:
    json.dump({"steps": 3, "loss": round(loss / 3, 4),
               "image": open("/etc/forge-image").read().strip()}, f)
print("checkpoint saved", file=sys.stderr, flush=True)
"""


def test_a_training_script_reads_its_data_and_writes_its_checkpoint(stack,
                                                                     one):
    _, _, _, logs = one
    lid = unique_id("train")
    tag = unique_id("ctr")
    dirs = storage_dirs(stack, tag, job_writable=("artifacts",))
    with open(os.path.join(dirs["data"], "train.txt"), "w") as f:
        f.write("0.1 0.9 0.5 0.3\n")
    req = in_image(launch(lid, ["python3", "-c", TRAIN]), "python")
    req["mounts"] = [
        {"source": f"{tag}/data", "target": "/data", "read_only": True},
        {"source": f"{tag}/artifacts", "target": "/artifacts"}]
    req["logs"] = {"live": True}
    _, files = finished(one, req)
    loss = (0.16 + 0.16 + 0 + 0.04) / 4
    lines = [f"step {s} loss {loss / s:.4f}" for s in (1, 2, 3)]
    assert files["main.out"].splitlines() == lines, files
    assert files["main.err"] == "checkpoint saved\n", files
    with open(os.path.join(dirs["artifacts"], "checkpoint.json")) as f:
        assert json.load(f) == {"steps": 3, "loss": round(loss / 3, 4),
                                "image": "forge-python-image"}
    # the live logs carried the same lines
    live = "".join(s["text"] for e in sorted(
        (e for e in logs.of(lid) if e["type"] == "forge.launch.log_chunk"),
        key=lambda e: e["data"]["n"])
        for s in e["data"]["segments"] if s["file"] == "main.out")
    assert live.splitlines() == lines, live
