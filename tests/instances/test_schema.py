"""Every validation rule of MODEL.md section 2 has a failing example with its message."""

from __future__ import annotations

import json

import pytest

from deplbench.cli import main

from builders import tiny_dict


def _set(path, value):
    def f(d):
        obj = d
        for p in path[:-1]:
            obj = obj[p]
        obj[path[-1]] = value
    return f


def _del(path):
    def f(d):
        obj = d
        for p in path[:-1]:
            obj = obj[p]
        del obj[path[-1]]
    return f


def _dup(key):
    return lambda d: d[key].append(dict(d[key][0]))


CASES = [
    # types: JSON numbers, not strings or booleans; integers where integers
    ("number-as-string", _set(["time_budget"], "50"), "$.time_budget", "number"),
    ("bool-as-number", _set(["loss", "initial"], True), "$.loss.initial", "number"),
    ("infinite", _set(["time_budget"], "__1e999__"), "$.time_budget", "finite"),
    ("nodes-float", _set(["clusters", 0, "nodes"], 2.0), "$.clusters[0].nodes", "integer"),
    ("max-epochs-float", _set(["max_epochs"], 6.5), "$.max_epochs", "integer"),
    ("samples-float", _set(["datasets", 0, "samples"], 10.0), "$.datasets[0].samples", "integer"),
    ("id-not-string", _set(["models", 0, "id"], 3), "$.models[0].id", "string"),
    # unknown keys, except inside metadata
    ("unknown-top", _set(["extra"], 1), "$.extra", "unknown key"),
    ("unknown-nested", _set(["clusters", 1, "speed"], 1), "$.clusters[1].speed", "unknown key"),
    ("missing", _del(["loss", "target"]), "$.loss.target", "missing"),
    ("schema", _set(["schema"], "depl-instance/2"), "$.schema", "schema"),
    ("metadata-not-object", _set(["metadata"], [1]), "$.metadata", "object"),
    # ids and references
    ("dup-cluster", _dup("clusters"), "$.clusters[2].id", "duplicate"),
    ("dup-dataset", _dup("datasets"), "$.datasets[2].id", "duplicate"),
    ("dup-model", _dup("models"), "$.models[2].id", "duplicate"),
    ("switch-unknown-from", _set(["switches", 0, "from"], "nope"), "$.switches[0].from", "unknown model"),
    ("switch-unknown-to", _set(["switches", 0, "to"], "nope"), "$.switches[0].to", "unknown model"),
    ("switch-self", _set(["switches", 0, "to"], "full"), "$.switches[0]", "change the model"),
    ("dup-switch", _dup("switches"), "$.switches[1]", "second switch"),
    ("transfer-unknown-dataset", _set(["transfer_costs", 0, "dataset"], "x"), "$.transfer_costs[0].dataset",
     "unknown dataset"),
    ("transfer-unknown-cluster", _set(["transfer_costs", 0, "cluster"], "x"), "$.transfer_costs[0].cluster",
     "unknown cluster"),
    ("dup-transfer", _dup("transfer_costs"), "$.transfer_costs[2]", "second transfer"),
    # loss
    ("initial-nonpos", _set(["loss", "initial"], 0), "$.loss.initial", "greater than 0"),
    ("quantile-zero", _set(["loss", "quantile"], 0), "$.loss.quantile", "greater than 0"),
    ("quantile-one", _set(["loss", "quantile"], 1), "$.loss.quantile", "less than 1"),
    ("target-not-below", _set(["loss", "target"], 10.0), "$.loss", "below initial"),
    # positivity
    ("budget", _set(["time_budget"], 0), "$.time_budget", "greater than 0"),
    ("max-epochs", _set(["max_epochs"], 0), "$.max_epochs", "greater than or equal to 1"),
    ("nodes", _set(["clusters", 0, "nodes"], 0), "$.clusters[0].nodes", "greater than or equal to 1"),
    ("capacity", _set(["clusters", 0, "capacity"], 0), "$.clusters[0].capacity", "greater than 0"),
    ("bandwidth", _set(["clusters", 0, "bandwidth"], -1), "$.clusters[0].bandwidth", "greater than 0"),
    ("samples", _set(["datasets", 0, "samples"], 0), "$.datasets[0].samples", "greater than or equal to 1"),
    ("work", _set(["models", 0, "work"], 0), "$.models[0].work", "greater than 0"),
    ("size", _set(["models", 0, "size"], -0.1), "$.models[0].size", "greater than or equal to 0"),
    ("unit-cost", _set(["clusters", 0, "unit_cost"], -1), "$.clusters[0].unit_cost", "greater than or equal"),
    ("transfer-cost", _set(["transfer_costs", 0, "cost"], -1), "$.transfer_costs[0].cost", "greater than or equal"),
    ("quality-zero", _set(["datasets", 0, "quality"], 0), "$.datasets[0].quality", "greater than 0"),
    ("quality-above-one", _set(["datasets", 0, "quality"], 1.5), "$.datasets[0].quality", "less than or equal to 1"),
    # levels
    ("levels-empty", _set(["clusters", 0, "levels"], []), "$.clusters[0].levels", "empty"),
    ("level-zero", _set(["clusters", 0, "levels"], [0.0, 1.0]), "$.clusters[0].levels[0]", "greater than 0"),
    ("level-above-one", _set(["clusters", 0, "levels"], [0.5, 1.2]), "$.clusters[0].levels[1]", "less than or equal"),
    ("levels-order", _set(["clusters", 0, "levels"], [1.0, 0.5]), "$.clusters[0].levels", "strictly increasing"),
    ("levels-repeat", _set(["clusters", 0, "levels"], [0.5, 0.5]), "$.clusters[0].levels", "strictly increasing"),
    # progress and data effect
    ("A", _set(["models", 0, "progress", "A"], -1), "$.models[0].progress.A", "greater than or equal to 0"),
    ("p", _set(["models", 0, "progress", "p"], -0.5), "$.models[0].progress.p", "greater than or equal to 0"),
    ("B", _set(["models", 0, "progress", "B"], -1), "$.models[0].progress.B", "greater than -1"),
    ("reference", _set(["data_effect", "reference_samples"], 0), "$.data_effect.reference_samples", "greater than 0"),
    ("alpha", _set(["data_effect", "alpha"], -0.1), "$.data_effect.alpha", "greater than or equal to 0"),
    # noise
    ("noise-family", _set(["models", 0, "noise", "family"], "beta"), "$.models[0].noise.family", "invgamma"),
    ("noise-mean", _set(["models", 0, "noise", "mean"], 0), "$.models[0].noise.mean", "greater than 0"),
    ("noise-var-neg", _set(["models", 0, "noise", "var"], -1), "$.models[0].noise.var", "greater than or equal to 0"),
    ("noise-var-zero", _set(["models", 0, "noise", "var"], 0), "$.models[0].noise", "needs var > 0"),
    ("noise-var-absent", _del(["models", 0, "noise", "var"]), "$.models[0].noise", "needs var > 0"),
    ("constant-with-var", lambda d: d["models"][0].update(noise={"family": "constant", "mean": 1, "var": 0.1}),
     "$.models[0].noise", "constant noise"),
    ("noise-mode", _set(["noise_mode"], "per_step"), "$.noise_mode", "per_epoch"),
    # penalties
    ("penalty-family", _set(["switches", 0, "penalty", "family"], "cauchy"), "$.switches[0].penalty.family", "'t'"),
    ("t-df", _set(["switches", 0, "penalty", "df"], 0), "$.switches[0].penalty.df", "greater than 0"),
    ("t-no-df", _del(["switches", 0, "penalty", "df"]), "$.switches[0].penalty", "needs 'df'"),
    ("t-scale", _set(["switches", 0, "penalty", "scale"], 0), "$.switches[0].penalty.scale", "greater than 0"),
    ("t-no-loc", _del(["switches", 0, "penalty", "loc"]), "$.switches[0].penalty", "needs 'loc'"),
    ("t-with-value", _set(["switches", 0, "penalty", "value"], 0.2), "$.switches[0].penalty", "'value' is not"),
    ("normal-with-df", lambda d: d["switches"][0].update(
        penalty={"family": "normal", "df": 3, "loc": 0, "scale": 1, "low": 0, "high": 1}),
     "$.switches[0].penalty", "'df' is not"),
    ("constant-no-value", lambda d: d["switches"][0].update(penalty={"family": "constant", "low": 0, "high": 1}),
     "$.switches[0].penalty", "needs 'value'"),
    ("constant-outside", lambda d: d["switches"][0].update(
        penalty={"family": "constant", "value": 2, "low": 0, "high": 1}),
     "$.switches[0].penalty", "value (2"),
    ("low-above-high", _set(["switches", 0, "penalty", "low"], 2.0), "$.switches[0].penalty", "low (2.0) must be <= high"),
    ("no-low", _del(["switches", 0, "penalty", "low"]), "$.switches[0].penalty.low", "missing"),
    ("no-mass", lambda d: d["switches"][0].update(
        penalty={"family": "normal", "loc": 0, "scale": 0.01, "low": 5, "high": 6}),
     "$.switches[0].penalty", "1e-12"),
]


@pytest.mark.parametrize("name, mutate, path, text", CASES, ids=[c[0] for c in CASES])
def test_rule(tmp_path, capsys, name, mutate, path, text):
    d = tiny_dict()
    mutate(d)
    f = tmp_path / "inst.json"
    f.write_text(json.dumps(d).replace('"__1e999__"', "1e999"))  # a JSON number that overflows
    assert main(["validate", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"deplbench: error: {f}: {path}:"), lines[0]
    assert text.lower() in lines[0].lower(), lines[0]


def test_valid_instance_and_free_metadata(tmp_path, capsys):
    d = tiny_dict()
    d["metadata"] = {"anything": [1, {"nested": None}], "known_optimum": 3}
    f = tmp_path / "inst.json"
    f.write_text(json.dumps(d))
    assert main(["validate", str(f)]) == 0
    assert capsys.readouterr().out.strip() == "ok"


@pytest.mark.parametrize("text, msg", [
    ("{", "malformed JSON"),
    ('{"a": NaN}', "not a JSON number"),
    ("[1, 2]", "JSON object"),
    ("", "malformed JSON"),
])
def test_malformed_files(tmp_path, capsys, text, msg):
    f = tmp_path / "bad.json"
    f.write_text(text)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and msg in err[0]
