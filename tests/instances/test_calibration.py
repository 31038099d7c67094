"""Calibration: recovery of known parameters from simulated curves, test level, inputs, family.

Curves are simulated from MODEL.md's loss model with known A, B, noise and penalties
(both noise modes); only numpy/scipy are needed (no torch).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

from deplbench.cli import main
from deplbench.errors import InputError
from deplbench.instances.calibration.fit import (
    fit_noise,
    fit_truncated_t,
    noise_frozen,
    penalty_gof,
    truncated_t_sample,
)
from deplbench.instances.calibration.pipeline import (
    calibrate,
    extract,
    fit_progress,
    read_curves,
    variance_components,
)
from deplbench.instances.laws.noise import noise_dist

# model: (A, B, p, family, mean, var, density)
TRUE = {"fast": (2.0, 0.0, 0.5, "invgamma", 1.0, 0.031, 0.5),
        "mid": (1.4, 2.0, 0.5, "invgamma", 1.0, 0.010, 0.25),
        "slow": (1.0, 0.0, 0.5, "invgamma", 1.0, 0.007, 0.1)}
PAIRS = (("fast", "mid"), ("mid", "slow"))
PENALTY = (5.0, 0.5, 0.15, 0.0, 2.0)  # df, loc, scale, low, high


def simulate(mode: str, models=TRUE, runs: int = 40, switch_runs: int = 60, epochs: int = 25,
             l0: float = 20.0, seed: int = 0) -> pd.DataFrame:
    """Curves from the loss model: ``runs`` per model, ``switch_runs`` per pair."""
    rng = np.random.default_rng(seed)
    rows = []

    def run(rid, seq):
        draw = {m: noise_dist(v[3], v[4], v[5]).sample(rng, 1)[0] for m, v in models.items()}
        loss = l0
        rows.append((rid, seq[0], 0, loss, models[seq[0]][6]))
        for k, m in enumerate(seq, start=1):
            A, B, p, fam, mu, var, dens = models[m]
            x = draw[m] if mode == "per_run" else noise_dist(fam, mu, var).sample(rng, 1)[0]
            loss -= A / (k + B) ** p * x
            if k >= 2 and seq[k - 2] != m:
                loss += truncated_t_sample(rng, 1, *PENALTY)[0]
            rows.append((rid, m, k, loss, dens))

    for m in models:
        for r in range(runs):
            run(f"{m}-{r}", [m] * epochs)
    for a, b in PAIRS:
        for r in range(switch_runs):
            s = int(rng.integers(6, epochs - 5))
            run(f"{a}-{b}-{r}", [a] * (s - 1) + [b] * (epochs - s + 1))
    return pd.DataFrame(rows, columns=["run", "model", "epoch", "loss", "density"])


@pytest.fixture(scope="module", params=["per_epoch", "per_run"])
def fitted(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / f"{request.param}.csv"
    simulate(request.param).to_csv(path, index=False)
    return request.param, calibrate(read_curves(path), n_mc=0, penalty_bounds=(0.0, 2.0))


def test_recovers_progress_and_noise(fitted):
    mode, out = fitted
    for m, (A, B, _p, _, mu, var, dens) in TRUE.items():
        r = out["models"][m]
        assert r["progress"]["A"] == pytest.approx(A, rel=0.06), m
        assert r["progress"]["B"] == pytest.approx(B, abs=0.35), m
        assert r["progress"]["p"] == 0.5 and r["density"] == dens
        assert r["factor_mean"] == pytest.approx(mu, abs=0.03), m
        # the variance of X as each mode defines it: per epoch, or of the per-run factor
        fit = r["noise"][mode]["fits"]["invgamma"]
        assert fit["var"] == pytest.approx(var, rel=0.35), m
        assert fit["mean"] == pytest.approx(mu, abs=0.04), m
        shared = r["variance"]["shared_fraction"]
        assert shared < 0.15 if mode == "per_epoch" else shared > 0.9, m
    assert out["recommended_noise_mode"] == mode


def test_recovers_penalties(fitted):
    mode, out = fitted
    assert [(s["from"], s["to"]) for s in out["switches"]] == sorted(PAIRS)
    for s in out["switches"]:
        pen = s["penalty"]
        assert (pen["low"], pen["high"]) == (0.0, 2.0)
        assert pen["loc"] == pytest.approx(0.5, abs=0.06)
        assert s["mean"] == pytest.approx(0.5, abs=0.06)  # the truncated t(5, .5, .15) has mean ~0.5
        assert pen["scale"] == pytest.approx(0.15, rel=0.4)
        assert s["n"] == 60 and len(s["observed"]) == 60


@pytest.mark.slow
def test_only_the_product_A_times_mean_is_identified():
    models = {m: (A, B, p, fam, 1.25, var * 1.25 ** 2, d) for m, (A, B, p, fam, _, var, d) in TRUE.items()}
    out = calibrate(simulate("per_epoch", models).assign(line=0), n_mc=0, penalty_bounds=(0.0, 2.0))
    for m, (A, *_rest) in TRUE.items():
        r = out["models"][m]
        fit = r["noise"]["per_epoch"]["fits"]["invgamma"]
        assert r["progress"]["A"] * fit["mean"] == pytest.approx(A * 1.25, rel=0.06)
        # the coefficient of variation is scale-free, hence identified
        assert fit["var"] / fit["mean"] ** 2 == pytest.approx(TRUE[m][5], rel=0.3)


def test_extraction_of_a_noiseless_curve():
    """Decrements give A and B exactly; a switch gives its penalty exactly."""
    a = lambda k: 1.5 / np.sqrt(k + 1.0)  # noqa: E731
    loss, rows = 10.0, [("r", "m1", 0, 10.0)]
    for k in range(1, 13):
        m = "m1" if k < 7 else "m2"
        loss -= a(k)
        loss += 0.3 if k == 7 else 0.0
        rows.append(("r", m, k, loss))
    obs = extract(pd.DataFrame(rows, columns=["run", "model", "epoch", "loss"]))
    assert obs.is_switch.sum() == 1 and obs.switch_from[obs.is_switch][0] == "m1"
    ordinary = ~obs.is_switch
    A, B, p, rmse = fit_progress(obs.epoch[ordinary], obs.value[ordinary])
    assert (A, B, rmse) == pytest.approx((1.5, 1.0, 0.0), abs=1e-4)
    assert obs.value[obs.is_switch][0] + a(7) == pytest.approx(0.3)  # jump + a(k) E[X]
    A2, B2, p2, _ = fit_progress(obs.epoch[ordinary], obs.value[ordinary], fit_p=True)
    assert (A2, B2, p2) == pytest.approx((1.5, 1.0, 0.5), abs=1e-3)


def test_variance_components_extremes():
    rng = np.random.default_rng(3)
    runs = np.repeat(np.arange(50), 10)
    shared = variance_components(np.repeat(rng.normal(1, 0.2, 50), 10), runs)
    fresh = variance_components(rng.normal(1, 0.2, 500), runs)
    assert shared.shared_fraction > 0.99 and fresh.shared_fraction < 0.1
    assert shared.between == pytest.approx(0.04, rel=0.5) and fresh.within == pytest.approx(0.04, rel=0.2)


def test_bootstrap_keeps_its_level_and_has_power():
    """Right family: about alpha rejections; wrong family: many; naive KS p-values too large."""
    rng = np.random.default_rng(1)
    right, wrong, naive = [], [], []
    for r in range(30):
        x = noise_frozen("lognormal", 1.0, 0.6).rvs(200, random_state=rng)
        ok, bad = fit_noise(x, "lognormal", 39, r), fit_noise(x, "gamma", 39, r)
        right.append(ok.bootstrap_p)
        wrong.append(bad.bootstrap_p)
        naive.append(ok.ks_p)
    right, wrong, naive = map(np.array, (right, wrong, naive))
    assert np.mean(right < 0.1) <= 0.25  # level 0.1, with slack for 30 replicates
    assert np.mean(wrong < 0.1) >= np.mean(right < 0.1) + 0.3
    assert np.mean(naive) > np.mean(right) + 0.1  # the naive p-values are biased upwards


def test_truncated_t_fit_and_bootstrap():
    rng = np.random.default_rng(5)
    x = truncated_t_sample(rng, 300, *PENALTY)
    df, loc, scale, _ = fit_truncated_t(x, 0.0, 2.0)
    assert loc == pytest.approx(0.5, abs=0.03) and scale == pytest.approx(0.15, rel=0.25)
    ks_p, boot_p = penalty_gof(x, 0.0, 2.0, n_mc=19, seed=0, df=5.0)
    assert boot_p > 0.05 and ks_p > 0.05
    two_humps = np.concatenate((rng.normal(0.3, 0.03, 150), rng.normal(0.9, 0.03, 150)))
    assert penalty_gof(two_humps, 0.0, 2.0, n_mc=19, seed=0)[1] <= 0.05


# ---- input errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("run,model,epoch\nr,m,0\n", "missing column 'loss'"),
    ("run,model,epoch,loss\nr,m,0,2.3\nr,m,1,abc\n", "line 3, column 'loss': 'abc' is not a finite number"),
    ("run,model,epoch,loss\nr,m,0,2.3\nr,m,2,2.0\n", "epoch 2 is not consecutive to epoch 0"),
    ("run,model,epoch,loss\nr,m,0,2.3\nr,m,0,2.0\n", "repeats"),
    ("run,model,epoch,loss\nr,m,0.5,2.3\n", "line 2, column 'epoch'"),
    ("run,model,epoch,loss\nr,,0,2.3\n", "column 'model': empty value"),
    ("run,model,epoch,loss\n", "no data rows"),
    ("", "cannot read CSV"),
])
def test_bad_csv_is_one_line_error(tmp_path, capsys, text, message):
    src = tmp_path / "c.csv"
    src.write_text(text)
    with pytest.raises(InputError, match=message):
        read_curves(src)
    out = tmp_path / "p.json"
    assert main(["calibrate", str(src), "--out", str(out), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(src) in err[0] and not out.exists()


def test_too_few_observations_is_an_input_error(tmp_path):
    df = simulate("per_epoch", runs=0, switch_runs=1, epochs=12)
    with pytest.raises(InputError, match="need >="):
        calibrate(df.assign(line=0), n_mc=0)


def test_train_curves_without_torch_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    assert main(["train-curves", "--out", str(tmp_path / "c.csv"), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert "pip install -e '.[calibrate]'" in err and not (tmp_path / "c.csv").exists()


# ---- end to end: CLI, family, solvers, figures --------------------------------------------------

@pytest.fixture(scope="module")
def params_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e")
    simulate("per_run", runs=15, switch_runs=15, epochs=20).to_csv(d / "curves.csv", index=False)
    assert main(["calibrate", str(d / "curves.csv"), "--out", str(d / "params.json"),
                 "--bootstrap", "9"]) == 0
    return d / "params.json"


@pytest.mark.slow
def test_calibrate_cli_writes_a_complete_document(params_file):
    data = json.loads(params_file.read_text())
    assert data["schema"] == "depl-calibration/1" and data["bootstrap"] == 9
    for r in data["models"].values():
        fits = r["noise"]["per_epoch"]["fits"]
        assert set(fits) == {"invgamma", "gamma", "lognormal"}
        assert all(0 < f["bootstrap_p"] <= 1 and 0 <= f["ks_p"] <= 1 for f in fits.values())
        assert len(r["factors"]["x"]) == r["n_factors"] and r["epoch_fits"]
    assert all(0 < s["bootstrap_p"] <= 1 for s in data["switches"])


@pytest.mark.slow
def test_calibrated_family_is_usable_by_solvers(params_file, tmp_path):
    from deplbench.instances.io import load_instance
    from deplbench.registry import solve

    out = tmp_path / "inst.json"
    assert main(["generate", "calibrated", "--set", f"params={params_file}", "--out", str(out)]) == 0
    inst = load_instance(out)
    assert set(inst.model_ids) == set(TRUE) and inst.noise_mode == "per_run"
    assert {(s.from_, s.to) for s in inst.switches} == set(PAIRS)
    assert inst.model_by_id["fast"].work == pytest.approx(0.0104 * 0.5)
    res = solve("depl", inst, {"time_limit": 30})
    assert res.status.value == "feasible" and res.evaluation.feasible
    res = solve("milp-highs-direct", inst, {"scenarios": 30, "time_limit": 30})
    assert res.status.value in ("optimal", "feasible")
    with pytest.raises(InputError, match="params=PARAMS.json"):
        main_generate_without_params()


def main_generate_without_params():
    from deplbench.registry import generate

    generate("calibrated", {})


def test_figures(params_file, tmp_path):
    from deplbench.instances.calibration.plots import make_figures

    paths = make_figures(params_file, tmp_path / "fig")
    assert len(paths) == 3 and all(p.suffix == ".png" and p.stat().st_size > 5000 for p in paths)
