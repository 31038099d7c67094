"""References proven outside the search methods: a registry of family proofs.

An instance of the ``knapsack`` family is the reduction of an unbounded knapsack (Property 1,
``docs/knapsack.md``): its status and optimum follow from the knapsack's dynamic programs,
independently of every DepL solver. The library uses such a proof when its exact methods stop
at their deterministic limits without one, and checks that both agree when they both prove.

The proof is trusted only for the instance it names: the knapsack data in the metadata are
validated again, reduced again, and the reduction must equal the instance field by field (a
hand-edited file whose metadata lie gets no reference from here). A feasible answer comes with
the certificate's plan, which the evaluator re-checks.

May import :mod:`deplbench.formulations.knapsack`, the evaluator and the instance model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deplbench.instances.plan import Plan

if TYPE_CHECKING:
    from deplbench.instances.schema import Instance


@dataclass(frozen=True)
class KnownReference:
    """A proven reference: ``status`` is ``optimal`` or ``infeasible``; ``plan`` and ``cost``
    are set when optimal (the plan re-checked by the evaluator); ``method`` names the proof."""

    status: str
    method: str
    plan: Plan | None = None
    cost: float | None = None


def _metadata(inst: Instance) -> dict:
    return inst.metadata if isinstance(inst.metadata, dict) else {}


def _same_instance(a: Instance, b: Instance) -> bool:
    """Every field but the name and the metadata agrees."""
    da, db = a.to_json_dict(), b.to_json_dict()
    for d in (da, db):
        d.pop("name", None)
        d.pop("metadata", None)
    return da == db


def knapsack_reference(inst: Instance) -> KnownReference | None:
    """The reference of a reduced knapsack from its dynamic programs (None if ``inst`` is not one)."""
    from deplbench.formulations.knapsack import (
        check_knapsack,
        counts_to_plan,
        reduce_knapsack,
        solve_knapsack,
    )
    from deplbench.instances.evaluator.evaluate import evaluate

    data = _metadata(inst).get("knapsack")  # the family was matched by :data:`KNOWN`
    if data is None:
        return None
    kp = check_knapsack(data, f"{inst.name}: metadata")
    if not _same_instance(reduce_knapsack(kp, inst.name), inst):
        return None
    sol = solve_knapsack(kp)
    method = "knapsack-dp"
    if not sol.answer:
        return KnownReference("infeasible", method)
    plan = counts_to_plan(inst, sol.counts)
    ev = evaluate(inst, plan, samples=0)
    if not ev.feasible or ev.cost != float(sol.min_items):
        raise RuntimeError(f"{inst.name}: the knapsack certificate's plan is not feasible at cost {sol.min_items}")
    return KnownReference("optimal", method, plan, float(ev.cost))


#: family -> proof (None when the instance is not one it can prove)
KNOWN: dict[str, Callable[[Instance], KnownReference | None]] = {"knapsack": knapsack_reference}


def known_reference(inst: Instance) -> KnownReference | None:
    """The family proof of ``inst``, if its family has one and it applies."""
    proof = KNOWN.get(str(_metadata(inst).get("family", "")))
    return proof(inst) if proof is not None else None
