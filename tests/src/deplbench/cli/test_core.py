"""The core CLI: validate, evaluate, families, generate; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from deplbench.cli import main
from deplbench.instances.families.paper import canonical_names, load_paper, paper_instance
from deplbench.instances.io import load_instance, save_instance, save_plan

from builders import MODEL_EXAMPLE_PLAN


@pytest.fixture
def paper_files(tmp_path):
    inst = load_paper("paper-alexnet-per_run-t9")
    ip, pp = tmp_path / "inst.json", tmp_path / "plan.json"
    save_instance(inst, ip)
    save_plan(MODEL_EXAMPLE_PLAN.annotate(instance=inst.name, solver="hand", params={}), pp)
    return ip, pp


def _one_error_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_evaluate_json_keys(paper_files, capsys):
    ip, pp = paper_files
    assert main(["evaluate", str(ip), str(pp), "--json", "--samples", "2000", "--seed", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    for k in ("feasible", "violations", "cost", "compute_cost", "transfer_cost", "time", "loss_mean",
              "quantile_bounds", "mc_quantile", "mc_ci"):
        assert k in d
    assert d["feasible"] is True and d["violations"] == []
    assert d["cost"] == pytest.approx(1090.0)
    assert d["quantile_bounds"][0] <= d["quantile_bounds"][1] <= 9.0


def test_evaluate_table(paper_files, capsys):
    ip, pp = paper_files
    assert main(["evaluate", str(ip), str(pp), "--samples", "1000"]) == 0
    out = capsys.readouterr().out
    assert "feasible" in out and "1090" in out and "certified" in out


def test_validate_plan_and_instance(paper_files, capsys):
    ip, pp = paper_files
    assert main(["validate", str(ip)]) == 0
    assert main(["validate", str(pp)]) == 0
    assert capsys.readouterr().out.split() == ["ok", "ok"]


@pytest.mark.parametrize("edit, path, text", [
    (lambda p: p["segments"][0].update(model="resnet"), "$.segments[0].model", "unknown model"),
    (lambda p: p["segments"][1].update(cluster="C-class"), "$.segments[1].cluster", "unknown cluster"),
    (lambda p: p.update(datasets=["imagenet"]), "$.datasets[0]", "unknown dataset"),
    (lambda p: p["segments"][0].update(epochs=1.5), "$.segments[0].epochs", "integer"),
    (lambda p: p["segments"][0].update(epochs=0), "$.segments[0].epochs", "integer >= 1"),
    (lambda p: p["segments"][0].update(level="0.5"), "$.segments[0].level", "number"),
    (lambda p: p.update(status="great"), "$.status", "status"),
    (lambda p: p.update(segments=[]), "$.segments", "empty"),
    (lambda p: p.update(colour="red"), "$.colour", "unknown key"),
])
def test_bad_plans(paper_files, capsys, edit, path, text):
    ip, pp = paper_files
    d = json.loads(pp.read_text())
    edit(d)
    pp.write_text(json.dumps(d))
    assert main(["evaluate", str(ip), str(pp)]) == 2
    line = _one_error_line(capsys)
    assert f"{pp}: {path}:" in line and text in line


def test_plan_for_other_instance_is_a_warning(paper_files, capsys):
    ip, pp = paper_files
    d = json.loads(pp.read_text())
    d["instance"] = "something-else"
    pp.write_text(json.dumps(d))
    assert main(["evaluate", str(ip), str(pp), "--samples", "0"]) == 0
    assert "warning" in capsys.readouterr().err


def test_infeasible_plan_status_may_have_no_segments(paper_files, capsys):
    ip, pp = paper_files
    d = json.loads(pp.read_text())
    d.update(segments=[], status="infeasible")
    pp.write_text(json.dumps(d))
    assert main(["validate", str(pp)]) == 0


def test_families_and_generate(tmp_path, capsys):
    assert main(["families"]) == 0
    out = capsys.readouterr().out
    assert "paper-alexnet" in out and "paper-mobilenet" in out
    f = tmp_path / "g.json"
    assert main(["generate", "paper-mobilenet", "--set", "noise_mode=per_epoch", "--set", "target=7",
                 "--out", str(f)]) == 0
    inst = load_instance(f)
    assert inst.name == "paper-mobilenet-per_epoch-t7"
    assert inst.loss.target == 7.0 and inst.noise_mode == "per_epoch"


@pytest.mark.parametrize("argv, text", [
    (["generate", "paper-alexnet", "--set", "target=abc"], "target"),
    (["generate", "paper-alexnet", "--set", "colour=red"], "no parameter 'colour'"),
    (["generate", "paper-alexnet", "--set", "noise_mode=per_step"], "noise_mode"),
    (["generate", "nonexistent-family"], "unknown family"),
    (["generate", "paper-alexnet", "--set", "oops"], "key=value"),
    (["generate", "paper-alexnet", "--seed", "-3"], "--seed"),
])
def test_generate_bad_flags_write_nothing(tmp_path, capsys, argv, text):
    out = tmp_path / "never.json"
    assert main([*argv, "--out", str(out)]) == 2
    assert text in _one_error_line(capsys)
    assert not out.exists()


def test_evaluate_bad_flag(paper_files, capsys):
    ip, pp = paper_files
    assert main(["evaluate", str(ip), str(pp), "--samples", "many"]) == 2
    assert "--samples" in _one_error_line(capsys)


def test_solve_unknown_solver(paper_files, capsys, tmp_path):
    ip, _ = paper_files
    out = tmp_path / "p.json"
    assert main(["solve", str(ip), "--solver", "magic", "--out", str(out)]) == 2
    assert "unknown solver 'magic'" in _one_error_line(capsys)
    assert not out.exists()


def test_shipped_paper_instances_match_generator():
    names = canonical_names()
    assert len(names) == 20
    for name in names:
        inst = load_paper(name)
        _, net, mode, t = name.split("-")
        assert inst == paper_instance(net, mode, float(t[1:]))
        assert inst.cluster_ids == ("A-class", "B-class")
        assert inst.model_ids == ("fast-unsteady", "intermediate", "slow-steady")
        assert inst.dataset_ids == ("cifar10",)


def test_console_script_exit_status(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "deplbench.cli", "validate", str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
