"""A real Dask LocalCluster runs a small grid (run processes are forked on the workers)."""

from __future__ import annotations

from harness_configs import config, solver

from deplbench.benchmarks.harness.config import load_config
from deplbench.benchmarks.harness.runner import run_grid
from deplbench.benchmarks.harness.store import Store


def test_local_cluster_runs_a_grid(tmp_path):
    path = config(tmp_path, [solver("harness-ok"), solver("harness-sleep", seconds=20, time_limit=0.3)],
                  seeds=(0, 1, 2), harness="grace = 0.5\neval_samples = 1000")
    runs = load_config(path).runs
    s = run_grid(runs, tmp_path / "out", workers=2, cluster="local", progress=False)
    assert s.ran == 6 and dict(s.counts) == {"ok": 3, "timeout": 3}
    with Store(tmp_path / "out") as st:
        df = st.runs()
    assert df["run_key"].is_unique and set(df["run_key"]) == {r.key for r in runs}
    ok = df[df["solver"] == "harness-ok"]
    assert ok["feasible"].all() and ok["cost"].notna().all()
    # the runs executed on the cluster's worker processes, not in this one
    import os

    assert not df["worker"].str.endswith(f":{os.getpid()}").any()
    assert (df.loc[df["solver"] == "harness-sleep", "wall_s"] < 10).all()
