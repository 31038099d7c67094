"""``deplbench warmup``: a config's compile caches are filled ahead of any run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from harness_configs import config, solver

from deplbench.cli import main


def test_warmup_of_a_config(tmp_path, capsys):
    path = config(tmp_path, [solver("harness-ok"), solver("harness-preloaded")], seeds=(0,))
    assert main(["warmup", str(path)]) == 0
    out = capsys.readouterr().out
    assert "compile caches of 2 methods (harness-ok, harness-preloaded) ready in" in out


def test_warmup_of_an_unknown_config_is_one_line(capsys):
    assert main(["warmup", "no-such-config"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.slow
def test_warmup_fills_an_empty_numba_cache(tmp_path):
    """On an empty cache (a fresh install), DepL's and the evaluator's compiled code lands on disk."""
    cache = tmp_path / "numba"
    cache.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "warmup", "smoke"], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    names = {p.parent.name.split("_")[0] for p in cache.rglob("*.nbi")}
    assert {"evaluator", "heuristics", "models"} <= names
