"""depl-bench: a benchmark suite for dependable distributed training (DepL, arXiv 2402.14346).

The Python API, for notebooks::

    import deplbench as db
    inst = db.load_paper("paper-alexnet-per_run-t9")
    res = db.solve("depl", inst, {"eta": 200, "eps": 0.05})
    res.evaluation.quantile_bounds
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("depl-bench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from deplbench.errors import InputError  # noqa: E402
from deplbench.instances import (  # noqa: E402
    Evaluation,
    Instance,
    Plan,
    Segment,
    evaluate,
    evaluate_on_scenarios,
    load_instance,
    load_plan,
    sample_scenarios,
    save_instance,
    save_plan,
)
from deplbench.instances.paper import load_paper  # noqa: E402
from deplbench.registry import family_names, generate, get_solver, solve, solver_names  # noqa: E402
from deplbench.results import SolveResult, Status  # noqa: E402


def __getattr__(name: str):
    """The harness API (``run_config``, ``read_results``), imported on first use (it loads DuckDB, Dask)."""
    if name in ("run_config", "read_results"):
        from deplbench.benchmarks import api

        return getattr(api, name)
    raise AttributeError(f"module 'deplbench' has no attribute {name!r}")


__all__ = [
    "Evaluation", "InputError", "Instance", "Plan", "Segment", "SolveResult", "Status", "__version__",
    "evaluate", "evaluate_on_scenarios", "family_names", "generate", "get_solver", "load_instance",
    "load_paper", "load_plan", "read_results", "run_config", "sample_scenarios", "save_instance", "save_plan", "solve", "solver_names",
]
