"""One verdict per claim of the paper, on the paper instances of the store, with the measured figure
beside the stated one (registered findings, see :mod:`deplbench.benchmarks.report.findings`).

The claims: DepL beats best-exp by more than 27%; DepL closely matches the optimum (read here as a
mean cost within :data:`CLOSE` of it); Property 2's complexity in eta and in eps; Property 3's
constant competitive ratio (1+eps)/eta; stage 1's dataset selection is optimal. DepL is the
headline's variant (:data:`~deplbench.benchmarks.report.headline.HEADLINE_METHODS`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask
from deplbench.benchmarks.report.claims import dataset_claims
from deplbench.benchmarks.report.findings import (
    MIN_INSTANCES,
    Finding,
    bootstrap_mean,
    interval_verdict,
    names,
    register_finding,
)
from deplbench.benchmarks.report.headline import HEADLINE_METHODS, pick_variant
from deplbench.benchmarks.report.ratios import stated_bound
from deplbench.benchmarks.report.scaling import CLAIMED_EXPONENT, loglog_fit
from deplbench.benchmarks.report.sections import ReportContext

#: the paper's stated saving of DepL against best-exp
SAVING = 0.27
#: "closely matches the optimum", read as: mean cost / optimum at most this
CLOSE = 1.05
_DEPL = next((s, p) for _, s, p, _, _ in HEADLINE_METHODS if s == "depl")


def paper_runs(d: pd.DataFrame) -> pd.DataFrame:
    """The runs on the paper's families (those that declare a ``network``)."""
    return d[d["network"].notna()] if "network" in d else d.iloc[:0]


def _cheapest(g: pd.DataFrame) -> pd.Series:
    """Per instance: the cheapest certified cost of these runs (NaN where none is certified)."""
    return g["cost"].where(feasible_mask(g)).groupby(g["instance"]).min()


def _label(prefer: dict) -> str:
    """The DepL variant judged, for the evidence: ``eta 200, eps 0.05``."""
    return ", ".join(f"{k} {v:g}" for k, v in prefer.items()) or "depl"


@register_finding("claim-saving", order=100)
def saving(ctx: ReportContext) -> list[Finding]:
    p = paper_runs(ctx.runs)
    if p.empty:
        return []
    depl, moved = pick_variant(p, *_DEPL)
    prefer = {**_DEPL[1], **moved}
    a, b = _cheapest(depl), _cheapest(p[p["solver"] == "best-exp"])
    both = a.index.intersection(b.index)
    both = both[a[both].notna().to_numpy() & b[both].notna().to_numpy()]
    stated = f"{SAVING:.0%} or more cheaper than best-exp"
    if len(both) == 0:
        return [Finding("Beats best-exp by over 27%", "no instance with both certified", "", "claims",
                        "not tested here", stated)]
    s = 1.0 - a[both] / b[both]
    lo, hi = bootstrap_mean(s.tolist())
    ci = f" [{lo:.1%}, {hi:.1%}]" if not math.isnan(lo) else ""
    tie = 1e-9
    measured = f"saving {s.mean():.1%}{ci}, max {s.max():.1%}"
    left = len(a.index.union(b.index)) - len(both)
    ev = (f"{_label(prefer)}; {len(both)} instances; cheaper on {int((s > tie).sum())}, equal {int((s.abs() <= tie).sum())}, dearer "
          f"{int((s < -tie).sum())}" + (f"; {left} without both" if left else ""))
    return [Finding("Beats best-exp by over 27%", measured, ev, "claims",
                    interval_verdict(lo, hi, SAVING, len(both), above=True), stated)]


@register_finding("claim-close", order=110)
def close(ctx: ReportContext) -> list[Finding]:
    p = paper_runs(ctx.runs)
    if p.empty:
        return []
    refs = ctx.refs
    proven = refs.index[refs["proven"].astype(bool)]
    depl, moved = pick_variant(p[p["instance"].isin(proven)], *_DEPL)
    prefer = {**_DEPL[1], **moved}
    c = _cheapest(depl)
    r = (c / refs.loc[c.index, "ref_hi"]).astype(float)
    gone = r.index[r.isna()].tolist()
    v = r.dropna()
    stated = f"close to the optimum (read: mean ratio <= {CLOSE:g})"
    if v.empty:
        return [Finding("Closely matches the optimum", "no certified plan", "", "headline", "not tested here", stated)]
    lo, hi = bootstrap_mean(v.tolist())
    ci = f" [{lo:.3f}, {hi:.3f}]" if not math.isnan(lo) else ""
    ev = f"{_label(prefer)}; {len(v)} instances with a proven optimum"
    if gone:
        ev += f"; no certified plan on {len(gone)} ({names(gone)}), left out"
    return [Finding("Closely matches the optimum", f"ratio {v.mean():.3f}{ci}, max {v.max():.3f}", ev,
                    "headline", interval_verdict(lo, hi, CLOSE, len(v), above=False), stated)]


