"""The refactor keeps every result: a pinned config gives the certified figures recorded before it.

``tests/data/equivalence_before.csv`` was written from the store of ``tests/data/equivalence.toml``
run by the code before the open-design refactor (commit 30512cf): per run, the status, the
evaluator's feasibility, cost and certified quantile bound.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import deplbench as db

DATA = Path(__file__).parent / "data"
KEYS = ("eta", "eps", "scenarios")


@pytest.fixture(scope="module")
def after(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("eq")
    res = db.run_config(DATA / "equivalence.toml", out, workers=2, progress=False, report=False)
    assert res.counts == {"ok": 36}
    df = db.read_results(out)
    df["params"] = [json.dumps({k: v for k, v in json.loads(p).items() if k in KEYS}, sort_keys=True)
                    for p in df["params"]]
    return df.set_index(["instance", "solver", "params"]).sort_index()


def test_same_certified_figures(after):
    before = pd.read_csv(DATA / "equivalence_before.csv").set_index(["instance", "solver", "params"]).sort_index()
    assert list(before.index) == list(after.index)
    a = after.loc[before.index]
    assert list(a["status"]) == list(before["status"])
    assert list(a["feasible"].astype(bool)) == list(before["feasible"].astype(bool))
    assert a["cost"].to_numpy() == pytest.approx(before["cost"].to_numpy(), rel=1e-9)
    exact = (before["solver_kind"] != "saa").to_numpy()  # an SAA optimum may be another plan of equal cost
    assert a["q_hi"].to_numpy()[exact] == pytest.approx(before["q_hi"].to_numpy()[exact], abs=1e-9)
