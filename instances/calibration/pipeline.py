"""Calibration of the loss model (MODEL.md section 4) from training curves.

The input is a table with one row per (run, epoch): ``run``, ``model``, ``epoch``,
``loss`` (optionally ``density``, the fraction of weights a model keeps). Epochs of a
run are consecutive integers; ``epoch`` is the global index k of MODEL.md (epoch 0,
if present, is the loss before training). A switch is an epoch whose model differs
from the previous epoch's model in the same run.

Under ``l(k) = l(k-1) - a_m(k) X_k (+ P_k at a switch)`` with ``g = 1`` (one dataset),
every non-switch epoch k of a run gives one **decrement** ``d = l(k-1) - l(k)`` of
its model m, and so one **improvement factor** ``x = d / a_m(k)``. A_m, B_m (and p_m)
are fitted by least squares on the decrements, ``min sum (d - A/(k+B)^p)^2``. Since
only the product ``A_m E[X_m]`` is identified by curves, this makes ``E[X_m]``
about 1 (the reported noise mean is the sample mean of the factors). A switch epoch
gives one penalty ``P = l(k) - l(k-1) + a_m(k) x_hat``, with x_hat the best linear
predictor of that run's factor (see :func:`variance_components`). See
``docs/calibration.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from deplbench.errors import InputError
from deplbench.instances.calibration.fit import (
    best_family,
    fit_all_families,
    fit_noise,
    fit_truncated_t,
    penalty_gof,
)
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.schema import Penalty

REQUIRED_COLUMNS = ("run", "model", "epoch", "loss")


@dataclass(frozen=True)
class Observations:
    """Decrements and switch jumps extracted from curves (one entry per epoch k >= 1)."""

    model: np.ndarray  # model of the epoch (str)
    run: np.ndarray  # run id (str)
    epoch: np.ndarray  # global epoch index k (int)
    value: np.ndarray  # decrement l(k-1) - l(k), or jump l(k) - l(k-1) at a switch
    switch_from: np.ndarray  # previous model at a switch, "" otherwise
    initial: dict[str, float]  # run -> loss at its first row
    first_epoch: dict[str, int]  # run -> its first epoch
    density: dict[str, float | None]  # model -> density column (None when absent)

    @property
    def is_switch(self) -> np.ndarray:
        return self.switch_from != ""


def read_curves(path) -> pd.DataFrame:
    """Read and validate a curves CSV; any problem is one :class:`InputError` line."""
    from deplbench.files import check_input_file

    src = str(path)
    check_input_file(path)  # a FIFO or device would block or never end
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise InputError("no such file", src) from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"cannot read CSV ({exc.__class__.__name__}: {str(exc).splitlines()[0]})",
                         src) from None
    df.columns = [c.strip() for c in df.columns]
    for col in REQUIRED_COLUMNS:
        if col not in df.columns:
            raise InputError(f"missing column '{col}' (need {', '.join(REQUIRED_COLUMNS)})", src)
    if df.empty:
        raise InputError("no data rows", src)
    cols = list(REQUIRED_COLUMNS) + (["density"] if "density" in df.columns else [])
    out = {}
    for col in cols:
        raw = df[col].str.strip()
        line = lambda i: i + 2  # noqa: E731 - header is line 1
        if col in ("run", "model"):
            bad = raw == ""
            if bad.any():
                raise InputError(f"line {line(int(np.argmax(bad)))}, column '{col}': empty value", src)
            out[col] = raw.to_numpy(dtype=object)
            continue
        num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(num)
        if col == "epoch":
            bad |= (num != np.round(num)) | (num < 0)
        if col == "density":
            bad |= ~((num > 0) & (num <= 1))
        if bad.any():
            i = int(np.argmax(bad))
            what = {"epoch": "an integer >= 0", "loss": "a finite number",
                    "density": "a number in (0, 1]"}[col]
            raise InputError(f"line {line(i)}, column '{col}': {raw.iloc[i]!r} is not {what}", src)
        out[col] = num.astype(int) if col == "epoch" else num
    table = pd.DataFrame(out)
    table["line"] = np.arange(len(table)) + 2
    table = table.sort_values(["run", "epoch"], kind="stable").reset_index(drop=True)
    for run, grp in table.groupby("run", sort=False):
        ep = grp["epoch"].to_numpy()
        gaps = np.flatnonzero(np.diff(ep) != 1)
        if len(gaps):
            row = grp.iloc[gaps[0] + 1]
            what = "repeats" if ep[gaps[0] + 1] == ep[gaps[0]] else "is not consecutive to"
            raise InputError(f"line {row['line']}, column 'epoch': run '{run}' epoch {row['epoch']} "
                             f"{what} epoch {ep[gaps[0]]}", src)
    if "density" in table:
        for model, grp in table.groupby("model"):
            if grp["density"].nunique() > 1:
                raise InputError(f"line {grp['line'].iloc[-1]}, column 'density': model '{model}' "
                                 "has more than one density", src)
    return table


def extract(table: pd.DataFrame) -> Observations:
    """Decrements of non-switch epochs and jumps of switch epochs, from a validated table."""
    model, run, epoch, value, sw = [], [], [], [], []
    initial, first = {}, {}
    for r, grp in table.groupby("run", sort=True):
        loss = grp["loss"].to_numpy()
        ms = grp["model"].to_numpy()
        ep = grp["epoch"].to_numpy()
        initial[r], first[r] = float(loss[0]), int(ep[0])
        for i in range(1, len(grp)):
            switch = ms[i] != ms[i - 1]
            model.append(ms[i])
            run.append(r)
            epoch.append(int(ep[i]))
            value.append(loss[i] - loss[i - 1] if switch else loss[i - 1] - loss[i])
            sw.append(ms[i - 1] if switch else "")
    dens: dict[str, float | None] = {}
    for m, grp in table.groupby("model"):
        dens[m] = float(grp["density"].iloc[0]) if "density" in grp else None
    return Observations(np.array(model, dtype=object), np.array(run, dtype=object),
                        np.array(epoch, dtype=int), np.array(value, dtype=float),
                        np.array(sw, dtype=object), initial, first, dens)


def progress_curve(k: np.ndarray, A: float, B: float, p: float) -> np.ndarray:
    """a(k) = A / (k + B)^p."""
    return A / np.power(np.asarray(k, float) + B, p)


def fit_progress(k: np.ndarray, d: np.ndarray, fit_p: bool = False,
                 p: float = 0.5) -> tuple[float, float, float, float]:
    """Least-squares (A, B, p, rmse) of ``d ~ A / (k + B)^p`` with A >= 0, B > -1.

    A is profiled out (closed form given B and p); B is searched as ``log(1 + B)``
    on a grid, then refined. Without ``fit_p``, ``p`` is held at the given value.
    """
    k = np.asarray(k, float)
    d = np.asarray(d, float)

    def profile(u, pp):
        f = np.power(k + math.expm1(u), -pp)
        A = max(float(f @ d) / float(f @ f), 0.0)
        return float(np.sum((d - A * f) ** 2)), A

    grid_u = np.linspace(-6.0, 6.0, 49)  # B from about -1 to 400
    grid_p = np.linspace(0.1, 3.0, 30) if fit_p else np.array([p])
    sse = np.array([[profile(u, pp)[0] for pp in grid_p] for u in grid_u])
    iu, ip = np.unravel_index(int(np.argmin(sse)), sse.shape)
    x0 = [grid_u[iu]] + ([grid_p[ip]] if fit_p else [])
    bounds = [(-9.0, 8.0)] + ([(0.0, 5.0)] if fit_p else [])
    res = optimize.minimize(lambda th: profile(th[0], th[1] if fit_p else p)[0], x0,
                            method="L-BFGS-B", bounds=bounds, options={"ftol": 1e-15, "gtol": 1e-12})
    u, pp = float(res.x[0]), (float(res.x[1]) if fit_p else p)
    s, A = profile(u, pp)
    return A, math.expm1(u), pp, math.sqrt(s / len(d))


@dataclass(frozen=True)
class VarianceComponents:
    """One-way random-effects decomposition of factors by run: x = mu + u_run + e."""

    mean: float
    between: float  # var(u): shared by every epoch of a run
    within: float  # var(e): fresh at every epoch
    n_runs: int

    @property
    def shared_fraction(self) -> float:
        """Share of the factor variance common to a run's epochs (0: per_epoch, 1: per_run)."""
        tot = self.between + self.within
        return self.between / tot if tot > 0 else 0.0

    def predict(self, run_mean: float | None, n: int) -> tuple[float, float]:
        """Best linear predictor of one more factor of a run with ``n`` factors averaging
        ``run_mean``, and the variance of its error."""
        if run_mean is None or n == 0:
            return self.mean, self.between + self.within
        w = n * self.between / (n * self.between + self.within) if self.between > 0 else 0.0
        err = (1 - w) ** 2 * self.between + self.within + w * w * self.within / n
        return self.mean + w * (run_mean - self.mean), err