@register_finding("claim-complexity", order=120)
def complexity(ctx: ReportContext) -> list[Finding]:
    """Property 2 in eta and in eps: the fitted runtime exponent of depl beside the stated one."""
    if paper_runs(ctx.runs).empty:
        return []
    series = {s["var"]: s for s in ctx.scaling[0] if s["solver"] == "depl"}
    out = []
    for var, stated in (("eta", f"runtime ~ eta^{CLAIMED_EXPONENT['eta']} (Property 2)"),
                        ("1/eps", "polynomial in 1/eps (Property 2)")):
        what = f"Complexity in {'eta' if var == 'eta' else 'eps'}"
        col = "p_eta" if var == "eta" else "p_eps"
        values = sorted(pd.to_numeric(ctx.runs.loc[ctx.runs["solver"] == "depl", col], errors="coerce").dropna().unique())
        s = series.get(var)
        if s is None:
            shown = ", ".join(f"{x:g}" for x in values) or "none"
            out.append(Finding(what, f"not swept ({var.split('/')[-1]} = {shown} only)", "a fit needs 3 values",
                               "scaling", "not tested here", stated))
            continue
        f = loglog_fit(s["x"], s["t"])
        inst = sorted(set(np.asarray(s["names"]).astype(str)))
        ev = (f"{f['n']} runs, {len(inst)} instances ({names(inst, 1)}), {var} {np.min(s['x']):g}-{np.max(s['x']):g}"
              + (f", {len(s['cx'])} censored" if len(s["cx"]) else ""))
        measured = f"exponent {f['b']:.2f} [{f['ci_lo']:.2f}, {f['ci_hi']:.2f}]"
        if var == "eta" and not math.isnan(f["ci_lo"]) and len(inst) >= 1:
            claimed = float(CLAIMED_EXPONENT["eta"])
            verdict = "holds" if f["ci_lo"] <= claimed <= f["ci_hi"] else "does not hold"
        else:  # "polynomial" is not a number to test against
            verdict = "inconclusive" if not math.isnan(f["b"]) else "not tested here"
        out.append(Finding(what, measured, ev, "scaling", verdict, stated))
    return out


@register_finding("claim-ratio", order=130)
def ratio(ctx: ReportContext) -> list[Finding]:
    """Property 3: the stated ratio (1+eps)/eta is below 1, so no plan of a minimisation meets it."""
    if paper_runs(ctx.runs).empty:
        return []
    r = ctx.ratios
    r = r[(r["solver"] == "depl") & r["feasible"] & r["proven"]] if len(r) else r
    stated = "ratio (1+eps)/eta (Property 3)"
    if r.empty:
        return [Finding("Constant competitive ratio", "no ratio measured", "", "ratio", "not tested here", stated)]
    bounds = sorted({stated_bound(a, b) for a, b in r[["eta", "eps"]].to_numpy()})
    worst = r.groupby(["eta", "eps"])["ratio_lo"].max()  # the per-eta maxima are in the ratio section
    measured = f"max ratio {r['ratio_lo'].max():.3f} (stated {bounds[0]:.2g} to {bounds[-1]:.2g})"
    n = r["instance"].nunique()
    verdict = "does not hold" if n >= MIN_INSTANCES else "not tested here"
    return [Finding("Constant competitive ratio", measured,
                    f"{len(r)} plans, {n} instances, {len(worst)} eta; below 1 is impossible", "ratio", verdict,
                    stated)]


@register_finding("claim-datasets", order=140)
def datasets(ctx: ReportContext) -> list[Finding]:
    """Stage 1's dataset selection against the proven optimum's, where an instance has 2 or more datasets."""
    p = paper_runs(ctx.runs)
    if p.empty:
        return []
    stated = "stage 1 selects the optimal datasets"
    multi = pd.to_numeric(ctx.runs["n_datasets"], errors="coerce") > 1
    if not multi.any():
        sizes = sorted(pd.to_numeric(p["n_datasets"], errors="coerce").dropna().astype(int).unique())
        shown = " or ".join(str(int(x)) for x in sizes) or "?"
        return [Finding("Dataset selection optimal", f"not measurable ({shown} dataset per instance)",
                        f"{p['instance'].nunique()} instances", "claims", "not tested here", stated)]
    tab = dataset_claims(ctx.runs, ctx.refs)
    tab = tab[tab["setting"].str.startswith("depl")] if len(tab) else tab
    if tab.empty:
        return [Finding("Dataset selection optimal", "no proven optimum on an instance with several datasets", "",
                        "claims", "not tested here", stated)]
    n = int(tab["setting"].str.extract(r"\((\d+) instances\)")[0].astype(int).sum())
    bad = (tab["verdict"] == "refuted").any()
    verdict = "does not hold" if bad else "holds" if n >= MIN_INSTANCES else "not tested here"
    return [Finding("Dataset selection optimal", "; ".join(tab["measured"]), "; ".join(tab["setting"]), "claims",
                    verdict, stated)]
