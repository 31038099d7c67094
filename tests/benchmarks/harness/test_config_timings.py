"""``timings = N``: each run timed N times with the same seed, each its own row; the first keeps its key."""

from __future__ import annotations

import pytest
from harness_configs import config, solver

from deplbench.benchmarks.api import run_config
from deplbench.benchmarks.harness.config import load_config
from deplbench.benchmarks.harness.store import Store
from deplbench.benchmarks.report.timings import repetitions
from deplbench.errors import InputError


def test_timings_repeat_the_same_run(tmp_path):
    once = load_config(config(tmp_path, [solver("harness-ok")], seeds=(0,), name="once")).runs
    thrice = load_config(config(tmp_path, [solver("harness-ok")], seeds=(0,), harness="grace = 1.0\ntimings = 3",
                                name="thrice")).runs
    assert len(once) == 1 and len(thrice) == 3
    assert [r.timing for r in thrice] == [0, 1, 2]
    assert {r.params["seed"] for r in thrice} == {once[0].params["seed"]}  # the same run, not a new seed
    assert len({r.key for r in thrice}) == 3
    same = load_config(config(tmp_path, [solver("harness-ok")], seeds=(0,), harness="grace = 1.0\ntimings = 3",
                              name="once")).runs
    assert same[0].key == once[0].key  # the first timing keeps the key a store already holds


def test_timings_are_stored_and_summarized(tmp_path):
    path = config(tmp_path, [solver("harness-busy", seconds=0.2)], seeds=(0,),
                  harness="grace = 5.0\neval_samples = 100\ntimings = 3")
    run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    with Store(tmp_path / "out", read_only=True) as st:
        df = st.runs()
    assert sorted(df["timing"]) == [0, 1, 2] and df["p_seed"].nunique() == 1
    df["method"] = df["label"]
    r = repetitions(df, ("method", "instance")).iloc[0]
    assert r["repetitions"] == 3 and r["min_s"] <= r["median_s"] <= r["max_s"]


def test_timings_out_of_range_is_one_line(tmp_path):
    path = config(tmp_path, [solver("harness-ok")], harness="grace = 1.0\ntimings = 0")
    with pytest.raises(InputError, match="timings"):
        load_config(path)
