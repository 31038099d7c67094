"""A full disk (ENOSPC) or a read-only one (EROFS) at a write site: one line, exit status 2, no partial file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from deplbench.cli import main


def _failing_fdopen(code: int):
    real = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            raise OSError(code, os.strerror(code))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def __getattr__(self, name):
            return getattr(self.fh, name)

    return lambda fd, *a, **k: Full(real(fd, *a, **k))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_generate_on_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys, code):
    monkeypatch.setattr(os, "fdopen", _failing_fdopen(code))
    out = tmp_path / "inst.json"
    rc = main(["generate", "random", "--set", "models=2", "--set", "epochs=4", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and str(out) in err and os.strerror(code) in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file


def test_report_on_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    from tests.hostile.kit import fixtures

    files = fixtures(tmp_path)
    store = tmp_path / "res"
    assert main(["run", str(files["cfg"]), "--out", str(store), "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(os, "fdopen", _failing_fdopen(errno.ENOSPC))
    rc = main(["report", str(store)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "No space left on device" in err and "Traceback" not in err, err
    assert "section" not in err
    report = store / "report"
    assert not (report / "report.html").exists() and not (report / "report.md").exists()
    assert [p for p in report.rglob(".*")] == []  # no temporary file left


# ---- a real full disk: a small tmpfs (needs root, as in CI's container) -----------------------

@pytest.fixture
def disk(tmp_path):
    """A 512 KiB tmpfs at ``tmp_path/disk``, unmounted afterwards; ``fill(kb)`` leaves ``kb`` KiB free."""
    import shutil
    import subprocess

    mnt = tmp_path / "disk"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root); the simulated write errors above still run")

    def fill(kb: int) -> Path:
        filler = mnt / "filler"
        filler.unlink(missing_ok=True)
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        filler.write_bytes(bytes(max(0, free - kb * 1024)))
        return filler

    yield mnt, fill
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _one_line(err: str, where, why: str = "No space left on device") -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(where) in err and why in err, err


def _left(folder: Path) -> list[str]:
    """Files under ``folder`` but the filler: what a failed command left behind."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name != "filler" and p.is_file())


def _grid(tmp_path, tables: str) -> Path:
    path = tmp_path / "grid.toml"
    path.write_text('[harness]\ngrace = 2.0\neval_samples = 100\n\n[[experiments]]\nname = "t"\n\n'
                    '[[experiments.instances]]\nfamily = "random"\nseeds = [0, 1, 2]\n'
                    'params = { epochs = 4, models = 2 }\n\n' + tables)
    return path


def _solver(name: str, extra: str = "") -> str:
    return (f'[[experiments.solvers]]\nname = "{name}"\nmodule = "deplbench.benchmarks.harness.testing"\n'
            + (f"params = {{ {extra} }}\n" if extra else ""))


def _stored(out: Path) -> list[tuple[str, str]]:
    import duckdb

    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    try:
        return con.execute("SELECT run_key, harness_status FROM runs").fetchall()
    finally:
        con.close()


def test_store_that_cannot_be_created_is_one_line_then_resumes(tmp_path, disk, capsys):
    mnt, fill = disk
    filler = fill(4)
    cfg = _grid(tmp_path, _solver("harness-ok"))
    out = mnt / "res"
    rc = main(["run", str(cfg), "--out", str(out), "--quiet", "--no-report", "--workers", "1"])
    _one_line(capsys.readouterr().err, out / "results.duckdb")
    assert rc == 2 and _left(mnt) == []  # no half-made store
    filler.unlink()
    assert main(["run", str(cfg), "--out", str(out), "--quiet", "--no-report", "--workers", "1"]) == 0
    assert len(_stored(out)) == 3


@pytest.mark.slow
def test_disk_filling_up_during_a_run_is_one_line_then_resumes(tmp_path, disk, capsys):
    mnt, _ = disk
    filler = mnt / "filler"
    cfg = _grid(tmp_path, _solver("harness-ok") + _solver("harness-fill", f'path = "{filler}", once = "{tmp_path / "filled"}"'))
    out = mnt / "res"
    args = ["run", str(cfg), "--out", str(out), "--quiet", "--no-report", "--workers", "1"]
    rc = main(args)
    _one_line(capsys.readouterr().err, out / "results.duckdb")
    assert rc == 2
    filler.unlink()  # space again: the same command finishes the grid
    assert main(args) == 0
    capsys.readouterr()
    rows = _stored(out)
    assert len(rows) == 6 and len({k for k, _ in rows}) == 6 and {s for _, s in rows} == {"ok"}


@pytest.mark.slow
def test_report_export_and_library_on_a_full_disk(tmp_path, disk, capsys):
    mnt, fill = disk
    store = tmp_path / "res"
    cfg = _grid(tmp_path, _solver("harness-ok"))
    assert main(["run", str(cfg), "--out", str(store), "--quiet", "--no-report", "--workers", "1"]) == 0
    fill(8)
    capsys.readouterr()
    for args, where in ((["report", str(store), "--out", str(mnt / "report")], mnt / "report"),
                        (["export-results", str(store), "--format", "parquet", "--out", str(mnt / "exp")],
                         mnt / "exp"),
                        (["library", "build", "--quick", "--out", str(mnt / "lib")], mnt)):  # its building folder
        rc = main(args)
        _one_line(capsys.readouterr().err, where)
        assert rc == 2, args
        assert [f for f in _left(mnt) if "/." in f or f.startswith(".")] == [], _left(mnt)  # no temporary file
    assert not (mnt / "lib").exists()  # a library is written whole or not at all


def test_generate_solve_and_export_on_a_full_disk(tmp_path, disk, capsys):
    mnt, fill = disk
    files = {}
    from tests.hostile.kit import fixtures

    files = fixtures(tmp_path)
    fill(0)
    for args, where in ((["generate", "random", "--out", str(mnt / "i.json")], mnt / "i.json"),
                        (["solve", str(files["inst"]), "--solver", "depl", "--out", str(mnt / "p.json")],
                         mnt / "p.json"),
                        # HiGHS reports success for a cut file on a full disk: the tail is checked
                        (["export", str(files["inst"]), "--scenarios", "20", "--out", str(mnt / "m.mps")], mnt / "m.mps"),
                        (["export", str(files["inst"]), "--scenarios", "20", "--out", str(mnt / "m.lp")], mnt / "m.lp")):
        rc = main(args)
        _one_line(capsys.readouterr().err, where)
        assert rc == 2 and _left(mnt) == [], _left(mnt)
