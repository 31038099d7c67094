"""Hand-written hostile values over every command: ranges, caps, plan and instance fields, configs.

Each case is exit 2 with one stderr line naming the field (or, where marked, a correct normal
result), no traceback, nothing written.
"""

from __future__ import annotations

import copy
import json
import warnings

import pytest

from deplbench.cli import main
from hostile.kit import assert_one_line, fixtures

I = "{inst}"  # noqa: E741 - placeholders
P = "{plan}"
C = "{curves}"

#: (id, argv, the token the one line must name)
CLI_CASES = [
    ("solve-eta0", ["solve", I, "--solver", "depl", "--set", "eta=0", "--out", "{o}"], "eta"),
    ("solve-eta-neg", ["solve", I, "--solver", "depl", "--set", "eta=-5", "--out", "{o}"], "eta"),
    ("solve-tl-neg", ["solve", I, "--solver", "depl", "--set", "time_limit=-1", "--out", "{o}"], "time_limit"),
    ("solve-tl-inf", ["solve", I, "--solver", "depl", "--set", "time_limit=inf", "--out", "{o}"], "time_limit"),
    ("solve-threads0", ["solve", I, "--solver", "depl", "--set", "threads=0", "--out", "{o}"], "threads"),
    ("solve-threads-neg", ["solve", I, "--solver", "depl", "--set", "threads=-2", "--out", "{o}"], "threads"),
    ("solve-scenarios-cap", ["solve", I, "--solver", "milp-highs", "--set", "scenarios=1000000000", "--out", "{o}"],
     "scenarios"),
    ("solve-unknown-param", ["solve", I, "--solver", "depl", "--set", "nokey=1", "--out", "{o}"], "nokey"),
    ("solve-set-no-eq", ["solve", I, "--solver", "depl", "--set", "eta", "--out", "{o}"], "--set"),
    ("solve-time-limit-neg", ["solve", I, "--solver", "depl", "--time-limit", "-1", "--out", "{o}"], "--time-limit"),
    ("solve-time-limit-nan", ["solve", I, "--solver", "depl", "--time-limit", "nan", "--out", "{o}"], "--time-limit"),
    ("solve-time-limit-inf", ["solve", I, "--solver", "depl", "--time-limit", "inf", "--out", "{o}"], "--time-limit"),
    ("solve-memory-inf", ["solve", I, "--solver", "depl", "--memory-limit", "inf", "--out", "{o}"], "--memory-limit"),
    ("solve-seed-neg", ["solve", I, "--solver", "depl", "--seed", "-1", "--out", "{o}"], "--seed"),
    ("solve-unknown-solver", ["solve", I, "--solver", "nope", "--out", "{o}"], "nope"),
    ("generate-models-cap", ["generate", "random", "--set", "models=1000000", "--out", "{o}"], "models"),
    ("generate-epochs-cap", ["generate", "random", "--set", "epochs=100000000", "--out", "{o}"], "epochs"),
    ("generate-epochs0", ["generate", "random", "--set", "epochs=0", "--out", "{o}"], "epochs"),
    ("generate-density-nan", ["generate", "random", "--set", "density=nan", "--out", "{o}"], "density"),
    ("generate-unknown", ["generate", "nope", "--out", "{o}"], "nope"),
    ("generate-target-neg", ["generate", "paper-alexnet", "--set", "target=-1", "--out", "{o}"], "target"),
    ("generate-knapsack-cap", ["generate", "knapsack", "--set", "items=100000", "--out", "{o}"], "items"),
    ("evaluate-samples-cap", ["evaluate", I, P, "--samples", "100000000"], "--samples"),
    ("evaluate-samples-neg", ["evaluate", I, P, "--samples", "-1"], "--samples"),
    ("export-scenarios-cap", ["export", I, "--scenarios", "1000000000", "--out", "{o}.lp"], "--scenarios"),
    ("export-scenarios0", ["export", I, "--scenarios", "0", "--out", "{o}.lp"], "--scenarios"),
    ("export-suffix", ["export", I, "--out", "{o}.txt"], "--out"),
    ("calibrate-bootstrap-cap", ["calibrate", C, "--bootstrap", "1000000000", "--out", "{o}"], "--bootstrap"),
    ("calibrate-df-nan", ["calibrate", C, "--penalty-df", "nan", "--out", "{o}"], "--penalty-df"),
    ("calibrate-df-neg", ["calibrate", C, "--penalty-df", "-1", "--out", "{o}"], "--penalty-df"),
    ("calibrate-df-inf", ["calibrate", C, "--penalty-df", "inf", "--out", "{o}"], "--penalty-df"),
    ("calibrate-bounds-inf", ["calibrate", C, "--penalty-bounds=-inf,inf", "--out", "{o}"], "--penalty-bounds"),
    ("calibrate-bounds-order", ["calibrate", C, "--penalty-bounds=2,1", "--out", "{o}"], "--penalty-bounds"),
    ("run-workers0", ["run", "{cfg}", "--workers", "0", "--out", "{o}"], "--workers"),
    ("run-unknown-config", ["run", "no-such-config", "--out", "{o}"], "no-such-config"),
]


