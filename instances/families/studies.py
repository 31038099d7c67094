"""Instance families in which DepL's parameters and stages matter; see ``docs/families.md``.

Each is a ``random`` instance (:mod:`deplbench.instances.families.random`) changed where
the study needs it, then finished like ``random`` (budget 1.2 x the reference plan's
time, target just above its certified quantile), so every instance is feasible by
construction and its reference cost bounds the optimum.

* ``rounding`` (stage 3, eps): real-valued unit costs and capacities, irregular levels,
  clusters of different node counts and bandwidths and models of very different sizes,
  so epoch costs sit on no grid (stage 3 runs its FPTAS, not the exact grid DP) and the
  options of a cluster are not one convex trade-off.
* ``horizon`` (stage 2, eta): long horizons and models whose learning laws cross (a fast
  starter that flattens, slower ones that keep learning) with cheap switches, so the best
  plans switch models and the rounding of loss into eta buckets (one bucket lost per run
  and per switch) decides which switch plans stage 2 can see.
* ``datasets`` (stage 1): several datasets of very different size and quality with
  transfer costs, so the choice of datasets changes the plan and its cost.
* ``noisy-epoch`` (``per_epoch``): a fast learner with a heavy-tailed, very variable
  factor beside steadier ones and few epochs, so the expected-loss plan (best-exp) is
  not the quantile optimum.
* ``quantile`` (where planning for a quantile pays): ``random`` with the axes along which an
  expected-loss plan and a quantile plan can differ as parameters: the quantile level, the
  noise's spread, the gap between the full and the pruned models' noise (the pruned models'
  mean lower and spread higher), the switch penalties and the budget's slack.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from deplbench.instances.families.random import TIME_SLACK, finish, random_instance
from deplbench.params import Param
from deplbench.registry import register_family

if TYPE_CHECKING:
    from deplbench.instances.schema import Instance


def _draft(family: str, seed: int, params: dict, **random_params) -> tuple[dict, np.random.Generator]:
    """A finished ``random`` instance as a dict renamed to ``family``, and this family's generator."""
    data = json.loads(json.dumps(random_instance(seed=seed, **random_params).to_json_dict()))  # plain lists
    for key in ("reference_cost", "reference_datasets", "reference_plan"):
        data["metadata"].pop(key, None)
    data["metadata"].update(family=family, params=params, base=random_params)
    tail = "-".join(f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}" for k, v in params.items())
    data["name"] = f"{family}-{tail}-s{seed}"
    return data, np.random.default_rng([seed, 16, len(family)])


def _count(name: str, default: int, doc: str, high: int) -> Param:
    return Param(name, int, default, doc, low=1, high=high)


MODE = ("per_run", "per_epoch")
ROUNDING = (_count("clusters", 4, "clusters", 50), _count("levels", 12, "resource levels per cluster", 100),
            _count("epochs", 30, "max_epochs", 1000), _count("models", 3, "model versions", 50),
            Param("noise_mode", str, "per_epoch", "noise mode", choices=MODE))
HORIZON = (_count("epochs", 60, "max_epochs", 1000), _count("models", 3, "model versions", 50),
           _count("clusters", 3, "clusters", 50), _count("levels", 8, "resource levels per cluster", 100),
           Param("noise_mode", str, "per_run", "noise mode", choices=MODE))
DATASETS = (_count("datasets", 4, "datasets", 20), _count("models", 2, "model versions", 50),
            _count("epochs", 15, "max_epochs", 1000), _count("clusters", 2, "clusters", 50),
            Param("transfer", float, 20.0, "largest transfer cost", low=0.0, high=1e9),
            Param("noise_mode", str, "per_run", "noise mode", choices=MODE))
QUANTILE = (_count("models", 3, "model versions", 50), _count("epochs", 16, "max_epochs", 1000),
            _count("clusters", 2, "clusters", 50), _count("levels", 4, "resource levels per cluster", 100),
            Param("noise_mode", str, "per_run", "noise mode", choices=MODE),
            Param("quantile", float, 0.95, "loss quantile omega", low=0.0, high=1.0, low_open=True),
            Param("spread", float, 1.0, "noise standard deviation / mean, relative to random's", low=0.0, high=20.0,
                  low_open=True),
            Param("gap", float, 0.0, "full-vs-pruned noise gap: pruned factor mean x (1 + 0.2 gap f), sd x (1 + 2 gap f)",
                  low=0.0, high=4.0),
            Param("penalty", float, 1.0, "switch penalty location, relative to random's", low=0.0, high=50.0),
            Param("slack", float, TIME_SLACK, "time budget / the reference plan's time", low=1.0, high=10.0,
                  low_open=True))
