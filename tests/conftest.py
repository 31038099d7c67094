"""Shared fixtures, and the ``serial`` marker of the tests whose timings or processes another test beside them
would disturb (limits, signals, the process tree): CI runs the others two at a time
(``pytest -n 2 -m "not serial"``) and these alone afterwards (``pytest -m serial``)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from deplbench.instances.io import instance_from_dict

from builders import tiny_dict

#: test files (paths under tests/, or their beginnings) that measure time or processes: run alone
SERIAL = ("hostile/", "benchmarks/harness/test_process",
          "benchmarks/harness/test_runner_kill.py", "benchmarks/harness/test_runner_dask.py",
          "benchmarks/harness/test_forkctx.py", "benchmarks/harness/test_timing.py",
          "benchmarks/harness/test_machine.py", "src/deplbench/cli/test_core_limits.py",
          "src/deplbench/cli/test_warmup.py", "src/deplbench/test_watch_setup.py", "src/deplbench/test_cputime.py")
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        rel = Path(item.path).resolve().relative_to(TESTS).as_posix()
        if rel.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def tiny():
    return instance_from_dict(tiny_dict(), "tiny")


@pytest.fixture
def tiny_data():
    return copy.deepcopy(tiny_dict())
