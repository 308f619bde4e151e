# SPDX-License-Identifier: Apache-2.0
"""Fixtures shared by the worker scenarios (harness.py has the pieces), and
the scenario groups (docs/DEVELOPING.md, "Adding a scenario").

Scenarios run side by side against the one stack (scripts/e2e, run.py).
A scenario that stops, kills or denies something says so with a marker,
and harness.py refuses the fault to one that did not:

  @pytest.mark.disrupts("slurmrestd", ...)  it stops, kills or denies these
        (a daemon of tests/e2e/stack, "tls-front", or "kafka-acls" for the
        ACL lines every worker shares). A shared one puts it in the alone
        group: run.py runs it after the others, one at a time. A node of
        its own (harness.OWN_DAEMONS: the `faults` partition's slurmd)
        keeps it side by side with the others.
  @pytest.mark.uses("fault-nodes")  it runs jobs on what harness.OWN_DAEMONS
        names for that resource: no two such groups run at once.
  @pytest.mark.sanitized  scripts/e2e runs it with the ASan+UBSan build
        (a leak or a sanitizer report makes the worker's exit code, and so
        the scenario, fail); every other one with the normal build.

FORGE_E2E_PLAN=<file>: collecting writes every scenario's module, markers
and id there (run.py plans its groups from it).
"""

import json
import os
import tempfile

import pytest

import harness
from harness import SlurmWatch, Stack


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "disrupts(*what): stops, kills or denies these daemons "
        "or shared resources (conftest.py)")
    config.addinivalue_line(
        "markers", "sanitized: run by scripts/e2e with the ASan+UBSan build "
        "(build-asan/forge-worker)")
    config.addinivalue_line(
        "markers", "replicated: needs the three-node Kafka cluster "
        "(FORGE_STACK_KAFKA_NODES=3): scripts/e2e's replicated phase")
    config.addinivalue_line(
        "markers", "uses(resource): runs on a resource no other group "
        "running at the same time may use (conftest.py)")


def marker_args(item, name):
    return [a for m in item.iter_markers(name) for a in m.args]


def pytest_collection_finish(session):
    path = os.environ.get("FORGE_E2E_PLAN")
    if not path:
        return
    plan = [{"nodeid": item.nodeid,
             "module": item.nodeid.split("::", 1)[0],
             "name": item.name,
             "disrupts": marker_args(item, "disrupts"),
             "uses": marker_args(item, "uses"),
             "sanitized": item.get_closest_marker("sanitized") is not None,
             "replicated": item.get_closest_marker("replicated") is not None}
            for item in session.items]
    with open(path, "w") as f:
        json.dump(plan, f)


@pytest.fixture(autouse=True)
def allowed_faults(request):
    """What this scenario may stop, kill or deny (harness.check_disrupts),
    and the whole run refused when a scenario is in the wrong group."""
    item = request.node
    disrupts = set(marker_args(item, "disrupts"))
    uses = set(marker_args(item, "uses"))
    for what in disrupts:
        resource = harness.OWN_DAEMONS.get(what)
        if resource and resource not in uses:
            pytest.fail(f"{item.nodeid} disrupts {what}, a node of "
                        f"{resource}, without @pytest.mark.uses({resource!r})")
    harness.ALLOWED_FAULTS.clear()
    harness.ALLOWED_FAULTS.update(disrupts)
    yield
    harness.ALLOWED_FAULTS.clear()


@pytest.fixture(scope="session")
def stack():
    s = Stack()
    # what earlier runs on this machine left (a run killed before its
    # modules ended): a broker of fewer partitions restarts faster. Not
    # under run.py, whose groups run side by side: it cleans once, before
    # any of them starts.
    if not os.environ.get("FORGE_E2E_GROUP"):
        harness.delete_leftover_topics(s)
    return s


@pytest.fixture(scope="module", autouse=True)
def drop_topics(stack):
    """Each module's topics deleted once its scenarios (and their workers,
    torn down before this) are over."""
    yield
    made, harness.CREATED_TOPICS[:] = list(harness.CREATED_TOPICS), []
    harness.delete_topic_names(stack, [n for t in made for n in t.names()])


@pytest.fixture(scope="session")
def slurm(stack):
    watch = SlurmWatch(stack)
    yield watch
    watch.close()


@pytest.fixture(scope="module")
def logdir(request):
    """Worker logs; kept (and named in a failure) under FORGE_E2E_LOGS."""
    root = os.environ.get("FORGE_E2E_LOGS") or tempfile.mkdtemp(prefix="forge-e2e-")
    path = os.path.join(root, request.module.__name__)
    os.makedirs(path, exist_ok=True)
    return path


def pytest_terminal_summary(terminalreporter):
    """The chaos scenarios' figures (chaos.py), one line each, when they ran."""
    import sys
    chaos = sys.modules.get("chaos")
    if chaos and chaos.SUMMARY:
        terminalreporter.section("chaos figures")
        for line in chaos.SUMMARY:
            terminalreporter.write_line(line)
