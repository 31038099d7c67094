"""Nothing left behind: the ``mps`` method's temporary folder and a stopped ``report``'s half-written folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from deplbench.leftovers import owned_tempdir, remove_stale


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_folders_of_gone_processes_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    dead, live = _dead_pid(), os.getppid()
    (tmp_path / f"deplbench-mps-{dead}-abcd").mkdir()
    (tmp_path / f"deplbench-mps-{dead}-abcd" / "model.mps").write_text("x")
    (tmp_path / f"deplbench-mps-{live}-efgh").mkdir()  # a live process's: kept
    (tmp_path / "deplbench-mps-notapid").mkdir()  # not one of ours: kept
    (tmp_path / f"other-{dead}-x").mkdir()  # another prefix: kept
    with owned_tempdir("deplbench-mps-") as d:
        assert d.parent == tmp_path and d.name.startswith(f"deplbench-mps-{os.getpid()}-")
        left = sorted(p.name for p in tmp_path.iterdir())
    assert f"deplbench-mps-{dead}-abcd" not in left
    assert {f"deplbench-mps-{live}-efgh", "deplbench-mps-notapid", f"other-{dead}-x"} <= set(left)
    assert not d.exists()


def test_a_symlink_named_like_a_stale_folder_is_not_followed(tmp_path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep").write_text("x")
    (tmp_path / f"deplbench-mps-{_dead_pid()}-l").symlink_to(target)
    remove_stale(tmp_path, "deplbench-mps-")
    assert (target / "keep").exists()


def _wait_for(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_a_sigkilled_mps_solve_leaves_its_folder_to_the_next_solve(tmp_path):
    from deplbench.cli import main

    inst = tmp_path / "i.json"
    assert main(["generate", "paper-alexnet", "--out", str(inst)]) == 0
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    p = subprocess.Popen([sys.executable, "-m", "deplbench.cli", "solve", str(inst), "--solver", "mps", "--time-limit",
                          "60", "--out", str(tmp_path / "p.json")], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(lambda: any(tmpdir.glob("deplbench-mps-*/model.mps")), 60)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert _wait_for(lambda: not any(os.path.exists(f"/proc/{d.name.split('-')[2]}") for d in
                                     tmpdir.glob("deplbench-mps-*")), 10)  # its child has died with it
    assert list(tmpdir.glob("deplbench-mps-*"))  # what the kill left
    small = tmp_path / "s.json"
    assert main(["generate", "random", "--out", str(small)]) == 0
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "solve", str(small), "--solver", "mps",
                           "--time-limit", "20", "--out", str(tmp_path / "q.json")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not list(tmpdir.glob("deplbench-mps-*"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
@pytest.mark.parametrize("existing", [False, True])
def test_a_stopped_report_leaves_no_half_written_folder(store_dir, tmp_path, sig, existing):
    root = tmp_path / "out"
    shutil.copytree(store_dir, root)
    rep = root / "report"
    if existing:
        rep.mkdir()
        (rep / "report.md").write_text("old report\n")
    p = subprocess.Popen([sys.executable, "-m", "deplbench.cli", "report", str(root)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: any(root.glob(".report.partial-*/*")), 120), "the report did not start"
    finally:
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    assert "Traceback" not in err, err
    complete = rep.exists() and (rep / "index.html").exists() and (rep / "report.html").exists()
    if existing:  # the old report untouched, or the new one whole (the stop came after the move)
        old = (rep / "report.md").read_text() == "old report\n"
        assert (old and sorted(x.name for x in rep.iterdir()) == ["report.md"]) or complete
    else:
        assert not rep.exists() or complete
    if sig == signal.SIGINT:  # the process cleans up itself
        assert not list(root.glob(".report.partial-*"))
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "report", str(root)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (rep / "report.md").exists() and (rep / "index.html").exists()
    assert (rep / "report.md").read_text() != "old report\n"
    assert not list(root.glob(".report.partial-*"))  # the next report removed what the stop left
