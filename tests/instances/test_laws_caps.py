"""No numpy warning reaches a user from a valid instance; a law below the caps is refused (issue 30, item 4)."""

from __future__ import annotations

import itertools
import json
import warnings

import pytest

from deplbench.cli import main
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.io import instance_from_dict
from deplbench.registry import generate, solve

BASE = generate("random", {"epochs": 8}, seed=0).model_dump(by_alias=True, mode="json")


def _with_noise(family: str, mean: float, var: float) -> dict:
    return {**BASE, "models": [{**m, "noise": {"family": family, "mean": mean, "var": var}} for m in BASE["models"]]}


@pytest.mark.slow
@pytest.mark.parametrize("family", ["invgamma", "gamma", "lognormal", "normal"])
def test_laws_at_the_magnitude_caps_raise_no_numpy_warning(family):
    for mean, var in itertools.product((1e-12, 1.0, 1e15), (1e-12, 1e12, 1e15)):
        inst = instance_from_dict(_with_noise(family, mean, var), "caps")
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for method in ("depl", "best-exp"):
                res = solve(method, inst, {"time_limit": 20})
                assert "Warning" not in (res.message or ""), (family, mean, var, method, res.message)
                if res.plan is not None:
                    evaluate(inst, res.plan, samples=500)


def test_a_variance_below_the_caps_is_refused_with_one_line(tmp_path, capsys):
    path = tmp_path / "narrow.json"
    path.write_text(json.dumps(_with_noise("invgamma", 1.0, 1e-300)))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "var" in err[0] and "constant" in err[0], err
