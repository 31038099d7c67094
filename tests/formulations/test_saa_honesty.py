"""An SAA plan that fails certification is labelled infeasible for the true problem everywhere.

On ``random`` (3 models, 8 epochs, seed 0, omega 0.95) the 2-scenario SAA optimum of
``milp-highs-direct`` violates the certified 0.95-quantile: optimal for its sample only.
"""

from __future__ import annotations

import json

from deplbench.benchmarks.api import run_config
from deplbench.cli import main

_SET = ["--set", "models=3", "--set", "epochs=8", "--set", "quantile=0.95"]


def test_plan_file_and_summary(tmp_path, capsys):
    inst, out = tmp_path / "i.json", tmp_path / "p.json"
    assert main(["generate", "random", *_SET, "--out", str(inst)]) == 0
    capsys.readouterr()
    assert main(["solve", str(inst), "--solver", "milp-highs-direct", "--set", "scenarios=2", "--seed", "0",
                 "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["status"] == "optimal"  # proven for its sample
    assert (plan["problem"], plan["scenarios"], plan["scenario_seed"]) == ("saa", 2, 0)
    assert plan["certified"] == "infeasible"
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("milp-highs-direct: infeasible for the true problem (optimal for its 2-scenario sample")
    assert "quantile" in line
    assert main(["validate", str(out)]) == 0  # the fields are part of the plan schema


def test_exact_and_heuristic_plans_state_the_true_problem(tmp_path):
    inst, out = tmp_path / "i.json", tmp_path / "p.json"
    assert main(["generate", "random", "--set", "epochs=4", "--set", "models=2", "--out", str(inst)]) == 0
    assert main(["solve", str(inst), "--solver", "depl", "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["problem"] == "true" and "scenarios" not in plan
    assert plan["certified"] == ("feasible" if plan["status"] in ("optimal", "feasible") else plan["certified"])


def test_report_shows_infeasible_not_optimal(tmp_path):
    cfg = tmp_path / "saa.toml"
    cfg.write_text('[harness]\ngrace = 5.0\neval_samples = 1000\noos_samples = 1000\n\n[[experiments]]\nname = "t"\n\n'
                   '[[experiments.instances]]\nfamily = "random"\nseeds = [0]\n'
                   'params = { models = 3, epochs = 8, quantile = 0.95 }\n\n'
                   '[[experiments.solvers]]\nname = "milp-highs-direct"\n'
                   'params = { scenarios = 2, time_limit = 30.0 }\n')
    res = run_config(cfg, tmp_path / "out", workers=1, progress=False, report=True)
    assert res.counts == {"ok": 1}
    md = (tmp_path / "out" / "report" / "report.md").read_text()
    status_table = md[md.index("Solver status per method"):].split("\n\n")[1]
    assert "infeasible (saa optimal)" in status_table
    assert "| optimal" not in status_table.replace("(saa optimal)", "")
