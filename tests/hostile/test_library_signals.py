"""``deplbench library build`` stopped by SIGTERM or SIGINT: no library written, no entry half-kept, no worker
left behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from harness_configs import alive


def _build_and_stop(out, workers: int, sig, ready) -> tuple[int, str]:
    """Run ``library build --quick`` with ``workers``; once ``ready(process)`` returns, send ``sig`` to the
    build only (not its group: it must end its workers itself); (exit status, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "deplbench.cli", "library", "build", "--quick", "--out", str(out),
                             "--workers", str(workers)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        ready(proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return proc.returncode, err


def _wait_first_entry(tmp_path, proc, timeout: float = 120.0) -> None:
    """Wait until the build's checkpoint holds a finished entry (of the 15 of ``--quick``): it is mid-build."""
    deadline = time.monotonic() + timeout
    while not list((tmp_path / ".lib.partial" / "entries").glob("*/done.json")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no entry finished"
        time.sleep(0.05)


def _kept_entries_are_finished(tmp_path) -> None:
    """The checkpoint holds only finished entries, none of them graded from an interrupted run."""
    entries = tmp_path / ".lib.partial" / "entries"
    assert not entries.exists() or all((d / "done.json").is_file() for d in entries.iterdir())
    for done in entries.glob("*/done.json"):
        runs = json.loads(done.read_text())["result"]["timing"]["exact"].values()
        assert all(run["status"] != "interrupted" for run in runs)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_build_leaves_nothing(tmp_path, sig):
    children = []

    def workers_busy(proc) -> None:
        me, deadline = psutil.Process(proc.pid), time.time() + 120
        while time.time() < deadline and len(alive(me.children(recursive=True))) < 2:  # the workers are up
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        _wait_first_entry(tmp_path, proc)  # the workers are building their next entries
        children.extend(me.children(recursive=True))
        assert len(alive(children)) >= 2

    code, err = _build_and_stop(tmp_path / "lib", 2, sig, workers_busy)
    assert code == 128 + sig, err
    assert "stopped by signal" in err and "is unchanged" in err and "Traceback" not in err
    assert not (tmp_path / "lib").exists() and not list(tmp_path.glob(".lib.building-*"))
    _kept_entries_are_finished(tmp_path)
    deadline = time.time() + 10
    while alive(children) and time.time() < deadline:
        time.sleep(0.2)
    assert not alive(children)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_build_in_one_process_stops_on_a_signal(tmp_path, sig):
    """`--workers 1`: the entries run in the build's own process, where a solver catches the signal and
    returns its best plan ('interrupted'); the build must stop there, not grade the entry and go on."""

    def building(proc) -> None:
        _wait_first_entry(tmp_path, proc)  # imports done, the next entries being built
        assert proc.poll() is None, proc.communicate()

    code, err = _build_and_stop(tmp_path / "lib", 1, sig, building)
    assert code == 128 + sig, err
    assert f"stopped by signal {int(sig)}" in err and "Traceback" not in err and not (tmp_path / "lib").exists()
    _kept_entries_are_finished(tmp_path)
