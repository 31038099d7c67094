"""Smoke tests of the issue-28 benchmark scripts: they run, and their ratios are the stated arithmetic.

No timing is asserted (speed belongs to the scripts themselves).
"""

from __future__ import annotations

import math

import pytest

from deplbench.benchmarks.perf import depl as bench_depl
from deplbench.benchmarks.perf import exact as bench_exact
from deplbench.benchmarks.perf import saa_scale
from deplbench.registry import solve
from deplbench.results import Status


def test_speed_paper_is_a_ratio_of_geometric_means(capsys):
    rows = [{"opt": 10.0, "t_opt": 1.0, "t_depl": 0.1}, {"opt": 20.0, "t_opt": 4.0, "t_depl": 0.1},
            {"opt": math.inf, "t_opt": math.nan, "t_depl": 1.0}]  # no optimum: left out
    bench_depl.speed_paper(rows)
    out = capsys.readouterr().out
    assert "(2, runtime_s)" in out and "20.0x (aim >= 10x: met)" in out and "10.0x to 40.0x" in out
    assert bench_depl.geomean([1.0, 4.0]) == pytest.approx(2.0)


def test_speed_random_runs_exact_and_depl_on_both_modes(capsys):
    bench_depl.speed_random(1, 120.0)
    out = capsys.readouterr().out
    assert out.count("random-per_run") == 1 and out.count("random-per_epoch") == 1
    assert "exact geometric mean" in out and "aim >= 20x" in out


@pytest.mark.slow
def test_saa_scale_rung_reports_the_times_and_the_plain_check():
    line, res = saa_scale.rung("per_epoch", 0, 60, 120.0, "milp-highs-direct")
    assert res.status == Status.OPTIMAL and "optimal" in line
    assert all(f" {k} " in line for k in ("prep", "build", "solve"))
    line, plain = saa_scale.rung("per_epoch", 0, 60, 120.0, "milp-highs-direct", saa_scale.PLAIN)
    assert "[plain]" in line and plain.extra["bigm"] == "worst" and plain.extra["cuts"] == "none"
    assert plain.status == Status.OPTIMAL and plain.objective == pytest.approx(res.objective, rel=1e-6)


def _record(inst, ref: dict, tier: str = "hard") -> dict:
    meta = inst.metadata
    return {"name": inst.name, "family": meta["family"], "params": meta["params"], "seed": meta["seed"],
            "tier": tier, "reference": ref}


def test_library_close_proves_checks_and_stops_on_a_contradiction(tmp_path, capsys):
    import json

    from deplbench.benchmarks.perf import library_close
    from deplbench.registry import generate

    kp = generate("knapsack", {"items": 3, "capacity": 12, "max_weight": 5, "max_value": 10}, 2)
    rnd = generate("random", {"models": 2, "epochs": 5, "clusters": 2, "levels": 3}, 1)
    exact = solve("exact", rnd, {"time_limit": 60.0})
    assert exact.status == Status.OPTIMAL
    opt = float(exact.evaluation.cost)
    recs = [_record(kp, {"kind": "unkn"}), _record(rnd, {"kind": "best", "value": 2 * opt, "bound": 0.5 * opt}),
            _record(rnd, {"kind": "opt", "value": opt}, tier="easy")]
    recs[2]["name"] = rnd.name + "-copy"  # not hard: left out by default
    (tmp_path / "manifest.json").write_text(json.dumps({"version": "t", "instances": recs}))
    library_close.main([str(tmp_path), "--work", "100000"])
    out = capsys.readouterr().out
    assert "| knapsack-dp |" in out and f"| exact | optimal | {opt:.4f} |" in out and "-copy" not in out
    recs[1]["reference"] = {"kind": "best", "value": 0.9 * opt, "bound": 0.5 * opt}  # a best below the optimum
    (tmp_path / "manifest.json").write_text(json.dumps({"version": "t", "instances": recs}))
    with pytest.raises(SystemExit, match="the library says"):
        library_close.main([str(tmp_path), rnd.name])
    assert library_close._contradicts({"kind": "inf"}, "optimal", 3.0)
    assert library_close._contradicts({"kind": "best", "value": 5.0, "bound": 4.0}, "optimal", 3.9)
    assert not library_close._contradicts({"kind": "best", "value": 5.0, "bound": 4.0}, "optimal", 4.5)
    assert not library_close._contradicts({"kind": "best", "value": 5.0}, "timeout", None)


def test_exact_script_passes_its_sets_and_reports_the_work(capsys):
    """``--set`` reaches ``exact`` (a work limit far below the proof stops it, deterministically) and
    the row's work column is the run's; a bad ``--set`` is one line with exit status 2, before any run."""
    bench_exact.main(["--tier", "default", "--seeds", "1", "--modes", "per_run", "--set", "max_work=300",
                      "--set", "cover=false"])
    head, _, row = capsys.readouterr().out.strip().splitlines()
    cols = [c.strip() for c in head.strip("|").split("|")]
    vals = dict(zip(cols, (c.strip() for c in row.strip("|").split("|")), strict=True))
    assert vals["status"] == "timeout" and vals["cover_brackets"] == "0"
    assert 300 <= float(vals["work"]) < 1000  # stopped at the first check past the limit
    bad_runs = [["--seeds", "1", "--set", bad] for bad in ("cover=maybe", "covr=1", "cover")]
    bad_runs += [["--seeds", "1", "--first-seed", "8"], ["--first-seed", "-1"]]  # empty or negative seed range
    for bad in bad_runs:
        with pytest.raises(SystemExit) as exc:
            bench_exact.main(["--tier", "default", *bad])
        assert exc.value.code == 2
    err = capsys.readouterr()
    assert err.out == "" and len(err.err.strip().splitlines()) == len(bad_runs)
    assert "--seeds 9 --first-seed 8 for seed 8 alone" in err.err


def test_block_probe_never_undercuts_a_proven_optimum_and_certifies_its_plan(tmp_path, capsys):
    """The deeper scan's plans are certified: its cheapest is non-increasing over the stages, never
    below ``exact``'s proven optimum, and the evaluator accepts the plan it prints."""
    import re

    from deplbench.benchmarks.perf import block_probe
    from deplbench.instances.io import save_instance
    from deplbench.registry import generate

    inst = generate("random", {"models": 3, "epochs": 12}, 2)
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    opt = solve("exact", inst, {"time_limit": 120.0})
    assert opt.status == Status.OPTIMAL
    assert block_probe.main([str(path), "--step", "3", "--time-limit", "300"]) == 0
    out = capsys.readouterr().out
    costs = [float(x) for x in re.findall(r"cheapest +([0-9.]+)", out)]
    assert len(costs) == 4 and costs == sorted(costs, reverse=True)
    assert costs[-1] >= opt.objective - 5e-5  # printed to 4 decimals
    assert f"evaluator: feasible, cost {costs[-1]:.4f}" in out
