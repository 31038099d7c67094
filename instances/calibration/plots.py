"""Figures like the paper's Fig. 4, drawn from a ``depl-calibration/1`` file alone.

:func:`make_figures` writes three PNG files (matplotlib, Agg backend):

* ``calibration-noise.png``: per model, the empirical pdf of the improvement factors
  x with the fitted pdf of every noise family (the best one solid);
* ``calibration-pvalues.png``: histograms of the p-values of all fits (per epoch,
  pooled, penalties), naive Kolmogorov-Smirnov next to the parametric bootstrap;
* ``calibration-penalty.png``: per switch pair, the empirical pdf of the penalties
  with the fitted truncated t.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from deplbench.instances.calibration.fit import noise_frozen  # noqa: E402
from deplbench.instances.io import read_json  # noqa: E402


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 3)
    return math.ceil(n / cols), cols


def _noise_figure(data: dict, path: Path) -> Path:
    models = data["models"]
    rows, cols = _grid(len(models))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (m, r) in zip(axes.flat, models.items(), strict=False):
        x = np.asarray(r["factors"]["x"], float)
        x = x[x > 0]
        lo, hi = np.quantile(x, [0.005, 0.995])
        ax.hist(x[(x >= lo) & (x <= hi)], bins=40, density=True, color="0.8", label="observed")
        grid = np.linspace(lo, hi, 300)
        fits = r["noise"]["per_epoch"]
        for fam, f in fits["fits"].items():
            best = fam == fits["best"]
            ax.plot(grid, noise_frozen(fam, f["mean"], f["var"]).pdf(grid), lw=2 if best else 1,
                    ls="-" if best else "--",
                    label=f"{fam} (KS p {f['ks_p']:.2g}, boot p "
                          f"{'-' if f['bootstrap_p'] is None else format(f['bootstrap_p'], '.2g')})")
        ax.set_title(f"{m}: x, {len(x)} epochs")
        ax.set_xlabel("improvement factor x")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(models):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _pvalue_figure(data: dict, path: Path) -> Path:
    naive, boot = [], []
    for r in data["models"].values():
        fits = [e for e in r["epoch_fits"]]
        for mode in ("per_epoch", "per_run"):
            if r["noise"].get(mode):
                fits += list(r["noise"][mode]["fits"].values())
        naive += [f["ks_p"] for f in fits]
        boot += [f["bootstrap_p"] for f in fits if f["bootstrap_p"] is not None]
    naive += [s["ks_p"] for s in data["switches"]]
    boot += [s["bootstrap_p"] for s in data["switches"] if s["bootstrap_p"] is not None]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    bins = np.linspace(0, 1, 21)
    ax.hist(naive, bins=bins, alpha=0.6, label=f"naive KS ({len(naive)} fits)")
    if boot:
        ax.hist(boot, bins=bins, alpha=0.6, label=f"parametric bootstrap ({len(boot)} fits)")
    ax.set_xlabel("p-value")
    ax.set_ylabel("fits")
    ax.set_title("goodness of fit over all fits")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _truncated_t_pdf(x: np.ndarray, pen: dict) -> np.ndarray:
    t = stats.t(pen["df"], loc=pen["loc"], scale=pen["scale"])
    mass = t.cdf(pen["high"]) - t.cdf(pen["low"])
    return np.where((x >= pen["low"]) & (x <= pen["high"]), t.pdf(x) / mass, 0.0)


def _penalty_figure(data: dict, path: Path) -> Path:
    sw = data["switches"]
    rows, cols = _grid(max(len(sw), 1))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, s in zip(axes.flat, sw, strict=False):
        obs = np.asarray(s["observed"], float)
        pen = s["penalty"]
        ax.hist(obs, bins=min(30, max(8, len(obs) // 4)), density=True, color="0.8", label="observed")
        span = obs.max() - obs.min() or 1.0
        grid = np.linspace(max(pen["low"], obs.min() - 0.3 * span), min(pen["high"], obs.max() + 0.3 * span),
                           300)
        ax.plot(grid, _truncated_t_pdf(grid, pen), lw=2,
                label=f"t(df {pen['df']:.3g}, {pen['loc']:.3g}, {pen['scale']:.3g})")
        ax.set_title(f"{s['from']} -> {s['to']}: {s['n']} switches\nKS p {s['ks_p']:.2g}, boot p "
                     f"{'-' if s['bootstrap_p'] is None else format(s['bootstrap_p'], '.2g')}", fontsize=9)
        ax.set_xlabel("switch penalty")
        ax.legend(fontsize=7)
    if not sw:
        axes.flat[0].text(0.5, 0.5, "no switches in the curves", ha="center", va="center")
    for ax in list(axes.flat)[max(len(sw), 1):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def make_figures(params_path, out_dir) -> list[Path]:
    """Write the three calibration figures of ``params_path`` into ``out_dir``.

    Returns the paths written (noise, p-values, penalty), in that order.
    """
    data = read_json(params_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [_noise_figure(data, out / "calibration-noise.png"),
            _pvalue_figure(data, out / "calibration-pvalues.png"),
            _penalty_figure(data, out / "calibration-penalty.png")]