NOISY = (_count("epochs", 12, "max_epochs", 1000),
         Param("var", float, 0.6, "variance of the fast learner's factor", low=0.0, high=100.0, low_open=True),
         Param("quantile", float, 0.99, "loss quantile omega", low=0.0, high=1.0, low_open=True))


@register_family("rounding", params=ROUNDING, test_params={"clusters": 2, "levels": 4, "epochs": 6},
                 description="stage 3 / eps: real-valued costs, irregular levels, mixed clusters (eps matters)")
def rounding_family(seed: int = 0, clusters: int = 4, levels: int = 12, epochs: int = 30, models: int = 3,
                    noise_mode: str = "per_epoch") -> Instance:
    """Epoch costs on no grid and clusters that differ in nodes and bandwidth (see the module docstring)."""
    params = {"c": clusters, "l": levels, "e": epochs, "m": models, "": noise_mode}
    data, rng = _draft("rounding", seed, params, models=models, clusters=clusters, levels=levels, epochs=epochs,
                       noise_mode=noise_mode, density=0.5)
    for c in data["clusters"]:
        lv = np.sort(rng.uniform(0.05, 1.0, levels - 1))
        c["levels"] = [float(x) for x in np.unique(np.append(np.round(lv, 9), 1.0))]
        c["unit_cost"] = float(rng.uniform(0.5, 2.0))
        c["capacity"] = float(rng.uniform(30.0, 150.0))
        c["nodes"] = int(rng.integers(1, 5))
        c["bandwidth"] = float(rng.uniform(0.5, 20.0))  # a cluster can be cheap but slow to receive the model
    for m in data["models"]:
        m["size"] = float(m["size"] * rng.uniform(1.0, 8.0))
    return finish(data, "rounding")


@register_family("horizon", params=HORIZON, test_params={"epochs": 8, "models": 2, "clusters": 2, "levels": 3},
                 description="stage 2 / eta: crossing learning laws and cheap switches (eta changes the plan)")
def horizon_family(seed: int = 0, epochs: int = 60, models: int = 3, clusters: int = 3, levels: int = 8,
                   noise_mode: str = "per_run") -> Instance:
    """Models whose learning laws cross, cheap switches: the best plans switch, and eta decides which it sees.

    Model i learns like A_i / k^p_i with p falling from 1.2 (m0: fast start, flattens) to 0.3,
    and A_i set so that model i overtakes model i - 1 at an epoch drawn around a point between
    epochs/12 and epochs/2 (geometrically spaced). Work and size are m0's within 10 %, so
    the choice of model is about learning, not speed.
    """
    params = {"e": epochs, "m": models, "c": clusters, "l": levels, "": noise_mode}
    data, rng = _draft("horizon", seed, params, models=models, clusters=clusters, levels=levels, epochs=epochs,
                       noise_mode=noise_mode, density=0.8)
    ps = np.linspace(1.2, 0.3, models)
    cross = np.geomspace(epochs / 12, epochs / 2, max(models - 1, 1)) * rng.uniform(0.8, 1.25, max(models - 1, 1))
    m0 = data["models"][0]
    a = m0["progress"]["A"]
    for i, m in enumerate(data["models"]):
        if i:  # A_i / c^p_i = A_(i-1) / c^p_(i-1) at the crossing epoch c
            a *= float(cross[i - 1] ** (ps[i] - ps[i - 1]))
        m["progress"].update(A=round(float(a), 6), B=0.0, p=round(float(ps[i]), 6))
        m["work"] = round(float(m0["work"] * rng.uniform(0.9, 1.1)), 6)
        m["size"] = m0["size"]
    for sw in data["switches"]:  # cheap switches: a plan that switches at the crossing pays little
        sw["penalty"]["loc"] = round(float(rng.uniform(0.0, 0.03)), 4)
    return finish(data, "horizon")


@register_family("datasets", params=DATASETS, test_params={"datasets": 2, "epochs": 5},
                 description="stage 1: datasets of different size and quality with transfer costs")