def variance_components(x: np.ndarray, runs: np.ndarray) -> VarianceComponents:
    """ANOVA estimates of the between-run and within-run variance of factors ``x``."""
    df = pd.DataFrame({"x": x, "run": runs})
    g = df.groupby("run")["x"].agg(["mean", "count", "var"])
    g = g[g["count"] >= 2]
    mu = float(np.mean(x))
    if len(g) < 2:
        return VarianceComponents(mu, 0.0, float(np.var(x, ddof=1)) if len(x) > 1 else 0.0, len(g))
    n, N, a = g["count"].to_numpy(float), float(g["count"].sum()), len(g)
    grand = float(np.sum(g["mean"] * n) / N)
    msb = float(np.sum(n * (g["mean"] - grand) ** 2)) / (a - 1)
    msw = float(np.sum((n - 1) * g["var"])) / (N - a)
    n0 = (N - float(np.sum(n * n)) / N) / (a - 1)
    return VarianceComponents(mu, max((msb - msw) / n0, 0.0), msw, a)


def run_factors(obs: Observations, model: str, A: float, B: float, p: float,
                min_epochs: int = 2) -> dict[str, float]:
    """Per-run factor of ``model``: total decrement over total predicted progress.

    This is the factor a ``per_run`` instance draws once per run; it reproduces the
    spread of a run's cumulative progress.
    """
    sel = (obs.model == model) & ~obs.is_switch
    out = {}
    df = pd.DataFrame({"run": obs.run[sel], "d": obs.value[sel],
                       "a": progress_curve(obs.epoch[sel], A, B, p)})
    for r, grp in df.groupby("run"):
        if len(grp) >= min_epochs:
            out[r] = float(grp["d"].sum() / grp["a"].sum())
    return out


