"""Property 1, made correct for MODEL.md: unbounded knapsack reduces to DepL feasibility.

Knapsack variant: **unbounded knapsack decision** (NP-complete): given positive integers
``values`` v_i, ``weights`` w_i, ``capacity`` W and ``threshold`` V, are there integers
x_i >= 0 with sum v_i x_i >= V and sum w_i x_i <= W? (Items may repeat, as epochs may
repeat a model.)

Reduction (polynomial: n models, n(n-1) switches). The DepL instance has

* one model ``item{i}`` per item: noise ``constant`` with mean 1 (X = 1), progress
  A = v_i, B = 0, p = 0, so a_i(k) = v_i / k^0 = v_i for every epoch k; size 0; work w_i;
* one dataset with 1 sample, quality 1, and ``data_effect`` reference 1, alpha 0, so
  Q = 1 and g = 1 + 0 ln 1 = 1;
* one cluster: 1 node, capacity 1, the single level 1.0, bandwidth 1, unit cost 1, so an
  epoch of item i takes tau = w_i * 1 / (1 * 1) + 0 / 1 = w_i and costs 1;
* every switch i -> j allowed with a ``constant`` penalty 0 (low = high = 0);
* loss.initial l0 = V + 1, target = l0 - V + 1/2 = 3/2, quantile 1/2 (any level: the loss
  is deterministic); time_budget = W + 1/2; max_epochs = max(1, floor(W / min_i w_i)).

A plan with counts x_i (epochs of model i, K = sum x_i) has loss exactly
l0 - sum_i v_i x_i (every X is 1, every penalty 0, g = 1), time sum_i w_i x_i and cost K.

Proof. (yes => feasible) Let x solve the knapsack. V >= 1 forces x != 0, so K >= 1; and
K min w <= sum w_i x_i <= W gives K <= max_epochs. Run the items in any order (all
switches are listed): time sum w_i x_i <= W < W + 1/2, loss l0 - sum v_i x_i <= l0 - V <
target. (feasible => yes) A feasible plan's counts x satisfy sum v_i x_i >= l0 - target =
V - 1/2, hence >= V (integers), and sum w_i x_i <= (W + 1/2)(1 + 1e-9), hence <= W because
the sum is an integer and (W + 1/2) 1e-9 < 1/2 for W < 5e8.

Floating point cannot flip the answer: every quantity the evaluator computes
(:mod:`deplbench.instances.semantics`, :mod:`deplbench.instances.evaluator.loss`) is an integer or a
half-integer below 2^53 (w_i * 1.0 / (1 * 1.0), v_i / 1.0 ** 0.0 = v_i, partial sums of
at most max_epochs such terms; :func:`check_knapsack` requires
max_epochs * max(v, w) and V to stay below 2^50), so all of them are exact; the constant
terms are folded into the offset, so the certified bracket is the single point
[loss, loss]. The half-unit slacks only make the argument robust: a rounding error below
1/2 could not change it either.

Optimal values. Every epoch costs 1, so the DepL optimum of a feasible reduced instance is
the **fewest items** k* = min { sum x_i : sum v_i x_i >= V, sum w_i x_i <= W } (times the
epoch cost, 1), not the knapsack maximum. Both are stored in the instance metadata
(``known_optimum`` = k*, ``knapsack_max_value``), with the knapsack data, computed by the
dynamic programs below; the decision is cross-checked with OR-Tools' 0/1 solver on the
items expanded floor(W / w_i) times (:func:`ortools_max_value`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from deplbench.errors import InputError
from deplbench.instances.plan import Plan
from deplbench.params import Param
from deplbench.registry import register_family

if TYPE_CHECKING:
    from deplbench.instances.schema import Instance

KEYS = ("values", "weights", "capacity", "threshold")
EXACT = 2**50  # every loss and time partial sum stays below this: exact in binary64
MAX_CAPACITY = 10**8  # keeps (W + 1/2) * 1e-9 far below the half-unit slack
CLUSTER, DATASET, LEVEL = "machine", "data", 1.0


@dataclass(frozen=True)
class Knapsack:
    """An unbounded knapsack decision instance (positive integers)."""

    values: tuple[int, ...]
    weights: tuple[int, ...]
    capacity: int
    threshold: int

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def max_items(self) -> int:
        """No solution has more items than this (each weighs at least min w)."""
        return max(1, self.capacity // min(self.weights))

    def to_dict(self) -> dict[str, Any]:
        return {"values": list(self.values), "weights": list(self.weights),
                "capacity": self.capacity, "threshold": self.threshold}


def _pos_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def check_knapsack(data: Any, source: str | None = None) -> Knapsack:
    """Validate a knapsack object ``{"values", "weights", "capacity", "threshold"}``.

    Raises
    ------
    InputError
        One line naming the JSON path: not an object, a missing or unknown key, a value
        that is not a positive integer, lists of different lengths, too large numbers.
    """
    if not isinstance(data, dict):
        raise InputError("a knapsack must be a JSON object", source, "$")
    for k in data:
        if k not in KEYS:
            raise InputError(f"unknown key '{k}' (expected {', '.join(KEYS)})", source, f"$.{k}")
    for k in KEYS:
        if k not in data:
            raise InputError("required field is missing", source, f"$.{k}")
    for k in ("values", "weights"):
        v = data[k]
        if not isinstance(v, list) or not v:
            raise InputError("must be a non-empty list of positive integers", source, f"$.{k}")
        for i, x in enumerate(v):
            if not _pos_int(x):
                raise InputError(f"{json.dumps(x)} is not a positive integer", source, f"$.{k}[{i}]")
    if len(data["values"]) != len(data["weights"]):
        raise InputError(f"values has {len(data['values'])} entries but weights has {len(data['weights'])}",
                         source, "$.weights")
    for k in ("capacity", "threshold"):
        if not _pos_int(data[k]):
            raise InputError(f"{json.dumps(data[k])} is not a positive integer", source, f"$.{k}")
    kp = Knapsack(tuple(data["values"]), tuple(data["weights"]), data["capacity"], data["threshold"])
    if kp.capacity > MAX_CAPACITY:
        raise InputError(f"capacity above {MAX_CAPACITY} is not supported (time tolerance)", source, "$.capacity")
    if kp.threshold >= EXACT or kp.max_items * max(*kp.values, *kp.weights) >= EXACT:
        raise InputError("numbers too large for exact floating point (need max_items * max value < 2^50)",
                         source, "$.values")
    return kp


def model_id(i: int) -> str:
    return f"item{i}"


def reduce_knapsack(kp: Knapsack, name: str = "knapsack", extra_metadata: dict | None = None) -> Instance:
    """The DepL instance of ``kp`` (module docstring); metadata holds the data and the optima."""
    from deplbench.instances.io import instance_from_dict

    sol = solve_knapsack(kp)
    ids = [model_id(i) for i in range(kp.n)]
    zero = {"family": "constant", "value": 0.0, "low": 0.0, "high": 0.0}
    l0 = float(kp.threshold + 1)
    data = {
        "schema": "depl-instance/1", "name": name,
        "loss": {"initial": l0, "target": l0 - kp.threshold + 0.5, "quantile": 0.5},
        "time_budget": kp.capacity + 0.5,
        "max_epochs": kp.max_items,
        "noise_mode": "per_run",
        "data_effect": {"reference_samples": 1.0, "alpha": 0.0},
        "clusters": [{"id": CLUSTER, "nodes": 1, "capacity": 1.0, "levels": [LEVEL], "bandwidth": 1.0,
                      "unit_cost": 1.0}],
        "datasets": [{"id": DATASET, "samples": 1, "quality": 1.0}],
        "models": [{"id": ids[i], "size": 0.0, "work": float(kp.weights[i]),
                    "progress": {"A": float(kp.values[i]), "B": 0.0, "p": 0.0},
                    "noise": {"family": "constant", "mean": 1.0}} for i in range(kp.n)],
        "switches": [{"from": a, "to": b, "penalty": dict(zero)} for a in ids for b in ids if a != b],
        "metadata": {
            "family": "knapsack", "reduction": "unbounded knapsack (Property 1, docs/knapsack.md)",
            "knapsack": kp.to_dict(), "knapsack_answer": sol.answer,
            "knapsack_max_value": sol.max_value,
            "known_status": "optimal" if sol.answer else "infeasible",
            "known_optimum": float(sol.min_items) if sol.answer else None,
            "known_optimum_counts": list(sol.counts) if sol.answer else None,
            "known_optimum_meaning": "fewest items with value >= threshold and weight <= capacity "
                                     "(each epoch costs 1)",
            **(extra_metadata or {}),
        },
    }
    return instance_from_dict(data, name)


def plan_to_counts(instance: Instance, plan: Plan) -> tuple[int, ...]:
    """The inverse map: item counts x_i = epochs of model ``item{i}`` in ``plan``."""
    index = {m: i for i, m in enumerate(instance.model_ids)}
    x = [0] * len(index)
    for s in plan.segments:
        x[index[s.model]] += s.epochs
    return tuple(x)


def counts_to_plan(instance: Instance, counts) -> Plan:
    """The forward map of a knapsack solution: the items in order, each x_i epochs."""
    epochs = [(instance.model_ids[i], CLUSTER, LEVEL) for i, c in enumerate(counts) for _ in range(int(c))]
    return Plan.from_epochs((DATASET,), epochs)


def is_solution(kp: Knapsack, counts) -> bool:
    """Whether ``counts`` (non-negative integers) is a yes-certificate of ``kp``."""
    x = [int(c) for c in counts]
    return (len(x) == kp.n and min(x) >= 0 and sum(v * c for v, c in zip(kp.values, x, strict=True)) >= kp.threshold
            and sum(w * c for w, c in zip(kp.weights, x, strict=True)) <= kp.capacity)


@dataclass(frozen=True)
class KnapsackSolution:
    answer: bool  # is there a solution with value >= threshold?
    max_value: int  # unbounded knapsack optimum within the capacity
    min_items: int | None  # fewest items of a yes-certificate (the DepL optimum)
    counts: tuple[int, ...] | None  # a yes-certificate with min_items items


def max_value_dp(kp: Knapsack) -> int:
    """Unbounded knapsack optimum, O(W n) dynamic program over the capacity."""
    best = np.zeros(kp.capacity + 1, dtype=np.int64)
    for c in range(1, kp.capacity + 1):
        for v, w in zip(kp.values, kp.weights, strict=True):
            if w <= c and best[c - w] + v > best[c]:
                best[c] = best[c - w] + v
    return int(best[kp.capacity])


def solve_knapsack(kp: Knapsack) -> KnapsackSolution:
    """Decision, maximum value and fewest-items certificate, by dynamic programming.

    Layer k holds, for every total weight c <= W, the largest value of k items weighing
    exactly c (O(k* W n) for the answer k*).
    """
    W = kp.capacity
    vmax = max_value_dp(kp)
    if vmax < kp.threshold:
        return KnapsackSolution(False, vmax, None, None)
    neg = np.iinfo(np.int64).min // 2
    layer = np.full(W + 1, neg, dtype=np.int64)
    layer[0] = 0
    args: list[np.ndarray] = []
    for _ in range(kp.max_items):
        new = np.full(W + 1, neg, dtype=np.int64)
        arg = np.full(W + 1, -1, dtype=np.int64)
        for i, (v, w) in enumerate(zip(kp.values, kp.weights, strict=True)):
            if w > W:
                continue
            cand = layer[: W + 1 - w] + v
            better = cand > new[w:]
            new[w:][better] = cand[better]
            arg[w:][better] = i
        layer = new
        args.append(arg)
        hit = np.nonzero(layer >= kp.threshold)[0]
        if len(hit):
            c = int(hit[0])
            x = [0] * kp.n
            for arg_k in reversed(args):
                i = int(arg_k[c])
                x[i] += 1
                c -= kp.weights[i]
            assert c == 0 and is_solution(kp, x)
            return KnapsackSolution(True, vmax, len(args), tuple(x))
    raise AssertionError("max value reaches the threshold but no layer does")  # pragma: no cover


def ortools_max_value(kp: Knapsack) -> int:
    """Unbounded knapsack optimum by OR-Tools' 0/1 solver on items expanded floor(W / w_i) times."""
    from ortools.algorithms.python import knapsack_solver

    vals, wts = [], []
    for v, w in zip(kp.values, kp.weights, strict=True):
        for _ in range(kp.capacity // w):
            vals.append(v)
            wts.append(w)
    if not vals:
        return 0
    s = knapsack_solver.KnapsackSolver(knapsack_solver.SolverType.KNAPSACK_DYNAMIC_PROGRAMMING_SOLVER, "kp")
    s.init(vals, [wts], [kp.capacity])
    return int(s.solve())


def random_knapsack(rng: np.random.Generator, items: int, capacity: int, max_weight: int, max_value: int,
                    spread: int) -> Knapsack:
    """Random items; threshold = (best value) + d with d uniform in [-spread, 1] (d = 1: answer no)."""
    weights = [int(w) for w in rng.integers(1, max_weight + 1, size=items)]
    values = [int(v) for v in rng.integers(1, max_value + 1, size=items)]
    best = max_value_dp(Knapsack(tuple(values), tuple(weights), capacity, 1))
    threshold = max(1, best + int(rng.integers(-spread, 2)))
    return Knapsack(tuple(values), tuple(weights), capacity, threshold)


@register_family("knapsack", params=(
    Param("items", int, 6, "item types", low=1, high=200),
    Param("capacity", int, 30, "knapsack capacity W", low=1, high=10_000),
    Param("max_weight", int, 10, "weights are uniform in [1, max_weight]", low=1, high=10_000),
    Param("max_value", int, 20, "values are uniform in [1, max_value]", low=1, high=10_000),
    Param("spread", int, 2, "threshold = best value + d, d uniform in [-spread, 1]", low=0, high=10_000),
), test_params={"items": 3, "capacity": 8},
                 description="reduced unbounded-knapsack instances with their optimum in metadata")
def knapsack_family(seed: int = 0, items: int = 6, capacity: int = 30, max_weight: int = 10,
                    max_value: int = 20, spread: int = 2) -> Instance:
    """Reduced random unbounded knapsack (Property 1), optimum stored as ``known_optimum``.

    Parameters
    ----------
    seed : int
    items, capacity, max_weight, max_value : int
        Item count, capacity W, weights in [1, max_weight], values in [1, max_value].
    spread : int
        The threshold is the best value plus d, d uniform in [-spread, 1]; d = 1 makes the
        instance infeasible (``known_status`` says which).
    """
    kp = random_knapsack(np.random.default_rng(seed), items, capacity, max_weight, max_value, spread)
    check_knapsack(kp.to_dict(), "--set")
    name = f"knapsack-n{items}-w{capacity}-s{seed}"
    return reduce_knapsack(kp, name, {"seed": seed, "params": {"items": items, "capacity": capacity,
                                                               "max_weight": max_weight,
                                                               "max_value": max_value, "spread": spread}})

