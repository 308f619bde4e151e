# SPDX-License-Identifier: Apache-2.0
"""
Shared storage as a trust boundary (issue 10), on the real stack: jobs are
untrusted. A job of an attacking launch plants links where the worker (root)
works - the staging folder of a victim, `staging` and `artifacts`
themselves - and a victim launch follows; the host folders the links point
to are hashed and stat'ed before and after: nothing outside the storage root
is read, written, chowned or deleted, the victim ends with a clear reason,
and the worker stays up. Then tenants: a job of team-a cannot read what a
launch of team-b keeps in its staging folder; and secrets: no ingest token
and no secret_env value in the state, status or logs topics, nor in the
batch scripts Slurm stores.

The attacker runs as the storage root's owner (the stack's `forge`, uid
2001, team-a), the worst case of a real site: it may rename `staging` and
`artifacts` away and put its own folders or links in their place. So the
scenario has a storage root of its own (harness.own_storage): what its
attacks rename and plant never reaches the scenarios running beside it.
"""

import hashlib
import os
import shutil
import subprocess
import tarfile
import time
import uuid

import pytest

from harness import (launch, one_worker, own_storage, unique_id, wait_until)

# The scenario's storage root (fleet): FORGE_STORAGE_ROOT, the worker's
# path, and FORGE_SLURM_STORAGE_ROOT, the same folder as the jobs see it.
ROOT = {}


def cluster_storage():
    return ROOT["FORGE_SLURM_STORAGE_ROOT"]


def snapshot(path):
    """Every entry under path: (mode, uid, gid, size, mtime, sha256)."""
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files + [""]:
            p = os.path.join(root, name) if name else root
            st = os.lstat(p)
            digest = None
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[p] = (st.st_mode, st.st_uid, st.st_gid, st.st_size,
                      st.st_mtime_ns, digest)
    return out


@pytest.fixture
def target():
    """A root-only host folder outside the storage root, with a secret."""
    path = f"/var/tmp/forge-e2e-target-{uuid.uuid4().hex[:8]}"
    os.makedirs(path, mode=0o700)
    os.chmod(path, 0o700)
    with open(os.path.join(path, "root-only.txt"), "w") as f:
        f.write("root's secret\n")
    os.chmod(os.path.join(path, "root-only.txt"), 0o600)
    before = snapshot(path)
    yield path
    assert os.path.isdir(path), f"{path} was deleted"
    assert snapshot(path) == before, f"{path} was touched"
    shutil.rmtree(path)


@pytest.fixture(scope="module")
def fleet(stack, logdir):
    """One worker with the stack's tenants: team-a (forge, 2001, the
    default) and team-b (forge2, 2003); it submits as SlurmUser for them,
    in a storage root of the scenario's own."""
    ROOT.update(own_storage(stack, unique_id("trust")))
    env = {"FORGE_SLURM_REST_USER": "slurm",
           "FORGE_SLURM_JWT_FILE": stack.env["FORGE_STACK_SLURM_PROXY_JWT_FILE"],
           "FORGE_TENANTS_FILE": stack.env["FORGE_STACK_TENANTS_FILE"],
           **ROOT}
    with one_worker(stack, logdir, "trust", env,
                    before_stop=lambda: repair_storage(stack)) as setup:
        yield setup


def storage(stack, *parts):
    """A path in the scenario's storage root, as the worker sees it."""
    return os.path.join(ROOT["FORGE_STORAGE_ROOT"], *parts)


def repair_storage(stack):
    """Puts back what an attack renamed away (the next scenario's worker
    must find `staging` and `artifacts` as the worker made them)."""
    for area in ("staging", "artifacts"):
        path = storage(stack, area)
        if os.path.islink(path) or (os.path.isdir(path) and
                                    os.stat(path).st_uid != 0):
            if os.path.islink(path):
                os.unlink(path)
            else:
                shutil.rmtree(path)
        for name in os.listdir(storage(stack)):
            if name.startswith(area + ".moved-"):
                if not os.path.exists(path):
                    os.rename(storage(stack, name), path)
                else:
                    shutil.rmtree(storage(stack, name))


