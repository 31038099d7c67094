"""One run in its own process group, forked from a preloaded ``forkserver``, watched for its limits.

The machinery is :mod:`deplbench.watch` (shared with ``deplbench solve``): the process that
launched the run (a thread of the harness, or a Dask worker) watches it; past
``time_limit + grace`` seconds the run's whole process group is killed (``timeout``); with a
memory limit, the resident memory of its whole tree is polled and over the limit it is killed
(``memory``; ``RLIMIT_AS`` is only a safety net far above the limit). A crash, an exception or an
``error`` result is ``error`` with its text kept; an ``unknown`` result (no plan, no proof: a
heuristic that gave up) is a finished run, ``ok``.
Instance generation runs the same way, under the limits of the run that needs the instance
(:func:`generate_watched`). :func:`execute` returns the run's complete store row.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections.abc import Iterable
from typing import Any

from deplbench import watch
from deplbench.benchmarks.harness import timing
from deplbench.benchmarks.harness.config import RunSpec
from deplbench.benchmarks.harness.forkctx import CONTEXT
from deplbench.benchmarks.harness.rows import (
    harness_columns,
    instance_columns,
    now,
    provenance,
    result_columns,
    spec_columns,
)
from deplbench.leftovers import own_multiprocessing_tempdir
from deplbench.results import Outcome, Status

#: Imported once by the fork server, so every run starts with them loaded.
PRELOAD = ["numpy", "scipy.stats", "pandas", "deplbench", "deplbench.registry", "deplbench.instances",
           "deplbench.watch", "deplbench.benchmarks.harness.rows", "deplbench.benchmarks.harness.process",
           "deplbench.benchmarks.harness.server_signals"]
HARNESS_STATUSES = tuple(Outcome)
#: harness outcome -> the solver status of a run that produced no result
_STATUS_OF = {Outcome.TIMEOUT: Status.TIMEOUT, Outcome.MEMORY: Status.MEMOUT, Outcome.ERROR: Status.ERROR,
              Outcome.INTERRUPTED: Status.INTERRUPTED}


# ---- bodies of the child processes -------------------------------------------------------------

def _run_body(spec: RunSpec, instance_json: dict) -> dict[str, Any]:
    """Solve, re-evaluate; the payload ``{"status", "error", "row"}`` sent back to the watcher."""
    from deplbench import registry
    from deplbench.instances.io import instance_from_dict

    payload: dict[str, Any] = {"status": Outcome.ERROR, "error": None, "row": {}}
    inst = instance_from_dict(instance_json, f"store:{spec.family}")
    payload["row"].update(instance_columns(inst))
    registry.SOLVER_MODULES.setdefault(spec.solver, spec.solver_module)
    kind = registry.get_solver(spec.solver).kind
    cpu0 = timing.rusage_cpu()
    res = registry.solve(spec.solver, inst, dict(spec.params))
    payload["row"]["method_cpu_s"] = timing.rusage_cpu() - cpu0
    payload["row"].update(result_columns(spec, inst, res, kind))
    if res.status == Status.ERROR:
        memory = "MemoryError" in (res.message or "")
        payload.update(status=Outcome.MEMORY if memory else Outcome.ERROR, error=payload["row"].get("error"))
    elif res.status == Status.MEMOUT:  # a MemoryError the method did not survive (its incumbent kept)
        payload.update(status=Outcome.MEMORY, error=res.message or "MemoryError")
    elif res.status == Status.INTERRUPTED:  # the grid was stopped: the row holds the incumbent, to re-run
        payload.update(status=Outcome.INTERRUPTED, error=res.message or "interrupted")
    else:
        payload["status"] = Outcome.OK
    return payload


def _run_setup(spec: RunSpec, instance_json: dict) -> None:
    """Before the run's memory limit: its method and the imports the method declares."""
    from deplbench import registry

    registry.SOLVER_MODULES.setdefault(spec.solver, spec.solver_module)
    registry.load_declared(spec.solver)


def _generate_body(family: str, module: str, params: dict, seed: int) -> dict:
    """Generate one instance; its JSON form."""
    from deplbench import registry

    registry.FAMILY_MODULES.setdefault(family, module)
    return registry.generate(family, params, seed=seed).to_json_dict()


# ---- the fork server ---------------------------------------------------------------------------

_CTX_LOCK = threading.Lock()


def _context(preload: Iterable[str] = ()) -> mp.context.BaseContext:
    """The fork-server context; ``preload`` counts only before the server's first start."""
    ctx = CONTEXT  # the forkserver context, without re-running a caller's unguarded script
    with _CTX_LOCK:
        from multiprocessing import forkserver

        if forkserver._forkserver._forkserver_pid is None:
            own_multiprocessing_tempdir()  # the server's socket folder: removed even after a SIGKILL
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ.setdefault(var, "1")  # runs are parallel processes: no BLAS oversubscription
            ctx.set_forkserver_preload(list(dict.fromkeys([*PRELOAD, *preload])))
    return ctx


