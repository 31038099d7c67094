"""The ``calibrated`` instance family: models fitted by ``deplbench calibrate``.

``deplbench generate calibrated --set params=PARAMS.json`` builds an instance whose
models (A, B, p, noise) and switch penalties come from a ``depl-calibration/1`` file.
Everything curves cannot tell is fixed like the paper family (MODEL.md section 6):
clusters ``A-class``/``B-class``, one dataset of 50,000 samples (so g = 1, as for the
curves), time budget 100. A model's ``work`` and ``size`` are proportional to its
density (the fraction of weights it keeps; 1 when the curves give none):
``work = work_full * density``, ``size = size_full * density``, whose defaults
reproduce Table I's sizes exactly and its work roughly (0.5 -> 0.0052, 0.25 ->
0.0026, 0.1 -> 0.00104). Only the switches observed in the curves are allowed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from deplbench.errors import InputError
from deplbench.instances.families.paper import LEVELS
from deplbench.instances.plan import Plan
from deplbench.params import Param
from deplbench.registry import register_family

if TYPE_CHECKING:
    from deplbench.instances.schema import Instance

PARAMS = (
    Param("params", str, "", "calibration file written by 'deplbench calibrate'"),
    Param("noise_mode", str, "auto", "noise mode (auto: the file's recommendation)",
          choices=("auto", "per_run", "per_epoch")),
    Param("target", str, "", "loss target (empty: target_fraction of the reachable decrease)"),
    Param("target_fraction", float, 0.5, "where the default target lies", low=0.0, high=1.0, low_open=True),
    Param("quantile", float, 0.99, "loss quantile omega", low=0.0, high=1.0, low_open=True),
    Param("time_budget", float, 100.0, "time budget (s)", low=0.0, high=1e9, low_open=True),
    Param("max_epochs", int, 0, "max_epochs (0: from the file)", low=0, high=1000),
    Param("samples", int, 50000, "dataset size", low=1, high=10**9),
    Param("work_full", float, 0.0104, "work per sample of the full model", low=0.0, high=1e6, low_open=True),
    Param("size_full", float, 2.44, "size of the full model", low=0.0, high=1e6),
)
DEFAULTS = {p.name: p.default for p in PARAMS}


def load_params(path: str) -> dict:
    """Read a calibration file and check the parts the family uses."""
    from deplbench.instances.calibration.pipeline import PARAMS_SCHEMA
    from deplbench.instances.io import read_json

    if not path:
        raise InputError("set params=PARAMS.json (written by 'deplbench calibrate')", "--set", "params")
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != PARAMS_SCHEMA:
        raise InputError(f"schema must be '{PARAMS_SCHEMA}'", path, "$.schema")
    try:
        for key in ("initial_loss", "max_epoch", "recommended_noise_mode"):
            data[key]  # noqa: B018 - presence check
        for m, r in data["models"].items():
            for key in ("A", "B", "p"):
                if not isinstance(r["progress"][key], (int, float)):
                    raise InputError("not a number", path, f"$.models.{m}.progress.{key}")
            if not r["noise"]["per_epoch"]:
                raise InputError("no noise fit", path, f"$.models.{m}.noise.per_epoch")
        for i, s in enumerate(data["switches"]):
            for key in ("from", "to", "penalty"):
                if key not in s:
                    raise InputError("required field is missing", path, f"$.switches[{i}].{key}")
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"not a calibration file (missing or malformed {exc})", path) from None
    if not data["models"]:
        raise InputError("no models", path, "$.models")
    return data


def _noise(r: dict, mode: str) -> dict:
    fit = r["noise"].get(mode) or r["noise"]["per_epoch"]  # per_run needs >= 3 runs; else fall back
    best = fit["fits"][fit["best"]]
    return {"family": fit["best"], "mean": float(best["mean"]), "var": float(best["var"])}


def calibrated_instance(params: str, noise_mode: str = "auto", target: str = "",
                        target_fraction: float = 0.5, quantile: float = 0.99,
                        time_budget: float = 100.0, max_epochs: int = 0, samples: int = 50000,
                        work_full: float = 0.0104, size_full: float = 2.44) -> Instance:
    """Build the instance of a calibration file (see the module docstring).

    ``target`` (a number) overrides ``target_fraction``, which places the target that
    fraction of the way from the initial loss to the lowest certified ``quantile`` of
    the loss that one model reaches alone, training as many epochs (at most
    ``max_epochs``; 0: the longest run of the curves) as fit the time budget at full
    speed on A-class. The default target is therefore feasible by construction.
    """
    from deplbench.instances.io import instance_from_dict

    data = load_params(params)
    mode = data["recommended_noise_mode"] if noise_mode == "auto" else noise_mode
    if mode not in ("per_epoch", "per_run"):
        raise InputError("noise_mode must be auto, per_epoch or per_run", "--set", "noise_mode")
    K = int(max_epochs) or int(data["max_epoch"])
    if K < 1:
        raise InputError("max_epochs must be >= 1", "--set", "max_epochs")
    l0 = float(data["initial_loss"])
    models = []
    reach: dict[str, int] = {}
    for m, r in data["models"].items():
        pr = r["progress"]
        dens = float(r.get("density") or 1.0)
        noise = _noise(r, mode)
        t_epoch = work_full * dens * samples / 100.0 + size_full * dens / 10.0
        reach[m] = min(K, int(time_budget / t_epoch))  # epochs at full speed on A-class
        models.append({"id": m, "size": size_full * dens, "work": work_full * dens,
                       "progress": {"A": float(pr["A"]), "B": float(pr["B"]), "p": float(pr["p"])},
                       "noise": noise})
    tgt = None
    if target:
        try:
            tgt = float(target)
        except ValueError:
            raise InputError(f"target={target!r} is not a number", "--set", "target") from None
        if not math.isfinite(tgt):
            raise InputError("target must be finite", "--set", "target")
    inst = {
        "schema": "depl-instance/1", "name": "",
        "loss": {"initial": l0, "target": l0 - 1e-9 * max(1.0, abs(l0)), "quantile": float(quantile)},
        "time_budget": float(time_budget), "max_epochs": K, "noise_mode": mode,
        "data_effect": {"reference_samples": samples, "alpha": 0.3},
        "clusters": [
            {"id": "A-class", "nodes": 1, "capacity": 100.0, "levels": LEVELS, "bandwidth": 10.0,
             "unit_cost": 1.0},
            {"id": "B-class", "nodes": 1, "capacity": 50.0, "levels": LEVELS, "bandwidth": 10.0,
             "unit_cost": 1.2},
        ],
        "datasets": [{"id": "data", "samples": int(samples), "quality": 1.0}],
        "models": models,
        "switches": [{"from": s["from"], "to": s["to"], "penalty": dict(s["penalty"])}
                     for s in data["switches"]],
        "metadata": {"family": "calibrated", "params": str(params), "source": data.get("source"),
                     "noise_mode": mode, "target_fraction": None if target else target_fraction,
                     "density": {m: r.get("density") for m, r in data["models"].items()}},
    }
    if tgt is None:
        tgt = _default_target(instance_from_dict(inst, f"calibrated ({params})"), reach,
                              target_fraction)
    inst["loss"]["target"] = tgt
    inst["name"] = f"calibrated-{Path(params).stem}-{mode}-t{tgt:g}"
    return instance_from_dict(inst, f"calibrated ({params})")


def _default_target(inst: Instance, reach: dict[str, int], fraction: float) -> float:
    """``fraction`` of the way from l0 to the best certified quantile of a one-model plan.

    Each candidate plan runs one model for as many epochs as fit the budget at full
    speed on A-class; the target is then met by that plan, so the instance is
    feasible by construction.
    """
    from deplbench.instances.evaluator.plain_quantile import plain_hi

    l0 = inst.loss.initial
    best = l0
    for m, k in reach.items():
        if k >= 1:
            plan = Plan.from_epochs(("data",), [(m, "A-class", 1.0)] * k)
            best = min(best, plain_hi(inst, plan))  # plain bracket: generated instances stay identical
    if not best < l0:
        raise InputError("no single model lowers the loss's quantile within the budget; set target=",
                         "--set", "target")
    return float(f"{l0 - fraction * (l0 - best):.4g}")


@register_family("calibrated", params=PARAMS,
                 description="models fitted to training curves by 'deplbench calibrate' (set params=)")
def calibrated(seed: int = 0, **params) -> Instance:
    """Instance from a calibration file (deterministic: ``seed`` is ignored)."""
    return calibrated_instance(**params)
