"""The entity pages of the report's site: per experiment, per method and per instance, and the
overview's headline chart and solver summary (:mod:`deplbench.benchmarks.report.site` assembles them)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import TIE_RTOL, feasible_mask, shifted_geomean
from deplbench.benchmarks.report import charts
from deplbench.benchmarks.report.comparison import (
    comparison_table,
    per_instance,
    performance_ratios,
)
from deplbench.benchmarks.report.timings import timing_table
from deplbench.benchmarks.site.charts import color, embed, style
from deplbench.benchmarks.site.pages import Site, cards, kv, link_list
from deplbench.benchmarks.site.tables import html_table

RESULT_COLUMNS = ("method", "status", "harness_status", "feasible", "cost", "ratio", "q_hi", "loss_mean", "runtime_s",
                  "reason")


def _exp_key(d: pd.DataFrame) -> pd.Series:
    return d["config"].fillna("-").astype(str) + "/" + d["experiment"].fillna("-").astype(str)


def experiments(d: pd.DataFrame) -> list[str]:
    """The experiments of the store, named ``config/experiment``."""
    return sorted(_exp_key(d).unique()) if len(d) else []


def experiment_runs(d: pd.DataFrame, exp: str) -> pd.DataFrame:
    """The runs of one experiment."""
    return d[_exp_key(d) == exp]


def sgm_summary(d: pd.DataFrame, exps: list[str]) -> pd.DataFrame:
    """Per experiment and method: instances, solved, shifted geometric mean of time."""
    rows = []
    for x in exps:
        t = comparison_table(experiment_runs(d, x))
        for _, r in t.iterrows():
            rows.append({"experiment": x, "method": r["method"], "instances": r["instances"], "solved": r["solved"],
                         "sgm_time_s": r["sgm_time_s"]})
    return pd.DataFrame(rows)


#: headline column prefix -> the method's registered name (its one display name)
HEADLINE_NAMES = {"depl": "depl", "bestexp": "best-exp", "deplplus": "depl-plus"}


def headline_chart(h: pd.DataFrame):
    """Cost / optimum per paper instance for every method of the headline table (None without ratios).

    The methods sit side by side at each instance (offset, so equal ratios stay visible); a method
    with no certified plan on an instance is an open ``x`` at the top of the axis with the reason.
    """
    import plotly.graph_objects as go

    from deplbench.benchmarks.site.palette import look

    cols = [c for c in h.columns if str(c).endswith("_ratio")]
    if not cols or h.empty:
        return None
    label = [f"{a} {b}, t{t:g}" for a, b, t in zip(h["network"], h["noise_mode"], h["target"], strict=True)]
    x0 = np.arange(len(h), dtype=float)
    width = 0.6 / max(1, len(cols))
    ys = [pd.to_numeric(h[c], errors="coerce") for c in cols]
    top = max([float(y.max()) for y in ys if y.notna().any()] or [1.0]) * 1.01 + 0.01
    fig = go.Figure()
    flags = h["flags"].fillna("").astype(str) if "flags" in h else pd.Series([""] * len(h))
    for i, (c, y) in enumerate(zip(cols, ys, strict=True)):
        name = h.attrs.get("methods", {}).get(c[:-6]) or HEADLINE_NAMES.get(c[:-6], c[:-6])
        lk = look(name)
        x = x0 + (i - (len(cols) - 1) / 2) * width
        cost = pd.to_numeric(h.get(c[:-6] + "_cost"), errors="coerce") if c[:-6] + "_cost" in h else y * np.nan
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name=name, legendgroup=name,
                                 marker={"size": 10, "symbol": lk.marker if lk else "circle",
                                         "line": {"width": 1, "color": "white"}},
                                 customdata=np.stack([label, cost.astype(float)], 1),
                                 hovertemplate=(f"method: {name}<br>instance: %{{customdata[0]}}<br>cost / optimum = "
                                                "%{y:.4f}<br>cost %{customdata[1]:.4g}<extra></extra>")))
        gone = y.isna().to_numpy()
        if gone.any():
            solver = HEADLINE_NAMES.get(c[:-6], c[:-6])
            why = [next((f for f in flags.iloc[k].split("; ") if f.startswith(solver + " ")), "no plan")
                   for k in np.flatnonzero(gone)]
            fig.add_trace(go.Scatter(x=x[gone], y=np.full(int(gone.sum()), top), mode="markers",
                                     name=f"{name}: no certified plan", legendgroup=name, showlegend=True,
                                     marker={"size": 12, "symbol": "x-thin-open", "line": {"width": 2}},
                                     customdata=np.stack([np.array(label)[gone], why], 1),
                                     hovertemplate=("method: " + name + "<br>instance: %{customdata[0]}<br>"
                                                    "%{customdata[1]}<extra></extra>")))
    fig.add_hline(y=1.0, line={"color": "black", "width": 1})
    style(fig, "Heuristics against the optimum, per paper instance", height=460, legend_title="method")
    fig.update_layout(legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0.0},
                      margin={"t": 90, "b": 150})
    fig.update_yaxes(title_text="cost / optimum")
    fig.update_xaxes(tickmode="array", tickvals=x0.tolist(), ticktext=label, tickangle=-60,
                     title_text="paper instance (network, noise mode, loss target t)", showgrid=False, zeroline=False)
    return fig


def experiment_page(site: Site, exp: str, g: pd.DataFrame, page: str, links: dict) -> None:
    """Comparison table, performance profile, and the cost and time of every method per instance."""
    parts, n = [], 0
    parts.append(cards([(str(len(g)), "runs"), (str(g["instance"].nunique()), "instances"),
                        (str(g["method"].nunique()), "methods")]))
    parts.append(html_table(comparison_table(g), "Solver comparison (certified costs; shifted geometric mean "
                            "of time with shift 10 s, unsolved charged the limit)", table_id="t1", links=links))
    r = performance_ratios(g)
    chart = False
    if r.shape[1] >= 2 and (g.groupby("instance")["method"].nunique() >= 2).any():
        parts.append(embed(charts.performance_profile(r, f"Performance profile: {exp}"), "c1",
                           "Dolan-More performance profile of time: the fraction of instances each method solves "
                           "within tau times the best time."))
        chart = True
    pi = per_instance(g)
    for what, col, cap in (("cost", "cost", "Certified cost per instance (best per row marked; - : no feasible plan)"),
                           ("ttime", "ttime", "Time per instance (s; unsolved charged the limit; fastest marked)")):
        n += 1
        wide = pi.pivot(index="instance", columns="method", values=col)
        suffix = "_cost" if what == "cost" else "_ttime"
        wide.columns = [f"{m}{suffix}" for m in wide.columns]
        heads = {f"{m}{suffix}": m for m in pi["method"].unique()}
        parts.append(html_table(wide.reset_index(), cap, table_id=f"m{n}", links=links, headers=heads))
    site.page(page, f"Experiment {exp}", "".join(parts), crumbs=[("Overview", "index.html"),
                                                                   ("Experiments", "experiments/index.html")],
              charts=chart)


def method_page(site: Site, method: str, d: pd.DataFrame, refs: pd.DataFrame, mpage: dict, links: dict) -> None:
    """Parameters, variants, results per instance (cost, ratio to the reference, rank), wins and losses."""
    g = d[d["method"] == method]
    page = mpage[method]
    solver = str(g["solver"].dropna().iloc[0]) if g["solver"].notna().any() else method
    params = [(c[2:], ", ".join(sorted({f"{v:g}" if isinstance(v, float) else str(v) for v in g[c].dropna()})))
              for c in sorted(g.columns) if c.startswith("p_") and g[c].notna().any()]
    variants = [(m, mpage[m]) for m in sorted(d.loc[d["solver"] == solver, "method"].dropna().unique())
                if m != method and m in mpage]
    pi = per_instance(d[d["instance"].isin(g["instance"].unique())])
    best = pi.groupby("instance")["cost"].min()
    fastest = pi[pi["solved"]].groupby("instance")["ttime"].min()
    mine = pi[pi["method"] == method].set_index("instance")
    rank = pi.assign(rank=pi.groupby("instance")["cost"].rank(method="min")).set_index(["method", "instance"])["rank"]
    status = g.groupby("instance")["status"].agg(lambda s: s.mode().iloc[0] if s.notna().any() else None)
    reason = g.groupby("instance")["reason"].agg(lambda s: "; ".join(sorted(set(s.dropna().astype(str)))) or None)
    rows = []
    for inst, r in mine.iterrows():
        ref = float(refs.loc[inst, "ref_hi"]) if inst in refs.index else math.nan
        rows.append({"instance": inst, "status": status.get(inst), "solved": bool(r["solved"]),
                     "cost": r["cost"], "best_cost": best.get(inst, math.nan),
                     "ratio": r["cost"] / ref if ref and not math.isnan(ref) else math.nan,
                     "rank_cost": rank.get((method, inst), math.nan), "ttime": r["ttime"],
                     "reason": reason.get(inst)})
    tab = pd.DataFrame(rows)
    wins = int((mine["cost"] <= mine.index.map(best) * (1 + TIE_RTOL)).sum()) if len(mine) else 0
    fast = int((mine["solved"] & (mine["ttime"] <= mine.index.map(fastest) * (1 + TIE_RTOL))).sum()) if len(mine) else 0
    lost = tab[(tab["ratio"] > 1 + 1e-6) | ~tab["solved"]] if len(tab) else tab
    parts = [cards([(str(len(g)), "runs"), (str(len(mine)), "instances"), (str(int(mine["solved"].sum())), "solved"),
                    (str(wins), "cheapest (ties count)"), (str(fast), "fastest among solvers"),
                    (f"{shifted_geomean(mine['ttime']):.3g} s" if len(mine) else "-", "shifted geo. mean time (CPU where single-threaded)")]),
             "<h2>Parameters</h2>", kv([("solver", solver), ("kind", str(g["solver_kind"].dropna().iloc[0])
                                                              if g["solver_kind"].notna().any() else "-")] + params)]
    if variants:
        parts += ["<h2>Variants of the same solver</h2>", link_list(variants, page)]
    parts.append("<h2>Results per instance</h2>")
    parts.append(html_table(tab.rename(columns={"ttime": "time_s"}), "Its certified cost beside the best cost of "
                            "any method on the instance; ratio = cost / reference (proven optimum, else best known); "
                            "time: the method's CPU time where single-threaded, else its wall clock (Timings below)",
                            table_id="t1", links=links, best=False))
    parts.append("<h2>Where it loses</h2>")
    if len(lost):
        worst = lost.sort_values("ratio", ascending=False, na_position="first").head(10)
        parts.append(html_table(worst.rename(columns={"ttime": "time_s"}), "Unsolved, or dearer than the reference "
                                "(worst first)", table_id="t2", links=links, best=False))
    else:
        parts.append("<p>Nowhere: it solves every instance it ran on at the reference cost.</p>")
    parts += ["<h2>Timings</h2>", timing_table(g, "Per run: the method's time and CPU time, the run's wall and CPU "
                                               "time (whole process tree), peak memory, load, cores", "t3",
                                               {"instance": links["instance"]} if "instance" in links else None)]
    site.page(page, f"Method {method}", "".join(parts), crumbs=[("Overview", "index.html"),
                                                                ("Methods", "methods/index.html")])


def plan_chart(runs: pd.DataFrame, instance) -> object | None:
    """Each method's plan as a bar of epochs, one coloured block per segment (model, cluster, level)."""
    import plotly.graph_objects as go

    from deplbench.benchmarks.report.paper_figures import row_plan

    fig = go.Figure()
    models: dict[str, int] = {}
    shown = 0
    for method, g in runs.sort_values("method").groupby("method", sort=True):
        plan = row_plan(g.sort_values("repetition").iloc[0]) if "plan_json" in g else None
        if plan is None:
            continue
        shown += 1
        start = 0
        for s in plan.segments:
            k = models.setdefault(s.model, len(models))
            fig.add_trace(go.Bar(y=[method], x=[s.epochs], base=[start], orientation="h", name=s.model,
                                 legendgroup=s.model, showlegend=k == len(models) - 1 and start == 0 or False,
                                 marker={"color": color(k), "line": {"color": "white", "width": 1}},
                                 hovertemplate=(f"method: {method}<br>model {s.model}<br>cluster {s.cluster}, level "
                                                f"{s.level:g}<br>epochs {start + 1} to {start + s.epochs}<extra></extra>")))
            start += s.epochs
    if not shown:
        return None
    seen = set()
    for t in fig.data:  # one legend entry per model
        t.showlegend = t.name not in seen
        seen.add(t.name)
    style(fig, "Plans: epochs per segment (model; hover for cluster and level)", height=140 + 40 * shown,
          legend_title="model")
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text="epoch")
    return fig


