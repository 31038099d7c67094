"""``deplbench export`` round trip through highspy and ``deplbench solve`` end to end for the MILPs."""

from __future__ import annotations

import json

import highspy
import pytest
from test_saa_milp import small

from deplbench.cli import main
from deplbench.cli.export import export_model
from deplbench.instances.io import save_instance
from deplbench.registry import solve
from deplbench.results import Status


@pytest.fixture
def inst_file(tmp_path):
    inst = small(K=4, transfer=False, name="cli-small")
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    return inst, path


def _read_back(path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize("formulation", ["aggregated", "time_indexed"])
def test_export_round_trip(inst_file, tmp_path, suffix, formulation):
    inst, path = inst_file
    out = tmp_path / f"model{suffix}"
    rc = main(["export", str(path), "--formulation", formulation, "--scenarios", "25", "--seed", "3",
               "--datasets", "d1", "--out", str(out)])
    assert rc == 0 and out.is_file()
    # the only selection with transfer costs 0 and the best g is d1 alone or d1+d2: compare per selection
    res = solve("milp-highs-direct", inst, {"scenarios": 25, "seed": 3, "mip_gap": 0.0})
    assert res.status == Status.OPTIMAL
    exported = _read_back(out)
    assert exported >= res.objective - 1e-6 * res.objective  # one selection of the min over selections
    if res.plan.datasets == ("d1",):
        assert exported == pytest.approx(res.objective, rel=1e-6)


def test_export_full_selection_matches_solver(tmp_path):
    inst = small(K=4, transfer=False, name="one-ds")
    d = inst.to_json_dict()
    d["datasets"] = d["datasets"][:1]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(d))
    out = tmp_path / "m.mps"
    assert main(["export", str(path), "--scenarios", "30", "--out", str(out)]) == 0
    from deplbench.instances.io import load_instance

    res = solve("milp-highs-direct", load_instance(path), {"scenarios": 30, "mip_gap": 0.0})
    assert res.status == Status.OPTIMAL
    assert _read_back(out) == pytest.approx(res.objective, rel=1e-6)


def test_export_bad_input(inst_file, tmp_path, capsys):
    _, path = inst_file
    assert main(["export", str(path), "--out", str(tmp_path / "m.txt")]) == 2
    assert main(["export", str(path), "--datasets", "nope", "--out", str(tmp_path / "m.lp")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("deplbench: error:") for e in err)
    assert not (tmp_path / "m.lp").exists()
    with pytest.raises(Exception, match="formulation"):
        export_model(small(), tmp_path / "x.lp", formulation="nope")


def test_solve_cli_end_to_end(inst_file, tmp_path, capsys):
    inst, path = inst_file
    out = tmp_path / "plan.json"
    rc = main(["solve", str(path), "--solver", "milp-highs-direct", "--set", "scenarios=30",
               "--set", "formulation=time_indexed", "--set", "mip_gap=0", "--seed", "2", "--out", str(out)])
    assert rc == 0
    plan = json.loads(out.read_text())
    assert plan["status"] == "optimal" and plan["segments"]
    assert plan["solver"]["name"] == "milp-highs-direct"
    assert plan["solver"]["params"]["scenarios"] == 30
    assert (plan["problem"], plan["scenarios"], plan["scenario_seed"]) == ("saa", 30, 2)
    verdict = plan["certified"]  # the evaluator's, for the true problem
    assert (f"milp-highs-direct: {verdict} for the true problem (optimal for its 30-scenario sample, seed 2)"
            in capsys.readouterr().out)
    res = solve("milp-scip", inst, {"scenarios": 30, "seed": 2, "mip_gap": 0.0})
    assert plan["objective"] == pytest.approx(res.objective, rel=1e-6)


def test_solve_cli_infeasible_exits_zero(tmp_path):
    path = tmp_path / "hopeless.json"
    save_instance(small(target=1.0, K=3, name="hopeless"), path)
    out = tmp_path / "plan.json"
    assert main(["solve", str(path), "--solver", "milp-highs-direct", "--set", "scenarios=20",
                 "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["status"] == "infeasible" and plan["segments"] == []


def test_export_fixed_format_says_what_it_rounded(inst_file, tmp_path, capsys):
    _, path = inst_file
    free, fixed = tmp_path / "free.mps", tmp_path / "fixed.mps"
    assert main(["export", str(path), "--scenarios", "20", "--out", str(free)]) == 0
    assert main(["export", str(path), "--scenarios", "20", "--format", "fixed", "--out", str(fixed)]) == 0
    out = capsys.readouterr().out
    assert "rounded to 12 characters" in out and "--format free writes them exactly" in out
    assert free.read_text().startswith("NAME cli-small\n")
    assert fixed.read_text().startswith("NAME          cli-small\n")
    assert _read_back(fixed) == pytest.approx(_read_back(free), rel=1e-9)
    assert main(["export", str(path), "--format", "fixed", "--out", str(tmp_path / "m.lp")]) == 2
    assert "--format" in capsys.readouterr().err and not (tmp_path / "m.lp").exists()
