"""The paper's figures (Fig. 5-9) for both noise modes, from the stored runs and their plans.

Per network: cost vs target, expected loss normalised to the optimum's and the effect of
eta (Fig. 5/6); epochs and compute cost per model (Fig. 7, 8); loss evolution with
1st-99th percentile bands, simulated from each feasible plan (Fig. 9).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt

from deplbench.benchmarks.harness.frame import feasible_mask
from deplbench.benchmarks.report import paper_charts as pc
from deplbench.benchmarks.report.figures import new_figure, save, styled
from deplbench.benchmarks.report.headline import HEADLINE_METHODS, pick_variant
from deplbench.benchmarks.report.sections import ReportContext, Section, register_section
from deplbench.benchmarks.site.palette import color_of
from deplbench.errors import InputError
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.laws.noise import model_noise
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import data_effect, epoch_cost, progress

#: the curves of every figure: the optimum and the headline methods shown even when absent (data)
PICKS = tuple((solver, prefer) for _, solver, prefer, _, always in HEADLINE_METHODS if always)
METHODS = ("optimum", *(solver for solver, _ in PICKS))
#: the method whose cost is drawn against eta (Fig. 5/6, right): the first headline method with an eta
ETA_METHOD = next(solver for solver, prefer in PICKS if "eta" in prefer)
MODES = ("per_epoch", "per_run")
MARKERS = ("o", "s", "^")
N_PATHS = 4000  # simulated trajectories per plan (Fig. 9)


def row_plan(row: pd.Series) -> Plan | None:
    """The plan stored in ``plan_json`` (None when absent, unreadable or empty)."""
    raw = row.get("plan_json")
    if not isinstance(raw, str) or not raw:
        return None
    try:
        plan = Plan.from_json_dict(json.loads(raw), "plan_json")
    except (ValueError, InputError):  # a broken plan is skipped, not fatal
        return None
    return plan if plan.segments else None


def loss_paths(instance, plan: Plan, n: int, seed: int = 0) -> np.ndarray:
    """``n`` sampled loss trajectories ``l(0..K)`` of a plan (MODEL.md section 4), shape (n, K + 1).

    per_epoch: one improvement factor per epoch; per_run: one per model, shared by its epochs;
    a fresh truncated penalty at every switch; the instance's ``loss.floor`` clips every point.
    Forbidden switches add nothing (the plan is infeasible anyway and Fig. 9 shows only
    feasible plans).
    """
    rng = np.random.default_rng(seed)
    models = plan.models()
    K = len(models)
    g = data_effect(instance, plan.datasets).g
    coef = np.array([g * progress(instance.model_by_id[m], k) for k, m in enumerate(models, 1)])
    X = np.empty((n, K))
    for m in dict.fromkeys(models):
        idx = [k for k in range(K) if models[k] == m]
        dist = model_noise(instance.model_by_id[m])
        if instance.noise_mode == "per_run":
            X[:, idx] = dist.sample(rng, (n, 1))
        else:
            X[:, idx] = dist.sample(rng, (n, len(idx)))
    step = -coef * X
    for k in range(1, K):
        sw = instance.switch_by_pair.get((models[k - 1], models[k])) if models[k] != models[k - 1] else None
        if sw is not None:
            step[:, k] += penalty_dist(sw.penalty).sample(rng, n)
    paths = instance.loss.initial + np.cumsum(step, axis=1)
    if instance.loss.floor is not None:  # the loss is max(floor, l) (MODEL.md section 4)
        paths = np.maximum(paths, instance.loss.floor)
    return np.hstack([np.full((n, 1), instance.loss.initial), paths])


def method_rows(d: pd.DataFrame) -> pd.DataFrame:
    """One row per (paper instance, method in METHODS): the run each figure shows.

    optimum: the cheapest certified-feasible run an exact method proved optimal (``proven``
    true); where none did, the cheapest certified-feasible run of any method, ``proven`` false,
    which the figures label "best known". Each headline method: its first run at the headline's
    parameters.
    """
    out = []
    for _, g in d[d["network"].notna()].groupby("instance", sort=True):
        feas = g[feasible_mask(g)]
        opt = feas[(feas["solver_kind"] == "exact") & (feas["status"] == "optimal")]
        proven = not opt.empty
        picks = {"optimum": (opt if proven else feas).sort_values("cost").head(1)}
        picks.update({solver: pick_variant(g, solver, prefer)[0].sort_values("repetition").head(1)
                      for solver, prefer in PICKS})
        for name, r in picks.items():
            if len(r):
                out.append(r.iloc[0].to_dict() | {"which": name, "proven": proven if name == "optimum" else None})
    return pd.DataFrame(out)


def reference_label(rows: pd.DataFrame) -> str:
    """What the reference curve of these rows is: "optimum" only where every point is a proven one."""
    ref = rows[rows["which"] == "optimum"]
    if ref.empty or ref["proven"].astype(bool).all():
        return "optimum"
    return "best known" if not ref["proven"].astype(bool).any() else "optimum or best known"


def _label(m: str, rows: pd.DataFrame) -> str:
    return reference_label(rows) if m == "optimum" else m


def _instance(get: Callable, name: str):
    """The stored instance ``name``, or None when the store lacks it (its bars are left out)."""
    try:
        return get(name)
    except KeyError:
        return None


def _per_model(instance, plan: Plan) -> tuple[dict[str, int], dict[str, float]]:
    """Epochs and compute cost spent on each model by a plan."""
    ep: dict[str, int] = {}
    cost: dict[str, float] = {}
    for s in plan.segments:
        ep[s.model] = ep.get(s.model, 0) + s.epochs
        cost[s.model] = cost.get(s.model, 0.0) + s.epochs * epoch_cost(instance, s.cluster, s.level)
    return ep, cost


@styled
def fig_cost_loss_eta(net: str, rows: pd.DataFrame, d: pd.DataFrame, out: Path) -> Path:
    """Fig. 5/6: cost vs target, expected loss / optimum's, and depl's cost / optimum vs eta."""
    fig, axes = new_figure(3, 2, w=3.0, h=2.4)
    for i, mode in enumerate(MODES):
        r = rows[(rows["network"] == net) & (rows["noise_mode"] == mode)]
        opt = r[r["which"] == "optimum"].set_index("target")
        if r.empty:
            for ax in axes[i, :2]:
                ax.text(0.5, 0.5, f"no runs in {mode}", ha="center", transform=ax.transAxes)
        for j, m in enumerate(METHODS):
            s = r[r["which"] == m].sort_values("target")
            if s.empty:
                continue
            style = {"marker": MARKERS[j], "ms": 6 - 1.2 * j, "color": color_of(m, f"C{j}"), "label": _label(m, r),
                     "alpha": 0.85}
            axes[i, 0].plot(s["target"], s["cost"], **style)
            bad = s[~s["feasible"].astype("boolean").fillna(False).astype(bool) & s["cost"].notna()]
            if len(bad):
                axes[i, 0].scatter(bad["target"], bad["cost"], marker="x", s=40, color="k", zorder=4,
                                   label=f"{m}: infeasible plan")
            norm = s["loss_mean"].to_numpy(float) / s["target"].map(opt["loss_mean"]).to_numpy(float)
            axes[i, 1].plot(s["target"], norm, **style)
        every = d[(d["network"] == net) & (d["noise_mode"] == mode) & (d["solver"] == ETA_METHOD)]
        dg = every[feasible_mask(every)]
        for t, g in dg.groupby("target", sort=True):
            if t in opt.index and g["p_eta"].nunique() > 1:
                e = g.groupby("p_eta")["cost"].min() / opt.loc[t, "cost"]
                axes[i, 2].plot(e.index, e.to_numpy(), marker="o", ms=3, label=f"target {t:g}")
        done = set(zip(dg["p_eta"].astype(float), dg["target"], strict=True))
        gone = every[[(float(a), b) not in done for a, b in zip(every["p_eta"], every["target"], strict=True)]]
        if len(gone) and axes[i, 2].lines:
            axes[i, 2].scatter(gone["p_eta"].astype(float), np.ones(len(gone)), marker="x", s=40, color="#c5221f",
                               zorder=5, label="no certified plan (at 1)")
        if axes[i, 2].lines:
            etas = sorted(float(e) for e in dg["p_eta"].dropna().unique())
            axes[i, 2].set_xscale("log")
            axes[i, 2].set_xticks(etas, [f"{e:g}" for e in etas])  # the measured eta values, no clutter
            axes[i, 2].minorticks_off()
        else:
            axes[i, 2].text(0.5, 0.5, f"needs {ETA_METHOD} runs at several eta", ha="center",
                            transform=axes[i, 2].transAxes)
        ref = reference_label(r)
        titles = ("cost vs target", f"expected loss / {ref}'s", "effect of eta")
        ylabels = ("cost", f"E[loss] / {ref}'s", f"{ETA_METHOD} cost / {ref}")
        for ax, yl, tt in zip(axes[i], ylabels, titles, strict=True):
            ax.set_ylabel(yl)
            ax.set_title(f"{tt} ({mode})")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(frameon=False, fontsize=6.5)
        axes[i, 0].set_xlabel("loss target")
        axes[i, 1].set_xlabel("loss target")
        axes[i, 2].set_xlabel("eta")
    fig.suptitle(f"{net}: Fig. 5/6")
    return save(fig, out, f"paper_{net}_cost_loss_eta")


@styled
def fig_per_model(net: str, rows: pd.DataFrame, get: Callable, what: str, out: Path) -> Path:
    """Fig. 7 (``what='epochs'``) or Fig. 8 (``what='cost'``): stacked bars per target and model.

    Hatched bars: plans the evaluator finds infeasible.
    """
    fig, axes = new_figure(3, 2, w=3.0, h=2.4)
    targets = sorted(rows.loc[rows["network"] == net, "target"].unique())
    handles: dict[str, object] = {}
    for i, mode in enumerate(MODES):
        for j, m in enumerate(METHODS):
            ax = axes[i, j]
            s = rows[(rows["network"] == net) & (rows["noise_mode"] == mode) & (rows["which"] == m)]
            for _, r in s.iterrows():
                plan, inst = row_plan(r), _instance(get, r["instance"])
                if plan is None or inst is None:
                    continue
                vals = _per_model(inst, plan)[0 if what == "epochs" else 1]
                hatch = None if bool(r["feasible"]) else "///"
                bottom = 0.0
                for mid in inst.model_ids:
                    c = f"C{list(inst.model_ids).index(mid)}"
                    if not vals.get(mid, 0):
                        # a zero-height bar would still draw its edge as a coloured sliver
                        handles.setdefault(mid, plt.Rectangle((0, 0), 1, 1, color=c))
                        continue
                    bar = ax.bar(targets.index(r["target"]), vals.get(mid, 0), bottom=bottom, width=0.6,
                                 color=c, hatch=hatch, edgecolor="white" if hatch else c)
                    handles.setdefault(mid, bar)
                    bottom += vals.get(mid, 0)
            ax.set_xticks(range(len(targets)), [f"{t:g}" for t in targets])
            ax.set_xlim(-0.6, len(targets) - 0.4)
            ax.set_title(f"{_label(m, s)} ({mode})")
            ax.set_xlabel("loss target")
            ax.set_ylabel("epochs" if what == "epochs" else "compute cost")
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncols=len(handles),
                   frameon=False)
    fig.suptitle(f"{net}: {what} per model (Fig. {7 if what == 'epochs' else 8}); hatched = infeasible plan")
    return save(fig, out, f"paper_{net}_{what}_per_model")


@styled
def fig_loss_evolution(net: str, rows: pd.DataFrame, get: Callable, out: Path,
                       bands: list | None = None) -> Path | None:
    """Fig. 9: median loss per epoch with its 1st-99th percentile band (feasible plans only).

    ``bands``, when given, receives (mode index, method index, method, instance, percentiles,
    target) of every panel drawn, for the interactive chart.
    """
    r = rows[rows["network"] == net]
    if r.empty:
        return None
    targets = sorted(r["target"].unique())
    target = 9.0 if 9.0 in targets else targets[len(targets) // 2]
    fig, axes = new_figure(3, 2, w=3.0, h=2.4)
    for i, mode in enumerate(MODES):
        for j, m in enumerate(METHODS):
            ax = axes[i, j]
            s = r[(r["noise_mode"] == mode) & (r["which"] == m) & (r["target"] == target)]
            ax.set_title(f"{_label(m, s)} ({mode})")
            plan = row_plan(s.iloc[0]) if len(s) else None
            inst = _instance(get, s.iloc[0]["instance"]) if len(s) else None
            if plan is None or inst is None or not bool(s.iloc[0]["feasible"]):
                ax.text(0.5, 0.5, "no feasible plan" if inst is not None or plan is None else "instance not stored",
                        ha="center", transform=ax.transAxes)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            paths = loss_paths(inst, plan, N_PATHS, seed=0)
            k = np.arange(paths.shape[1])
            lo, med, hi = np.percentile(paths, [1, 50, 99], axis=0)
            if bands is not None:
                bands.append((i, j, m, str(s.iloc[0]["instance"]), np.vstack([lo, med, hi]), inst.loss.target))
            ax.fill_between(k, lo, hi, alpha=0.3, color=color_of(m, f"C{j}"), label="1st-99th percentile")
            ax.plot(k, med, color=color_of(m, f"C{j}"), label="median")
            ax.axhline(inst.loss.target, color="k", ls="--", lw=0.8, label="target")
            ax.set_xlabel("epoch")
            ax.set_ylabel("loss")
            ax.legend(frameon=False, fontsize=6.5)
    fig.suptitle(f"{net}: loss evolution at target {target:g}, median and 1st-99th percentile (Fig. 9)")
    return save(fig, out, f"paper_{net}_loss_evolution")


@register_section("paper-figures", order=60, title="Paper figures (Fig. 5-9), both noise modes")
def paper_section(ctx: ReportContext) -> Section:
    """The paper's figures for every network present in the store (both noise modes)."""
    d, get, out = ctx.runs, ctx.instances, ctx.fig_dir
    sec = Section("Paper figures (Fig. 5-9), both noise modes")
    rows = method_rows(d)
    if rows.empty:
        return sec.p("No runs on the paper families (`paper-alexnet`, `paper-mobilenet`): nothing to draw.")
    for m in METHODS:
        if not (rows["which"] == m).any():
            sec.p(f"No `{m}` runs on the paper instances: its curves are missing.")
    for net in sorted(rows["network"].unique()):
        modes = set(rows.loc[rows["network"] == net, "noise_mode"])
        if missing := set(MODES) - modes:
            sec.p(f"{net}: no runs in noise mode {', '.join(sorted(missing))}.")
        if not rows.loc[(rows["network"] == net) & (rows["which"] == "optimum"), "proven"].astype(bool).all():
            sec.p(f"{net}: no exact run proved an optimum for some instances; their reference is the cheapest "
                  "certified plan of any method, labelled best known (not proven optimal).")
        sec.fig(f"{net}: cost vs target (left), expected loss normalised to the reference's (center: the "
                "proven optimum, or the best known plan where none is proven), "
                f"effect of eta on {ETA_METHOD}'s cost (right); x = plan the evaluator finds infeasible (Fig. 5/6).",
                fig_cost_loss_eta(net, rows, d, out),
                pc.cost_loss_eta_chart(net, rows, d, MODES, METHODS, ETA_METHOD))
        for what, fig_no in (("epochs", 7), ("cost", 8)):
            sec.fig(f"{net}: {'epochs' if what == 'epochs' else 'compute cost'} per model (Fig. {fig_no}).",
                    fig_per_model(net, rows, get, what, out),
                    pc.per_model_chart(net, rows, get, what, MODES, METHODS, row_plan, _per_model, _instance))
        bands: list = []
        p = fig_loss_evolution(net, rows, get, out, bands)
        if p is not None:
            r = rows[rows["network"] == net]
            targets = sorted(r["target"].unique())
            target = 9.0 if 9.0 in targets else targets[len(targets) // 2]
            sec.fig(f"{net}: loss per epoch, median and 1st-99th percentile of {N_PATHS} simulated runs of "
                    "each feasible plan (Fig. 9).", p, pc.loss_band_chart(net, bands, MODES, METHODS, target))
    return sec
