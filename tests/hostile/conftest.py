"""A small finished store, shared by the hostile tests that need a valid one."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory):
    from deplbench.benchmarks.api import run_config

    d = tmp_path_factory.mktemp("store")
    cfg = d / "ok.toml"
    cfg.write_text('[harness]\neval_samples = 100\n[[experiments]]\nname = "t"\n[[experiments.instances]]\n'
                   'family = "random"\nparams = { epochs = 4, models = 2 }\n[[experiments.solvers]]\n'
                   'name = "harness-ok"\nmodule = "deplbench.benchmarks.harness.testing"\n')
    run_config(cfg, d / "out", workers=1, progress=False, report=False)
    return d / "out"
