# SPDX-License-Identifier: Apache-2.0
"""
test_tls.py - slurmrestd behind the stack's TLS front (nginx,
tests/e2e/stack.d/tls-front.sh: https://localhost:<port>, a certificate for
DNS:localhost from the stack's CA), as a site runs it:

  ping over https       `forge-worker ping` with the stack's CA: ok
  wrong CA              the unrelated CA (FORGE_STACK_TLS_OTHER_CA_FILE):
                        refused, the error naming the certificate problem
  wrong name            https://127.0.0.1:<port> (the certificate names
                        localhost only): refused, naming the name mismatch
  TLS_VERIFY=0          a warning at start naming FORGE_SLURM_TLS_VERIFY
                        (and the wrong name then goes through)
  http:// not loopback  a warning at start naming FORGE_SLURM_REST_URL
  submit --wait         a launch submitted and ended over https (the
                        operator's command: it must not hang)
  rotation              one running worker with a live launch; the front's
                        certificate replaced (new key, same CA): the live
                        launch and a new one end, nothing done on the
                        worker. Then the front moved to a certificate of
                        another CA: the worker's new connections are
                        refused (its log names the certificate problem)
                        until the operator adds that CA to the worker's
                        CA file, in place: the worker, not restarted, goes
                        on (the file is read again for each new
                        connection: src/slurm/http.c). The front is put
                        back on a certificate of the stack's CA after.

The TLS cases use `forge-worker ping` or `submit` (one process each, no
Kafka consumer); the rotation one worker. The whole file takes well under
a minute.
"""

import json
import os
import shutil
import socket
import ssl
import subprocess

import pytest

from harness import (STACK, TOP, StatusReader, Topics, Worker, check_disrupts,
                     command_env, launch, own_storage, unique_id, wait_until)

BINARY = os.environ.get("FORGE_WORKER_BIN",
                        os.path.join(TOP, "build", "forge-worker"))
FRONT = os.path.join(os.path.dirname(STACK), "stack.d", "tls-front.sh")


def front_port(stack):
    return int(stack.env["FORGE_STACK_TLS_FRONT_PORT"])