def run_attacker(fleet, script, tenant=None, with_event=False):
    """A launch whose job runs script (sh) as its tenant's user; waits for
    it and returns its main log from its archive ("" when the attack moved
    the attacker's own staging folder away too), and its logs event."""
    topics, worker, status, logs = fleet
    lid = unique_id("attacker")
    req = launch(lid, ["/bin/sh", "-c", script], gpus=0)
    if tenant:
        req["tenant"] = tenant
    topics.send(lid, req)
    end = status.wait_terminal(lid, timeout=120)
    assert end["data"]["state"] == "SUCCEEDED", (end, worker.tail())
    event = wait_until(f"{lid}'s archive", lambda: logs.of(lid), 120)[0]
    with tarfile.open(event["data"]["archive"]["path"], "r:gz") as t:
        log = ""
        if "main.out" in t.getnames():
            log = t.extractfile("main.out").read().decode(errors="replace")
    return (log, event) if with_event else log


def assert_alive(worker):
    assert worker.proc.poll() is None, worker.tail()


# ---- links planted by a job --------------------------------------------------

def swap_area(area):
    """sh: move `area` away (the attacker owns the storage root) and put a
    folder of the attacker's in its place."""
    s = cluster_storage()
    return (f'mv {s}/{area} {s}/{area}.moved-$$ 2>/dev/null; '
            f'mkdir -p {s}/{area}; ')


