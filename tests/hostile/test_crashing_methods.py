"""A method that ends its own process (``os._exit``, a native crash) loses its own run only."""

from __future__ import annotations

import pytest
from harness_configs import config, solver

from deplbench.benchmarks.api import run_config
from deplbench.benchmarks.harness.store import Store

pytestmark = pytest.mark.slow


def _rows(out):
    with Store(out, read_only=True) as st:
        return st.runs()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_crash_loses_its_own_run_only(tmp_path, workers):
    cfg = config(tmp_path, [solver("harness-ok"), solver("harness-exit", code=255), solver("harness-exit", code=0),
                            solver("harness-segv")], seeds=(0, 1, 2), harness="grace = 5.0\neval_samples = 100")
    out = tmp_path / "out"
    first = run_config(cfg, out, workers=workers, progress=False, report=False)
    df = _rows(out)
    assert first.total == len(df) == 12
    ok = df[df.solver == "harness-ok"]
    assert (ok.harness_status == "ok").all() and (ok.status == "feasible").all(), ok[["harness_status", "error"]]
    crashed = df[df.solver != "harness-ok"]
    assert (crashed.harness_status == "error").all()
    assert crashed.error.str.contains("process died").all(), crashed.error.tolist()
    assert set(crashed[crashed.solver == "harness-segv"].error.str.extract(r"exit code (-?\d+)")[0]) == {"-11"}
    again = run_config(cfg, out, workers=workers, progress=False, report=False)  # a plain rerun: nothing left
    assert again.skipped == again.total == 12 and sum(again.counts.values()) == 0


def test_a_retry_completes_the_grid_after_crashes(tmp_path):
    once_exit, once_segv = tmp_path / "exit-once", tmp_path / "segv-once"
    cfg = config(tmp_path, [solver("harness-ok"), solver("harness-exit", once=str(once_exit)),
                            solver("harness-segv", once=str(once_segv))], seeds=(0, 1),
                 harness="grace = 5.0\neval_samples = 100")
    out = tmp_path / "out"
    run_config(cfg, out, workers=2, progress=False, report=False)
    df = _rows(out)
    assert (df.harness_status == "error").sum() == 2  # the first call of each crashing method
    assert (df[df.solver == "harness-ok"].harness_status == "ok").all()
    run_config(cfg, out, workers=2, retry_failed=True, progress=False, report=False)
    df = _rows(out)
    assert len(df) == 6 and (df.harness_status == "ok").all(), df[["solver", "harness_status", "error"]]
