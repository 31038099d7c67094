"""Nothing left behind: the ``mps`` method's temporary folder and a stopped ``report``'s half-written folder."""

from __future__ import annotations

import json
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


#: ``python -c`` body: ``deplbench ARGS`` whose atomic writes wait 120 s before their rename (a kill lands mid-write)
_SLOW_RENAME = """
import os, sys, time, types
import deplbench.files as files

def _slow(src, dst, *a, **k):
    time.sleep(120)
    return os.replace(src, dst, *a, **k)

files.os = types.SimpleNamespace(**{n: getattr(os, n) for n in dir(os) if not n.startswith("__")})
files.os.replace = _slow
from deplbench.cli import console_main
console_main()
"""


#: per command that writes one file through the atomic helpers: its arguments and a reader of its output
_WRITERS = {
    "generate": (lambda i: ["generate", "random", "--seed", "3"], "instance"),
    "reduce-knapsack": (lambda i: ["reduce-knapsack", str(i["knap"])], "instance"),
    "calibrate": (lambda i: ["calibrate", str(i["curves"])], "json"),
}


def _writer_argv(command: str, inputs: dict[str, Path], target: Path) -> list[str]:
    return [*_WRITERS[command][0](inputs), "--out", str(target)]


def _read_output(command: str, target: Path) -> object:
    """The command's output read back as what it is (an instance or a JSON document)."""
    from deplbench.instances.io import load_instance

    if _WRITERS[command][1] == "instance":
        return load_instance(target).name
    return json.loads(target.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize("command", sorted(_WRITERS))
def test_a_write_killed_before_its_rename_leaves_no_half_file_nor_after_the_next_run_a_temporary(tmp_path, command,
                                                                                                  sig):
    from deplbench.cli import main
    from hostile.kit import fixtures

    (tmp_path / "in").mkdir()
    inputs, out = fixtures(tmp_path / "in"), tmp_path / "out"
    out.mkdir()
    target = out / "inst.json"
    target.write_text("old\n")  # an earlier file: untouched until the new one is whole
    argv = _writer_argv(command, inputs, target)
    p = subprocess.Popen([sys.executable, "-c", _SLOW_RENAME, *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: any(out.glob(f".inst.json.{p.pid}-*.tmp")) or p.poll() is not None, 120)
        assert p.poll() is None, p.communicate()
    finally:
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    assert p.returncode in (-sig, 128 + sig) and "Traceback" not in err, (p.returncode, err)
    assert target.read_text() == "old\n"  # never half-written
    left = sorted(x.name for x in out.iterdir() if x != target)
    assert all(n.startswith(f".inst.json.{p.pid}-") for n in left), left  # only the killed process's own
    if sig == signal.SIGKILL:
        assert left  # what the kill left, for the next run
    assert main(argv) == 0
    assert sorted(x.name for x in out.iterdir()) == ["inst.json"]  # the next write removed it
    assert _read_output(command, target)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_warmup_leaves_nothing_after_the_next_warmup(tmp_path, sig, request):
    """``warmup`` writes no file of its own; its fork server's socket folder is named after it and removed
    by the next warmup (or run) once it is gone."""
    import tempfile

    from hostile.kit import fixtures

    (tmp_path / "in").mkdir()
    cfg = fixtures(tmp_path / "in")["cfg"]
    tmp = Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp"))  # short: a socket's path
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    env = {**os.environ, "TMPDIR": str(tmp)}
    cmd = [sys.executable, "-m", "deplbench.cli", "warmup", str(cfg)]
    p = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: any(tmp.glob("deplbench-mp-*/*")) or p.poll() is not None, 120)
        assert p.poll() is None, p.communicate()
    finally:
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    assert "Traceback" not in err, err
    if sig == signal.SIGKILL:
        assert list(tmp.glob("deplbench-mp-*"))  # what the kill left, for the next warmup
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert _wait_for(lambda: not list(tmp.iterdir()), 10), list(tmp.iterdir())
    assert sorted(x.name for x in tmp_path.iterdir()) == ["in"]  # nothing written beside it


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_saa_bounds_writes_nothing_and_leaves_no_process(tmp_path, sig):
    """``saa-bounds`` has no ``--out`` (its report goes to stdout): a kill mid-solve leaves no file and no
    process (its watched solves die with it)."""
    import psutil
    from harness_configs import alive

    from deplbench.cli import main

    inst = tmp_path / "p.json"
    assert main(["generate", "paper-alexnet", "--out", str(inst)]) == 0
    work, tmp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    p = subprocess.Popen([sys.executable, "-m", "deplbench.cli", "saa-bounds", str(inst), "--time-limit", "60",
                          "--scenarios", "2000", "--replications", "3"], env={**os.environ, "TMPDIR": str(tmp)}, cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    kids: list = []
    try:
        me = psutil.Process(p.pid)
        assert _wait_for(lambda: len(alive(me.children(recursive=True))) >= 2, 120)  # the reaper and a solve
        time.sleep(1.0)  # the solve is under way
        kids.extend(me.children(recursive=True))
        assert p.poll() is None, p.communicate()
    finally:
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert _wait_for(lambda: not alive(kids), 10), alive(kids)
    assert list(work.iterdir()) == [] and list(tmp.iterdir()) == []


@pytest.mark.slow
def test_a_library_build_removes_the_folder_a_killed_build_left(tmp_path, monkeypatch):
    """``.NAME.building-PID`` (a build assembles its library there, then renames it) of a SIGKILLed build is
    removed by the next build of ``NAME``; a live build's is kept."""
    from deplbench.benchmarks.library import catalog
    from deplbench.benchmarks.library.spec import Entry

    entry = Entry("knapsack", (("capacity", 6), ("items", 2), ("max_value", 8), ("max_weight", 4)), 1, True)
    monkeypatch.setattr(catalog, "entries", lambda *_a: ([entry], []))
    dead, live = tmp_path / f".lib.building-{_dead_pid()}", tmp_path / f".lib.building-{os.getppid()}"
    for d in (dead, live):
        (d / "instances").mkdir(parents=True)
    catalog.build(tmp_path / "lib", quick=True, scenarios=(20,), workers=1, log=lambda _m: None)
    assert sorted(x.name for x in tmp_path.iterdir()) == [live.name, "lib"]
