"""What the harness's fork server imports for a grid: the registering modules, plus the imports every
method of the grid declares (and none that only some declare)."""

from __future__ import annotations

import pytest

from deplbench.benchmarks.harness.config import load_config
from deplbench.benchmarks.harness.process import grid_preload
from deplbench.heuristics.depl import DEPL_IMPORTS


def _runs(tmp_path, *solvers: str):
    body = "".join(f'[[experiments.solvers]]\nname = "{s}"\n' + (f'module = "{m}"\n' if m else "")
                   for s, m in (x.partition("@")[::2] for x in solvers))
    path = tmp_path / "c.toml"
    path.write_text('[[experiments]]\nname = "x"\n[[experiments.instances]]\nfamily = "random"\n'
                    f'params = {{ epochs = 3 }}\n{body}')
    return load_config(path).runs


def test_the_imports_every_method_declares_are_preloaded(tmp_path):
    pre = grid_preload(_runs(tmp_path, "depl", "best-exp", "depl-plus"))
    assert set(DEPL_IMPORTS) <= set(pre)
    assert "deplbench.heuristics.depl" in pre and "deplbench.instances.families.random" in pre


def test_an_import_only_some_methods_declare_stays_out(tmp_path):
    pre = grid_preload(_runs(tmp_path, "depl", "bruteforce"))
    assert "deplbench.heuristics.pipeline" not in pre, pre  # bruteforce's runs would hold DepL's graphs
    # both declare the compiled term lattices: shared
    assert set(DEPL_IMPORTS) & set(pre) == {"deplbench.instances.evaluator.lattice_jit"}, pre
    assert "deplbench.formulations.exact.methods" in pre


def test_a_method_that_cannot_load_shares_nothing(tmp_path):
    pre = grid_preload(_runs(tmp_path, "depl", "ghost@deplbench.no_such_module"))
    assert not set(DEPL_IMPORTS) & set(pre), pre
    assert "deplbench.no_such_module" in pre  # as before: the server skips what it cannot import


def _preloaded(tmp_path, name: str, *solvers: str) -> list[int]:
    """``extra["preloaded"]`` of the ``harness-preloaded`` rows of a grid run by the CLI (its own fork server)."""
    import json
    import subprocess
    import sys

    from harness_configs import config, solver

    from deplbench.benchmarks.harness.store import Store

    path = config(tmp_path, [solver(s) for s in solvers], seeds=(0,), name=name)
    out = tmp_path / name
    done = subprocess.run([sys.executable, "-m", "deplbench.cli", "run", str(path), "--out", str(out), "--quiet",
                           "--no-report", "--workers", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with Store(out) as st:
        df = st.runs()
    rows = df[df["solver"] == "harness-preloaded"]
    return [json.loads(x)["preloaded"] for x in rows["extra_json"]]


@pytest.mark.slow
def test_the_fork_server_holds_the_shared_imports_before_a_run(tmp_path):
    assert _preloaded(tmp_path, "alone", "harness-preloaded") == [1]
    assert _preloaded(tmp_path, "mixed", "harness-preloaded", "harness-ok") == [0]