@pytest.fixture
def env(tmp_path):
    files = fixtures(tmp_path)
    return tmp_path, {"inst": files["inst"], "plan": files["plan"], "curves": files["curves"], "cfg": files["cfg"],
                      "o": tmp_path / "out-file"}


def _fill(argv, subst):
    return [a.format(**subst) if "{" in a else a for a in argv]


@pytest.mark.parametrize("argv,token", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_values(env, capsys, argv, token):
    d, subst = env
    assert_one_line(_fill(argv, subst), capsys, token, watch=(d,))


#: config texts (``run --dry-run`` and ``run``): (id, harness table, solver params, instance params, token)
CONFIG_CASES = [
    ("eta0", "", "eta = 0", "", "eta"),
    ("time-limit-neg", "", "time_limit = -1.0", "", "time_limit"),
    ("threads0", "", "threads = 0", "", "threads"),
    ("memory-inf", "memory_limit_mb = inf", "", "", "memory_limit_mb"),
    ("memory-neg", "memory_limit_mb = -1.0", "", "", "memory_limit_mb"),
    ("grace-neg", "grace = -1.0", "", "", "grace"),
    ("grace-nan", "grace = nan", "", "", "grace"),
    ("eval-samples-cap", "eval_samples = 1000000000000", "", "", "eval_samples"),
    ("oos-samples-cap", "oos_samples = 1000000000000", "", "", "oos_samples"),
    ("repetitions0", "repetitions = 0", "", "", "repetitions"),
    ("repetitions-cap", "repetitions = 1000000000", "", "", "repetitions"),
    ("family-size-cap", "", "", "models = 1000000", "models"),
    ("family-epochs-cap", "", "", "epochs = 100000000", "epochs"),
    ("unknown-param", "", "nokey = 1", "", "nokey"),
    ("wrong-type", "", "eta = \"x\"", "", "eta"),
]


@pytest.mark.parametrize("dry", (True, False))
@pytest.mark.parametrize("harness,sparams,iparams,token", [c[1:] for c in CONFIG_CASES],
                         ids=[c[0] for c in CONFIG_CASES])
def test_config_values(tmp_path, capsys, dry, harness, sparams, iparams, token):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[harness]\n{harness}\n[[experiments]]\nname = \"t\"\n[[experiments.instances]]\n"
                   f"family = \"random\"\nparams = {{ epochs = 4{', ' + iparams if iparams else ''} }}\n"
                   f"[[experiments.solvers]]\nname = \"depl\"\nparams = {{ {sparams} }}\n")
    argv = ["run", cfg, "--out", tmp_path / "out", "--quiet", "--no-report"] + (["--dry-run"] if dry else [])
    assert_one_line(argv, capsys, token, watch=(tmp_path,))
    assert not (tmp_path / "out").exists()


#: (id, which file, JSON path as keys, value, token)
FILE_CASES = [
    ("plan-epochs-cap", "plan", ("segments", 0, "epochs"), 10**12, "$.segments[0].epochs"),
    ("plan-epochs0", "plan", ("segments", 0, "epochs"), 0, "$.segments[0].epochs"),
    ("plan-epochs-float", "plan", ("segments", 0, "epochs"), 2.5, "$.segments[0].epochs"),
    ("plan-level-str", "plan", ("segments", 0, "level"), "0.5", "$.segments[0].level"),
    ("plan-model-unknown", "plan", ("segments", 0, "model"), "nope", "$.segments[0].model"),
    ("plan-cluster-unknown", "plan", ("segments", 0, "cluster"), "nope", "$.segments[0].cluster"),
    ("plan-problem", "plan", ("problem",), "other", "$.problem"),
    ("plan-scenarios-neg", "plan", ("scenarios",), -1, "$.scenarios"),
    ("plan-certified", "plan", ("certified",), "maybe", "$.certified"),
    ("plan-status", "plan", ("status",), "great", "$.status"),
    ("plan-unknown-key", "plan", ("extra",), 1, "$.extra"),
    ("plan-datasets-type", "plan", ("datasets",), "d0", "$.datasets"),
    ("inst-unit-cost-huge", "inst", ("clusters", 0, "unit_cost"), 1e308, "$.clusters[0].unit_cost"),
    ("inst-work-tiny", "inst", ("models", 0, "work"), 1e-300, "$.models[0].work"),
    ("inst-A-huge", "inst", ("models", 0, "progress", "A"), 1e308, "$.models[0].progress.A"),
    ("inst-size-huge", "inst", ("models", 0, "size"), 1e300, "$.models[0].size"),
    ("inst-max-epochs-cap", "inst", ("max_epochs",), 10**9, "$.max_epochs"),
    ("inst-capacity-tiny", "inst", ("clusters", 0, "capacity"), 1e-300, "$.clusters[0].capacity"),
    ("inst-bandwidth-tiny", "inst", ("clusters", 0, "bandwidth"), 1e-300, "$.clusters[0].bandwidth"),
    ("inst-samples-cap", "inst", ("datasets", 0, "samples"), 10**18, "$.datasets[0].samples"),
    ("inst-target-huge", "inst", ("loss", "target"), -1e300, "$.loss.target"),
    ("inst-initial-huge", "inst", ("loss", "initial"), 1e300, "$.loss.initial"),
    ("inst-budget-huge", "inst", ("time_budget",), 1e300, "$.time_budget"),
    ("inst-nodes-cap", "inst", ("clusters", 0, "nodes"), 10**12, "$.clusters[0].nodes"),
    ("inst-var-zero", "inst", ("models", 0, "noise", "var"), 0.0, "$.models[0].noise"),
    ("inst-var-neg", "inst", ("models", 0, "noise", "var"), -1.0, "$.models[0].noise.var"),
    ("inst-var-huge", "inst", ("models", 0, "noise", "var"), 1e300, "$.models[0].noise.var"),
    ("inst-mean-zero", "inst", ("models", 0, "noise", "mean"), 0.0, "$.models[0].noise.mean"),
    ("inst-mean-tiny", "inst", ("models", 0, "noise", "mean"), 1e-300, "$.models[0].noise.mean"),
    ("inst-quantile-one", "inst", ("loss", "quantile"), 1.0, "$.loss.quantile"),
]


