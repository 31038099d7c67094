"""``mps``: any MIP solver through files. Write the SAA MILP as MPS, run a command, read the solution.

The command is a template (``preset`` names a shipped one, ``command`` gives your own) with the
placeholders ``{mps}`` (the model file), ``{sol}`` (the solution file the command must write),
``{time_limit}``, ``{mip_gap}``, ``{threads}``, ``{seed}``, ``{options}`` (a HiGHS options file
holding the same settings) and the tool paths ``{cbc}`` (the CBC binary bundled by PuLP),
``{highs}`` (the standalone HiGHS binary of ``highsbox``) and ``{python}`` (this interpreter).
The template is split like a shell line (no shell runs it). The process runs in its own process
group with the run's limits (a memory limit set by the harness is inherited); past the time
limit plus :data:`GRACE_S` the whole group is killed. The solution file (HiGHS, CBC or SCIP
format, :mod:`deplbench.formulations.backends.solfile`) is mapped back to a plan by column names, and the
SAA loop of :func:`~deplbench.formulations.saa.common.run_saa` verifies it on the sample.
``optimal`` only where the external solver says so for the file (one dataset selection's SAA).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from deplbench.errors import InputError
from deplbench.formulations.backends import solfile
from deplbench.formulations.backends.solfile import dual_bound, read_solution
from deplbench.formulations.saa.method import SAA_IMPORTS, SAA_PARAMS
from deplbench.leftovers import owned_tempdir
from deplbench.params import Param
from deplbench.registry import register_solver
from deplbench.results import Status

if TYPE_CHECKING:  # the SAA machinery is imported when the method runs
    from deplbench.formulations.saa.contract import SubResult
    from deplbench.formulations.saa.model import SaaModel, SubsetData

#: the solution files' status words -> Status: the map of the file reader (:mod:`.solfile`, whose
#: surprising entries are explained there), read as every backend's ``STATUS_MAP``
STATUS_MAP = solfile.STATUS_MAP
#: shipped command templates
PRESETS: dict[str, str] = {
    "cbc": "{cbc} {mps} sec {time_limit} threads {threads} ratio {mip_gap} solve solu {sol}",
    "highs": "{highs} --model_file {mps} --solution_file {sol} --options_file {options}",
    "scip": ("{python} -m deplbench.formulations.backends.scip_file {mps} {sol} --time-limit {time_limit} "
             "--gap {mip_gap} --threads {threads} --seed {seed}"),
}
#: the preset of the method's ``preset`` parameter, and of :func:`solve_subset` without ``tokens``
DEFAULT_PRESET = "highs"
PLACEHOLDERS = ("mps", "sol", "time_limit", "mip_gap", "threads", "seed", "options", "cbc", "highs", "python")
#: seconds past the time limit before the command's process group is killed
GRACE_S = 5.0
#: the temporary folders of the solves (model, options, solution, log): TMPDIR/deplbench-mps-PID-XXXX
TMP_PREFIX = "deplbench-mps-"
#: feasibility tolerance asked of HiGHS (as milp-highs-direct does)

MPS_PARAMS = (
    Param("preset", str, DEFAULT_PRESET, "shipped command template", choices=tuple(PRESETS)),
    Param("command", str, None, "own command template with {mps} and {sol} (overrides preset)"),
    *(p for p in SAA_PARAMS if p.name != "start"),  # an MPS file carries no MIP start
)


def check_template(template: str, source: str = "--set", at: str = "command") -> list[str]:
    """The template split into tokens; unknown placeholders or a missing {mps}/{sol} are input errors."""
    try:
        tokens = shlex.split(template)
    except ValueError as exc:
        raise InputError(f"cannot split the command ({exc})", source, at) from None
    seen = set()
    for tok in tokens:
        for _, field, _, _ in string.Formatter().parse(tok):
            if field is not None:
                if field not in PLACEHOLDERS:
                    raise InputError(f"unknown placeholder {{{field}}} (known: {', '.join(PLACEHOLDERS)})",
                                     source, at)
                seen.add(field)
    for need in ("mps", "sol"):
        if need not in seen:
            raise InputError(f"the command must contain {{{need}}}", source, at)
    return tokens


def cbc_path() -> str:
    """The CBC binary bundled with PuLP 2/3 (PuLP 4 moves it to an extra; pyproject pins < 4)."""
    from pulp.apis import coin_api

    path = os.path.normpath(coin_api.pulp_cbc_path)
    if not os.access(path, os.X_OK):  # wheels may lose the executable bit, as PuLP itself notes
        with contextlib.suppress(OSError):
            os.chmod(path, 0o755)
    return path


def highs_path() -> str:
    """The standalone HiGHS binary of ``highsbox``."""
    import highsbox

    return highsbox.highs_bin_path()


def _env(tokens: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    if any("{highs}" in t for t in tokens):  # highsbox's binary needs its own shared libraries
        import highsbox

        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (highsbox.highs_lib_dir(), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Linux: the command is killed if the run process dies (a harness kill never orphans it)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_command(argv: list[str], *, timeout: float, env: dict[str, str], log: Path) -> tuple[int | None, bool]:
    """Run ``argv`` in its own process group; kill the group after ``timeout`` s. (returncode, timed_out).

    It runs in the folder of ``log`` (a temporary one), so that a solver's own log files
    (HiGHS writes ``Highs.log``) never land in the caller's folder.
    """
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, cwd=log.parent,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None, True
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise


def solution_vector(model: SaaModel, values: dict[str, float]) -> np.ndarray:
    """Column values by name, the model's or the fixed-format file's (absent columns are 0); an unknown name is a ValueError."""
    from deplbench.formulations.saa.mps_text import fixed_names

    index = {n: j for j, n in enumerate(model.names)}
    for j, n in enumerate(fixed_names(model)):
        index.setdefault(n, j)
    x = np.zeros(model.n_vars)
    for name, val in values.items():
        if name not in index:
            raise ValueError(f"the solution names a column '{name}' the model does not have")
        x[index[name]] = val
    return x


#: integrality tolerance of a solver's point (MIPLIB's checker: 1e-5)
INT_TOL = 1e-5


def integrality_violation(model: SaaModel, x: np.ndarray) -> float:
    """Largest distance of an integer column of ``x`` to the nearest integer."""
    xi = np.asarray(x, dtype=float)[np.asarray(model.integer, dtype=bool)]
    return float(np.max(np.abs(xi - np.rint(xi)), initial=0.0))


#: feasibility tolerance of a solver's point, relative to max(1, |bound|, the row's absolute
#: activity): looser than any shipped solver's own (CBC 1e-7, HiGHS 1e-9), so only a point that is
#: no solution fails it
ROW_TOL = 1e-6


def _excess(value: np.ndarray, lo: np.ndarray, hi: np.ndarray, scale: np.ndarray) -> tuple[float, int]:
    over = np.maximum(np.maximum(lo - value, value - hi), 0.0) / np.maximum(scale, 1.0)
    j = int(np.argmax(over)) if len(over) else -1
    return (float(over[j]), j) if j >= 0 else (0.0, -1)


def _finite(bound: np.ndarray) -> np.ndarray:
    return np.abs(np.where(np.isfinite(bound), bound, 0.0))


def point_defect(model: SaaModel, x: np.ndarray) -> str:
    """Why ``x`` is no solution of ``model`` (MIPLIB checker's tests), or ``""`` when it is one.

    Integrality within :data:`INT_TOL`; column bounds and rows within :data:`ROW_TOL`, relative.
    A stopped solver may write a point that is none (CBC's ``Stopped on iterations`` writes its
    start, CBC's ``continuous used`` its LP relaxation): such a point is never decoded.
    """
    x = np.asarray(x, dtype=float)
    gap = integrality_violation(model, x)
    if gap > INT_TOL:
        return f"{gap:.3g} off integrality"
    viol, j = _excess(x, model.lb, model.ub, np.abs(x))
    if viol > ROW_TOL:
        return f"column '{model.names[j] if model.names else j}' outside its bounds by {viol:.3g} (relative)"
    size = np.maximum.reduce([abs(model.A) @ np.abs(x), _finite(model.row_lb), _finite(model.row_ub)])
    viol, i = _excess(model.A @ x, model.row_lb, model.row_ub, size)
    if viol > ROW_TOL:
        return f"row r{i} violated by {viol:.3g} (relative)"
    return ""


def _options(path: Path, *, time_limit: float, mip_gap: float, threads: int, seed: int) -> None:
    from deplbench.formulations.saa.model import FEAS_TOL

    path.write_text(f"time_limit = {time_limit}\nmip_rel_gap = {mip_gap}\nthreads = {threads}\n"
                    f"random_seed = {seed}\nprimal_feasibility_tolerance = {FEAS_TOL}\n"
                    f"mip_feasibility_tolerance = {FEAS_TOL}\n")


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = False,
                 tokens: list[str] | None = None) -> SubResult:
    """Write one selection's MILP, run the command on it and map its solution back.

    ``start`` is unused (an MPS file carries no MIP start); ``tokens``: the command template as
    :func:`check_template` splits it (None: the :data:`DEFAULT_PRESET`'s), bound by the method.
    """
    from deplbench.formulations.saa.common import SubResult
    from deplbench.formulations.saa.io import write_model
    from deplbench.formulations.saa.model import build

    if tokens is None:
        tokens = check_template(PRESETS[DEFAULT_PRESET])
    t0 = time.perf_counter()
    model = build(data, formulation, margin=margin, names=True)
    with owned_tempdir(TMP_PREFIX) as d:  # one a SIGKILL left is removed by the next solve
        mps, sol, opts, log = d / "model.mps", d / "model.sol", d / "highs.opt", d / "log.txt"
        write_model(model, mps)
        limit = max(time_limit - (time.perf_counter() - t0), 0.01)
        _options(opts, time_limit=limit, mip_gap=mip_gap, threads=threads, seed=seed)
        values = {"mps": str(mps), "sol": str(sol), "options": str(opts), "time_limit": f"{limit:.3f}",
                  "mip_gap": f"{mip_gap:g}", "threads": str(threads), "seed": str(seed), "python": sys.executable}
        if any("{cbc}" in t for t in tokens):
            values["cbc"] = cbc_path()
        if any("{highs}" in t for t in tokens):
            values["highs"] = highs_path()
        argv = [t.format(**{k: values.get(k, "") for k in PLACEHOLDERS}) for t in tokens]
        t1 = time.perf_counter()
        code, timed_out = run_command(argv, timeout=limit + GRACE_S, env=_env(tokens), log=log)
        t2 = time.perf_counter()
        sizes = dict(build_s=t1 - t0, solve_s=t2 - t1, n_vars=model.n_vars, n_cons=model.n_cons)
        if timed_out:
            return SubResult(Status.TIMEOUT, message=f"{argv[0]} killed after {limit + GRACE_S:.1f} s", **sizes)
        if not sol.exists():
            tail = log.read_text(errors="replace")[-300:].strip().replace("\n", " | ")
            # no file after the whole limit: the solver's own limit stopped it (e.g. HiGHS's parser of a
            # 20,000-scenario file), a timeout; before it, a failure
            status = Status.TIMEOUT if t2 - t1 >= 0.99 * limit else Status.ERROR
            return SubResult(status, message=f"{Path(argv[0]).name} (exit {code}) wrote no solution: {tail}",
                             **sizes)
        sf = read_solution(sol)
        stated = dual_bound(log.read_text(errors="replace"), sf)
    plan, status = None, sf.status
    if sf.has_solution:
        x = solution_vector(model, sf.values)
        defect = point_defect(model, x)
        if defect:  # e.g. a stopped solver's LP point or start: no solution, and an error only if called optimal
            return SubResult(status if status != Status.OPTIMAL else Status.ERROR, None, None, stated,
                             message=f"{sf.fmt}: '{sf.raw_status}' with a point {defect} (not a solution)",
                             **sizes)
        try:
            plan = model.decode(x)
        except ValueError as exc:
            return SubResult(Status.ERROR, message=f"solution does not decode: {exc}", **sizes)
    if status == Status.OPTIMAL and plan is None:
        return SubResult(Status.ERROR, message=f"'{sf.raw_status}' without a solution", **sizes)
    if status == Status.UNKNOWN and plan is not None:
        status = Status.FEASIBLE
    bound = stated if status != Status.INFEASIBLE else None  # the solver's dual bound, never its objective
    msg = "" if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.TIMEOUT) else f"{sf.fmt}: {sf.raw_status}"
    return SubResult(status, plan, sf.objective, bound, None, message=msg, **sizes)


@register_solver("mps", kind="saa", params=MPS_PARAMS,
                 test_params={"scenarios": 20, "time_limit": 30.0, "preset": "cbc"},
                 imports=(*SAA_IMPORTS, "pulp.apis.coin_api", "highsbox",  # the CBC and HiGHS binaries' paths
                          "deplbench.formulations.saa.mps_text"),  # the MPS writer
                 backend=solve_subset,
                 description="SAA MILP written as MPS and solved by an external command (CBC, HiGHS, SCIP...)")
def solve_mps(instance, *, preset: str, command: str | None, scenarios: int, formulation: str, mip_gap: float,
              time_limit: float, seed: int, threads: int, cuts="mixing", bigm: str = "quantile", fixing: str = "on",
              root_gap: bool = True):
    """Solve the SAA of ``instance`` selection by selection with an external MIP solver."""
    from deplbench.formulations.saa.common import run_saa

    tokens = check_template(command if command else PRESETS[preset])

    def sub(data, **kw):
        return solve_subset(data, tokens=tokens, mip_gap=mip_gap, threads=threads, seed=seed, **kw)

    res = run_saa(instance, sub, scenarios=scenarios, seed=seed, formulation=formulation,
                  time_limit=time_limit, cuts=cuts, bigm=bigm, fixing=fixing, root=root_gap)
    return res.replace(extra={**res.extra, "tool": Path(tokens[0]).name if command else preset})
