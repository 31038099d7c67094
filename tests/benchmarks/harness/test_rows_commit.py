"""The suite's commit is on record for a wheel install too: setup.py writes it into the built package."""

from __future__ import annotations

import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest

from deplbench.benchmarks.harness import rows

ROOT = Path(__file__).resolve().parents[3]


def test_a_built_package_reports_its_build_commit(monkeypatch):
    monkeypatch.setitem(sys.modules, "deplbench._build_info", types.SimpleNamespace(GIT_COMMIT="0123abcd"))
    assert rows.git_commit() == "0123abcd"


def test_a_checkout_reports_its_head():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert rows.git_commit().split("+")[0] == head  # an editable install: no _build_info, git answers


@pytest.mark.slow
def test_a_wheel_carries_the_commit_it_was_built_from(tmp_path):
    """A wheel built from a git checkout holds ``deplbench/_build_info.py`` with that checkout's HEAD."""
    src = tmp_path / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    git = ["git", "-C", str(src), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "build"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(src)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("*.whl"))
    info = zipfile.ZipFile(wheel).read("deplbench/_build_info.py").decode()
    assert f"GIT_COMMIT = {head!r}" in info
    assert not (src / "src" / "deplbench" / "_build_info.py").exists()  # nothing written into the sources