PARAMS_SCHEMA = "depl-calibration/1"
MIN_FACTORS = 10  # fewer improvement observations of a model cannot be fitted
MIN_PENALTIES = 5  # fewer observed switches of a pair cannot be fitted
MIN_EPOCH_FIT = 10  # per-epoch fits (for the p-value histogram) need this many runs


def _f(v: float) -> float:
    return float(round(v, 12))


def calibrate(table: pd.DataFrame, *, fit_p: bool = False, n_mc: int = 200, seed: int = 0,
              penalty_bounds: tuple[float, float] | None = None, penalty_df: float | None = None,
              source: str = "curves") -> dict:
    """Fit every parameter of the loss model to a validated curves table.

    Parameters
    ----------
    table : DataFrame
        From :func:`read_curves`.
    fit_p : bool
        Fit the exponent p of a_m(k) too (otherwise p = 0.5, as in the paper).
    n_mc : int
        Parametric-bootstrap samples per goodness-of-fit test (0: naive KS only).
    seed : int
        Seed of the bootstrap.
    penalty_bounds : (low, high), optional
        Truncation of the penalties; default ``[min(0, smallest), largest + range]``.
    penalty_df : float, optional
        Fix the t's degrees of freedom instead of fitting them.
    source : str
        Named in errors and recorded in the output.

    Returns
    -------
    dict
        The ``depl-calibration/1`` document (see ``docs/calibration.md``).
    """
    obs = extract(table)
    models: dict[str, dict] = {}
    comps: dict[str, VarianceComponents] = {}
    xs_by_model: dict[str, pd.DataFrame] = {}
    for i, m in enumerate(sorted(set(table["model"]))):
        models[m], comps[m], xs_by_model[m] = _fit_model(obs, m, i, fit_p=fit_p, n_mc=n_mc, seed=seed,
                                                         source=source)
    switches = _penalties(obs, models, comps, xs_by_model, n_mc, seed, penalty_bounds, penalty_df,
                          source)
    shared = [models[m]["variance"]["shared_fraction"] for m in models]
    return {
        "schema": PARAMS_SCHEMA, "source": source, "fit_p": fit_p, "bootstrap": n_mc, "seed": seed,
        "n_runs": len(obs.initial),
        "initial_loss": _f(float(np.mean([obs.initial[r] for r in obs.initial
                                          if obs.first_epoch[r] == 0] or list(obs.initial.values())))),
        "max_epoch": int(table["epoch"].max()),
        "recommended_noise_mode": "per_run" if float(np.mean(shared)) >= 0.5 else "per_epoch",
        "models": models, "switches": switches,
    }


