"""Interactive versions (Plotly figures) of the report's figures: performance profiles, competitive
ratios and runtime scaling. Each builder returns a ``plotly.graph_objects.Figure`` whose points
carry the instance, the method and the value in their hover text; the site embeds it
(:func:`deplbench.benchmarks.site.charts.embed`), ``report.md`` keeps the matplotlib PNG.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks.report.ratios import stated_bound
from deplbench.benchmarks.report.scaling import loglog_fit
from deplbench.benchmarks.site.charts import color, style


def _go():
    import plotly.graph_objects as go

    return go


def log_ticks(lo: float, hi: float) -> list[float]:
    """Plain major ticks of a log axis from ``lo`` to ``hi`` (at most 7; no crowded minor labels)."""
    from deplbench.benchmarks.report.figures import LOG_TICKS

    ticks = [float(t) for t in LOG_TICKS if lo <= t <= hi]
    while len(ticks) > 7:
        ticks = ticks[::2]
    return ticks


def performance_profile(ratios: pd.DataFrame, title: str) -> Any:
    """Dolan-More profile: for each method, the fraction of instances solved within tau x the best time.

    One step curve per method; a marker per instance the method solves (hover: instance, method,
    tau). Unsolved instances never count (the curve stays below 1).
    """
    go = _go()
    fig = go.Figure()
    n = len(ratios)
    finite = ratios.to_numpy(float)[np.isfinite(ratios.to_numpy(float))]
    tau_max = max(2.0, float(finite.max()) * 1.5) if finite.size else 2.0
    for i, m in enumerate(ratios.columns):
        r = ratios[m].astype(float)
        solved = r[np.isfinite(r)].sort_values(kind="stable")
        xs = [1.0, *solved.to_numpy(), tau_max]
        ys = [float((solved <= 1.0 + 1e-12).sum()) / n if n else 0.0]
        ys += [(k + 1) / n for k in range(len(solved))] + [len(solved) / n if n else 0.0]
        names = ["", *solved.index.astype(str), ""]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines+markers", line={"shape": "hv", "color": color(i)}, name=str(m),
            marker={"size": [0, *[6] * len(solved), 0]}, customdata=names,
            hovertemplate=(f"method: {m}<br>instance: %{{customdata}}<br>tau = %{{x:.3g}}"
                           "<br>fraction solved within tau: %{y:.2f}<extra></extra>")))
    style(fig, title, height=400, legend_title="method")
    ticks = log_ticks(1.0, tau_max)
    fig.update_xaxes(type="log", title_text="tau: time / best time on the instance (log scale)",
                     range=[-0.02, math.log10(tau_max) + 0.02], tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    fig.update_yaxes(range=[-0.02, 1.05], title_text="fraction of instances", tickformat=".0%")
    return fig


def ratio_chart(ratios: pd.DataFrame) -> Any:
    """Cost / optimum of one method against eta (one line per eps) and against eps (one per eta).

    Linear axes on the scale of the ratios (the stated (1+eps)/eta is far below 1 and is given in
    a note, not drawn); every instance is a point (hover: instance, parameters, ratio), lines join
    the means; the horizontal line at 1 is the optimum.
    """
    from plotly.subplots import make_subplots

    go = _go()
    f = ratios[ratios["feasible"]]
    who = ", ".join(sorted(ratios["solver"].astype(str).unique())) if "solver" in ratios else "method"
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"{who}: ratio vs eta", f"{who}: ratio vs eps"),
                        horizontal_spacing=0.1)
    k = 0
    for col, (xcol, lcol) in enumerate((("eta", "eps"), ("eps", "eta")), start=1):
        values = sorted(float(v) for v in f[xcol].dropna().unique())
        if len(values) < 2:  # an axis that was not swept: said, not drawn as one point
            fig.add_annotation(text=f"{xcol} not swept: {', '.join(f'{v:g}' for v in values) or 'no value'} only",
                               xref="paper", yref="paper", x=0.225 if col == 1 else 0.775, y=0.5, showarrow=False,
                               font={"size": 13, "color": "#5a6473"})
            fig.update_xaxes(visible=False, row=1, col=col)
            fig.update_yaxes(visible=False, row=1, col=col)
            continue
        for lv, g in f.groupby(lcol, sort=True):
            c = color(k)
            k += 1
            mean = g.groupby(xcol)["ratio_lo"].mean()
            fig.add_trace(go.Scatter(
                x=mean.index.to_numpy(float), y=mean.to_numpy(float), mode="lines+markers", name=f"mean, {lcol}={lv:g}",
                line={"color": c}, marker={"size": 8}, legendgroup=f"{col}{lv}",
                hovertemplate=f"mean over instances<br>{lcol} = {lv:g}<br>{xcol} = %{{x:g}}<br>"
                              "cost / optimum = %{y:.4f}<extra></extra>"), row=1, col=col)
            hi = g["ratio_hi"].where(np.isfinite(g["ratio_hi"]), g["ratio_lo"])
            fig.add_trace(go.Scatter(
                x=g[xcol].to_numpy(float), y=g["ratio_lo"].to_numpy(float), mode="markers",
                name=f"instances, {lcol}={lv:g}", legendgroup=f"{col}{lv}", showlegend=False,
                marker={"color": c, "size": 5, "opacity": 0.45},
                customdata=np.stack([g["instance"].astype(str).to_numpy(), hi.to_numpy(float)], axis=1),
                hovertemplate=(f"instance: %{{customdata[0]}}<br>{lcol} = {lv:g}<br>{xcol} = %{{x:g}}<br>"
                               "cost / optimum = %{y:.4f} (upper end %{customdata[1]:.4f})<extra></extra>")),
                row=1, col=col)
        gone = ratios[~ratios["feasible"]] if "feasible" in ratios else ratios.iloc[:0]
        if len(gone):  # a run without a certified plan is marked, not dropped
            why = [f"{r['instance']}: {r.get('reason') or 'no certified plan'}" for _, r in gone.iterrows()]
            fig.add_trace(go.Scatter(
                x=gone[xcol].to_numpy(float), y=np.ones(len(gone)), mode="markers", legendgroup="noplan",
                name="no certified plan (drawn at 1)", showlegend=col == 1,
                marker={"symbol": "x-thin-open", "size": 12, "color": "#c5221f", "line": {"width": 2, "color": "#c5221f"}},
                customdata=np.array(why, dtype=object).reshape(-1, 1),
                hovertemplate=f"{xcol} = %{{x:g}}: %{{customdata[0]}}<extra></extra>"), row=1, col=col)
        fig.add_hline(y=1.0, line={"color": "black", "width": 1}, row=1, col=col)
        xs = sorted(float(v) for v in f[xcol].dropna().unique())
        ticks = {"tickvals": xs, "ticktext": [f"{v:g}" for v in xs]} if len(xs) <= 8 else {}
        fig.update_xaxes(type="log", title_text=xcol, row=1, col=col, **ticks)
        fig.update_yaxes(title_text="cost / optimum", row=1, col=col)
    stated = [stated_bound(float(a), float(b)) for a, b in f[["eta", "eps"]].drop_duplicates().to_numpy()]
    title = f"{who}: competitive ratio"
    if stated:
        title += f" (stated (1+eps)/eta: {min(stated):.2g} to {max(stated):.2g}, below 1, not drawn)"
    return style(fig, title, height=430)


def scaling_chart(series: list[dict[str, Any]], title: str = "Runtime scaling") -> Any:
    """Runtime against each scaling variable, log-log, one panel per series: finished runs, the
    fitted line, and time-outs (censored, at their limit). Hover: instance, solver, x, time."""
    from plotly.subplots import make_subplots

    go = _go()
    n = len(series)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    titles = [f"{s['solver']}: vs {s['var']} ({len(s['x'])} runs, {len(set(map(str, s.get('names', []))))} instances)"
              for s in series]
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=titles,
                        horizontal_spacing=0.08, vertical_spacing=0.22 / max(1, nrows - 1) if nrows > 1 else 0.1)
    for i, s in enumerate(series):
        r, c = i // ncols + 1, i % ncols + 1
        names = s.get("names", np.array([""] * len(s["x"])))
        fig.add_trace(go.Scatter(
            x=np.asarray(s["x"], float), y=np.asarray(s["t"], float), mode="markers", name="finished run",
            legendgroup="fin", showlegend=i == 0, marker={"color": color(0), "size": 6}, customdata=names,
            hovertemplate=(f"instance: %{{customdata}}<br>solver: {s['solver']}<br>{s['var']} = %{{x:g}}<br>"
                           "time = %{y:.3g} s<extra></extra>")), row=r, col=c)
        if len(s["cx"]):
            fig.add_trace(go.Scatter(
                x=np.asarray(s["cx"], float), y=np.asarray(s["ct"], float), mode="markers",
                name="time-out (censored, not fitted)", legendgroup="cens", showlegend=True,
                marker={"symbol": "triangle-up-open", "color": color(3), "size": 9},
                customdata=s.get("cnames", np.array([""] * len(s["cx"]))),
                hovertemplate=(f"instance: %{{customdata}}<br>solver: {s['solver']}<br>{s['var']} = %{{x:g}}<br>"
                               "time limit %{y:.3g} s (timed out)<extra></extra>")), row=r, col=c)
        fit = loglog_fit(s["x"], s["t"])
        if not math.isnan(fit["b"]):
            lx = np.log(np.asarray(s["x"], float))
            grid = np.exp(np.linspace(lx.min(), lx.max(), 30))
            if len(lx) > 2:  # the 95% band of the fitted mean, as the caption says
                from deplbench.benchmarks.report.figures import _mean_band

                half = _mean_band(lx, np.log(np.asarray(s["t"], float)), fit, np.log(grid))
                mid = fit["a"] + fit["b"] * np.log(grid)
                fig.add_trace(go.Scatter(
                    x=np.r_[grid, grid[::-1]], y=np.exp(np.r_[mid + half, (mid - half)[::-1]]), fill="toself",
                    mode="lines", line={"width": 0}, fillcolor="rgba(255,127,14,0.18)", legendgroup="band",
                    name="95% band of the fit", showlegend=i == 0, hoverinfo="skip"), row=r, col=c)
            fig.add_trace(go.Scatter(
                x=grid, y=np.exp(fit["a"]) * grid ** fit["b"], mode="lines", legendgroup="fit",
                name="least-squares fit", showlegend=i == 0, line={"color": color(1)},
                hovertemplate=(f"{s['solver']} vs {s['var']}: exponent {fit['b']:.2f} "
                               f"[{fit['ci_lo']:.2f}, {fit['ci_hi']:.2f}]<extra></extra>")), row=r, col=c)
        xs = sorted({float(v) for v in np.r_[np.asarray(s["x"], float), np.asarray(s["cx"], float)]})
        ticks = {"tickvals": xs, "ticktext": [f"{v:g}" for v in xs]} if len(xs) <= 8 else {}
        fig.update_xaxes(type="log", title_text=s["var"], row=r, col=c, **ticks)
        fig.update_yaxes(type="log", title_text="time (s)", row=r, col=c)
    return style(fig, title, height=max(380, 320 * nrows))
