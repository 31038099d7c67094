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

from deplbench.lazy import exports
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


__getattr__, __dir__ = exports("deplbench", _API)

__all__ = sorted(["__version__", *_API])
