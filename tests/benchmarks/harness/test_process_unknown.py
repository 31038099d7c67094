"""A method that ends without a plan and without a proof is a result (``unknown``), not a failure.

Stored with harness status ``ok`` and its reason, never re-run by ``--retry-failed`` (which re-runs
crashes), counted as "no plan" and not as an error, and its reason shown on the Runs, method and
instance pages of the report.
"""

from __future__ import annotations

import html

import harness_configs as hc
import pytest

from deplbench.benchmarks.api import read_results, run_config

REASON = "options exhausted: no plan found (not a proof of infeasibility)"


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unknown")
    cfg = hc.config(tmp, [hc.solver("harness-give-up"), hc.solver("harness-raise"), hc.solver("harness-ok")],
                    seeds=(0,))
    res = run_config(cfg, tmp / "out", workers=1, progress=False)
    return cfg, tmp / "out", res


def test_unknown_is_stored_as_a_finished_run_with_its_reason(grid):
    _, out, res = grid
    df = read_results(out).set_index("solver")
    gave = df.loc["harness-give-up"]
    assert (gave["status"], gave["harness_status"], gave["message"]) == ("unknown", "ok", REASON)
    assert gave["error"] is None or gave["error"] != gave["error"]  # no error text: nothing failed
    assert df.loc["harness-raise", "harness_status"] == "error"
    assert res.failed_stored == 1  # the crash only


def test_retry_failed_reruns_the_crash_not_the_result(grid):
    cfg, out, _ = grid
    again = run_config(cfg, out, workers=1, progress=False, retry_failed=True, report=False)
    assert again.skipped == 2 and sum(again.counts.values()) == 1  # harness-raise only


def test_every_page_counts_and_explains_it_the_same_way(grid):
    from deplbench.benchmarks.report.comparison import comparison_table
    from deplbench.benchmarks.report.write import load

    _, out, _ = grid
    d, _ = load(out)
    tab = comparison_table(d).set_index("method")
    assert tab.loc["harness-give-up", "gave_up"] == 1 and tab.loc["harness-give-up", "errors"] == 0
    assert tab.loc["harness-raise", "errors"] == 1 and tab.loc["harness-raise", "gave_up"] == 0
    site = out / "report"
    inst = d.loc[d["solver"] == "harness-give-up", "instance"].iloc[0]
    pages = [site / "sections" / "overview.html", site / "methods" / "harness-give-up.html",
             next((site / "instances").glob(f"{inst}*.html"))]
    for page in pages:
        assert html.escape(REASON) in page.read_text(), page.name
    assert "unknown (no plan, no proof)" in (site / "sections" / "overview.html").read_text()