def instance_page(site: Site, name: str, runs: pd.DataFrame, refs: pd.DataFrame, get, page: str, links: dict) -> None:
    """The instance's figures, its reference, every method's result on it and their plans."""
    parts = []
    try:
        inst = get(name)
    except Exception:  # noqa: BLE001 - an instance not stored: its runs are still shown
        inst = None
    facts = [("family", str(runs["family"].dropna().iloc[0]) if runs["family"].notna().any() else "-")]
    if inst is not None:
        facts += [("noise mode", inst.noise_mode), ("loss target", f"{inst.loss.target:g}"),
                  ("quantile", f"{inst.loss.quantile:g}"), ("models", str(len(inst.model_ids))),
                  ("max epochs", str(inst.max_epochs))]
    if name in refs.index:
        ref = refs.loc[name]
        if bool(ref["proven"]):
            facts.append(("reference", f"{float(ref['ref_hi']):.6g} (proven optimum, {ref['ref_source']})"))
        else:
            facts.append(("reference", f"optimum in [{float(ref['ref_lo']):.6g}, {float(ref['ref_hi']):.6g}] "
                                       "(not proven: best bound, best certified cost)"))
    else:
        facts.append(("reference", "none (no certified plan)"))
    parts.append(kv(facts))
    ref_hi = float(refs.loc[name, "ref_hi"]) if name in refs.index else math.nan
    feas = feasible_mask(runs)
    cost = runs["cost"].where(feas)
    tab = runs.assign(ratio=cost / ref_hi if ref_hi and not math.isnan(ref_hi) else math.nan)
    tab = tab[[c for c in RESULT_COLUMNS if c in tab.columns]].sort_values(["method"])
    parts.append("<h2>Every method's result</h2>")
    parts.append(html_table(tab, "One row per run; cost and quantile are the evaluator's (certified)",
                            table_id="t1", links={"method": links["method"]}))
    parts += ["<h2>Timings</h2>", timing_table(runs, "Per run: the method's time and CPU time, the run's wall and "
                                               "CPU time (whole process tree), peak memory, load, cores", "t2",
                                               {"method": links["method"]})]
    fig = plan_chart(runs, inst)
    if fig is not None:
        parts.append("<h2>Plans</h2>")
        parts.append(embed(fig, "c1", "The plan of each method's first run: one block per segment of epochs."))
    site.page(page, f"Instance {name}", "".join(parts), crumbs=[("Overview", "index.html"),
                                                                ("Instances", "instances/index.html")],
              charts=fig is not None)


__all__ = ["experiment_page", "experiments", "headline_chart", "instance_page", "method_page", "sgm_summary"]
