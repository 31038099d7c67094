"""``deplbench run`` under a scheduler's or a user's signals (issue 30).

* SIGINT (Ctrl-C) or SIGTERM (SLURM, Kubernetes) to the whole job: the runs in flight stop
  within a few seconds and their certified incumbents are stored as ``interrupted``; the next
  ``deplbench run`` re-runs exactly those and the ones never started;
* SIGKILL of the harness's whole process group: no process outlives it (the reaper has its own
  session), and the resume loses no row and duplicates none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest
from harness_configs import alive, config, solver, wait_gone


def _cmd(path, out, *extra: str) -> list[str]:
    return [sys.executable, "-m", "deplbench.cli", "run", str(path), "--out", str(out), "--workers", "2",
            "--no-report", "--quiet", *extra]


@pytest.fixture
def start():
    """Start ``deplbench run`` as its own process group; whatever a failed test leaves is killed."""
    procs: list[subprocess.Popen] = []

    def _start(path, out, *extra: str) -> subprocess.Popen:
        proc = subprocess.Popen(_cmd(path, out, *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        procs.append(proc)
        return proc

    yield _start
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def _wait_for_runs(proc: subprocess.Popen, n: int, release: Path, timeout: float = 90.0) -> list[psutil.Process]:
    """Wait until ``n`` run processes (their own process groups, under the fork server) live 1.5 s
    and ``n`` ``harness-incumbent`` runs have offered their incumbents (each touches
    ``RELEASE.started-PID``: the grid's warm-up process also leads a group under the fork server)."""
    me, deadline, since = psutil.Process(proc.pid), time.time() + timeout, None
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        runs = [p for p in alive(me.children(recursive=True)) if _is_run(p)]
        started = len(list(release.parent.glob(f"{release.name}.started-*")))
        if len(runs) >= n and started >= n:
            since = since or time.time()
            if time.time() - since > 1.5:  # past their start: each has offered its incumbent
                return me.children(recursive=True)
        else:
            since = None
        time.sleep(0.1)
    raise AssertionError(f"{n} runs did not start")


def _is_run(p: psutil.Process) -> bool:
    """A run process: the leader of its own group, forked by a fork server (not a reaper)."""
    try:
        return _pgid(p.pid) == p.pid and "forkserver" in " ".join(p.parent().cmdline())
    except (psutil.Error, AttributeError):
        return False


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _rows(out) -> list[tuple]:
    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    try:
        return con.execute("SELECT run_key, harness_status, status, objective, feasible, plan_json IS NOT NULL "
                           "FROM runs ORDER BY run_key").fetchall()
    finally:
        con.close()


def _finished(out) -> dict[str, tuple]:
    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    try:
        return {k: (a, b) for k, a, b in con.execute("SELECT run_key, started_at, finished_at FROM runs").fetchall()}
    finally:
        con.close()


def _grid(tmp_path, fast: int = 0):
    release = tmp_path / "release"
    tables = [solver("harness-ok", time_limit=30)] if fast else []
    tables.append(solver("harness-incumbent", seconds=120.0, release=str(release), time_limit=300))
    seeds = tuple(range(max(3, fast)))
    return config(tmp_path, tables, seeds=seeds, harness="grace = 5.0\neval_samples = 100"), release


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "engine"), [(signal.SIGINT, ()), (signal.SIGTERM, ()),
                                             (signal.SIGINT, ("--cluster", "local"))])
def test_signal_to_the_job_keeps_the_incumbents_and_resumes(tmp_path, sig, engine, start):
    """Local worker threads, and a Dask LocalCluster whose workers get the signal too."""
    path, release = _grid(tmp_path)
    out = tmp_path / "out"
    proc = start(path, out, *engine)
    tree = _wait_for_runs(proc, 2, release)
    t0 = time.perf_counter()
    os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C or a scheduler's stop: the whole job
    stdout, stderr = proc.communicate(timeout=30)
    assert time.perf_counter() - t0 < 8, "the grid did not stop within 8 s"
    assert proc.returncode == 128 + sig, (stdout, stderr)
    assert "Traceback" not in stderr, stderr
    assert "stored as interrupted" in stdout and "again to finish" in stdout, stdout
    rows = _rows(out)
    assert len(rows) == 2, rows  # the two runs in flight; the third never started
    for _key, harness, status, objective, feasible, has_plan in rows:
        assert (harness, status) == ("interrupted", "interrupted")
        assert has_plan and feasible and objective > 0  # the incumbent, certified by the evaluator
    left = wait_gone(tree, 2)
    assert not left, [(p.pid, p.name()) for p in left]

    release.touch()  # the same grid (same run keys), now quick
    res = subprocess.run(_cmd(path, out, *engine), capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert "3 runs, 0 already done, ran 3" in res.stdout, res.stdout  # the interrupted ones re-run
    rows = _rows(out)
    assert len(rows) == 3 and len({r[0] for r in rows}) == 3
    assert {(r[1], r[2]) for r in rows} == {("ok", "feasible")}


@pytest.mark.slow
def test_sigkill_of_the_whole_group_leaves_no_process_and_resumes(tmp_path, start):
    path, release = _grid(tmp_path, fast=4)
    out = tmp_path / "out"
    proc = start(path, out)
    tree = _wait_for_runs(proc, 2, release)  # quick runs have finished, two slow ones run
    tree = tree + psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    left = wait_gone(tree, 5)
    assert not left, [(p.pid, p.name()) for p in left]
    assert not alive([p for p in psutil.process_iter() if _pgid(p.pid) == proc.pid])

    before = _finished(out)
    assert before, "no run had finished before the kill"
    release.touch()
    res = subprocess.run(_cmd(path, out), capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert f"8 runs, {len(before)} already done, ran {8 - len(before)}" in res.stdout, res.stdout
    rows = _rows(out)
    assert len(rows) == 8 and len({r[0] for r in rows}) == 8  # none lost, none duplicated
    assert {r[1] for r in rows} == {"ok"}
    after = _finished(out)
    assert {k: after[k] for k in before} == before  # the rows stored before the kill are kept as they were
