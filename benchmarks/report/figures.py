"""Figures of the report (matplotlib, Agg): performance profiles, competitive ratios, runtime scaling.

Each figure is written twice beside the report, as PNG (embedded in the HTML page) and SVG.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from deplbench.benchmarks.report.scaling import loglog_fit  # noqa: E402
from deplbench.benchmarks.site.palette import color_of  # noqa: E402

STYLE = {"font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 7.5,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
         "grid.alpha": 0.3, "grid.linewidth": 0.5, "lines.linewidth": 1.4, "savefig.bbox": "tight",
         "svg.fonttype": "none", "figure.dpi": 100}


def styled(func: Callable) -> Callable:
    """Run a figure function inside the report's rc style (labels take their sizes when created)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kw: Any):
        with plt.rc_context(STYLE):
            return func(*args, **kw)

    return wrapper


def new_figure(ncols: int = 1, nrows: int = 1, w: float = 3.4, h: float = 2.6, **kw: Any):
    """A figure with ``nrows x ncols`` panels of ``w x h`` inches in the report's style."""
    return plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False,
                        layout="constrained", **kw)


def save(fig, out_dir: Path, name: str) -> Path:
    """Write ``name.png`` (150 dpi) and ``name.svg`` into ``out_dir``; returns the PNG path."""
    from deplbench.files import atomic_path

    png = out_dir / f"{name}.png"
    try:
        with atomic_path(png) as tmp:  # a full disk: one line naming the file, no partial figure
            fig.savefig(tmp, dpi=150)
        with atomic_path(out_dir / f"{name}.svg") as tmp:
            fig.savefig(tmp)
    finally:
        plt.close(fig)
    return png


#: candidate major ticks of a log tau axis (only those inside the range are drawn, at most 7)
LOG_TICKS = (1, 1.2, 1.5, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1e3, 1e4, 1e5, 1e6)


def log_ticks(ax, lo: float, hi: float) -> None:
    """Plain major ticks on a log axis from ``lo`` to ``hi`` (no minor labels that overprint)."""
    ticks = [t for t in LOG_TICKS if lo <= t <= hi]
    while len(ticks) > 7:
        ticks = ticks[::2]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())


@styled
def performance_profile(ratios: pd.DataFrame, out_dir: Path, name: str, title: str) -> Path:
    """Dolan-More profile: fraction of instances each method solves within tau times the best time.

    The legend sits below the axes (never over the title), the tau axis has plain ticks only.
    """
    fig, axes = new_figure(w=5.0, h=3.4)
    ax = axes[0, 0]
    finite = ratios.to_numpy(float)[np.isfinite(ratios.to_numpy(float))]
    tau_max = max(2.0, float(finite.max()) * 1.5) if finite.size else 2.0
    taus = np.geomspace(1.0, tau_max, 400)
    n = len(ratios)
    for m in ratios.columns:
        r = np.sort(ratios[m].to_numpy(float))
        rho = np.searchsorted(r, taus, side="right") / n
        ax.step(taus, rho, where="post", label=m, color=color_of(str(m), f"C{list(ratios.columns).index(m) % 10}"))
    ax.set_xscale("log")
    log_ticks(ax, 1.0, tau_max)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"$\tau$ (time / best time on the instance)")
    ax.set_ylabel("fraction solved within $\\tau$")
    ax.set_title(title)
    fig.legend(loc="outside lower center", frameon=False, ncols=min(3, len(ratios.columns)))
    return save(fig, out_dir, name)


