"""What the library holds: a versioned list of (family, parameters, seed), drawn from every family.

Each registered family contributes through a provider below; a family registered later
without a provider contributes its ``test_params`` and its defaults at seeds 0..2 (a family
whose generation needs input, like ``calibrated`` without a calibration file, is skipped and
the build says so). The list is part of the library's version: change it, bump
:data:`LIBRARY_VERSION`. Tiers are not declared here: the build grades them by deterministic work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: version of the instance list, the file layout and the reference rules
LIBRARY_VERSION = "2.4"  # what each version changed: docs/history/library.md, "Library versions"
#: scenario sizes and seed of the SAA files (the seed is in each file's name)
SCENARIOS = (200, 1000)
SCENARIO_SEED = 0
FORMULATIONS = ("aggregated", "time_indexed")
TIERS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class Entry:
    """One instance of the library: ``params`` is a sorted tuple of (name, value)."""

    family: str
    params: tuple[tuple[str, object], ...]
    seed: int
    quick: bool = False
    #: multiplier of the exact reference run's limits (work limit and its safety time limit)
    budget: int = 1

    @property
    def param_dict(self) -> dict:
        return dict(self.params)


def _e(family: str, seed: int = 0, quick: bool = False, budget: int = 1, **params) -> Entry:
    return Entry(family, tuple(sorted(params.items())), seed, quick, budget)


#: (noise mode, target) of the paper instances
PAPER_TARGETS = (("per_run", 3), ("per_run", 5), ("per_run", 9), ("per_run", 13),
                 ("per_epoch", 5), ("per_epoch", 9), ("per_epoch", 13))


def _paper(family: str) -> list[Entry]:
    return [_e(family, 0, noise_mode=mode, target=float(t)) for mode, t in PAPER_TARGETS]


#: (models, clusters, levels, datasets, epochs, transfer, seeds): both noise modes each. Tiny shapes
#: are the quick subset; the enumeration proves the small ones at once, refuses the large ones (open).
RANDOM_SHAPES = (
    (2, 2, 3, 1, 5, 0.0, (1, 2)), (2, 3, 3, 2, 5, 5.0, (1, 2)), (3, 2, 3, 1, 5, 0.0, (1, 2)),
    (2, 2, 4, 2, 10, 0.0, (1, 2)), (2, 3, 5, 3, 12, 10.0, (1,)), (3, 3, 4, 2, 10, 5.0, (1, 2)),
    (3, 3, 6, 1, 14, 0.0, (1,)), (4, 2, 4, 1, 10, 0.0, (1,)),
    (4, 4, 10, 2, 10, 0.0, (1,)), (5, 3, 8, 1, 9, 10.0, (1,)), (6, 2, 5, 1, 7, 0.0, (1,)),
    (3, 4, 10, 3, 12, 5.0, (1,)),
    (3, 2, 3, 1, 14, 0.0, (1, 2)), (4, 3, 6, 2, 30, 5.0, (1,)), (6, 4, 10, 3, 60, 20.0, (1,)),
)
#: budgets above 1 of single shapes, by (shape index, noise mode): the 6-model 60-epoch shape with
#: transfer costs takes 1,986,156 units to prove in ``per_epoch``, hence 20 (3,000,000 units); in
#: ``per_run`` its 105 groups' region keys alone take about 560,000 units and exact proves it with
#: about 10.6 million, hence 100 (15,000,000) (docs/library.md, "The 6-model `per_run` shape";
#: the budgets of earlier versions are in docs/history/library.md)
RANDOM_BUDGETS = {(14, "per_epoch"): 20, (14, "per_run"): 100}
#: entries of the quick subset: (shape index, noise mode, seed)
RANDOM_QUICK = ((0, "per_run", 1), (0, "per_epoch", 1), (0, "per_run", 2), (0, "per_epoch", 2),
                (1, "per_run", 1), (1, "per_epoch", 1), (2, "per_run", 1), (12, "per_run", 1))


#: the medium candidates: the larger ``random`` tier of docs/exact.md (5 models, 4 clusters x 10
#: levels, 3 datasets, ``per_run``) at 45 and 50 epochs, whose proofs by ``exact`` took 70,000 to
#: 140,000 work units (97 to 173 s of CPU) in a screening of seeds 0-1 (60 epochs: 4 of 10 seeds
#: within 150 s): the build grades each (most above the easy line, some may be below or open)
MEDIUM_SHAPE = {"models": 5, "clusters": 4, "levels": 10, "datasets": 3, "noise_mode": "per_run"}
MEDIUM_EPOCHS = (45, 50)
MEDIUM_SEEDS = tuple(range(20))
#: their budget: five times the default work limit (750 s of the reference machine) and safety limit;
#: a budget of 2 leaves 9 of them open, whose proofs take up to 614,317 units
#: (docs/history/library.md, "Closing the open instances")
MEDIUM_BUDGET = 5
#: budgets of single medium candidates, by (epochs, seed), for proofs that need more than
#: MEDIUM_BUDGET: 50 epochs seed 1 (20: 3,000,000 units), 45 epochs seed 8 (45: 6,750,000), 45 epochs
#: seed 18 (80: 12,000,000) and 50 epochs seed 12 (8: 1,200,000). In the 2.4 build their proofs take
#: 938,204, 1,401,372, 2,323,769 and 868,201 units; each budget was set from the largest proof of
#: its entry in any version (docs/history/library.md, "Closing the open instances, version 2.2")
MEDIUM_BUDGETS = {(50, 1): 20, (45, 8): 45, (45, 18): 80, (50, 12): 8}
#: SAA files only for instances with at most this many (model, epoch) pairs: above it HiGHS's
#: root alone may outlast any safety limit, and a reference cut by the clock is not reproducible
SAA_MAX_MK = 200


def _random() -> list[Entry]:
    out = [_e("random", seed, False, MEDIUM_BUDGETS.get((e, seed), MEDIUM_BUDGET), epochs=e, **MEDIUM_SHAPE)
           for e in MEDIUM_EPOCHS for seed in MEDIUM_SEEDS]
    for i, (m, c, lv, d, e, tr, seeds) in enumerate(RANDOM_SHAPES):
        for mode in ("per_run", "per_epoch"):
            for seed in seeds:
                out.append(_e("random", seed, (i, mode, seed) in RANDOM_QUICK, RANDOM_BUDGETS.get((i, mode), 1),
                              models=m, clusters=c, levels=lv, datasets=d, epochs=e, noise_mode=mode, transfer=tr))
    return out


#: (items, capacity, max_weight, max_value, seeds, quick seeds)
KNAPSACK_SHAPES = ((2, 6, 4, 8, (1, 2, 3), (1, 2)), (3, 15, 10, 20, (1, 2, 3), (1,)), (3, 12, 5, 10, (1, 2), ()),
                   (6, 30, 10, 20, (1, 2), ()), (8, 60, 10, 20, (1, 2), ()), (10, 100, 10, 20, (1,), ()))


def _knapsack() -> list[Entry]:
    return [_e("knapsack", seed, seed in quick, items=n, capacity=cap, max_weight=w, max_value=v)
            for n, cap, w, v, seeds, quick in KNAPSACK_SHAPES for seed in seeds]


def _calibrated(calibration: str | None) -> list[Entry]:
    if not calibration:
        return []
    return [_e("calibrated", 0, params=calibration, noise_mode=mode, target_fraction=f)
            for mode in ("per_run", "per_epoch") for f in (0.3, 0.5, 0.7)]


#: families the library does not draw from: ``library`` reads the library itself; ``quantile`` (the
#: claims study's family) came after version 2.4's list was fixed, and a version's list does not move
NOT_DRAWN = ("library", "quantile")

PROVIDERS: dict[str, Callable[[str | None], list[Entry]]] = {
    "paper-alexnet": lambda _c: _paper("paper-alexnet"),
    "paper-mobilenet": lambda _c: _paper("paper-mobilenet"),
    "random": lambda _c: _random(),
    "knapsack": lambda _c: _knapsack(),
    "calibrated": _calibrated,
}


def entries(calibration: str | None = None, quick: bool = False) -> tuple[list[Entry], list[str]]:
    """The library's entries over every registered family, and notes on families left out."""
    from deplbench.registry import family_names, get_family

    out: list[Entry] = []
    notes: list[str] = []
    for fam in family_names():
        if fam in NOT_DRAWN:
            continue
        if fam in PROVIDERS:
            got = PROVIDERS[fam](calibration)
        else:  # a family added later: its test parameters and its defaults
            spec = get_family(fam)
            got = list(dict.fromkeys(_e(fam, s, s == 0 and p is spec.test_params, **p)
                                     for p in (spec.test_params, {}) for s in range(3)))
        if not got:
            notes.append(f"family '{fam}' left out (needs input: --calibration PARAMS.json)")
        out.extend(g for g in got if g.quick or not quick)
    return out, notes
