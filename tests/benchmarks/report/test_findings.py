"""The findings registry and its statistics: intervals, verdicts never stronger than the data, and
each heuristic's ratio with the run that found no plan named and left out of the mean."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deplbench.benchmarks.harness.frame import prepare
from deplbench.benchmarks.report import findings as fnd
from deplbench.benchmarks.report.findings_builtin import heuristic_ratios
from deplbench.benchmarks.report.sections import ReportContext


def test_bootstrap_interval_brackets_the_mean_and_needs_two_values():
    v = [1.0, 1.0, 1.2, 1.05, 1.3, 1.0]
    lo, hi = fnd.bootstrap_mean(v)
    assert min(v) <= lo < np.mean(v) < hi <= max(v)
    assert (lo, hi) == fnd.bootstrap_mean(v)  # seeded: the report is reproducible
    assert all(math.isnan(x) for x in fnd.bootstrap_mean([1.1]))


@pytest.mark.parametrize(("lo", "hi", "n", "above", "want"), [
    (0.30, 0.40, 20, True, "holds"), (0.0, 0.01, 20, True, "does not hold"), (0.2, 0.3, 20, True, "inconclusive"),
    (0.30, 0.40, 1, True, "not tested here"),  # one instance never gives a verdict
    (1.01, 1.04, 20, False, "holds"), (1.06, 1.2, 20, False, "does not hold"), (math.nan, math.nan, 20, False,
                                                                                 "not tested here"),
])
def test_a_verdict_needs_the_whole_interval_and_enough_instances(lo, hi, n, above, want):
    threshold = 0.27 if above else 1.05
    assert fnd.interval_verdict(lo, hi, threshold, n, above=above) == want


def _runs() -> pd.DataFrame:
    """Three instances with a proven optimum; ``h`` finds no plan on the third (status unknown)."""
    rows = []
    for i, (opt, cost) in enumerate(((100.0, 110.0), (200.0, 200.0), (50.0, None))):
        inst = f"inst{i}"
        common = {"instance": inst, "family": "random", "harness_status": "ok", "runtime_s": 0.1,
                  "p_time_limit": 10.0, "run_key": f"{inst}", "config": "c", "experiment": "e"}
        rows.append(common | {"solver": "ex", "solver_kind": "exact", "status": "optimal", "feasible": True,
                              "cost": opt, "run_key": f"{inst}-ex"})
        rows.append(common | {"solver": "h", "solver_kind": "heuristic", "run_key": f"{inst}-h",
                              **({"status": "feasible", "feasible": True, "cost": cost} if cost else
                                 {"status": "unknown", "message": "gave up after 3 tries"})})
    return prepare(pd.DataFrame(rows))


def test_heuristic_ratio_leaves_out_and_names_the_run_without_a_plan():
    d = _runs()
    ctx = ReportContext(d, lambda name: None, Path("."), Path("."))
    tab = heuristic_ratios(d, ctx.refs).set_index("instance")
    assert tab.loc["inst0", "ratio"] == pytest.approx(1.1) and tab.loc["inst1", "ratio"] == 1.0
    assert math.isnan(tab.loc["inst2", "ratio"]) and tab.loc["inst2", "reason"] == "gave up after 3 tries"
    (f,) = [f for f in fnd.findings(ctx) if f.table and f.columns["method"] == "h"]
    assert f.columns["ratio_mean"] == pytest.approx(1.05) and f.columns["ratio_max"] == pytest.approx(1.1)
    assert f.columns["instances"] == 3 and f.columns["no_plan"] == "inst2 (unknown)"
    assert f.columns["ratio_ci_lo"] <= 1.05 <= f.columns["ratio_ci_hi"]


def test_a_registered_finding_reaches_the_section_and_a_failing_one_is_reported():
    d = _runs()
    ctx = ReportContext(d, lambda name: None, Path("."), Path("."))

    @fnd.register_finding("test-count", order=1)
    def count(c):
        return [fnd.Finding("Runs counted", f"{len(c.runs)} runs", "the whole store")]

    @fnd.register_finding("test-broken", order=2)
    def broken(c):
        raise RuntimeError("boom")

    try:
        sec = fnd.findings_section(ctx)
    finally:
        fnd.unregister_finding("test-count")
        fnd.unregister_finding("test-broken")
    plain = next(b[2] for b in sec.blocks if b[0] == "table" and "finding" in b[2].columns)
    assert "6 runs" in set(plain["result"])
    assert any("could not be computed: RuntimeError: boom" in r for r in plain["result"])
    assert "test-count" not in {s.name for s in fnd._FINDINGS.values()}
