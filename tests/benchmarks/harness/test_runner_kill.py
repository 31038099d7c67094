"""SIGKILL of ``deplbench run`` mid-grid, then a rerun: no lost and no duplicated rows."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import duckdb
import pytest
from harness_configs import config, solver

from deplbench.benchmarks.harness.config import load_config

N = 12


def _cmd(path, out):
    return [sys.executable, "-m", "deplbench.cli", "run", str(path), "--out", str(out), "--workers", "2",
            "--no-report"]


@pytest.mark.slow
def test_sigkill_then_rerun_completes_the_grid(tmp_path):
    path = config(tmp_path, [solver("harness-sleep", seconds=[0.3, 0.31, 0.32], time_limit=5)],
                  seeds=(0, 1, 2, 3), harness="grace = 1.0\neval_samples = 1000")
    runs = load_config(path).runs
    assert len(runs) == N
    out = tmp_path / "out"
    proc = subprocess.Popen(_cmd(path, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = []

    def watch():  # the progress bar on stderr says how many rows are committed
        buf = b""
        while True:
            ch = proc.stderr.read(1)
            if not ch:
                return
            buf = (buf + ch)[-200:]
            m = re.findall(rb"(\d+)/12", buf)
            if m:
                seen.append(int(m[-1]))

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    deadline = time.time() + 60
    while time.time() < deadline and not (seen and seen[-1] >= 3):
        time.sleep(0.02)
    assert seen and seen[-1] >= 3, "the harness made no progress"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    t.join(5)
    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    first = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    con.close()
    assert 3 <= first < N  # killed mid-grid, the committed rows survive
    done = subprocess.run(_cmd(path, out), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    n, distinct = con.execute("SELECT count(*), count(DISTINCT run_key) FROM runs").fetchone()
    keys = {r[0] for r in con.execute("SELECT run_key FROM runs WHERE harness_status = 'ok'").fetchall()}
    con.close()
    assert n == distinct == N
    assert keys == {r.key for r in runs}
    assert f"{first} already done" in done.stdout
