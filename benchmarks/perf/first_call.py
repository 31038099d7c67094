"""A method's first call in a harness run against its second: what ``runtime_s`` holds of one-off work.

Run: ``python -m deplbench.benchmarks.perf.first_call [--instance paper-alexnet-per_run-t7]
[--methods depl,best-exp,...]``. Each method runs in a fork of one process that has imported what
the harness's fork server preloads (``harness.process.PRELOAD``), as a run of ``deplbench run``
does: the time of its declared ``imports`` (which ``registry.solve`` does before the clock), then
``runtime_s`` of a first solve of the instance and of a second one after the evaluator's memos are
emptied (``instances.evaluator.caches.clear``: it builds its tables again, as a cold run must).
The first is what the store keeps; the difference is what is left of one-off work of the process
inside the method (first calls into libraries and scipy's lazy parts); the declared imports are
outside it (``docs/extending.md``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

DEFAULT_METHODS = "depl,depl-plus,best-exp,bruteforce,exact,milp-highs-direct,milp-highs,milp-cpsat"


def _child(method: str, instance, write) -> None:
    """In the forked child: time the imports, then two solves; one line to ``write``."""
    from deplbench import registry

    spec = registry.get_solver(method)
    t = time.perf_counter()
    registry.prepare(spec.func, spec.imports)
    imports = time.perf_counter() - t
    # imported after the timing: the methods' own imports load the evaluator
    from deplbench.instances.evaluator import caches

    first = registry.solve(method, instance, {"time_limit": 120}, check=False)
    caches.clear()
    second = registry.solve(method, instance, {"time_limit": 120}, check=False)
    write(f"{method:<18} {1000 * imports:>9.0f} {1000 * first.runtime_s:>9.0f} {1000 * second.runtime_s:>9.0f} "
          f"{first.status.value:>9}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance", default="paper-alexnet-per_run-t7", help="a paper instance name")
    ap.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated methods")
    args = ap.parse_args(argv)
    from deplbench.benchmarks.harness.process import PRELOAD
    from deplbench.instances.families.paper import load_paper

    for module in PRELOAD:
        importlib.import_module(module)
    instance = load_paper(args.instance)
    print(f"{args.instance}: ms in a fork of the harness's preloaded process")
    print(f"{'method':<18} {'imports':>9} {'first':>9} {'cleared':>9} {'status':>9}", flush=True)
    for method in args.methods.split(","):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                _child(method, instance, sys.stdout.write)
                sys.stdout.flush()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
