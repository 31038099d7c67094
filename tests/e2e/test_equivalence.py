"""The refactor keeps every result: a pinned config gives the certified figures recorded before it.

``tests/data/equivalence_before.csv`` was written from the store of ``tests/data/equivalence.toml``
run by the code before the open-design refactor (commit 30512cf): per run, the status, the
evaluator's feasibility, cost and certified quantile bound. The certified bound has since been
computed by a faster construction (issue 14, docs/evaluator.md): both brackets contain the true
quantile and are at most ``DEFAULT_RTOL * loss.initial`` wide (narrower when refined), so the
upper ends differ by at most that width.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import deplbench as db
from deplbench.instances.evaluator.evaluate import DEFAULT_RTOL

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS = ("eta", "eps", "scenarios")
L0 = 20.0  # loss.initial of every instance of the config (paper-alexnet and random)


@pytest.fixture(scope="module")
def after(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("eq")
    res = db.run_config(DATA / "equivalence.toml", out, workers=2, progress=False, report=False)
    assert res.counts == {"ok": 36}
    df = db.read_results(out)
    df["params"] = [json.dumps({k: v for k, v in json.loads(p).items() if k in KEYS}, sort_keys=True)
                    for p in df["params"]]
    return df.set_index(["instance", "solver", "params"]).sort_index()


@pytest.mark.slow
def test_same_certified_figures(after):
    before = pd.read_csv(DATA / "equivalence_before.csv").set_index(["instance", "solver", "params"]).sort_index()
    assert list(before.index) == list(after.index)
    a = after.loc[before.index]
    assert list(a["status"]) == list(before["status"])
    assert list(a["feasible"].astype(bool)) == list(before["feasible"].astype(bool))
    assert a["cost"].to_numpy() == pytest.approx(before["cost"].to_numpy(), rel=1e-9)
    exact = (before["solver_kind"] != "saa").to_numpy()  # an SAA optimum may be another plan of equal cost
    old, new = before["q_hi"].to_numpy()[exact], a["q_hi"].to_numpy()[exact]
    assert new == pytest.approx(old, abs=DEFAULT_RTOL * L0 * 1.01)  # both within a width of the quantile
    assert (a["q_lo"].to_numpy()[exact] <= old + 1e-9).all()  # the brackets overlap
