"""depl-bench: a benchmark suite for dependable distributed training (DepL, arXiv 2402.14346).

The Python API, for notebooks::

    import deplbench as db
    inst = db.load_paper("paper-alexnet-per_run-t9")
    res = db.solve("depl", inst, {"eta": 200, "eps": 0.05})
    res.evaluation.quantile_bounds

This facade imports its names on first use (PEP 562), so ``import deplbench`` and the CLI start
fast; nothing inside the package imports the facade.
"""

from __future__ import annotations

import importlib

from deplbench.version import __version__  # noqa: F401 - the public version

#: public name -> module that defines it
_API: dict[str, str] = {
    "InputError": "deplbench.errors",
    **dict.fromkeys(("Evaluation", "evaluate"), "deplbench.instances.evaluator.evaluate"),
    **dict.fromkeys(("Instance",), "deplbench.instances.schema"),
    **dict.fromkeys(("Plan", "Segment"), "deplbench.instances.plan"),
    **dict.fromkeys(("load_instance", "load_plan", "save_instance", "save_plan"), "deplbench.instances.io"),
    **dict.fromkeys(("evaluate_on_scenarios", "sample_scenarios"), "deplbench.instances.scenarios"),
    "load_paper": "deplbench.instances.families.paper",
    **dict.fromkeys(("family_names", "generate", "get_solver", "solve", "solver_names"), "deplbench.registry"),
    **dict.fromkeys(("SolveResult", "Status"), "deplbench.results"),
    **dict.fromkeys(("run_config", "read_results"), "deplbench.benchmarks.api"),
}


def __getattr__(name: str):
    """Import a public name from its module on first use."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'deplbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


__all__ = sorted(["__version__", *_API])