def datasets_family(seed: int = 0, datasets: int = 4, models: int = 2, epochs: int = 15, clusters: int = 2,
                    transfer: float = 20.0, noise_mode: str = "per_run") -> Instance:
    """Datasets from 5k to 80k samples, quality 0.3-1, transfer costs up to ``transfer``; no backward switch."""
    params = {"d": datasets, "m": models, "e": epochs, "c": clusters, "x": float(transfer), "": noise_mode}
    data, rng = _draft("datasets", seed, params, models=models, clusters=clusters, epochs=epochs,
                       datasets=datasets, noise_mode=noise_mode, density=0.0, transfer=float(transfer))
    for d in data["datasets"]:
        d["samples"] = int(rng.integers(5_000, 80_001))
        d["quality"] = float(round(rng.uniform(0.3, 1.0), 3))
    return finish(data, "datasets")


@register_family("noisy-epoch", params=NOISY, test_params={"epochs": 5},
                 description="per_epoch where best-exp is not optimal: a fast but very noisy learner")
def noisy_epoch_family(seed: int = 0, epochs: int = 12, var: float = 0.6, quantile: float = 0.99) -> Instance:
    """Model m0 learns fastest in expectation but its factor has variance ``var``; m1 is steady."""
    params = {"e": epochs, "v": float(var), "q": float(quantile)}
    data, rng = _draft("noisy-epoch", seed, params, models=2, clusters=2, levels=5, epochs=epochs,
                       noise_mode="per_epoch", density=1.0, quantile=float(quantile))
    m0, m1 = data["models"]
    m0["noise"] = {"family": "invgamma", "mean": 1.1, "var": float(var)}
    m1["noise"] = {"family": "gamma", "mean": 1.0, "var": 0.005}
    m1["progress"]["A"] = m0["progress"]["A"]  # same learning law: only the noise differs
    m1["work"] = m0["work"]  # same price per epoch: the choice is about the quantile only
    m1["size"] = m0["size"]
    return finish(data, "noisy-epoch")


@register_family("quantile", params=QUANTILE, test_params={"models": 2, "epochs": 6, "levels": 3, "gap": 1.0},
                 description="where the quantile pays: quantile level, noise spread, full-vs-pruned gap, penalties, slack")
def quantile_family(seed: int = 0, models: int = 3, epochs: int = 16, clusters: int = 2, levels: int = 4,
                    noise_mode: str = "per_run", quantile: float = 0.95, spread: float = 1.0, gap: float = 0.0,
                    penalty: float = 1.0, slack: float = TIME_SLACK) -> Instance:
    """A ``random`` instance with its noise, penalties and budget moved along the study's axes.

    Model i has pruning fraction f = i / (models - 1) (0 for m0, the full model). Its factor keeps
    ``random``'s law (inverse gamma) with mean ``mu (1 + 0.2 gap f)`` and standard deviation
    ``spread sd (1 + 2 gap f)`` (``mu``, ``sd`` drawn as in ``random``), so ``gap`` opens the paper's
    Fig. 2: the more pruned a model, the lower its expected loss (a larger mean improvement factor)
    and the wider its spread. Switch penalty
    locations are ``penalty`` x ``random``'s; the budget is ``slack`` x the reference plan's time.
    The base draws depend on the seed and the sizes only, so cells of one seed are paired.
    """
    params = {"m": models, "e": epochs, "c": clusters, "l": levels, "": noise_mode, "q": float(quantile),
              "sp": float(spread), "g": float(gap), "pen": float(penalty), "sl": float(slack)}
    data, _ = _draft("quantile", seed, params, models=models, clusters=clusters, levels=levels, epochs=epochs,
                     noise_mode=noise_mode, density=0.5, quantile=float(quantile))
    n = len(data["models"])
    for i, m in enumerate(data["models"]):
        f = i / (n - 1) if n > 1 else 0.0
        mean = m["noise"]["mean"] * (1.0 + 0.2 * gap * f)
        sd = float(np.sqrt(m["noise"]["var"])) * spread * (1.0 + 2.0 * gap * f)
        m["noise"] = {"family": "invgamma", "mean": round(float(mean), 6), "var": round(sd * sd, 8)}
    for sw in data["switches"]:
        sw["penalty"]["loc"] = round(float(sw["penalty"]["loc"] * penalty), 6)
    return finish(data, "quantile", slack=float(slack))
