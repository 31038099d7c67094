"""A run is one process group that dies with its parent; every phase of a run is inside its limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import psutil
import pytest
from harness_configs import MODULE, alive, config, solver, wait_gone

from deplbench.benchmarks.api import run_config


@pytest.mark.slow
@pytest.mark.parametrize("whom", ["harness", "group"])
def test_sigkilled_run_leaves_no_process(tmp_path, whom):
    """A SIGKILL of the harness, or of its whole process group (a scheduler's kill of the job, which
    also reaches the fork server): the reaper, in its own session, kills every run group."""
    path = config(tmp_path, [solver("harness-spawn", seconds=[30.0, 30.1], time_limit=60)], seeds=(0, 1),
                  harness="grace = 5.0\neval_samples = 100")
    cmd = [sys.executable, "-m", "deplbench.cli", "run", str(path), "--out", str(tmp_path / "out"),
           "--workers", "2", "--no-report", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    me = psutil.Process(proc.pid)
    deadline, tree = time.time() + 90, []
    while time.time() < deadline:  # mid-grid: both runs have started their grandchild
        tree = me.children(recursive=True)
        if sum(1 for p in alive(tree) if p.name() == "sleep") >= 2:
            break
        time.sleep(0.1)
    assert sum(1 for p in alive(tree) if p.name() == "sleep") >= 2, "the runs did not start"
    tree = me.children(recursive=True)
    if whom == "group":
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = wait_gone(tree, 5)
    assert not left, [(p.pid, p.name()) for p in left]
    group = [p for p in psutil.process_iter() if _pgid(p.pid) == proc.pid]
    assert not alive(group)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


@pytest.mark.slow
def test_slow_generation_is_a_timeout_row(tmp_path):
    text = ("[harness]\ngrace = 1.0\neval_samples = 100\n\n[[experiments]]\nname = \"t\"\n\n"
            f"[[experiments.instances]]\nfamily = \"harness-slow\"\nmodule = \"{MODULE}\"\nseeds = [0]\n"
            "params = { seconds = 600.0 }\n\n" + solver("harness-ok", time_limit=1.0))
    path = tmp_path / "slow.toml"
    path.write_text(text)
    t0 = time.perf_counter()
    res = run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    assert time.perf_counter() - t0 < 30
    assert res.counts == {"timeout": 1}
    con = duckdb.connect(str(tmp_path / "out" / "results.duckdb"), read_only=True)
    status, harness, error = con.execute("SELECT status, harness_status, error FROM runs").fetchone()
    con.close()
    assert (status, harness) == ("timeout", "timeout")
    assert "instance generation" in error


def test_memory_is_policed_on_the_process_tree(tmp_path):
    path = config(tmp_path, [solver("harness-hog-child", mb=200.0, children=2, time_limit=60)], seeds=(0,),
                  harness="grace = 5.0\nmemory_limit_mb = 300.0\neval_samples = 100")
    t0 = time.perf_counter()
    res = run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    assert time.perf_counter() - t0 < 40
    assert res.counts == {"memory": 1}
    con = duckdb.connect(str(tmp_path / "out" / "results.duckdb"), read_only=True)
    status, peak = con.execute("SELECT status, peak_mem_mb FROM runs").fetchone()
    con.close()
    assert status == "memout" and peak > 300
    assert not [p for p in psutil.process_iter(["cmdline"]) if "b = np.ones" in " ".join(p.info["cmdline"] or [])]
