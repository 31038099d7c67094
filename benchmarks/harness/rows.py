"""Turn a run (its spec, instance and :class:`~deplbench.results.SolveResult`) into one flat store row.

Every plan is re-evaluated here by the evaluator (certified quantile plus Monte Carlo)
and, for plans of sampled (``saa``) methods, checked out of sample: N fresh losses
from :func:`deplbench.instances.evaluator.loss.loss_terms`, the number above the target, and the
one-sided 95 % Clopper-Pearson upper bound on the violation probability. The tables
use these figures, never the solvers' own. Provenance is attached to every row.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import socket
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from deplbench.benchmarks.harness.config import RunSpec
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.semantics import data_effect
from deplbench.results import SolveResult

#: Packages whose versions go into ``solver_versions`` on every row.
VERSIONED = ("numpy", "scipy", "highspy", "ortools", "pyomo", "duckdb", "pandas", "pydantic", "dask",
             "distributed", "numba", "pyscipopt", "pulp", "highsbox")
#: Stream tag of the out-of-sample draws: never the same stream as the SAA scenarios (seeded by ``seed``).
OOS_STREAM = 0x0D5
#: Stream tag of the re-evaluation's Monte Carlo.
EVAL_STREAM = 0xE7A
CP_LEVEL = 0.95


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


@lru_cache(maxsize=1)
def provenance() -> dict[str, Any]:
    """Where and with what a run executed (cached per process)."""
    from deplbench.version import __version__

    return {"package_version": __version__, "git_commit": git_commit(), "host": socket.gethostname(),
            "cpu": cpu_model(), "python": platform.python_version(),
            "solver_versions": json.dumps(package_versions(), sort_keys=True)}


def package_versions() -> dict[str, str | None]:
    """The installed version of each package of :data:`VERSIONED` (None: not installed)."""
    versions: dict[str, str | None] = {}
    for pkg in VERSIONED:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return versions


def git_commit() -> str | None:
    """The commit a wheel was built from (``deplbench/_build_info.py``), else HEAD of the checkout the
    package runs from (``+dirty`` if tracked files changed), or None."""
    try:
        from deplbench._build_info import GIT_COMMIT  # written by setup.py into a built wheel

        return GIT_COMMIT
    except ImportError:
        pass
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} x{os.cpu_count()}"


def spec_columns(spec: RunSpec, instance=None) -> dict[str, Any]:
    """The columns known before the run: what it is, on what, with which limits."""
    p = spec.params
    row: dict[str, Any] = {
        "run_key": spec.key, "config": spec.config, "experiment": spec.experiment, "family": spec.family,
        "instance_params": json.dumps(spec.instance_params, sort_keys=True), "instance_seed": spec.instance_seed,
        "solver": spec.solver, "label": spec.label or None, "params": json.dumps(p, sort_keys=True, default=str),
        "repetition": spec.repetition, "timing": spec.timing, "wall_limit_s": spec.wall_limit_s,
        "memory_limit_mb": spec.memory_limit_mb or None,
    }
    if instance is not None:
        row.update(instance_columns(instance))
    return row


def instance_columns(instance) -> dict[str, Any]:
    meta = instance.metadata or {}
    known = meta.get("known_optimum")
    return {"instance": instance.name, "noise_mode": instance.noise_mode, "target": instance.loss.target,
            "n_models": len(instance.models), "n_clusters": len(instance.clusters),
            "n_datasets": len(instance.datasets), "n_options": sum(len(c.levels) for c in instance.clusters),
            "max_epochs": instance.max_epochs,
            "known_optimum": float(known) if isinstance(known, (int, float)) else None}


def result_columns(spec: RunSpec, instance, res: SolveResult, kind: str | None) -> dict[str, Any]:
    """The solver's figures, the evaluator's re-evaluation and (SAA plans) the out-of-sample check."""
    extra = dict(res.extra)
    tb = extra.pop("traceback", None)
    row: dict[str, Any] = {
        "solver_kind": kind, "status": res.status.value, "message": res.message or None,
        "error": (tb or res.message or None) if res.status.value == "error" else None,
        "runtime_s": res.runtime_s, "build_s": res.build_s, "solve_s": res.solve_s,
        "objective": _num(res.objective), "bound": _num(res.bound), "gap": _num(res.gap),
        "nodes": int(res.nodes) if res.nodes is not None else None,
        "extra_json": json.dumps(extra, sort_keys=True, default=str) if extra else None,
    }
    plan = res.plan
    if plan is None or not plan.segments:
        return row
    row["plan_json"] = json.dumps(plan.to_json_dict(), sort_keys=True, default=str)
    seed = _stream_seed(EVAL_STREAM, spec)
    ev = evaluate(instance, plan, samples=spec.eval_samples, seed=seed)
    row.update({
        "feasible": ev.feasible, "violations": ",".join(ev.violations), "cost": ev.cost,
        "compute_cost": ev.compute_cost, "transfer_cost": ev.transfer_cost, "time": ev.time,
        "epochs": ev.epochs, "loss_mean": _num(ev.loss_mean), "q_lo": _num(ev.quantile_bounds[0]),
        "q_hi": _num(ev.quantile_bounds[1]), "bracket_width": _num(ev.bracket_width),
        "mc_quantile": _num(ev.mc_quantile), "mc_samples": ev.mc_samples, "mc_seed": ev.mc_seed,
    })
    if ev.mc_ci is not None:
        row["mc_ci_lo"], row["mc_ci_hi"] = _num(ev.mc_ci[0]), _num(ev.mc_ci[1])
    if kind == "saa" and spec.oos_samples > 0 and "data" not in ev.violations:
        oos_seed = _stream_seed(OOS_STREAM, spec)
        n, x, rate, upper = out_of_sample(instance, plan, spec.oos_samples, oos_seed)
        row.update({"oos_samples": n, "oos_violations": x, "oos_rate": rate, "oos_cp_upper": upper,
                    "oos_seed": oos_seed})
    return row


def out_of_sample(instance, plan, n: int, seed: int) -> tuple[int, int, float, float]:
    """Draw ``n`` losses of ``plan``; returns (n, exceedances of the target, rate, CP upper bound)."""
    g = data_effect(instance, plan.datasets).g
    terms = loss_terms(instance, plan.models(), g)
    losses = terms.sample(np.random.default_rng(seed), n)
    x = int(np.count_nonzero(losses > instance.loss.target))
    return n, x, x / n, clopper_pearson_upper(x, n, CP_LEVEL)


def clopper_pearson_upper(x: int, n: int, level: float = CP_LEVEL) -> float:
    """One-sided ``level`` Clopper-Pearson upper confidence bound on a binomial proportion."""
    if x >= n:
        return 1.0
    return float(stats.beta.ppf(level, x + 1, n - x))


def harness_columns(status: str, wall_s: float, peak_mem_mb: float | None, error: str | None,
                    started: dt.datetime, finished: dt.datetime) -> dict[str, Any]:
    return {"harness_status": status, "wall_s": wall_s, "peak_mem_mb": peak_mem_mb, "error": error,
            "started_at": started, "finished_at": finished, "worker": f"{socket.gethostname()}:{os.getpid()}"}


def _stream_seed(stream: int, spec: RunSpec) -> int:
    """A 32-bit seed of an independent stream, fixed by the run's seed (reproducible)."""
    return int(np.random.SeedSequence([stream, int(spec.params.get("seed", 0) or 0)]).generate_state(1)[0])


def _num(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None