def _fit_model(obs: Observations, m: str, i: int, *, fit_p: bool, n_mc: int, seed: int,
               source: str) -> tuple[dict, VarianceComponents, pd.DataFrame]:
    """Model ``m`` (the ``i``-th): progress curve, factors, variance split, noise fits per mode and epoch."""
    sel = (obs.model == m) & ~obs.is_switch
    if int(sel.sum()) < MIN_FACTORS:
        raise InputError(f"model '{m}' has {int(sel.sum())} non-switch epochs after the first "
                         f"of a run (need >= {MIN_FACTORS})", source)
    k, d, runs = obs.epoch[sel], obs.value[sel], obs.run[sel]
    A, B, p, rmse = fit_progress(k, d, fit_p)
    with np.errstate(all="ignore"):
        x = d / progress_curve(k, A, B, p)
    if not all(math.isfinite(v) for v in (A, B, p)) or not np.isfinite(x).all() or int(np.sum(x > 0)) < 3:
        raise InputError(f"model '{m}': its losses do not decrease as a progress curve (flat, rising or "
                         "zero curves leave fewer than 3 positive noise factors): cannot calibrate it", source)
    xs = pd.DataFrame({"run": runs, "epoch": k, "x": x})
    vc = variance_components(x, runs)
    rf = np.array(list(run_factors(obs, m, A, B, p).values()))
    rf = rf[rf > 0]
    noise = {}
    for mode, data in (("per_epoch", x[x > 0]), ("per_run", rf)):
        if len(data) < 3:
            noise[mode] = None
            continue
        fits = fit_all_families(data, n_mc, seed + 10 * i + (5 if mode == "per_run" else 0))
        noise[mode] = {"best": best_family(fits), "fits": {f: v.to_dict() for f, v in fits.items()}}
    model = {
        "progress": {"A": _f(A), "B": _f(B), "p": _f(p), "rmse": _f(rmse)},
        "density": obs.density.get(m),
        "n_runs": int(len(set(runs))), "n_factors": int(len(x)),
        "n_nonpositive": int(np.sum(x <= 0)),
        "factor_mean": _f(float(np.mean(x))), "factor_var": _f(float(np.var(x, ddof=1))),
        "variance": {"between": _f(vc.between), "within": _f(vc.within),
                     "shared_fraction": _f(vc.shared_fraction), "n_runs": vc.n_runs},
        "noise": noise,
        "epoch_fits": _epoch_fits(xs, noise["per_epoch"]["best"], n_mc, seed + 1000 * (i + 1)),
        "factors": {"epoch": [int(v) for v in k], "x": [_f(v) for v in x]},
        "run_factors": [_f(v) for v in rf],
    }
    return model, vc, xs