def _set(obj, keys, value):
    for k in keys[:-1]:
        obj = obj[k]
    obj[keys[-1]] = value


def _file_combos():
    """(command, case): ``validate`` cannot resolve ids (no instance), ``solve`` reads no plan."""
    for c in FILE_CASES:
        ids_only = c[2][-1] in ("model", "cluster")
        for command in ("validate", "evaluate", "solve"):
            if (command == "validate" and ids_only) or (command == "solve" and c[1] == "plan"):
                continue
            yield pytest.param(command, *c[1:], id=f"{command}-{c[0]}")


@pytest.mark.parametrize("command,which,keys,value,token", list(_file_combos()))
def test_file_values(env, capsys, command, which, keys, value, token):
    d, subst = env
    data = json.loads(subst[which].read_text())
    _set(data, keys, value)
    bad = d / f"bad-{which}.json"
    bad.write_text(json.dumps(data))
    inst = bad if which == "inst" else subst["inst"]
    plan = bad if which == "plan" else subst["plan"]
    argv = {"validate": ["validate", bad], "evaluate": ["evaluate", inst, plan, "--samples", "0"],
            "solve": ["solve", bad, "--solver", "depl", "--out", d / "p.json"]}[command]
    line = assert_one_line(argv, capsys, token, watch=(d,))
    assert str(bad) in line


@pytest.mark.parametrize("family", ("invgamma", "gamma", "lognormal", "normal"))
@pytest.mark.parametrize("mean,var", ((1.0, 1e-12), (1.0, 1e12), (1e-12, 1e-12), (1e12, 1e12)))
def test_degenerate_noise_laws_are_exact_and_quiet(env, capsys, family, mean, var):
    """Extreme variances (at the caps) evaluate normally: one answer, no warning, no error line."""
    d, subst = env
    data = json.loads(subst["inst"].read_text())
    for m in data["models"]:
        m["noise"] = {"family": family, "mean": mean, "var": var}
    p = d / "law.json"
    p.write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rc = main(["evaluate", str(p), str(subst["plan"]), "--samples", "200", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    ev = json.loads(out)
    assert isinstance(ev["feasible"], bool)
    assert all(v is None or isinstance(v, (int, float, str, list, bool, dict)) for v in ev.values())


def test_extreme_instance_bruteforce_and_evaluate_agree(env, capsys):
    """At the magnitude caps, bruteforce's claim survives the evaluator's re-check (no ``error``)."""
    from deplbench.instances.io import load_instance
    from deplbench.registry import solve

    d, subst = env
    base = json.loads(subst["inst"].read_text())
    for scale in (1e-6, 1e6):
        data = copy.deepcopy(base)
        for c in data["clusters"]:
            c["unit_cost"] = min(c["unit_cost"] * scale, 1e12)
        data["metadata"] = {}
        p = d / "x.json"
        p.write_text(json.dumps(data))
        inst = load_instance(p)
        for name in ("bruteforce", "milp-highs-direct"):
            res = solve(name, inst, {"time_limit": 30, "scenarios": 50} if name != "bruteforce" else {})
            assert res.status.value != "error", (name, scale, res.message)
            if name == "bruteforce" and res.status.has_solution:
                assert res.evaluation.feasible and res.objective is not None
