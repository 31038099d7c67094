"""The ``random`` instance family: seeded, scalable DepL instances for scaling studies.

Parameters (all documented in ``docs/harness.md``):

* ``models``: number of model versions (>= 1). Model ``m0`` is the fastest learner
  (largest progress ``A``) and the most expensive to train; later models are more
  pruned: cheaper ``work`` and ``size``, smaller ``A``, steadier noise.
* ``clusters``: number of clusters (>= 1), capacity 40-120, unit cost 0.8-1.4, 1-2 nodes.
* ``levels``: resource levels per cluster (>= 1): ``1/L, 2/L, ..., 1``.
* ``datasets``: number of datasets (>= 1), 10k-50k samples, quality 0.6-1.
* ``epochs``: ``max_epochs`` (>= 1).
* ``noise_mode``: ``per_run`` or ``per_epoch``.
* ``density``: probability that each ordered pair of distinct models is an allowed
  switch (0-1); the "towards more pruning" chain ``m_i -> m_{i+1}`` is always allowed.
* ``quantile``: the loss quantile omega; ``transfer``: the largest transfer cost
  (costs are uniform in ``[0, transfer]``; 0 as in the paper).

Feasible by construction: a reference plan (all datasets, model ``m0`` on the
fastest option for about 70 % of ``epochs``) is built, the time budget is 1.2 times
its time and the loss target lies slightly above its certified quantile, so the
reference plan is feasible and its cost (``metadata.reference_cost``) bounds the
optimum from above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deplbench.instances.plan import Plan
from deplbench.params import Param
from deplbench.registry import register_family

if TYPE_CHECKING:
    from deplbench.instances.schema import Instance

#: Declared once: ranges are checked by the registry before generation (caps keep a family finite).
PARAMS = (
    Param("models", int, 3, "model versions", low=1, high=50),
    Param("clusters", int, 2, "clusters", low=1, high=50),
    Param("levels", int, 5, "resource levels per cluster", low=1, high=100),
    Param("datasets", int, 1, "datasets", low=1, high=20),
    Param("epochs", int, 20, "max_epochs", low=1, high=1000),
    Param("noise_mode", str, "per_run", "noise mode", choices=("per_run", "per_epoch")),
    Param("density", float, 0.5, "probability of each extra allowed switch", low=0.0, high=1.0),
    Param("quantile", float, 0.95, "loss quantile omega", low=0.0, high=1.0, low_open=True),
    Param("transfer", float, 0.0, "largest transfer cost", low=0.0, high=1e9),
)
DEFAULTS = {p.name: p.default for p in PARAMS}
PENALTY = {"family": "t", "df": 5, "scale": 0.15, "low": 0.0, "high": 2.0}
INITIAL_LOSS = 20.0
TIME_SLACK = 1.2  # budget / reference time
TARGET_MARGIN = 0.02
REF_PROGRESS = 11.0  # expected loss decrease of the reference plan  # target = q_ref + margin * (initial - q_ref)


def instance_name(seed: int, models: int, clusters: int, levels: int, datasets: int, epochs: int,
                  noise_mode: str, density: float, quantile: float, transfer: float) -> str:
    name = f"random-{noise_mode}-m{models}-c{clusters}-l{levels}-d{datasets}-e{epochs}-p{density:g}"
    if quantile != DEFAULTS["quantile"]:
        name += f"-q{quantile:g}"
    if transfer != DEFAULTS["transfer"]:
        name += f"-x{transfer:g}"
    return f"{name}-s{seed}"


@register_family("random", params=PARAMS, test_params={"models": 2, "clusters": 2, "levels": 3, "epochs": 5},
                 description="seeded random instances (models, clusters, levels, datasets, epochs, density)")
def random_instance(seed: int = 0, models: int = 3, clusters: int = 2, levels: int = 5, datasets: int = 1,
                    epochs: int = 20, noise_mode: str = "per_run", density: float = 0.5,
                    quantile: float = 0.95, transfer: float = 0.0) -> Instance:
    """A random instance, feasible by construction (see the module docstring)."""
    rng = np.random.default_rng([seed, models, clusters, levels, datasets, epochs])
    # pruning grows with the model index: less work, smaller, slower learning, steadier
    prune = np.linspace(0.0, 1.0, models) if models > 1 else np.zeros(1)
    mods = []
    for i in range(models):
        f = prune[i]
        mods.append({
            "id": f"m{i}",
            "size": round(float(rng.uniform(0.8, 1.3) * (1.0 - 0.8 * f)), 4),
            "work": round(float(rng.uniform(0.004, 0.006) * (1.0 - 0.6 * f)), 6),
            "progress": {"A": round(float(rng.uniform(1.8, 2.2) * (1.0 - 0.5 * f)), 4), "B": 0.0, "p": 0.5},
            "noise": {"family": "invgamma", "mean": round(float(rng.uniform(0.97, 1.03) - 0.06 * f), 4),
                      "var": round(float(rng.uniform(0.02, 0.035) * (1.0 - 0.7 * f)), 5)},
        })
    lv = [round((j + 1) / levels, 6) for j in range(levels)]
    cls = [{"id": f"c{j}", "nodes": int(rng.integers(1, 3)),
            "capacity": round(float(rng.uniform(40.0, 120.0)), 2), "levels": lv,
            "bandwidth": 10.0, "unit_cost": round(float(rng.uniform(0.8, 1.4)), 3)}
           for j in range(clusters)]
    dss = [{"id": f"d{j}", "samples": int(rng.integers(10_000, 50_001)),
            "quality": round(float(rng.uniform(0.6, 1.0)), 3)} for j in range(datasets)]
    tcs = [{"dataset": d["id"], "cluster": c["id"], "cost": round(float(rng.uniform(0.0, transfer)), 3)}
           for d in dss for c in cls] if transfer > 0 else []
    sws = []
    for a in range(models):
        for b in range(models):
            draw = rng.random()  # drawn for every pair so the graph is stable in density
            if a != b and (b == a + 1 or draw < density):
                sws.append({"from": f"m{a}", "to": f"m{b}",
                            "penalty": {**PENALTY, "loc": round(float(rng.uniform(0.2, 0.8)), 3)}})
    params = {"models": models, "clusters": clusters, "levels": levels, "datasets": datasets, "epochs": epochs,
              "noise_mode": noise_mode, "density": density, "quantile": quantile, "transfer": transfer}
    data = {
        "schema": "depl-instance/1",
        "name": instance_name(seed, **params),
        "loss": {"initial": INITIAL_LOSS, "target": INITIAL_LOSS - 1.0, "quantile": float(quantile), "floor": 0.0},
        "time_budget": 1.0, "max_epochs": epochs, "noise_mode": noise_mode,
        "data_effect": {"reference_samples": 50000, "alpha": 0.3},
        "clusters": cls, "datasets": dss, "transfer_costs": tcs, "models": mods, "switches": sws,
        "metadata": {"family": "random", "seed": seed, "params": params},
    }
    return finish(data)


def finish(data: dict, source: str = "random", slack: float = TIME_SLACK) -> Instance:
    """Scale progress, then set the time budget (``slack`` x the reference plan's time) and the loss target.

    Shared by the families built on this one (:mod:`deplbench.instances.families.studies`),
    which change a drafted ``data`` before finishing it.
    """
    from deplbench.instances.evaluator.evaluate import plan_costs
    from deplbench.instances.evaluator.plain_quantile import plain_hi
    from deplbench.instances.io import instance_from_dict

    _scale_progress(data)
    draft = instance_from_dict(data, source)
    ref = _reference_plan(draft)
    compute, transfer_c, ref_time = plan_costs(draft, ref)  # neither depends on budget or target
    hi = plain_hi(draft, ref)  # the plain bracket: generated instances stay identical
    data["time_budget"] = round(ref_time * slack, 6)
    data["loss"]["target"] = round(hi + TARGET_MARGIN * (INITIAL_LOSS - hi), 6)
    if "floor" in data["loss"] and not data["loss"]["floor"] < data["loss"]["target"]:
        del data["loss"]["floor"]  # a floor must lie below the target (never with the shipped families)
    data["metadata"].update(reference_cost=compute + transfer_c, reference_datasets=list(ref.datasets),
                            reference_plan=[s.to_dict() for s in ref.segments])
    return instance_from_dict(data, source)


def _scale_progress(data: dict) -> None:
    """Scale every ``A`` so the reference plan's expected progress is ``REF_PROGRESS`` whatever the size.

    Without this, long horizons or large datasets drive the loss far below zero and
    instances of different sizes would not be comparably tight.
    """
    q_eff = sum(d["samples"] * d["quality"] for d in data["datasets"])
    g = 1.0 + data["data_effect"]["alpha"] * np.log(q_eff / data["data_effect"]["reference_samples"])
    k_ref = max(1, round(0.7 * data["max_epochs"]))
    a0 = data["models"][0]["progress"]["A"]
    scale = REF_PROGRESS / (g * a0 * float(np.sum(np.arange(1, k_ref + 1) ** -0.5)))
    for m in data["models"]:
        m["progress"]["A"] = round(m["progress"]["A"] * scale, 6)


def _reference_plan(inst: Instance) -> Plan:
    """All datasets, model m0 on the fastest (cluster, top level) for ~70 % of max_epochs."""
    fast = max(inst.clusters, key=lambda c: c.capacity * c.nodes)
    k = max(1, round(0.7 * inst.max_epochs))
    return Plan.from_epochs(inst.dataset_ids, [("m0", fast.id, fast.levels[-1])] * k)
