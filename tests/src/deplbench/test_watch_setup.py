"""A watched child imports what its method declares *before* its address-space safety net (``watch.call(setup=)``).

The memory limit is on resident memory; the address space is capped only far above it
(:func:`deplbench.watch.address_space_net_mb`). numba's LLVM reserves about 170 MB of address space
for 53 MB resident, and the imports a method declares run before even that net.
"""

from __future__ import annotations

import json
import mmap
import multiprocessing as mp
import subprocess
import sys

import pytest
from harness_configs import config, solver

from deplbench import watch
from deplbench.benchmarks.harness.store import Store
from deplbench.cli import main
from deplbench.results import Outcome

_RESERVED: list = []
_SIZE = [2**30]


def _reserve(*_) -> None:
    """Map ``_SIZE`` bytes of address space without touching them (no resident memory), as LLVM does."""
    _RESERVED.append(mmap.mmap(-1, _SIZE[0]))


def _reserved_after() -> str:
    try:
        _reserve()
    except OSError:
        return "refused"
    return "mapped"


def _reserved_before() -> int:
    return len(_RESERVED)


def test_setup_runs_before_the_address_space_cap():
    import psutil

    ctx = mp.get_context("fork")  # the child starts with this process's memory: 300 MB of room above it
    limit = psutil.Process().memory_info().rss / 2**20 + 300
    _SIZE[0] = int((watch.address_space_net_mb(limit) + 64) * 2**20)  # just past the net
    late = watch.call(ctx, _reserved_after, wall_limit_s=30, memory_limit_mb=limit)
    assert (late.outcome, late.value) == (Outcome.OK, "refused")  # the cap is real
    early = watch.call(ctx, _reserved_before, wall_limit_s=30, memory_limit_mb=limit, setup=_reserve)
    assert (early.outcome, early.value) == (Outcome.OK, 1)


def test_reserved_address_space_below_the_net_is_free():
    """Three times the limit reserved (untouched) under the limit: the run is not a memout."""
    import psutil

    limit = psutil.Process().memory_info().rss / 2**20 + 300
    _SIZE[0] = int(3 * limit * 2**20)
    w = watch.call(mp.get_context("fork"), _reserved_after, wall_limit_s=30, memory_limit_mb=limit)
    assert (w.outcome, w.value) == (Outcome.OK, "mapped"), w.error


def _stopped(*_) -> None:
    raise KeyboardInterrupt  # what a SIGINT during the imports raises in the child


def test_a_stop_during_setup_is_interrupted_without_a_run():
    w = watch.call(mp.get_context("fork"), _reserved_before, wall_limit_s=30, setup=_stopped)
    assert (w.outcome, w.value) == (Outcome.INTERRUPTED, None)
    assert "before the run started" in w.error


@pytest.mark.slow
def test_depl_solves_under_a_300_mb_limit(tmp_path):
    """In its own process: ``deplbench solve`` forks itself, so a long test session's memory would count."""
    inst = tmp_path / "p.json"
    assert main(["generate", "paper-alexnet", "--set", "noise_mode=per_run", "--set", "target=7",
                 "--out", str(inst)]) == 0
    out = tmp_path / "plan.json"
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "solve", str(inst), "--solver", "depl",
                           "--memory-limit", "300", "--time-limit", "30", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(out.read_text())
    assert plan["status"] == "feasible" and plan["segments"], done.stdout


@pytest.mark.slow
def test_a_depl_run_of_a_mixed_grid_under_a_300_mb_limit(tmp_path):
    """Mixed with another method, the fork server does not hold numba: the run loads it itself (about
    245 MB at its peak). By the CLI, in its own process: this session's fork server may hold more."""
    path = config(tmp_path, [solver("harness-ok"), '[[experiments.solvers]]\nname = "depl"\n'], seeds=(0,),
                  harness="grace = 5.0\nmemory_limit_mb = 300")
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "run", str(path), "--out", str(tmp_path / "out"),
                           "--quiet", "--no-report", "--workers", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with Store(tmp_path / "out") as st:
        row = st.runs().set_index("solver").loc["depl"]
    assert (row["harness_status"], row["status"]) == ("ok", "feasible"), row["error"]
