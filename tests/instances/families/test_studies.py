"""The study families of ``studies.py``: the ``quantile`` family's axes move the noise, penalties and budget as documented."""

from __future__ import annotations

import math

import pytest

from deplbench.errors import InputError
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.plan import Plan, Segment
from deplbench.registry import generate


def _ref(inst):
    m = inst.metadata
    return Plan(tuple(m["reference_datasets"]), tuple(Segment(**s) for s in m["reference_plan"]))


def test_defaults_are_feasible_and_keep_randoms_draws():
    inst = generate("quantile", {}, seed=3)
    base = generate("random", {"models": 3, "epochs": 16, "levels": 4}, seed=3)
    assert evaluate(inst, _ref(inst), samples=0).feasible
    assert [m.noise for m in inst.models] == [m.noise for m in base.models]  # spread 1, gap 0: random's noise
    assert inst.time_budget == pytest.approx(base.time_budget)


def test_axes_move_what_they_name():
    base = generate("quantile", {"models": 3}, seed=1)
    wide = generate("quantile", {"models": 3, "spread": 2.0, "gap": 1.0, "penalty": 3.0, "slack": 1.5,
                                 "quantile": 0.99}, seed=1)
    for i, (a, b) in enumerate(zip(base.models, wide.models, strict=True)):
        f = i / 2
        assert b.noise.mean == pytest.approx(a.noise.mean * (1 + 0.2 * f), rel=1e-5)
        assert math.sqrt(b.noise.var) == pytest.approx(math.sqrt(a.noise.var) * 2 * (1 + 2 * f), rel=1e-4)
    for a, b in zip(base.switches, wide.switches, strict=True):
        assert b.penalty.loc == pytest.approx(3 * a.penalty.loc, abs=1e-6)
    assert wide.time_budget == pytest.approx(base.time_budget * 1.5 / 1.2, rel=1e-5)
    assert wide.loss.quantile == 0.99 and evaluate(wide, _ref(wide), samples=0).feasible
    assert wide.name != base.name


@pytest.mark.parametrize("params", [{"spread": 0.0}, {"gap": -1.0}, {"slack": 1.0}, {"penalty": -0.5}])
def test_bad_axes(params):
    with pytest.raises(InputError):
        generate("quantile", params, seed=0)
