# SPDX-License-Identifier: Apache-2.0
"""Fixtures shared by the worker scenarios (harness.py has the pieces)."""

import os
import tempfile

import pytest

import harness
from harness import SlurmWatch, Stack


@pytest.fixture(scope="session")
def stack():
    s = Stack()
    # what earlier runs on this machine left (a run killed before its
    # modules ended): a broker of fewer partitions restarts faster
    left = [t for t in s.admin().list_topics(timeout=30).topics
            if t.startswith(harness.E2E_PREFIX)]
    harness.delete_topic_names(s, left, wait_s=120)
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