def ping(stack, **extra):
    """forge-worker ping with the stack's settings and extra; (exit code,
    its JSON answer, its stderr)."""
    env = command_env(stack, extra=dict({"FORGE_LOG_FORMAT": "json"},
                                        **extra))
    p = subprocess.run([BINARY, "ping"], env=env, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, json.loads(p.stdout), p.stderr


def warnings(stderr, variable):
    out = []
    for line in stderr.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # librdkafka's own lines
        if row.get("level") == "warn" and row.get("variable") == variable:
            out.append(row["msg"])
    return out


def served_by(stack, cafile):
    """Whether the front's certificate, now, verifies against cafile."""
    ctx = ssl.create_default_context(cafile=cafile)
    try:
        with socket.create_connection(("localhost", front_port(stack)), 5) as s:
            with ctx.wrap_socket(s, server_hostname="localhost"):
                return True
    except ssl.SSLCertVerificationError:
        return False


def served_pem(stack):
    return ssl.get_server_certificate(("localhost", front_port(stack)))


def rotate(*args):
    """The front's certificate replaced: every worker of the stack talks
    through it (@pytest.mark.disrupts("tls-front"))."""
    check_disrupts("tls-front", "rotates the certificate of")
    r = subprocess.run(["bash", FRONT, "rotate", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_ping_over_https(stack):
    assert stack.slurm_url.startswith("https://localhost:"), stack.slurm_url
    rc, out, err = ping(stack)
    assert out["slurmrestd"]["ok"] is True, out
    assert out["slurmrestd"]["url"] == stack.slurm_url
    assert not warnings(err, "FORGE_SLURM_TLS_VERIFY"), err


def test_wrong_ca_is_refused_naming_the_certificate(stack):
    rc, out, _ = ping(stack, FORGE_SLURM_TLS_CA_FILE=stack.env[
        "FORGE_STACK_TLS_OTHER_CA_FILE"])
    assert rc == 1 and out["slurmrestd"]["ok"] is False, out
    assert "SSL certificate problem: unable to get local issuer " \
           "certificate" in out["slurmrestd"]["error"], out


def test_wrong_name_is_refused_naming_the_name(stack):
    url = f"https://127.0.0.1:{front_port(stack)}"
    rc, out, _ = ping(stack, FORGE_SLURM_REST_URL=url)
    assert rc == 1 and out["slurmrestd"]["ok"] is False, out
    assert "no alternative certificate subject name matches target host " \
           "name '127.0.0.1'" in out["slurmrestd"]["error"], out


def test_verify_off_warns_at_start(stack):
    url = f"https://127.0.0.1:{front_port(stack)}"
    rc, out, err = ping(stack, FORGE_SLURM_REST_URL=url,
                        FORGE_SLURM_TLS_VERIFY="0")
    said = warnings(err, "FORGE_SLURM_TLS_VERIFY")
    assert len(said) == 1 and "not verified" in said[0], err
    assert out["slurmrestd"]["ok"] is True, out  # nothing was checked


def test_plain_http_to_a_host_not_loopback_warns_at_start(stack):
    # the machine's own name: no loopback name or address, whatever it
    # resolves to (the check looks at the URL, never up)
    url = f"http://{socket.gethostname()}:16820"
    _, _, err = ping(stack, FORGE_SLURM_REST_URL=url)
    said = warnings(err, "FORGE_SLURM_REST_URL")
    assert len(said) == 1 and "in clear" in said[0], err


def test_submit_wait_over_https(stack, tmp_path):
    lid = unique_id("tls-submit")
    req = tmp_path / f"{lid}.json"
    req.write_text(json.dumps(launch(lid, ["/bin/true"])))
    env = command_env(stack, extra=own_storage(stack, unique_id("tls")))
    p = subprocess.run([BINARY, "submit", "--wait", str(req)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    states = [json.loads(line)["state"] for line in p.stdout.splitlines()]
    assert states[:2] == ["ACCEPTED", "SUBMITTED"], states
    assert states[-1] == "SUCCEEDED", states


@pytest.mark.disrupts("tls-front")
def test_rotation_while_a_worker_runs(stack, logdir, tmp_path):
    ca = str(tmp_path / "ca.pem")  # the worker's CA file, changed in place
    shutil.copyfile(stack.env["FORGE_SLURM_TLS_CA_FILE"], ca)
    other_ca = stack.env["FORGE_STACK_TLS_OTHER_CA_FILE"]
    topics = Topics(stack, "tls-rotate")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("w-tls"), unique_id("g"), logdir,
                    {"FORGE_SLURM_TLS_CA_FILE": ca})
    try:
        worker.wait_ready()
        live = unique_id("tls-live")
        topics.send(live, launch(live, ["/bin/sh", "-c", "sleep 6"]))
        reader.wait_state(live, "RUNNING", timeout=60)

        # a new key and certificate from the same CA: nothing to do
        before = served_pem(stack)
        rotate()
        wait_until("the front to serve the new certificate",
                   lambda: served_pem(stack) != before, 15)
        after = unique_id("tls-after")
        topics.send(after, launch(after, ["/bin/true"]))
        assert reader.wait_terminal(after, 60)["data"]["state"] == "SUCCEEDED"
        assert reader.wait_terminal(live, 60)["data"]["state"] == "SUCCEEDED"

        # a certificate of another CA: refused until the worker's CA file
        # has that CA too (in place; the worker is not restarted)
        rotate("--other-ca")
        wait_until("the front to serve the other CA's certificate",
                   lambda: served_by(stack, other_ca), 15)
        moved = unique_id("tls-moved")
        topics.send(moved, launch(moved, ["/bin/true"]))
        wait_until("the worker to say why its submit fails", lambda: any(
            "SSL certificate problem" in line.get("msg", "")
            for line in worker.lines()), 60)
        assert reader.states(moved) == ["ACCEPTED"], reader.states(moved)
        with open(other_ca) as src, open(ca, "a") as dst:
            dst.write(src.read())
        assert reader.wait_terminal(moved, 60)["data"]["state"] == \
            "SUCCEEDED", worker.tail()
        assert worker.proc.poll() is None
        assert worker.terminate() == 0, worker.tail()
    finally:
        rotate()  # the stack's CA again, for every other scenario
        wait_until("the front to serve the stack CA's certificate again",
                   lambda: served_by(stack,
                                     stack.env["FORGE_SLURM_TLS_CA_FILE"]),
                   15)
        reader.close()
        worker.stop_quietly()