def _epoch_fits(xs: pd.DataFrame, fam: str, n_mc: int, seed: int) -> list[dict]:
    """``fam`` fitted to each epoch's positive factors (epochs with at least MIN_EPOCH_FIT runs)."""
    out = []
    for kk, grp in xs.groupby("epoch"):
        xe = grp["x"].to_numpy()
        xe = xe[xe > 0]
        if len(xe) >= MIN_EPOCH_FIT:
            nf = fit_noise(xe, fam, n_mc, seed + int(kk))
            out.append({"epoch": int(kk), "n": nf.n, "family": fam, "mean": _f(nf.mean),
                        "var": _f(nf.var), "ks_p": nf.ks_p, "bootstrap_p": nf.bootstrap_p})
    return out


def _penalties(obs, models, comps, xs_by_model, n_mc, seed, bounds, df_fixed, source) -> list[dict]:
    """Penalty observations per switch pair, corrected by each run's predicted factor."""
    out = []
    pairs = sorted({(a, b) for a, b in zip(obs.switch_from[obs.is_switch], obs.model[obs.is_switch],
                                           strict=True)})
    for j, (a, b) in enumerate(pairs):
        sel = np.flatnonzero(obs.is_switch & (obs.switch_from == a) & (obs.model == b))
        if len(sel) < MIN_PENALTIES:
            raise InputError(f"switch '{a}' -> '{b}' is observed {len(sel)} times (need >= "
                             f"{MIN_PENALTIES})", source)
        pr = models[b]["progress"]
        xb = xs_by_model[b]
        pen, noise_var = [], []
        for i in sel:
            own = xb["x"][xb["run"] == obs.run[i]].to_numpy()
            xhat, err = comps[b].predict(float(own.mean()) if len(own) else None, len(own))
            ak = float(progress_curve(obs.epoch[i], pr["A"], pr["B"], pr["p"]))
            pen.append(obs.value[i] + ak * xhat)
            noise_var.append(ak * ak * err)
        pen = np.array(pen)
        lo, hi = bounds if bounds else (min(0.0, float(pen.min())),
                                        float(pen.max() + (pen.max() - min(0.0, pen.min()))))
        if not (lo <= pen.min() and pen.max() <= hi):
            raise InputError(f"penalty bounds [{lo}, {hi}] exclude observed penalties of '{a}' -> "
                             f"'{b}' (range [{pen.min():.4g}, {pen.max():.4g}])", "--penalty-bounds")
        df, loc, scale, ll = fit_truncated_t(pen, lo, hi, df_fixed)
        # the factor predicted at a switch adds noise of variance noise_var: deflate the scale
        extra = float(np.mean(noise_var))
        raw_var = float(np.var(pen, ddof=1))
        shrink = math.sqrt(max(1.0 - extra / raw_var, 0.25)) if raw_var > 0 else 1.0
        ks_p, boot_p = penalty_gof(pen, lo, hi, n_mc, seed + 7919 * (j + 1), df_fixed)
        law = Penalty(family="t", df=_f(df), loc=_f(loc), scale=_f(scale * shrink), low=_f(lo),
                      high=_f(hi))
        dist = penalty_dist(law)
        out.append({
            "from": a, "to": b, "n": len(pen),
            "penalty": law.model_dump(exclude_none=True),
            "raw_scale": _f(scale), "scale_correction": _f(shrink), "loglik": _f(ll),
            "mean": _f(dist.mean), "var": _f(dist.var), "ks_p": ks_p, "bootstrap_p": boot_p,
            "observed": [_f(v) for v in pen], "epochs": [int(obs.epoch[i]) for i in sel],
        })
    return out
