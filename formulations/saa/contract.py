"""The contract of an SAA MILP backend: its per-selection solve (two Protocols) and its result.

:func:`~deplbench.formulations.saa.common.run_saa` loops over the dataset selections and calls a
:class:`SolveSubset` on each; a backend module writes one :class:`BackendSolve` (its
``solve_subset``), which :func:`~deplbench.formulations.saa.method.saa_method` turns into a
:class:`SolveSubset` by binding the solver settings (``mip_gap``, ``threads``, ``seed``, ``start``),
and declares it to the registry with ``register_solver(..., backend=solve_subset)``.
``tests/formulations/saa/test_contract.py`` checks every declared backend against :class:`BackendSolve`
with :func:`mismatches`; docs/extending.md ("A MIP backend") is the recipe.

Light on purpose (no numpy or solver library): the backends import it when they are listed.

May import: ``deplbench.results``. Imported by: ``saa.common``, the backends, the tests.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from deplbench.results import Status

if TYPE_CHECKING:
    from deplbench.formulations.saa.model import SubsetData
    from deplbench.instances.plan import Plan


@dataclass
class SubResult:
    """Outcome of one dataset selection's MILP (what every subset solve returns).

    Attributes
    ----------
    status : Status
        ``optimal`` / ``infeasible``: proven for the SAA of this selection (``optimal`` within
        ``mip_gap``); ``feasible``: a plan, optimality not proven for the SAA (e.g. a restricted
        model: CP-SAT's inexact scaling); ``timeout`` (``memout``): a time (memory) limit stopped
        the solver, ``plan`` is its incumbent or None; ``unknown``: nothing proven, no plan;
        ``error``: the solver failed (say why in ``message``). Map the solver's codes through the
        backend's ``STATUS_MAP`` with :func:`deplbench.results.map_status`.
    plan : Plan or None
        The decoded plan of the solver's best solution (``SaaModel.decode``); ``run_saa``
        verifies it on the sample.
    objective : float or None
        Its cost as the solver reports it.
    bound : float or None
        The solver's dual bound (never its objective); None if it has none or it is not finite.
    nodes : int or None
        Branch-and-bound nodes (CP-SAT: branches); None if the solver does not tell.
    build_s, solve_s : float
        Seconds spent building the model (the modelling layer) and in the solver.
    n_vars, n_cons : int
        Size of the model the solver received.
    message : str
        What the status alone does not say: the solver's own word for an ``error`` or ``unknown``
        (always given for an ``error``), the cause of a stop other than the solver's time limit,
        a restricted model's caveat (CP-SAT: ``not exact``); empty otherwise.
    extra : dict
        Backend figures, summed over the selections (declare them in the method's ``outputs``).
    """

    status: Status
    plan: Plan | None = None
    objective: float | None = None
    bound: float | None = None
    nodes: int | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    n_vars: int = 0
    n_cons: int = 0
    message: str = ""
    extra: dict = field(default_factory=dict)


class SolveSubset(Protocol):
    """What :func:`~deplbench.formulations.saa.common.run_saa` calls on each dataset selection."""

    def __call__(self, data: SubsetData, /, *, formulation: str, margin: float,
                 time_limit: float) -> SubResult:
        """Build and solve the MILP of one dataset selection.

        Parameters
        ----------
        data : SubsetData
            The selection's SAA numbers on the sample, strengthened (big-M, fixed scenarios,
            cut sets, objective rows) and with its start plan (``data.start``) if one was found.
        formulation : str
            ``aggregated`` or ``time_indexed`` (``saa.model.FORMULATIONS``), passed to
            :func:`~deplbench.formulations.saa.model.build`.
        margin : float
            Tightening of the loss target in the model's rows (0; on the retry after a decoded plan
            failed the sample check, ``RETRY_MARGIN`` scaled to the initial loss).
        time_limit : float
            Seconds left for the build *and* the solve (> 0); the backend passes the solver what
            the build left.

        Returns
        -------
        SubResult
        """
        ...


class BackendSolve(Protocol):
    """A backend module's ``solve_subset``: :class:`SolveSubset` plus the solver settings.

    :func:`~deplbench.formulations.saa.method.saa_method` binds the settings from the method's
    parameters. A backend may take more keywords of its own, each with a default (``mps``:
    ``tokens``, bound by its method from ``preset`` / ``command``).
    """

    def __call__(self, data: SubsetData, /, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool) -> SubResult:
        """Build and solve the MILP of one dataset selection with the given solver settings.

        Parameters
        ----------
        data, formulation, margin, time_limit
            As :meth:`SolveSubset.__call__`.
        mip_gap : float
            Relative gap at which the solver stops (0: prove optimality); the absolute gap is
            0 when ``mip_gap`` is 0, else 1e-6.
        threads : int
            Threads the solver may use.
        seed : int
            The solver's random seed.
        start : bool
            Pass :func:`~deplbench.formulations.saa.common.mip_start`'s plan as a MIP start or
            hint (a backend whose solver takes none ignores it: say so in its docstring).

        Returns
        -------
        SubResult
        """
        ...


def keywords(protocol: type = BackendSolve) -> dict[str, str]:
    """The keyword parameters of ``protocol.__call__`` with their annotations (as written)."""
    sig = inspect.signature(protocol.__call__)
    return {n: p.annotation for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY}


def mismatches(func: Callable[..., object], protocol: type = BackendSolve) -> list[str]:
    """Why ``func`` does not conform to ``protocol`` (empty: it does).

    Compared: a first positional parameter ``data``; every keyword of the protocol, present and
    annotated alike (annotations compared as written: every backend module has
    ``from __future__ import annotations``); any other parameter has a default; the return
    annotation.
    """
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    why = []
    if not params or params[0].name != "data" or params[0].kind not in (params[0].POSITIONAL_ONLY,
                                                                        params[0].POSITIONAL_OR_KEYWORD):
        why.append("the first parameter must be the positional 'data'")
    given = {p.name: p for p in params[1:]}
    for name, ann in keywords(protocol).items():
        p = given.pop(name, None)
        if p is None or p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            why.append(f"no keyword '{name}'")
        elif p.annotation != ann:
            why.append(f"'{name}' is annotated {p.annotation!r}, the contract says {ann!r}")
    why += [f"'{n}' is not in the contract and has no default" for n, p in given.items()
            if p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    ret = inspect.signature(protocol.__call__).return_annotation
    if sig.return_annotation != ret:
        why.append(f"returns {sig.return_annotation!r}, the contract says {ret!r}")
    return why
