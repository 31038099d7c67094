"""Nothing left behind: the ``mps`` method's temporary folder and a stopped ``report``'s half-written folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def test_a_killed_atomic_write_is_removed_by_the_next_write_of_that_file(tmp_path):
    from deplbench.files import atomic_output, atomic_path

    dead, live = _dead_pid(), os.getppid()
    target = tmp_path / "plan.json"
    (tmp_path / f".plan.json.{dead}-abcd.tmp").write_text("half")  # atomic_output's
    (tmp_path / f".plan.json.{dead}.tmp.json").write_text("half")  # atomic_path's
    (tmp_path / f".plan.json.{live}-efgh.tmp").write_text("busy")  # a live writer's: kept
    (tmp_path / f".other.json.{dead}-x.tmp").write_text("x")  # another file's: left to its own next write
    with atomic_output(target) as fh:
        fh.write("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".other.json.{dead}-x.tmp", f".plan.json.{live}-efgh.tmp",
                                                         "plan.json"]
    (tmp_path / f".plan.json.{dead}.tmp.json").write_text("half")
    with atomic_path(target) as tmp:
        tmp.write_text("{}")
    assert not (tmp_path / f".plan.json.{dead}.tmp.json").exists()


def _isolated_tmp(tmp_path, monkeypatch):
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return d


def test_compare_of_archives_leaves_no_unpacked_copy(store_dir, tmp_path, monkeypatch):
    from deplbench.cli import main

    tmp = _isolated_tmp(tmp_path, monkeypatch)
    stale = tmp / f"deplbench-bundle-{_dead_pid()}-abcd"  # a SIGKILLed compare's copy
    stale.mkdir()
    root = tmp_path / "r"
    shutil.copytree(store_dir, root)
    assert main(["export-results", str(root), "--format", "csv", "--bundle", "--out", str(tmp_path / "e")]) == 0
    bundle = next((tmp_path / "e").glob("*.tar.gz"))
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not gzip")
    assert main(["compare", str(bundle), str(bad), "--out", str(tmp_path / "c0")]) == 2  # refused: nothing kept
    assert main(["compare", str(bundle), str(bundle), "--out", str(tmp_path / "c")]) == 0
    assert list(tmp.iterdir()) == []


def test_a_library_task_on_a_worker_leaves_no_folder(tmp_path, monkeypatch):
    from deplbench.benchmarks.library import remote

    tmp = _isolated_tmp(tmp_path, monkeypatch)
    stale = tmp / f"deplbench-library-{_dead_pid()}-abcd"  # a killed worker's
    stale.mkdir()
    seen = []

    def fake_build_one(entry, out, *rest):
        (out / "x.json").write_text("{}")
        seen.append(sorted(p.name for p in tmp.iterdir()))
        return {"entry": entry}

    monkeypatch.setattr(remote, "build_one", fake_build_one)
    got = remote.build_one_files("e", "ignored")
    assert got == {"result": {"entry": "e"}, "files": {"x.json": b"{}"}}
    assert len(seen[0]) == 1 and seen[0][0].startswith(f"deplbench-library-{os.getpid()}-")  # the stale one gone
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_a_stopped_run_leaves_no_multiprocessing_folder(tmp_path, sig, request):
    """The fork server's socket folder: removed by the run itself, or (SIGKILL) by the next run."""
    import tempfile

    from harness_configs import config, solver

    tmp = Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp"))  # short: pytest's tmp_path is too long for a socket
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    env = {**os.environ, "TMPDIR": str(tmp)}
    long = config(tmp_path, [solver("harness-sleep", seconds=[60.0], time_limit=120)], seeds=(0,), name="long")
    short = config(tmp_path, [solver("harness-sleep", seconds=[0.1], time_limit=5)], seeds=(0,), name="short")

    def cmd(path, out):
        return [sys.executable, "-m", "deplbench.cli", "run", str(path), "--out", str(out), "--workers", "1",
                "--no-report"]

    p = subprocess.Popen(cmd(long, tmp_path / "a"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        started = _wait_for(lambda: any(tmp.glob("deplbench-mp-*/*")) or p.poll() is not None, 120)
        assert started and p.poll() is None, f"the fork server did not start: {p.poll()} {p.stderr.read()}"
        time.sleep(1.0)  # the run has started
    finally:
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert not list(tmp.glob("pymp-*"))
    if sig != signal.SIGKILL:
        assert _wait_for(lambda: not list(tmp.iterdir()), 10), list(tmp.iterdir())
    else:
        assert list(tmp.glob("deplbench-mp-*"))  # what the kill left
    done = subprocess.run(cmd(short, tmp_path / "b"), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert list(tmp.iterdir()) == []


def test_a_run_under_a_long_tmpdir_starts_its_fork_server(tmp_path):
    """A socket under a ``TMPDIR`` too deep for ``AF_UNIX`` (108 bytes) goes to ``/tmp`` instead."""
    from harness_configs import config, solver

    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    short = config(tmp_path, [solver("harness-sleep", seconds=[0.1], time_limit=5)], seeds=(0,), name="short")
    before = {p.name for p in Path("/tmp").glob("deplbench-mp-*")}
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "run", str(short), "--out", str(tmp_path / "o"),
                           "--workers", "1", "--no-report"], env={**os.environ, "TMPDIR": str(deep)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ok 1" in done.stderr + done.stdout
    assert {p.name for p in Path("/tmp").glob("deplbench-mp-*")} <= before  # removed at the exit
