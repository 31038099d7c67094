"""The build's reference runs, each in a watched child killed a grace past its safety time limit.

An exact method's run (:func:`reference_run`) is killed :data:`EXACT_GRACE_S` past ``--time-limit``
(times the entry's budget), an SAA reference solve (:func:`watched_saa_solve`) :data:`SAA_SOLVE_GRACE_S`
past ``--saa-time-limit``: the methods and HiGHS stop themselves at their limits, the kill is for one that
does not (docs/reliability.md, section 0). What a run imports is loaded before its fork, off its clock.

May import: ``benchmarks.library.solu``, ``formulations``, ``formulations.saa``, ``formulations.backends``,
the registry and the core. Imported by: ``benchmarks.library.build``.
"""

from __future__ import annotations

import time

from deplbench.benchmarks.library.solu import Reference
from deplbench.results import Status

#: seconds past an exact reference run's safety time limit before its process group is killed: the
#: method stops itself at the limit, the grace is for its certification and return (as ``deplbench
#: solve``'s ``SOLVE_GRACE_S``)
EXACT_GRACE_S = 1.5
#: seconds past ``--saa-time-limit`` before an SAA reference solve's process group is killed: HiGHS's
#: presolve can overrun its own limit by about a second; then the decoding and the check on the sample
SAA_SOLVE_GRACE_S = 2.0


def stopped(what: str) -> None:
    """A reference run ended by Ctrl-C or SIGTERM (its solver returns its best plan, status
    ``interrupted``, or HiGHS ``kInterrupt``): the build was stopped, so the entry is not finished
    and nothing of it may be recorded."""
    raise KeyboardInterrupt(f"{what} was interrupted: the build is stopped")


def watched(fn, args: tuple, limit_s: float):
    """``fn(*args)`` in a forked child whose process group is killed ``limit_s`` s after its start.

    Returns
    -------
    deplbench.watch.Watched
        The outcome, the child's value and its process tree's CPU time.
    """
    import multiprocessing as mp

    from deplbench.watch import call

    return call(mp.get_context("fork"), fn, args, wall_limit_s=limit_s)


def _solve_child(name: str, inst, params: dict):
    from deplbench.registry import solve

    return solve(name, inst, params)


def reference_run(name: str, inst, params: dict):
    """One exact reference run in a watched child, killed :data:`EXACT_GRACE_S` past its safety time limit.

    Returns
    -------
    tuple
        The :class:`~deplbench.results.SolveResult` (``timeout`` without a plan when killed) and the
        CPU seconds of the run's process tree.
    """
    from deplbench.registry import load_declared
    from deplbench.results import Outcome, SolveResult

    load_declared(name)  # imported once here, inherited by every forked run
    w = watched(_solve_child, (name, inst, params), params["time_limit"] + EXACT_GRACE_S)
    cpu = sum(w.cpu) if w.cpu else 0.0
    if w.outcome == Outcome.OK:
        return w.value, cpu
    status = Status.TIMEOUT if w.outcome == Outcome.TIMEOUT else Status.ERROR
    why = ("safety time limit: " if status == Status.TIMEOUT else "") + (w.error or "").split("\n", 1)[0]
    return SolveResult(status, runtime_s=w.wall_s, solver=name, params=params, message=why), cpu


def solve_saa_file(data, inst, sc, time_limit: float,
                   max_nodes: int) -> tuple[Reference, object, float, bool, str]:
    """Solve one selection's SAA with HiGHS at gap 0: reference, plan, seconds, safety limit hit, and
    HiGHS's own words for how it stopped (the ``.sol`` file's model status).

    The solved model is the aggregated file strengthened as ``milp-highs-direct`` does by
    default (valid quantile and mixing cuts, quantile big-M, fixing of scenarios that no plan
    can violate: ``docs/formulations.md``; the optimum is the file's) with an enumerated MIP
    start. ``max_nodes`` (deterministic) bounds the search; ``time_limit`` is a safety net
    (its outcome depends on the load: reported as a safety hit).
    """
    import highspy

    from deplbench.formulations.backends.milp_highs_direct import run_highs
    from deplbench.formulations.highs import new_highs
    from deplbench.formulations.saa.common import mip_start, plan_cost, prepare, verify
    from deplbench.formulations.saa.io import configure, set_start, to_highs_lp
    from deplbench.formulations.saa.model import build

    t0 = time.perf_counter()
    strong, _ = prepare(data, cuts="mixing", bigm="quantile", fixing="on", deadline=t0 + time_limit)
    model = build(strong, "aggregated")
    h = new_highs(1)  # quiet from its construction (HiGHS 1.16's banner), then the solve's options
    configure(h, time_limit=time_limit - (time.perf_counter() - t0), mip_gap=0.0, threads=1, seed=0)  # >= 1e-3
    h.setOptionValue("mip_max_nodes", int(max_nodes))
    h.passModel(to_highs_lp(model))
    x0 = mip_start(model, t0 + time_limit)
    set_start(h, x0)
    status, x, _, bound, _ = run_highs(h)
    if h.getModelStatus() == highspy.HighsModelStatus.kInterrupt:  # the build sets no interrupt callback
        stopped(f"{inst.name}: the SAA reference solve")
    secs = time.perf_counter() - t0
    safety = secs >= time_limit or h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    stop = h.modelStatusToString(h.getModelStatus())
    plan = model.decode(x) if x is not None else None
    if plan is not None and verify(inst, plan, sc):
        plan = None  # tolerances let it slip past the sample's target: no claim from it
        status = Status.UNKNOWN if status == Status.OPTIMAL else status
    if status == Status.INFEASIBLE:
        return Reference("inf"), None, secs, safety, stop
    if plan is None:
        return Reference("unkn"), None, secs, safety, stop
    cost = plan_cost(inst, plan)
    if status == Status.OPTIMAL:
        return Reference("opt", cost), plan, secs, safety, stop
    lo = None if bound is None else min(float(bound), cost)
    return Reference("best", cost, lo), plan, secs, safety, stop


def watched_saa_solve(data, inst, sc, time_limit: float,
                      max_nodes: int) -> tuple[Reference, object, float, bool, str]:
    """:func:`solve_saa_file` in a watched child, killed :data:`SAA_SOLVE_GRACE_S` past ``time_limit``.

    A killed solve is ``=unkn=`` without a plan and a safety hit; a failed one raises, as in the
    build's own process; a stopped one stops the build.
    """
    import deplbench.formulations.backends.milp_highs_direct  # noqa: F401 - imported once here, not in each child
    import deplbench.formulations.saa.common  # noqa: F401
    from deplbench.results import Outcome

    w = watched(solve_saa_file, (data, inst, sc, time_limit, max_nodes), time_limit + SAA_SOLVE_GRACE_S)
    if w.outcome == Outcome.OK:
        return w.value
    if w.outcome == Outcome.TIMEOUT:
        return Reference("unkn"), None, w.wall_s, True, "Time limit reached"
    if (w.error or "").startswith("KeyboardInterrupt"):
        stopped(f"{inst.name}: the SAA reference solve")
    raise RuntimeError(f"{inst.name}: the SAA reference solve failed: {w.error}")
