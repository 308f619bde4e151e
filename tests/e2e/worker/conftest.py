# SPDX-License-Identifier: Apache-2.0
"""Fixtures shared by the worker scenarios (harness.py has the pieces)."""

import os
import tempfile

import pytest

from harness import SlurmWatch, Stack


@pytest.fixture(scope="session")
def stack():
    return Stack()


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
