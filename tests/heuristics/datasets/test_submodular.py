"""Exact submodular minimisation (Fujishige-Wolfe) against brute force, |D| <= 12."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from deplbench.heuristics.datasets.submodular import (
    brute_force_minimum,
    minimise,
    ranked_minimisers,
    submodularity_violation,
)


def random_submodular(n: int, seed: int):
    """Cut function + modular + concave of modular: submodular by construction."""
    rng = np.random.default_rng(seed)
    W = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    W = W + W.T
    mod = rng.normal(0.0, 1.5, n)
    c = rng.random(n)

    def f(S: frozenset) -> float:
        s = np.zeros(n)
        s[list(S)] = 1.0
        return float(s @ W @ (1 - s) + mod @ s + 2.0 * np.sqrt(c @ s))

    return f


@pytest.mark.parametrize("n,seed", [(2, 0), (4, 1), (6, 2), (8, 3), (10, 4), (12, 5), (12, 6)])
def test_minimise_equals_brute_force(n, seed):
    f = random_submodular(n, seed)
    S, val = minimise(f, n)
    _, best = brute_force_minimum(f, n, nonempty=False)
    assert val == pytest.approx(best, abs=1e-9)
    assert f(S) == pytest.approx(val)


@pytest.mark.parametrize("n,seed", [(3, 7), (5, 8), (6, 9)])
def test_ranked_minimisers_enumerate_in_order(n, seed):
    f = random_submodular(n, seed)
    got = [v for _, v in ranked_minimisers(f, n)]
    every = sorted(f(frozenset(S)) for r in range(1, n + 1) for S in itertools.combinations(range(n), r))
    assert len(got) == 2**n - 1  # every non-empty set exactly once
    assert np.allclose(got, every)


def test_ranked_minimisers_first_is_nonempty_minimum():
    f = random_submodular(9, 11)
    S, v = next(ranked_minimisers(f, 9))
    _, best = brute_force_minimum(f, 9, nonempty=True)
    assert S and v == pytest.approx(best)


def test_violation_detects_supermodular_and_accepts_submodular():
    assert submodularity_violation(random_submodular(6, 3), 6) <= 1e-9
    square = lambda S: float(len(S)) ** 2  # noqa: E731 - supermodular: f(S+i+j) + f(S) - f(S+i) - f(S+j) = 2
    assert submodularity_violation(square, 5) == pytest.approx(2.0)