PLANTS = {
    # staging/<victim>/1 -> the root-only folder: was chowned, written into
    "staging-attempt": lambda v, t: swap_area("staging") +
    f"mkdir -p {cluster_storage()}/staging/{v} && "
    f"ln -s {t} {cluster_storage()}/staging/{v}/1",
    # staging/<victim> -> the folder: link in a middle component
    "staging-launch": lambda v, t: swap_area("staging") +
    f"ln -s {t} {cluster_storage()}/staging/{v}",
    # staging itself -> a folder holding <victim>/1 -> the target
    "staging-root": lambda v, t:
    f"mv {cluster_storage()}/staging {cluster_storage()}/staging.moved-$$; "
    f"ln -s {t} {cluster_storage()}/staging",
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_staging_link_is_never_followed(stack, fleet, target, plant):
    topics, worker, status, logs = fleet
    victim = unique_id("victim")
    run_attacker(fleet, PLANTS[plant](victim, target))
    req = launch(victim, ["/bin/sh", "-c", "echo victim ran"], gpus=0)
    req["ingest"] = {"endpoint": "https://ingest.example.org/v1",
                     "token": f"victim-token-{uuid.uuid4().hex}"}
    topics.send(victim, req)
    end = status.wait_terminal(victim, timeout=120)
    assert end["data"]["state"] == "REJECTED", end
    assert end["data"]["reason"] == "unsafe_storage", end
    assert "link" in end["data"]["error"]["message"], end
    time.sleep(1)
    assert_alive(worker)
    repair_storage(stack)


def test_link_planted_while_the_victim_runs(stack, fleet, target):
    """The victim is submitted and running when the attacker swaps its
    staging folder for a link: the archive and the cleanup refuse it."""
    topics, worker, status, logs = fleet
    victim = unique_id("victim")
    topics.send(victim, launch(victim, ["/bin/sh", "-c", "echo v; sleep 8"],
                               gpus=0))
    status.wait_state(victim, "RUNNING", timeout=60)
    run_attacker(fleet, swap_area("staging") +
                 f"ln -s {target} {cluster_storage()}/staging/{victim}")
    end = status.wait_terminal(victim, timeout=120)
    assert end["data"]["state"] == "SUCCEEDED", end
    event = wait_until(f"{victim}'s logs event", lambda: logs.of(victim), 120)[0]
    data = event["data"]
    assert "symbolic link" in data["unsafe_staging"], data
    assert data["files"] == [] and sorted(data["missing"]) == ["main.err", "main.out"]
    time.sleep(2)
    assert_alive(worker)
    repair_storage(stack)


def test_planted_artifacts_link_is_never_followed(stack, fleet, target):
    topics, worker, status, logs = fleet
    victim = unique_id("victim")
    run_attacker(fleet, swap_area("artifacts") +
                 f"ln -s {target} {cluster_storage()}/artifacts/{victim}")
    topics.send(victim, launch(victim, ["/bin/sh", "-c", "echo v"], gpus=0))
    assert status.wait_terminal(victim)["data"]["state"] == "SUCCEEDED"
    event = wait_until(f"{victim}'s logs event", lambda: logs.of(victim), 120)[0]
    path = event["data"]["archive"]["path"]
    assert os.path.realpath(path).startswith(storage(stack) + "/"), path
    assert not os.path.islink(storage(stack, "artifacts", victim))
    assert_alive(worker)
    repair_storage(stack)


def test_hard_link_is_not_archived(stack, fleet):
    """A job hard-links a file into its staging folder: the archive lists it
    as refused instead of taking the other name's content."""
    log, event = run_attacker(
        fleet, 'echo x > "$FORGE_STAGING/mine.txt"; '
               'ln "$FORGE_STAGING/mine.txt" "$FORGE_STAGING/hard.txt"; '
               'ln -s /etc/shadow "$FORGE_STAGING/soft.txt"; echo done',
        with_event=True)
    assert "done" in log
    data = event["data"]
    assert sorted(data["refused"]) == ["hard.txt", "mine.txt", "soft.txt"], data
    assert [f["name"] for f in data["files"]] == ["main.err", "main.out"], data


# ---- mounts ------------------------------------------------------------------

@pytest.fixture(scope="module")
def mount_links(stack):
    root = storage(stack)
    made = []
    tag = uuid.uuid4().hex[:8]
    for name, to in ((f"to-root-{tag}", "/"), (f"to-parent-{tag}", "..")):
        os.symlink(to, os.path.join(root, name))
        made.append(os.path.join(root, name))
    os.makedirs(os.path.join(root, f"real-{tag}", "data"))
    os.symlink("/etc", os.path.join(root, f"real-{tag}", "mid"))
    made.append(os.path.join(root, f"real-{tag}"))
    yield tag
    for p in made:
        if os.path.islink(p):
            os.unlink(p)
        else:
            shutil.rmtree(p)


@pytest.mark.parametrize("source", [
    "to-root-{tag}", "to-root-{tag}/etc", "real-{tag}/mid/ssl",
    "to-parent-{tag}", "staging", "staging/x", "artifacts", "artifacts/y",
    ".", "/"])
def test_mount_source_refused(stack, fleet, mount_links, source):
    topics, worker, status, logs = fleet
    lid = unique_id("mount")
    req = launch(lid, ["/bin/true"], gpus=0)
    src = source.format(tag=mount_links)
    req["mounts"] = [{"source": src, "target": "/data", "read_only": True}]
    topics.send(lid, req)
    end = status.wait_terminal(lid)
    assert end["data"]["state"] == "REJECTED", end
    assert end["data"]["error"]["code"] in ("mount_refused", "schema"), end


def test_mount_of_a_real_folder_runs(stack, fleet, mount_links):
    topics, worker, status, logs = fleet
    lid = unique_id("mount-ok")
    req = launch(lid, ["/bin/true"], gpus=0)
    req["mounts"] = [{"source": f"real-{mount_links}/data", "target": "/data",
                      "read_only": True}]
    topics.send(lid, req)
    assert status.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"


# ---- tenants -----------------------------------------------------------------

def test_other_tenant_cannot_read_staging(stack, fleet):
    """A launch of team-b (forge2) runs; a job of team-a (forge) tries its
    staging folder: its credentials, its script, its logs."""
    topics, worker, status, logs = fleet
    a = unique_id("tenant-b")
    req = launch(a, ["/bin/sh", "-c", "echo b-ran; sleep 10"], gpus=0)
    req["tenant"] = "team-b"
    req["env"] = {"PLAIN_B": "plain-b"}
    req["ingest"] = {"endpoint": "https://ingest.example.org/v1",
                     "token": f"b-token-{uuid.uuid4().hex}"}
    topics.send(a, req)
    status.wait_state(a, "RUNNING", timeout=60)
    st = os.stat(storage(stack, "staging", a, "1"))
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (2003, 2003, 0o700)
    d = f"{cluster_storage()}/staging/{a}/1"
    log = run_attacker(fleet, f"""
for f in {d}/credentials {d}/job.sh {d}/main.out; do
  if cat "$f" >/dev/null 2>&1; then echo "READ $f"; else echo "DENIED $f"; fi
done
if ls {d} >/dev/null 2>&1; then echo "LISTED"; else echo "NOT LISTED"; fi
id -u
""", tenant="team-a")
    assert "READ" not in log, log
    assert log.count("DENIED") == 3 and "NOT LISTED" in log, log
    assert status.wait_terminal(a)["data"]["state"] == "SUCCEEDED"
    jobs = [j for j in stack.slurm_get("jobs")["jobs"]
            if j.get("comment") == f"forge:{a}:1"]
    assert jobs and jobs[0]["user_name"] == "forge2", jobs


def test_one_shared_user_sees_what_the_readme_says(stack, fleet):
    """Two launches of one tenant run as one user: file modes cannot
    separate them (README, trust model). What B's job can then read of A's
    staging folder is its logs and its script, which holds no secret; A's
    credentials file is gone once A's script has started."""
    topics, worker, status, logs = fleet
    mark = uuid.uuid4().hex
    a = unique_id("shared-a")
    req = launch(a, ["/bin/sh", "-c", "echo a-ran; sleep 10"], gpus=0,
                 env={"PLAIN_A": f"plain-{mark}"})
    req["secret_env"] = {"KEY_A": f"key-{mark}"}
    req["ingest"] = {"endpoint": "https://ingest.example.org/v1",
                     "token": f"tok-{mark}"}
    topics.send(a, req)
    status.wait_state(a, "RUNNING", timeout=60)
    d = f"{cluster_storage()}/staging/{a}/1"
    log = run_attacker(fleet, f"""
for f in credentials job.sh main.out; do
  if [ ! -e {d}/$f ]; then echo "MISSING $f"
  elif cat {d}/$f >/dev/null 2>&1; then echo "READ $f"; else echo "DENIED $f"; fi
done
cat {d}/job.sh {d}/main.out
""")
    assert "MISSING credentials" in log, log
    assert "READ job.sh" in log and "READ main.out" in log, log
    assert "a-ran" in log, log
    assert mark not in log, "a secret or env value of A reached B"
    assert status.wait_terminal(a)["data"]["state"] == "SUCCEEDED"


def test_unknown_tenant_is_rejected(stack, fleet):
    topics, worker, status, logs = fleet
    lid = unique_id("tenant-z")
    req = launch(lid, ["/bin/true"], gpus=0)
    req["tenant"] = "team-z"
    topics.send(lid, req)
    end = status.wait_terminal(lid)
    assert end["data"]["state"] == "REJECTED"
    assert end["data"]["error"]["code"] == "tenant_unknown", end


# ---- secrets -------------------------------------------------------------------

def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_no_secret_in_topics_or_stored_scripts(stack, fleet):
    topics, worker, status, logs = fleet
    mark = uuid.uuid4().hex
    token, key, plain = f"tok-{mark}", f"sek-{mark}", f"plain-{mark}"
    lid = unique_id("secrets")
    # The job proves it got each value by printing its SHA-256 only.
    cmd = ('printf %s "$FORGE_INGEST_TOKEN" | sha256sum; '
           'printf %s "$API_KEY" | sha256sum; printf %s "$PLAIN" | sha256sum; '
           'ls "$FORGE_STAGING"; sleep 2')
    req = launch(lid, ["/bin/bash", "-c", cmd], gpus=0, env={"PLAIN": plain})
    req["secret_env"] = {"API_KEY": key}
    req["ingest"] = {"endpoint": "https://ingest.example.org/v1", "token": token}
    topics.send(lid, req)
    status.wait_state(lid, "RUNNING", timeout=60)
    job_id = status.of(lid)[-1]["data"]["slurm"]["job_id"]
    chroot = stack.env["FORGE_STACK_SLURM_CHROOT"]
    script = subprocess.run(["chroot", chroot, "scontrol", "write",
                             "batch_script", str(job_id), "-"],
                            capture_output=True, text=True, check=True).stdout
    assert "srun" in script
    for value in (token, key, plain):
        assert value not in script, "a secret in Slurm's stored batch script"
    assert status.wait_terminal(lid)["data"]["state"] == "SUCCEEDED"
    event = wait_until(f"{lid}'s logs event", lambda: logs.of(lid), 120)[0]
    with tarfile.open(event["data"]["archive"]["path"], "r:gz") as t:
        out = t.extractfile("main.out").read().decode()
    assert sha(token) in out and sha(key) in out and sha(plain) in out, out
    assert "credentials" not in out, "the job saw its credentials file"
    for topic in (topics.state, topics.status, topics.logs):
        for k, v, _ in topics.read_all(topic):
            for secret in (token, key):
                assert secret.encode() not in v, f"a secret in {topic}"
