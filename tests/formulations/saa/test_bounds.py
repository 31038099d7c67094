"""Statistical bounds of ``deplbench saa-bounds`` against the true optimum (``bruteforce``).

Over a few seeds, the replication lower bound must lie below the true optimum and the
Clopper-Pearson violation bound above the plan's certified violation probability at least as
often as the confidence says; the counts are asserted against a binomial tail (a 95% bound
that held in only 1 of 3 seeds would fail).
"""

from __future__ import annotations

import pytest
from scipy import stats

from deplbench.cli import main
from deplbench.formulations.saa.bounds import (
    clopper_pearson_upper,
    replication_lower_bound,
    saa_bounds,
)
from deplbench.instances.families.paper import load_paper
from deplbench.registry import solve
from deplbench.results import Status

FAST = {"bigm": "quantile", "fixing": "on", "cuts": "mixing", "start": False, "time_limit": 60.0}
SEEDS = (0, 1, 2)
CONF = 0.95


def test_clopper_pearson_and_rank():
    assert clopper_pearson_upper(0, 100, 0.95) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert clopper_pearson_upper(5, 5, 0.95) == 1.0
    L, v, rho = replication_lower_bound([5.0, 1.0, 3.0, 2.0, 4.0], N=50, allowed=0, eps=0.01, conf=0.95)
    assert rho == pytest.approx(0.99 ** 50) and L == 1 and v == 1.0  # P(Bin(5, rho) = 0) <= 0.05 only
    assert replication_lower_bound([1.0], N=50, allowed=0, eps=0.01, conf=0.95)[0] is None


@pytest.mark.slow
def test_bounds_cover_the_bruteforce_optimum():
    inst = load_paper("paper-alexnet-per_run-t9")
    truth = solve("bruteforce", inst, {"time_limit": 120.0})
    assert truth.status == Status.OPTIMAL
    opt = truth.objective
    lb_hits = viol_hits = 0
    for seed in SEEDS:
        rep = saa_bounds(inst, "milp-highs-direct", scenarios=20, replications=3, confidence=CONF,
                         eval_samples=20_000, seed=seed, params=FAST)
        assert rep.lower_bound is not None and rep.violation_exact is not None
        lb_hits += rep.lower_bound <= opt + 1e-6
        viol_hits += rep.violation_upper >= rep.violation_exact[1]
        assert rep.n_feasibility > rep.n_feasibility_zero_risk > 0
    # at least as often as 95% confidence makes likely: P(Bin(3, 0.95) < 2) < 0.01
    least = int(stats.binom.ppf(0.01, len(SEEDS), CONF))
    print(f"coverage over {len(SEEDS)} seeds: lower bound {lb_hits}, violation bound {viol_hits}")
    assert lb_hits >= least and viol_hits >= least


@pytest.mark.slow
def test_cli(capsys):
    path = "instances/data/paper-mobilenet-per_run-t13.json"
    code = main(["saa-bounds", path, "--replications", "1", "--scenarios", "10", "--eval-samples", "2000",
                 "--set", "bigm=quantile", "--set", "fixing=on"])
    out = capsys.readouterr().out
    assert code == 0 and "lower bound on the true optimum" in out and "exact certification" in out
    assert main(["saa-bounds", path, "--method", "depl"]) == 2
    assert "not an SAA method" in capsys.readouterr().err
