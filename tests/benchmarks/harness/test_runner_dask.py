"""A real Dask LocalCluster runs a small grid (run processes are forked on the workers)."""

from __future__ import annotations

import pytest
from harness_configs import config, solver

from deplbench.benchmarks.harness.config import load_config
from deplbench.benchmarks.harness.runner import run_grid
from deplbench.benchmarks.harness.store import Store

pytestmark = pytest.mark.slow  # a Dask LocalCluster starts in each test (10-30 s)


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


def test_local_cluster_workers_are_quiet():
    """The workers of --cluster local run without the nanny's malloc trim, the profiler and a 20 ms tick."""
    import dask
    import distributed  # noqa: F401  (the ``distributed`` config section exists once it is imported)

    from deplbench.benchmarks.harness.runner import dask_client
    from deplbench.benchmarks.harness.testing import worker_settings

    before = dask.config.get("distributed.worker.profile.enabled")
    client, lc = dask_client(2, None, "local")
    try:
        got = client.run(worker_settings)
    finally:
        client.close()
        lc.close()
    assert len(got) == 2
    # the nanny still sets the BLAS thread variables (one core per worker); only the trim is gone
    import os

    assert set(got.values()) == {(os.environ.get("MALLOC_TRIM_THRESHOLD_"), "1", False, "1s")}
    assert dask.config.get("distributed.worker.profile.enabled") == before  # the client's config unchanged


def test_workers_drop_only_the_closing_heartbeat_record():
    """The preload's filter drops a worker's failed heartbeat to a closing scheduler, whatever its
    level (some distributed versions log it as an error with a traceback), and keeps other errors."""
    import logging

    from deplbench.benchmarks.harness.worker_signals import closing_heartbeat

    def rec(level, msg):
        return logging.LogRecord("distributed.worker", level, __file__, 1, msg, None, None)

    assert not closing_heartbeat(rec(logging.ERROR, "Failed to communicate with scheduler during heartbeat."))
    assert not closing_heartbeat(rec(logging.WARNING, "Failed to communicate with scheduler during heartbeat."))
    assert closing_heartbeat(rec(logging.ERROR, "Compute Failed"))
