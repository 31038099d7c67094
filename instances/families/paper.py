"""The paper's instance families (MODEL.md section 6): ``paper-alexnet`` and ``paper-mobilenet``.

Table I of the paper, with what it leaves out fixed by MODEL.md. Names are fixed:
clusters ``A-class`` and ``B-class``, dataset ``cifar10``, models ``fast-unsteady``,
``intermediate`` and ``slow-steady``; instance names
``paper-{alexnet|mobilenet}-{noise_mode}-t{T}``.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from deplbench.errors import InputError
from deplbench.params import Param
from deplbench.registry import register_family

if TYPE_CHECKING:
    from deplbench.instances.schema import Instance

TARGETS = (5.0, 7.0, 9.0, 11.0, 13.0)
NOISE_MODES = ("per_epoch", "per_run")
NETWORKS = ("alexnet", "mobilenet")

# model: (pruning F, noise mean, noise var, work per sample, size, A, B, p)
TABLE_I = {
    "alexnet": {
        "fast-unsteady": (0.5, 1.02, 0.031, 0.0052, 1.22, 2.0, 0.0, 0.5),
        "intermediate": (0.75, 1.00, 0.010, 0.0028, 0.61, 1.4, 0.0, 0.5),
        "slow-steady": (0.9, 0.98, 0.007, 0.0020, 0.24, 1.0, 0.0, 0.5),
    },
    "mobilenet": {
        "fast-unsteady": (0.5, 1.02, 0.029, 0.0036, 0.21, 2.0, 0.0, 0.5),
        "intermediate": (0.75, 0.95, 0.012, 0.0020, 0.11, 1.4, 0.0, 0.5),
        "slow-steady": (0.9, 0.92, 0.006, 0.0012, 0.04, 1.0, 0.0, 0.5),
    },
}
SWITCHES = (("fast-unsteady", "intermediate"), ("intermediate", "slow-steady"),
            ("fast-unsteady", "slow-steady"))
PENALTY = {"family": "t", "df": 5, "loc": 0.5, "scale": 0.15, "low": 0.0, "high": 2.0}
LEVELS = [round(i / 10, 1) for i in range(1, 11)]


def instance_name(network: str, noise_mode: str, target: float) -> str:
    return f"paper-{network}-{noise_mode}-t{target:g}"


def paper_instance(network: str, noise_mode: str = "per_run", target: float = 9.0) -> Instance:
    """Build one paper instance from Table I and MODEL.md section 6."""
    from deplbench.instances.io import instance_from_dict

    if network not in NETWORKS:
        raise InputError(f"network must be one of {NETWORKS}", "--set", "network")
    if noise_mode not in NOISE_MODES:
        raise InputError(f"noise_mode must be one of {', '.join(NOISE_MODES)}", "--set", "noise_mode")
    models = []
    for mid, (_F, mean, var, work, size, A, B, p) in TABLE_I[network].items():
        models.append({"id": mid, "size": size, "work": work, "progress": {"A": A, "B": B, "p": p},
                       "noise": {"family": "invgamma", "mean": mean, "var": var}})
    data = {
        "schema": "depl-instance/1",
        "name": instance_name(network, noise_mode, target),
        "loss": {"initial": 20.0, "target": float(target), "quantile": 0.99, "floor": 0.0},
        "time_budget": 100.0,
        "max_epochs": 60,
        "noise_mode": noise_mode,
        "data_effect": {"reference_samples": 50000, "alpha": 0.3},
        "clusters": [
            {"id": "A-class", "nodes": 1, "capacity": 100.0, "levels": LEVELS, "bandwidth": 10.0, "unit_cost": 1.0},
            {"id": "B-class", "nodes": 1, "capacity": 50.0, "levels": LEVELS, "bandwidth": 10.0, "unit_cost": 1.2},
        ],
        "datasets": [{"id": "cifar10", "samples": 50000, "quality": 1.0}],
        "transfer_costs": [{"dataset": "cifar10", "cluster": c, "cost": 0.0} for c in ("A-class", "B-class")],
        "models": models,
        "switches": [{"from": a, "to": b, "penalty": dict(PENALTY)} for a, b in SWITCHES],
        "metadata": {"family": f"paper-{network}", "noise_mode": noise_mode, "target": float(target),
                     "pruning": {m: v[0] for m, v in TABLE_I[network].items()}},
    }
    return instance_from_dict(data, f"paper-{network}")


#: The paper families' parameters: the noise mode and the loss target (Table I's 5, 7, 9, 11, 13).
PAPER_PARAMS = (
    Param("noise_mode", str, "per_run", "noise mode (MODEL.md section 4)", choices=("per_run", "per_epoch")),
    Param("target", float, 9.0, "loss target (the paper: 5, 7, 9, 11, 13)", low=0.0, high=20.0, low_open=True),
)


@register_family("paper-alexnet", params=PAPER_PARAMS, tags={"network": "alexnet"},
                 test_params={"noise_mode": "per_run", "target": 9.0},
                 description="AlexNet on CIFAR-10, Table I (targets 5, 7, 9, 11, 13; both noise modes)")
def paper_alexnet(seed: int = 0, noise_mode: str = "per_run", target: float = 9.0) -> Instance:
    """AlexNet family of the paper (deterministic: ``seed`` is ignored)."""
    return paper_instance("alexnet", noise_mode, target)


@register_family("paper-mobilenet", params=PAPER_PARAMS, tags={"network": "mobilenet"},
                 test_params={"noise_mode": "per_run", "target": 9.0},
                 description="MobileNet on CIFAR-10, Table I (targets 5, 7, 9, 11, 13; both noise modes)")
def paper_mobilenet(seed: int = 0, noise_mode: str = "per_run", target: float = 9.0) -> Instance:
    """MobileNet family of the paper (deterministic: ``seed`` is ignored)."""
    return paper_instance("mobilenet", noise_mode, target)


def canonical_names() -> list[str]:
    """Names of the canonical paper instances shipped with the package (20 files)."""
    return [instance_name(n, m, t) for n in NETWORKS for m in NOISE_MODES for t in TARGETS]


def load_paper(name: str) -> Instance:
    """Load a shipped canonical instance by name, e.g. ``paper-alexnet-per_run-t9``."""
    from deplbench.instances.io import load_instance

    path = resources.files("deplbench.instances") / "data" / f"{name}.json"
    if not path.is_file():
        raise InputError(f"no shipped paper instance '{name}' (see canonical_names())")
    with resources.as_file(path) as p:
        return load_instance(p)


def all_paper_instances() -> list[Instance]:
    return [load_paper(n) for n in canonical_names()]
