"""The faster DepL (issue 16) returns the very plans of the code before it.

``tests/data/depl_plans_before.json`` holds the plans of ``depl``, ``depl-plus`` and
``best-exp`` (eta 200, eps 0.05) on the 20 paper instances and ``random`` seeds 0-9 in
both noise modes, made by ``tests/data/make_depl_plans.py`` at the commit it names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from make_depl_plans import METHODS, PARAMS, instances, plan_record

from deplbench.registry import solve

BEFORE = json.loads((Path(__file__).resolve().parents[1] / "data" / "depl_plans_before.json").read_text())


def test_fixture_covers_every_instance():
    assert len(BEFORE["plans"]) == 3 * (20 + 20)
    assert BEFORE["params"] == PARAMS


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_plans_identical(method):
    diff = []
    for key, inst in instances():
        now = plan_record(solve(method, inst, PARAMS))
        if now != BEFORE["plans"][f"{method}|{key}"]:
            diff.append(key)
    assert not diff, f"{method}: plans differ from {BEFORE['commit'][:10]} on {diff}"
