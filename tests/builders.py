"""Builders of small instances and plans shared by the tests (import as `builders`)."""

from __future__ import annotations

from deplbench.instances.plan import Plan, Segment


def tiny_dict(noise_mode: str = "per_run", family: str = "invgamma") -> dict:
    """A small valid instance (2 clusters, 1-2 datasets, 2 models, one switch)."""
    noise = {"family": family, "mean": 1.0, "var": 0.02}
    if family == "constant":
        noise = {"family": "constant", "mean": 1.0}
    return {
        "schema": "depl-instance/1",
        "name": "tiny",
        "loss": {"initial": 10.0, "target": 6.0, "quantile": 0.9},
        "time_budget": 50.0,
        "max_epochs": 6,
        "noise_mode": noise_mode,
        "data_effect": {"reference_samples": 1000, "alpha": 0.3},
        "clusters": [
            {"id": "A", "nodes": 2, "capacity": 10.0, "levels": [0.5, 1.0], "bandwidth": 4.0, "unit_cost": 1.0},
            {"id": "B", "nodes": 1, "capacity": 8.0, "levels": [0.25, 1.0], "bandwidth": 2.0, "unit_cost": 0.5},
        ],
        "datasets": [{"id": "d1", "samples": 1000, "quality": 1.0},
                     {"id": "d2", "samples": 500, "quality": 0.5}],
        "transfer_costs": [{"dataset": "d1", "cluster": "B", "cost": 3.0},
                           {"dataset": "d2", "cluster": "A", "cost": 1.5}],
        "models": [
            {"id": "full", "size": 2.0, "work": 0.04, "progress": {"A": 2.0, "B": 0.0, "p": 0.5},
             "noise": dict(noise)},
            {"id": "pruned", "size": 0.5, "work": 0.02, "progress": {"A": 1.2, "B": 1.0, "p": 0.5},
             "noise": dict(noise)},
        ],
        "switches": [{"from": "full", "to": "pruned",
                      "penalty": {"family": "t", "df": 5, "loc": 0.3, "scale": 0.1, "low": 0.0, "high": 1.0}}],
        "metadata": {"family": "test"},
    }


MODEL_EXAMPLE_PLAN = Plan(("cifar10",), (
    Segment("fast-unsteady", "A-class", 0.5, 5),
    Segment("fast-unsteady", "A-class", 0.6, 2),
    Segment("intermediate", "A-class", 0.4, 18),
))
