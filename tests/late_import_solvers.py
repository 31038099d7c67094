"""Two test methods for the ``imports_declared`` check: one imports a library inside its run, one declares it."""

from __future__ import annotations

from deplbench.registry import register_solver
from deplbench.results import SolveResult, Status


def _run(instance, **params) -> SolveResult:
    import duckdb  # noqa: F401 - the import under test

    return SolveResult(Status.UNKNOWN, message="imports a library and gives up")


register_solver("test-late-import", kind="heuristic", description="imports duckdb inside its run")(_run)
register_solver("test-declared-import", kind="heuristic", description="declares duckdb",
                imports=("duckdb",))(_run)
