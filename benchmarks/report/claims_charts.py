"""The claims study's figures: heatmaps of the quantile-pays maps and the ratio-against-size trend.

Each builder has a static version (matplotlib PNG for ``report.md``) and an interactive one (a
Plotly figure for the site, styled by :func:`deplbench.benchmarks.site.charts.style`), whose
cells and points carry their values and intervals in the hover text.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks.report import figures
from deplbench.benchmarks.report.claims_study import BASELINE, PLANNERS, trend
from deplbench.benchmarks.site.charts import color, style


def _grid(cells: pd.DataFrame, solver: str, col: str) -> tuple[list, list, np.ndarray, np.ndarray]:
    c = cells[cells["solver"] == solver]
    xs, ys = sorted(c["x"].dropna().unique()), sorted(c["y"].dropna().unique())
    z = np.full((len(ys), len(xs)), np.nan)
    text = np.full((len(ys), len(xs)), "", dtype=object)
    for r in c.itertuples():
        if r.x in xs and r.y in ys:
            i, j = ys.index(r.y), xs.index(r.x)
            z[i, j] = getattr(r, col)
            text[i, j] = (f"ratio {r.ratio:.4f} [{r.ratio_lo:.4f}, {r.ratio_hi:.4f}] ({r.proven_refs} proven of "
                          f"{r.seeds} seeds; unproven: ratio <= {r.ratio_upper_max:.4f})<br>"
                          f"saving over best-exp {100 * r.saving:.2f} % [{100 * r.saving_lo:.2f}, {100 * r.saving_hi:.2f}], "
                          f"max {100 * r.saving_max:.2f} %<br>"
                          + (f"expectation plan misses: {100 * r.miss_share:.0f} % [{100 * r.miss_lo:.0f}, "
                             f"{100 * r.miss_hi:.0f}]" if solver == BASELINE else ""))
    return xs, ys, z, text


def _panels(cells: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(solver, column, title) of the panels this experiment has."""
    solvers = [s for s in (BASELINE, *PLANNERS) if (cells["solver"] == s).any()]
    out = [(s, "ratio", f"{s}: cost / optimum") for s in solvers]
    out += [(s, "saving", f"{s}: saving over best-exp") for s in solvers if s != BASELINE]
    if BASELINE in solvers:
        out.append((BASELINE, "miss_share", "best-exp: expectation plan misses the target"))
    return out


def _scale(col: str, z: np.ndarray) -> dict:
    """Colour scale and range of a panel: ratios from 1 up, savings diverging at 0, shares in [0, 1]."""
    top = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    if col == "ratio":
        return {"colorscale": "Viridis", "zmin": 1.0, "zmax": max(top, 1.01)}
    if col == "saving":
        return {"colorscale": "RdBu", "zmid": 0.0, "zmin": -max(top, 0.01), "zmax": max(top, 0.01)}
    return {"colorscale": "Reds", "zmin": 0.0, "zmax": 1.0}


