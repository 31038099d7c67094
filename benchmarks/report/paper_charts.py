"""Interactive versions (Plotly) of the paper's figures (Fig. 5-9), one panel per noise mode and
method, as in :mod:`deplbench.benchmarks.report.paper_figures`; hover shows instance, method and value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask
from deplbench.benchmarks.site.charts import color, style

#: the loss-target offset between methods drawn side by side (their costs are often equal)
OFFSET = 0.12


def _panels(rows: int, cols: int, titles: list[str]) -> Any:
    from plotly.subplots import make_subplots

    return make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.07,
                         vertical_spacing=0.16)


def cost_loss_eta_chart(net: str, rows: pd.DataFrame, d: pd.DataFrame, modes: tuple[str, ...],
                        methods: tuple[str, ...], eta_method: str) -> Any:
    """Fig. 5/6: cost vs target, expected loss / optimum's, and ``eta_method``'s cost / optimum vs eta."""
    import plotly.graph_objects as go

    titles = [f"{t} ({m})" for m in modes for t in ("cost vs target", "expected loss / optimum's", "effect of eta")]
    fig = _panels(len(modes), 3, titles)
    for i, mode in enumerate(modes, start=1):
        r = rows[(rows["network"] == net) & (rows["noise_mode"] == mode)]
        opt = r[r["which"] == "optimum"].set_index("target")
        for j, m in enumerate(methods):
            s = r[r["which"] == m].sort_values("target")
            if s.empty:
                continue
            feas = s["feasible"].astype("boolean").fillna(False).astype(bool).to_numpy()
            info = np.stack([s["instance"].astype(str).to_numpy(), np.where(feas, "feasible", "INFEASIBLE plan"),
                             s["target"].map("{:g}".format).to_numpy()], 1)
            symbols = np.where(feas, ["circle", "square", "diamond"][j % 3], "x")
            common = {"name": m, "legendgroup": m, "line": {"color": color(j)}, "customdata": info,
                      "marker": {"symbol": symbols, "size": 8}, "mode": "lines+markers"}
            x = s["target"].to_numpy(float) + OFFSET * (j - (len(methods) - 1) / 2)  # equal costs stay visible
            fig.add_trace(go.Scatter(x=x, y=s["cost"], showlegend=i == 1, **common,
                                     hovertemplate=f"method: {m}<br>instance: %{{customdata[0]}}<br>target %{{customdata[2]}}"
                                                   "<br>cost %{y:.4g} (%{customdata[1]})<extra></extra>"), row=i, col=1)
            norm = s["loss_mean"].to_numpy(float) / s["target"].map(opt["loss_mean"]).to_numpy(float)
            fig.add_trace(go.Scatter(x=x, y=norm, showlegend=False, **common,
                                     hovertemplate=f"method: {m}<br>instance: %{{customdata[0]}}<br>target %{{customdata[2]}}"
                                                   "<br>E[loss] / optimum's = %{y:.4f}<extra></extra>"), row=i, col=2)
        every = d[(d["network"] == net) & (d["noise_mode"] == mode) & (d["solver"] == eta_method)]
        dg = every[feasible_mask(every)]
        for k, (t, g) in enumerate(dg.groupby("target", sort=True)):
            if t in opt.index and g["p_eta"].nunique() > 1:
                e = g.groupby("p_eta")["cost"].min() / opt.loc[t, "cost"]
                inst = str(g["instance"].iloc[0])
                fig.add_trace(go.Scatter(x=e.index.to_numpy(float), y=e.to_numpy(float), mode="lines+markers",
                                         name=f"target {t:g}", legendgroup=f"t{t}", showlegend=i == 1,
                                         line={"color": color(3 + k), "dash": "dot"},
                                         hovertemplate=f"{eta_method} on {inst}<br>eta %{{x:g}}<br>"
                                                       "cost / optimum = %{y:.4f}<extra></extra>"), row=i, col=3)
        _missing_eta(fig, every, set(dg["p_eta"].astype(float).astype(str) + "/" + dg["target"].astype(str)), i)
        fig.update_xaxes(title_text="loss target", row=i, col=1)
        fig.update_xaxes(title_text="loss target", row=i, col=2)
        etas = sorted(float(e) for e in dg["p_eta"].dropna().unique())
        fig.update_xaxes(title_text="eta", type="log", row=i, col=3, tickvals=etas, ticktext=[f"{e:g}" for e in etas])
        fig.update_yaxes(title_text="cost", row=i, col=1)
        fig.update_yaxes(title_text="E[loss] / optimum's", row=i, col=2)
        fig.update_yaxes(title_text="cost / optimum", row=i, col=3)
    return style(fig, f"{net}: cost, expected loss and the effect of eta (Fig. 5/6)", height=320 * len(modes) + 120)


def _missing_eta(fig: Any, runs: pd.DataFrame, certified: set[str], row: int) -> None:
    """Mark each (eta, target) that ran without a certified plan: an ``x`` at ratio 1 with the reason."""
    import plotly.graph_objects as go

    key = runs["p_eta"].astype(float).astype(str) + "/" + runs["target"].astype(str)
    gone = runs[~key.isin(certified)]
    if gone.empty:
        return
    why = [f"{r['instance']}: {r.get('status')}; {r.get('reason') or 'no certified plan'}" for _, r in gone.iterrows()]
    fig.add_trace(go.Scatter(x=gone["p_eta"].to_numpy(float), y=np.ones(len(gone)), mode="markers",
                             name="no certified plan (drawn at 1)", legendgroup="noplan", showlegend=row == 1,
                             marker={"symbol": "x-thin-open", "size": 12, "color": "#c5221f", "line": {"width": 2}},
                             customdata=np.array(why, dtype=object).reshape(-1, 1),
                             hovertemplate="eta %{x:g}: no certified plan<br>%{customdata[0]}<extra></extra>"),
                  row=row, col=3)


def per_model_chart(net: str, rows: pd.DataFrame, get: Callable, what: str, modes: tuple[str, ...],
                    methods: tuple[str, ...], row_plan: Callable, per_model: Callable, instance: Callable) -> Any:
    """Fig. 7 (``what='epochs'``) / Fig. 8 (``'cost'``): stacked bars per target, one colour per model."""
    import plotly.graph_objects as go

    fig = _panels(len(modes), len(methods), [f"{m} ({mode})" for mode in modes for m in methods])
    seen: dict[str, int] = {}
    for i, mode in enumerate(modes, start=1):
        for j, m in enumerate(methods, start=1):
            s = rows[(rows["network"] == net) & (rows["noise_mode"] == mode) & (rows["which"] == m)]
            bars: dict[str, list] = {}
            for _, r in s.sort_values("target").iterrows():
                plan, inst = row_plan(r), instance(get, r["instance"])
                if plan is None or inst is None:
                    continue
                vals = per_model(inst, plan)[0 if what == "epochs" else 1]
                for mid in inst.model_ids:
                    seen.setdefault(mid, len(seen))
                    bars.setdefault(mid, []).append((r["target"], vals.get(mid, 0), r["instance"],
                                                     "feasible" if bool(r["feasible"]) else "INFEASIBLE plan"))
            for mid, pts in bars.items():
                x, y, names, feas = zip(*pts, strict=True)
                fig.add_trace(go.Bar(x=list(x), y=list(y), name=mid, legendgroup=mid,
                                     showlegend=(i, j) == (1, 1) or mid not in {t.name for t in fig.data},
                                     marker={"color": color(seen[mid])}, customdata=np.stack([names, feas], 1),
                                     hovertemplate=(f"method: {m}<br>instance: %{{customdata[0]}}<br>model {mid}: "
                                                    f"%{{y:.4g}} {what}<br>%{{customdata[1]}}<extra></extra>")),
                              row=i, col=j)
            fig.update_xaxes(title_text="loss target", type="category", row=i, col=j)
            fig.update_yaxes(title_text=what if what == "epochs" else "compute cost", row=i, col=j)
    fig.update_layout(barmode="stack")
    label = "epochs" if what == "epochs" else "compute cost"
    return style(fig, f"{net}: {label} per model (Fig. {7 if what == 'epochs' else 8})",
                 height=300 * len(modes) + 120, legend_title="model")


def loss_band_chart(net: str, bands: list[tuple[int, int, str, str, np.ndarray, float]], modes: tuple[str, ...],
                    methods: tuple[str, ...], target: float) -> Any:
    """Fig. 9: median loss per epoch and its 1st-99th percentile band; ``bands`` holds
    (mode index, method index, method, instance, percentiles (3, K+1), loss target)."""
    import plotly.graph_objects as go

    fig = _panels(len(modes), len(methods), [f"{m} ({mode})" for mode in modes for m in methods])
    for mi, j, m, inst, pct, tgt in bands:
        k = np.arange(pct.shape[1])
        row, col, c = mi + 1, j + 1, color(j)
        first = not any(t.legendgroup == m for t in fig.data)
        fig.add_trace(go.Scatter(x=np.r_[k, k[::-1]], y=np.r_[pct[2], pct[0][::-1]], fill="toself", mode="lines",
                                 line={"width": 0}, fillcolor=c, opacity=0.25, name=f"{m}: 1st-99th percentile",
                                 legendgroup=m, showlegend=first, hoverinfo="skip"), row=row, col=col)
        fig.add_trace(go.Scatter(x=k, y=pct[1], mode="lines", line={"color": c}, name=f"{m}: median",
                                 legendgroup=m, showlegend=first, customdata=np.stack([pct[0], pct[2]], 1),
                                 hovertemplate=(f"method: {m}<br>instance: {inst}<br>epoch %{{x}}<br>median loss "
                                                "%{y:.3f}<br>1st-99th: %{customdata[0]:.3f} to %{customdata[1]:.3f}"
                                                "<extra></extra>")), row=row, col=col)
        fig.add_hline(y=tgt, line={"color": "black", "dash": "dash", "width": 1}, row=row, col=col)
        fig.update_xaxes(title_text="epoch", row=row, col=col)
        fig.update_yaxes(title_text="loss", row=row, col=col)
    return style(fig, f"{net}: loss evolution at target {target:g} (Fig. 9; dashed: the target)",
                 height=300 * len(modes) + 120)
