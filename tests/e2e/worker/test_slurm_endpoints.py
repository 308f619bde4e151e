# SPDX-License-Identifier: Apache-2.0
"""
Several slurmrestd of one cluster (issue 39): the stack runs two
(slurmrestd on 16820, slurmrestd-2 on 16824) and its TLS front balances
over both on https://localhost:16825 (FORGE_STACK_TLS_HA_URL).

- the worker's own list (FORGE_SLURM_REST_URL=slurmrestd-2,slurmrestd,
  plain): launches running and being submitted while slurmrestd-2, the one
  in use, is killed (-9): the worker logs that it does not answer and
  moves its calls to slurmrestd at once (no poll tick fails, no launch sees
  an error), /readyz (still 200) and forge_slurm_endpoint_state show it
  refused; started again, it answers again and takes the calls back;
- the balanced front (FORGE_SLURM_REST_URL=the HA front): the same kill,
  nginx moves the requests; every launch ends SUCCEEDED once.

Every launch ends SUCCEEDED with one Slurm job that ran once. slurmrestd-2
is the one killed: the test's own reads (the SlurmWatch) go through the
first front to slurmrestd. It stops a daemon of the shared stack
(@pytest.mark.disrupts): scripts/e2e runs it alone.
"""

import json

import pytest

from harness import (StatusReader, Topics, Worker, assert_contiguous,
                     free_port, http_get, launch, stack_verb, unique_id,
                     wait_until)


def endpoint_states(port):
    """{url: state} of the worker's /readyz."""
    code, body = http_get(port, "/readyz")
    assert code is not None, body
    return {e["url"]: e["state"] for e in json.loads(body)["slurm_endpoints"]}


def run_through_a_kill(stack, slurm, logdir, tag, rest_url, check=None,
                       after=None):
    """One worker on rest_url; launches sent before and while slurmrestd-2
    is killed, and after it is back: every one SUCCEEDED once, no poll
    tick failed. check(w, port) runs while slurmrestd-2 is down, after(w)
    once every launch ended."""
    topics = Topics(stack, tag)
    port = free_port()
    w = Worker(stack, topics, unique_id(tag[:2]), unique_id("g"), logdir,
               {"FORGE_SLURM_REST_URL": rest_url,
                "FORGE_HTTP_LISTEN": f"127.0.0.1:{port}"})
    status = StatusReader(stack, topics.status)
    lids = []
    killed = False

    def send(n):
        for _ in range(n):
            lid = unique_id(tag)
            topics.send(lid, launch(lid, ["/bin/bash", "-c",
                                          "sleep 6; echo done"]))
            lids.append(lid)

    try:
        w.wait_ready()
        send(3)
        for lid in lids:
            status.wait_state(lid, "RUNNING", 90)
        stack_verb("fail", "slurmrestd-2")
        killed = True
        send(3)  # submitted while it is down
        if check:
            check(w, port)
        stack_verb("start", "slurmrestd-2")
        killed = False
        send(2)
        for lid in lids:
            done = status.wait_terminal(lid, 180)
            assert done["data"]["state"] == "SUCCEEDED", status.states(lid)
            assert_contiguous(status.of(lid), lid)
            assert len(slurm.ran(lid)) == 1, slurm.tries(lid)
        # a failed tick logs "poll tick: <why> (<status>): nothing changes"
        assert not w.logged("nothing changes"), w.tail()
        if after:
            after(w)
        assert w.terminate() == 0, w.tail()
    finally:
        if killed:
            stack_verb("start", "slurmrestd-2")
        status.close()
        w.stop_quietly()


@pytest.mark.disrupts("slurmrestd-2")
def test_the_workers_list_moves_to_the_next_endpoint(stack, slurm, logdir):
    urls = stack.env["FORGE_STACK_SLURM_REST_URLS"].split(",")
    second, first = urls[1], urls[0]

    def while_down(w, port):
        wait_until("the worker to say slurmrestd-2 does not answer",
                   lambda: w.logged(f"slurmrestd {second} does not answer"),
                   30)
        states = endpoint_states(port)
        assert states[second] == "refused", states
        assert states[first] == "in_use", states
        code, body = http_get(port, "/readyz")
        assert code == 200, body
        assert ('forge_slurm_endpoint_state{url="%s",state="refused"} 1'
                % second) in http_get(port, "/metrics")[1]

    def back(w):
        # its cooldown (1 s doubling while it stayed down, at most 30 s)
        wait_until("slurmrestd-2 to take the calls back",
                   lambda: w.logged(f"slurmrestd {second} answers again"), 60)

    run_through_a_kill(stack, slurm, logdir, "eplist", f"{second},{first}",
                       while_down, back)


@pytest.mark.disrupts("slurmrestd-2")
def test_the_balanced_front_moves_to_the_other(stack, slurm, logdir):
    run_through_a_kill(stack, slurm, logdir, "epfront",
                       stack.env["FORGE_STACK_TLS_HA_URL"])