def map_chart(cells: pd.DataFrame, exp: str) -> Any:
    """One experiment's map: a heatmap per (method, quantity), each cell's values on hover."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    panels = _panels(cells)
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[p[2] for p in panels], horizontal_spacing=0.12,
                        vertical_spacing=0.16 if nrows > 1 else 0.1)
    xa, ya = cells["x_axis"].iloc[0], cells["y_axis"].iloc[0]
    for k, (solver, col, title) in enumerate(panels):
        xs, ys, z, text = _grid(cells, solver, col)
        r, c = k // ncols + 1, k % ncols + 1
        sub = fig.get_subplot(r, c)
        (_, x1), (y0, y1) = sub.xaxis.domain, sub.yaxis.domain
        bar = {"len": (y1 - y0) * 0.95, "y": (y0 + y1) / 2, "x": x1 + 0.005, "thickness": 10}
        fig.add_trace(go.Heatmap(
            x=[f"{v:g}" for v in xs], y=[f"{v:g}" for v in ys], z=z, customdata=text, texttemplate="%{z:.3f}",
            name=title, colorbar=bar, **_scale(col, z),
            hovertemplate=(f"{solver}<br>{xa} = %{{x}}, {ya} = %{{y}}<br>{title}: %{{z:.4f}}<br>"
                           "%{customdata}<extra></extra>")), row=r, col=c)
        fig.update_xaxes(title_text=xa, type="category", row=r, col=c)
        fig.update_yaxes(title_text=ya, type="category", row=r, col=c)
    return style(fig, f"Where the quantile pays: {exp}", height=max(380, 330 * nrows))


@figures.styled
def map_figure(cells: pd.DataFrame, exp: str, out_dir: Path, name: str) -> Path:
    """The static version of :func:`map_chart`: the same panels, values printed in the cells."""
    panels = _panels(cells)
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = figures.new_figure(ncols, nrows, w=3.2, h=2.6)
    for k, (solver, col, title) in enumerate(panels):
        ax = axes[k // ncols][k % ncols]
        xs, ys, z, _ = _grid(cells, solver, col)
        sc = _scale(col, z)
        im = ax.imshow(z, origin="lower", aspect="auto", vmin=sc["zmin"], vmax=sc["zmax"],
                       cmap={"Viridis": "viridis", "RdBu": "RdBu", "Reds": "Reds"}[sc["colorscale"]])
        for i in range(len(ys)):
            for j in range(len(xs)):
                if np.isfinite(z[i, j]):
                    ax.text(j, i, f"{z[i, j]:.3f}", ha="center", va="center", fontsize=6, color="black",
                            bbox={"facecolor": "white", "alpha": 0.6, "pad": 0.5, "linewidth": 0})
        ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
        ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
        ax.set_xlabel(cells["x_axis"].iloc[0])
        ax.set_ylabel(cells["y_axis"].iloc[0])
        ax.set_title(title)
        ax.grid(False)
        fig.colorbar(im, ax=ax, shrink=0.8)
    for k in range(len(panels), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle(f"Where the quantile pays: {exp}", fontsize=9)
    return figures.save(fig, out_dir, name)


def size_chart(rows: pd.DataFrame) -> Any:
    """Ratio against size per experiment: proven ratios as points, bounds as open triangles, the trend."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    exps = sorted(rows["experiment"].unique())
    fig = make_subplots(rows=1, cols=len(exps), subplot_titles=exps, horizontal_spacing=0.06)
    for c, exp in enumerate(exps, start=1):
        for k, solver in enumerate(PLANNERS):
            g = rows[(rows["experiment"] == exp) & (rows["solver"] == solver) & rows["feasible"]]
            if g.empty:
                continue
            p, b = g[g["proven"]], g[~g["proven"]]
            show = c == 1
            fig.add_trace(go.Scatter(x=p["size"], y=p["ratio_lo"], mode="markers", name=f"{solver} / optimum",
                                     legendgroup=solver, showlegend=show, marker={"color": color(k), "size": 7},
                                     customdata=p["instance"],
                                     hovertemplate=f"{solver}<br>%{{customdata}}<br>size %{{x:g}}<br>cost / proven "
                                                   "optimum %{y:.4f}<extra></extra>"), row=1, col=c)
            hi = b["ratio_hi"].where(np.isfinite(b["ratio_hi"]), np.nan)
            fig.add_trace(go.Scatter(x=b["size"], y=hi, mode="markers", name=f"{solver}: upper bound (unproven)",
                                     legendgroup=f"{solver}b", showlegend=show and len(b) > 0,
                                     marker={"color": color(k), "size": 9, "symbol": "triangle-down-open"},
                                     customdata=np.stack([b["instance"], b["ratio_lo"]], axis=1) if len(b) else None,
                                     hovertemplate=f"{solver}<br>%{{customdata[0]}}<br>size %{{x:g}}<br>ratio in "
                                                   "[%{customdata[1]:.4f}, %{y:.4f}] (exact's bound, not an "
                                                   "optimum)<extra></extra>"), row=1, col=c)
            t = trend(p["size"], p["ratio_lo"])
            if np.isfinite(t["b"]):
                grid = np.linspace(p["size"].min(), p["size"].max(), 20)
                fig.add_trace(go.Scatter(x=grid, y=t["a"] + t["b"] * np.log(grid), mode="lines", legendgroup=solver,
                                         showlegend=False, line={"color": color(k), "dash": "dot"},
                                         hovertemplate=f"{solver} trend: {t['b']:+.4f} per ln(size) "
                                                       f"[{t['b_lo']:+.4f}, {t['b_hi']:+.4f}]<extra></extra>"),
                              row=1, col=c)
        fig.add_hline(y=1.0, line={"color": "black", "width": 1}, row=1, col=c)
        fig.update_xaxes(title_text=rows.loc[rows["experiment"] == exp, "axis"].iloc[0], row=1, col=c)
    fig.update_yaxes(title_text="cost / optimum", row=1, col=1)
    return style(fig, "Competitive ratio against size (stated (1+eps)/eta is below 1, not drawn)", height=400)


@figures.styled
def size_figure(rows: pd.DataFrame, out_dir: Path, name: str = "claims_size") -> Path:
    """The static version of :func:`size_chart`."""
    exps = sorted(rows["experiment"].unique())
    fig, axes = figures.new_figure(len(exps), 1, w=2.6, h=2.4, sharey=True)
    for c, exp in enumerate(exps):
        ax = axes[0][c]
        for k, solver in enumerate(PLANNERS):
            g = rows[(rows["experiment"] == exp) & (rows["solver"] == solver) & rows["feasible"]]
            p, b = g[g["proven"]], g[~g["proven"]]
            ax.plot(p["size"], p["ratio_lo"], "o", color=color(k), ms=4, label=f"{solver} / optimum")
            if len(b):
                ax.plot(b["size"], b["ratio_hi"], "v", mfc="none", color=color(k), ms=5, label=f"{solver}: bound")
            t = trend(p["size"], p["ratio_lo"])
            if np.isfinite(t["b"]):
                grid = np.linspace(p["size"].min(), p["size"].max(), 20)
                ax.plot(grid, t["a"] + t["b"] * np.log(grid), ":", color=color(k))
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_title(exp)
        ax.set_xlabel(rows.loc[rows["experiment"] == exp, "axis"].iloc[0])
    axes[0][0].set_ylabel("cost / optimum")
    axes[0][0].legend(loc="upper left")
    return figures.save(fig, out_dir, name)