def grid_preload(runs: Iterable[RunSpec]) -> list[str]:
    """What the fork server imports for a grid: its methods' and families' registering modules and
    the imports that *every* method of the grid declares (``register_solver(imports=...)``).

    The runs would import the shared ones anyway, before their clock (:func:`deplbench.registry.solve`),
    so preloading them spares each run that time (about 0.4 s for DepL's compiled loops) and puts no
    module in a run that it would not have loaded: a module only some methods declare stays out, or
    it would count in the other methods' ``peak_mem_mb``. A method whose module cannot be loaded
    here shares nothing.
    """
    from deplbench import registry

    runs = list(runs)
    shared: set[str] | None = None
    for name in sorted({r.solver for r in runs}):
        try:
            declared = set(registry.get_solver(name).imports)
        except Exception:  # noqa: BLE001 - the run itself records why its method cannot load
            declared = set()
        shared = declared if shared is None else shared & declared
    own = {r.solver_module for r in runs} | {r.family_module for r in runs}
    return sorted(own) + sorted((shared or set()) - own)


def warm_up(preload: Iterable[str] = ()) -> None:
    """Start the fork server now and wait until it has imported the preloaded modules (about a second)."""
    ctx = _context(preload)
    with watch._allow_children():  # a no-op child: returns once the server has imported ``preload``
        p = ctx.Process(target=os.getpid, daemon=True)
        p.start()
    p.join()


#: the longest a grid's warm-up may take (a cold numba cache of every method compiles in about a minute)
WARM_LIMIT_S = 900.0
#: compiled at import (numba, cached on disk) and used by every run's re-check, after its method
_EVALUATOR = ("deplbench.instances.evaluator.evaluate", "deplbench.instances.evaluator.lattice_jit")


def _warm_body(solvers: list[tuple[str, str]]) -> int:
    """Import what each method declares and the evaluator: numba compiles into its disk cache."""
    import importlib

    from deplbench import registry

    loaded = 0
    for module in _EVALUATOR:
        importlib.import_module(module)
    for solver, module in solvers:
        registry.SOLVER_MODULES.setdefault(solver, module)
        try:
            registry.load_declared(solver)
            loaded += 1
        except Exception:  # noqa: BLE001 - the run itself records why its method cannot load
            pass
    return loaded


def warm_caches(runs: Iterable[RunSpec], preload: Iterable[str] = ()) -> float:
    """Fill the compile caches of the grid's methods before any run's clock starts; its seconds.

    A throwaway child of the fork server imports every module the grid's methods declare (and
    the evaluator), so numba's compiled code is on disk when the runs import it: a run never
    compiles inside its limits, and a cold cache (a fresh install) costs the warm-up, not a
    ``timeout``. The child is discarded so that no method's modules count in another's memory.
    """
    solvers = sorted({(r.solver, r.solver_module) for r in runs})
    w = watch.call(_context(preload), _warm_body, (solvers,), wall_limit_s=WARM_LIMIT_S)
    return w.wall_s


# ---- in the watcher ----------------------------------------------------------------------------

def generate_watched(spec: RunSpec, preload: Iterable[str] = ()) -> tuple[dict | None, Outcome, str | None]:
    """Generate ``spec``'s instance in a watched process under its limits: (json, outcome, error)."""
    w = watch.call(_context(preload), _generate_body,
                   (spec.family, spec.family_module, dict(spec.instance_params), spec.instance_seed),
                   wall_limit_s=spec.wall_limit_s, memory_limit_mb=spec.memory_limit_mb or None)
    if w.outcome == Outcome.OK:
        return w.value, Outcome.OK, None
    return None, w.outcome, f"instance generation: {w.error}"


def execute(spec: RunSpec, instance_json: dict | None, preload: Iterable[str] = (),
            instance_error: str | None = None, instance_outcome: Outcome = Outcome.ERROR) -> dict[str, Any] | None:
    """Run ``spec`` in its own process group under its limits; returns the complete store row.

    Runs in a harness thread or on a Dask worker. Never raises for a run's failure. A failed
    instance generation (``instance_error``) is the run's row with ``instance_outcome``.
    ``None`` when the grid was stopped (:func:`deplbench.watch.stop_all`) before the run started.
    """
    if watch.stopping():
        return None
    started = now()
    row = spec_columns(spec)
    row.update(provenance())
    if instance_error is not None:
        outcome = Outcome(instance_outcome)
        row.update(harness_columns(outcome, 0.0, None, instance_error, started, now()))
        row["status"] = _STATUS_OF.get(outcome, Status.ERROR)
        return row
    load_start, n_cores = timing.load(), timing.cores()
    with timing.in_flight() as beside:
        w = watch.call(_context(preload), _run_body, (spec, instance_json), wall_limit_s=spec.wall_limit_s,
                       memory_limit_mb=spec.memory_limit_mb or None, setup=_run_setup)
    row.update(timing.columns(w.cpu, load_start, beside[0], n_cores))
    status, error = w.outcome, w.error
    if w.outcome == Outcome.OK:
        payload = w.value
        row.update(payload["row"])
        status, error = payload["status"], payload["error"]
    else:
        if w.outcome == Outcome.TIMEOUT:
            error = f"killed after {w.wall_s:.3g} s (limit {spec.wall_limit_s:g} s = time_limit + grace)"
        row["status"] = _STATUS_OF[w.outcome]
        row.update(_instance_columns_safe(instance_json))
    row.update(harness_columns(status, w.wall_s, w.peak_mb, error, started, now()))
    return row


def _instance_columns_safe(instance_json: dict | None) -> dict[str, Any]:
    from deplbench.instances.io import instance_from_dict

    try:
        return instance_columns(instance_from_dict(instance_json, "store"))
    except Exception:  # noqa: BLE001 - a bad instance is already reported as the run's error
        return {}


def kill_live() -> None:
    """Kill every run process group in flight (on interrupt)."""
    watch.kill_all()