@styled
def ratio_plots(ratios: pd.DataFrame, out_dir: Path, name: str = "ratio") -> Path:
    """Measured cost ratio of one method vs eta (lines per eps) and vs eps (lines per eta).

    Markers: mean of the lower end over instances; bars: min to max of the interval ends
    (upper end capped at the mean when no lower bound exists). Linear ratio axis on the scale of
    the ratios (1 is the optimum): the stated (1+eps)/eta is below 1 by orders of magnitude and is
    not drawn (the report's table prints it). Dotted (eps panel): 1 + eps, stage 3's guarantee against
    the exact allocation of the same model sequence (a bound on the stage, not on the ratio).
    """
    f = ratios[ratios["feasible"]]
    fig, axes = new_figure(2, w=3.8, h=3.0)
    for ax, (xcol, lcol) in zip(axes[0], (("eta", "eps"), ("eps", "eta")), strict=True):
        for lv, g in f.groupby(lcol, sort=True):
            agg = g.groupby(xcol).agg(mean=("ratio_lo", "mean"), lo=("ratio_lo", "min"), hi=("ratio_hi", "max"))
            hi = agg["hi"].where(np.isfinite(agg["hi"]), agg["mean"])
            ax.errorbar(agg.index, agg["mean"], yerr=[agg["mean"] - agg["lo"], hi - agg["mean"]],
                        marker="o", ms=3.5, capsize=2, label=f"{lcol}={lv:g}")
        if f[xcol].nunique() < 2:
            ax.text(0.5, 0.1, f"one value of {xcol} only", ha="center", transform=ax.transAxes)
        if xcol == "eps" and len(f) and f["eps"].nunique() > 1:  # stage 3 vs the exact allocation
            xs = np.geomspace(f["eps"].min(), f["eps"].max(), 30)
            ax.plot(xs, 1.0 + xs, ls=":", color="k", lw=1.0, label="1+eps (stage 3)")
        ax.axhline(1.0, color="k", lw=0.7)
        ax.set_xscale("log")
        xs = sorted(float(v) for v in f[xcol].dropna().unique())
        if 0 < len(xs) <= 8:
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
            ax.xaxis.set_minor_locator(mticker.NullLocator())
        ax.set_xlabel(xcol)
        ax.set_ylabel("cost / optimum")
        ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=3, fontsize=7)
    who = ", ".join(sorted(ratios["solver"].astype(str).unique())) if "solver" in ratios else "method"
    axes[0, 0].set_title(f"{who}: ratio vs eta")
    axes[0, 1].set_title(f"{who}: ratio vs eps")
    return save(fig, out_dir, "".join(ch if ch.isalnum() else "_" for ch in name))


@styled
def scaling_plot(series: list[dict[str, Any]], out_dir: Path, name: str = "scaling") -> Path:
    """Runtime vs each variable, log-log: finished runs, fit with its 95% band, censored timeouts (^)."""
    n = len(series)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig, axes = new_figure(ncols, nrows, w=3.0, h=2.5)
    for ax, s in zip(axes.ravel(), series, strict=False):
        ax.scatter(s["x"], s["t"], s=10, color="C0", label="finished", zorder=3)
        if len(s["cx"]):
            ax.scatter(s["cx"], s["ct"], s=22, marker="^", facecolors="none", edgecolors="C3",
                       label="timeout (censored)", zorder=3)
        fit = loglog_fit(s["x"], s["t"])
        if not math.isnan(fit["b"]):
            lx = np.log(s["x"])
            grid = np.linspace(lx.min(), lx.max(), 50)
            pred = fit["a"] + fit["b"] * grid
            band = _mean_band(lx, np.log(s["t"]), fit, grid)
            ax.plot(np.exp(grid), np.exp(pred), color="C1",
                    label=f"fit: exponent {fit['b']:.2f} [{fit['ci_lo']:.2f}, {fit['ci_hi']:.2f}]")
            ax.fill_between(np.exp(grid), np.exp(pred - band), np.exp(pred + band), color="C1", alpha=0.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        xs = sorted({float(v) for v in np.concatenate([np.asarray(s["x"], float), np.asarray(s["cx"], float)])})
        if len(xs) <= 8:  # label the measured values; log minor ticks would overprint each other
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
            ax.xaxis.set_minor_locator(mticker.NullLocator())
        ax.set_xlabel(s["var"])
        ax.set_ylabel("runtime (s)")
        ax.set_title(f"{s['solver']}: runtime vs {s['var']}")
        ax.legend(frameon=False, loc="upper left")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return save(fig, out_dir, name)


def _mean_band(lx: np.ndarray, lt: np.ndarray, fit: dict[str, float], grid: np.ndarray) -> np.ndarray:
    """Half-width of the 95% confidence band of the fitted mean ln t at ``grid``."""
    from scipy import stats

    n = len(lx)
    resid = lt - (fit["a"] + fit["b"] * lx)
    s2 = float(resid @ resid) / (n - 2)
    sxx = float(((lx - lx.mean()) ** 2).sum())
    return stats.t.ppf(0.975, n - 2) * np.sqrt(s2 * (1 / n + (grid - lx.mean()) ** 2 / sxx))
