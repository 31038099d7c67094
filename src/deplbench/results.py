"""The shared vocabulary of every method: :class:`Status` and :class:`SolveResult`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deplbench.instances.evaluator.evaluate import Evaluation
    from deplbench.instances.plan import Plan


class Status(enum.StrEnum):
    """Outcome of a solve (MODEL.md section 3).

    The one vocabulary of every layer: methods, backends (each maps its solver's native codes
    through its own ``STATUS_MAP``) and the store's ``status`` column. ``optimal`` is proven for
    the problem the solver solves (the SAA sample for the MILPs, the true problem at the
    evaluator's tolerance for the exact methods); ``infeasible`` is proven; ``timeout`` /
    ``memout`` mean a time / memory limit was hit (the plan, if any, is the incumbent);
    ``unknown``: the solver stopped without a proof for a reason none of the others names
    (a native code a map does not know lands here); ``error``: it failed.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIMEOUT = "timeout"
    MEMOUT = "memout"
    INTERRUPTED = "interrupted"
    UNKNOWN = "unknown"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        """True for the statuses that claim a solution by themselves (``optimal``, ``feasible``).

        A stopped solve (:attr:`stopped`) may carry a plan too: ask the result,
        :attr:`SolveResult.has_solution`.
        """
        return self in (Status.OPTIMAL, Status.FEASIBLE)

    def __str__(self) -> str:
        return self.value

    @property
    def hit_limit(self) -> bool:
        return self in (Status.TIMEOUT, Status.MEMOUT)

    @property
    def stopped(self) -> bool:
        """A limit or an interrupt stopped the method: its plan, if any, is the incumbent."""
        return self in (Status.TIMEOUT, Status.MEMOUT, Status.INTERRUPTED)


class Outcome(enum.StrEnum):
    """What the harness saw of a run process (the store's ``harness_status``), apart from :class:`Status`."""

    OK = "ok"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    INTERRUPTED = "interrupted"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


def map_status(table, native) -> Status:
    """``table[native]``, or :attr:`Status.UNKNOWN` for a native code the table does not know."""
    try:
        return table.get(native, Status.UNKNOWN)
    except TypeError:  # unhashable: certainly not a known code
        return Status.UNKNOWN


@dataclass(frozen=True)
class SolveResult:
    """What every registered method returns.

    Attributes
    ----------
    status : Status
    plan : Plan or None
        The plan found (the incumbent on timeout); None when there is none.
    objective : float or None
        The solver's own objective value (the harness recomputes cost with the evaluator).
    bound : float or None
        Best proven lower bound on the optimum of the problem the solver solves.
    runtime_s : float
        Wall-clock time of the whole call (build + solve), set by :func:`deplbench.registry.solve`.
    build_s, solve_s : float or None
        Model build and solver time, separately, where the method has them.
    gap : float or None
        Relative gap ``(objective - bound) / max(|objective|, 1e-9)``.
    nodes : int or None
        Branch-and-bound nodes (or search nodes), where reported.
    solver : str
        Registered name of the method.
    params : dict
        Parameters the method ran with (after defaults).
    message : str
        Human-readable reason (why infeasible, what timed out, the error text).
    extra : dict
        Method-specific figures (flat scalars preferred: they become store columns).
    evaluation : Evaluation or None
        The evaluator's independent verdict on ``plan``, attached by
        :func:`deplbench.registry.solve`.
    """

    status: Status
    plan: Plan | None = None
    objective: float | None = None
    bound: float | None = None
    runtime_s: float = 0.0
    build_s: float | None = None
    solve_s: float | None = None
    gap: float | None = None
    nodes: int | None = None
    solver: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    evaluation: Evaluation | None = None

    def replace(self, **changes: Any) -> SolveResult:
        return replace(self, **changes)

    @property
    def has_solution(self) -> bool:
        """True when the result carries a plan it stands by.

        ``optimal`` / ``feasible``, and a ``timeout``, ``memout`` or ``interrupted`` result with a
        non-empty plan (the incumbent, certified by :func:`deplbench.registry.solve`, which drops
        an incumbent the evaluator rejects).
        """
        if self.status.has_solution:
            return True
        return self.status.stopped and self.plan is not None and bool(self.plan.segments)


def shown_status(status: str | Status | None, kind: str | None, feasible: bool | None) -> str:
    """The status a table or summary shows: never ``optimal``/``feasible`` for a plan the evaluator rejects.

    An SAA method's ``optimal`` is proven for its sample only (MODEL.md section 3); the true
    problem's verdict is the evaluator's, so an SAA plan shows as ``feasible (saa optimal)`` or
    ``infeasible (saa optimal)``. Any other plan with a solution status that the evaluator rejects
    shows as ``infeasible (claimed <status>)``.

    Parameters
    ----------
    status : str or Status
        The solver's status.
    kind : str, optional
        ``exact``, ``saa`` or ``heuristic``.
    feasible : bool, optional
        The evaluator's verdict on the plan (None: no plan or not evaluated).
    """
    text = str(status) if status is not None else "unknown"
    if text not in (Status.OPTIMAL, Status.FEASIBLE):
        return text
    if kind == "saa":
        return f"{'feasible' if feasible else 'infeasible'} (saa {text})"
    if feasible is False or feasible is None:
        return f"infeasible (claimed {text})"
    return text
