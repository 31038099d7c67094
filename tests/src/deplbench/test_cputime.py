"""The watcher measures the CPU time of a watched child's whole process tree: itself, reaped children, killed runs."""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

from deplbench import cputime, watch
from deplbench.results import Outcome

_BURN = ("import sys, time\nend = time.process_time() + float(sys.argv[1])\n"
         "while time.process_time() < end:\n    sum(i * i for i in range(10_000))\n")


def _burn(seconds: float) -> float:
    """Burn ``seconds`` of CPU time in this process; returns them."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        sum(i * i for i in range(10_000))
    return seconds


def _burn_in_child(seconds: float) -> float:
    """A child process burns ``seconds`` of CPU time; this one waits for it (reaps it)."""
    subprocess.run([sys.executable, "-c", _BURN, str(seconds)], check=True)
    return seconds


def _burn_and_log(path: str) -> None:
    """Burn CPU until killed, writing this process's CPU seconds to ``path`` every few milliseconds."""
    last = 0.0
    while True:
        sum(i * i for i in range(10_000))
        now = time.process_time()
        if now - last > 0.02:  # written whole, then renamed: the kill may land in the middle of a write
            Path(path + ".tmp").write_text(f"{now}")
            os.replace(path + ".tmp", path)
            last = now


def test_own_cpu_time_is_measured():
    w = watch.call(mp.get_context("fork"), _burn, (0.6,), wall_limit_s=60)
    assert w.outcome == Outcome.OK and w.cpu is not None
    user, system = w.cpu
    assert user + system >= 0.6  # the child burned at least this much, by its own clock
    assert user + system <= w.wall_s * 2 + 0.1  # never more than its wall time on a few cores


def test_reaped_children_count():
    """A solver binary the method starts and waits for (``mps``): its CPU time is the run's."""
    w = watch.call(mp.get_context("fork"), _burn_in_child, (0.6,), wall_limit_s=60)
    assert w.outcome == Outcome.OK and w.cpu is not None
    assert sum(w.cpu) >= 0.6


def test_killed_run_gets_the_reading_taken_before_the_kill(tmp_path, monkeypatch):
    """A run killed at its wall limit sends nothing: the watcher reads the tree just before the kill."""
    monkeypatch.setattr(watch, "CPU_POLL_S", 1e9)  # no periodic reading: only the one before the kill
    log = tmp_path / "cpu.txt"
    w = watch.call(mp.get_context("fork"), _burn_and_log, (str(log),), wall_limit_s=1.5)
    assert w.outcome == Outcome.TIMEOUT
    assert w.cpu is not None
    assert sum(w.cpu) >= float(log.read_text()) - 0.05  # at least what the child last saw of its own time


def test_group_sums_reaped_children():
    proc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys\n"
                             f"subprocess.run([sys.executable, '-c', {_BURN!r}, '0.5'])\n"
                             "import time; time.sleep(30)"], start_new_session=True)
    try:
        import psutil

        deadline = time.time() + 30
        while time.time() < deadline:  # the grandchild has burned its share and been reaped
            kids = psutil.Process(proc.pid).children()
            if not kids:
                t = cputime.group(proc.pid)
                if t is not None and sum(t) >= 0.5:
                    break
            time.sleep(0.05)
        assert sum(cputime.group(proc.pid)) >= 0.5  # the Python child's reaped grandchild is in its children_*
    finally:
        proc.kill()
        proc.wait()
    assert cputime.group(proc.pid) is None  # a group that is gone: no reading


def test_group_counts_an_orphan():
    """A descendant whose parent has exited (reparented, unreaped by the run) is still in the run's group."""
    proc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys\n"
                             f"subprocess.Popen([sys.executable, '-c', {_BURN!r} + 'import time; time.sleep(30)', '0.5'])"],
                            start_new_session=True)
    proc.wait()  # the parent is gone; its child burns on in the group
    try:
        deadline = time.time() + 30
        while time.time() < deadline and sum(cputime.group(proc.pid) or (0, 0)) < 0.5:
            time.sleep(0.05)
        assert sum(cputime.group(proc.pid) or (0, 0)) >= 0.5
    finally:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)


def test_larger_prefers_the_bigger_total():
    assert cputime.larger((1.0, 0.1), (0.5, 0.5)) == (1.0, 0.1)
    assert cputime.larger(None, (0.5, 0.5)) == (0.5, 0.5)
    assert cputime.larger((0.2, 0.0), None) == (0.2, 0.0)
