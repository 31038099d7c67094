"""A full disk (ENOSPC) or a read-only one (EROFS) at a write site: one line, exit status 2, no partial file."""

from __future__ import annotations

import errno
import os

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
