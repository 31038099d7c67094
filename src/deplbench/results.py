"""The shared vocabulary of every method: :class:`Status` and :class:`SolveResult`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deplbench.instances.evaluate import Evaluation
    from deplbench.instances.plan import Plan


class Status(enum.StrEnum):
    """Outcome of a solve (MODEL.md section 3).

    ``optimal`` is proven for the problem the solver solves (the SAA sample for the
    MILPs, the true problem at the evaluator's tolerance for ``bruteforce``);
    ``infeasible`` is proven; ``timeout`` means a limit was hit (the plan, if any,
    is the incumbent).
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIMEOUT = "timeout"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)

    def __str__(self) -> str:
        return self.value


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
