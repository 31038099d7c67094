"""The registered report section of the claims study: maps, findings, ratio against size, exponents.

Reads the store only (:mod:`deplbench.benchmarks.report.claims_study` and
:mod:`deplbench.benchmarks.report.claims_complexity` compute, :mod:`deplbench.benchmarks.report.claims_charts`
draws); left out of a report whose store holds none of the study's experiments (config ``claims``).
"""

from __future__ import annotations

import numpy as np

from deplbench.benchmarks.report import claims_charts, claims_complexity, claims_study
from deplbench.benchmarks.report.ratios import stated_bound
from deplbench.benchmarks.report.sections import ReportContext, Section, register_section

TITLE = "Claims study: where the quantile pays, ratio against size, exponents in eta and eps"


def _has(ctx: ReportContext, prefix: str) -> bool:
    return bool(ctx.runs["experiment"].astype(str).str.startswith(prefix).any()) if "experiment" in ctx.runs else False


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


@register_section("claims-study", order=72, title=TITLE)
def claims_study_section(ctx: ReportContext) -> Section | None:
    if not (_has(ctx, claims_study.MAP_PREFIX) or _has(ctx, claims_study.SIZE_PREFIX)
            or _has(ctx, claims_complexity.EXPERIMENT)):
        return None
    sec = Section(TITLE)
    sec.p("Every cost is the evaluator's certified cost of a feasible plan. A ratio's reference is the optimum "
          "`exact` proves; where it does not prove one in its limit the ratio is an interval from its bound "
          "(`ratio_upper_max`, triangles in the size chart), never an optimum. Intervals are 95 %: t over seeds "
          "for means, Clopper-Pearson for shares. Reproduce: `deplbench run claims` (docs/claims.md).")
    rows = claims_study.instance_rows(ctx.runs, ctx.refs)
    cells = claims_study.map_cells(rows)
    found = claims_study.findings(rows, cells)
    sec.table("Findings: where the quantile pays", _findings_table(found))
    for line in claims_study.findings_text(found):
        sec.p(line)
    for exp, c in (cells.groupby("experiment", sort=True) if len(cells) else []):
        sec.fig(f"{exp}: per cell (mean over seeds) each method's cost / proven optimum, the saving of depl and "
                "depl-plus over best-exp, and the share of best-exp runs whose expectation plan misses the "
                "quantile target; hover a cell for its intervals.",
                claims_charts.map_figure(c, exp, ctx.fig_dir, f"claims_{_safe(exp)}"), claims_charts.map_chart(c, exp))
        sec.table(f"Cells of {exp}", c.round(4))
    _size(ctx, sec)
    _complexity(ctx, sec)
    return sec


def _findings_table(found: dict):
    import pandas as pd

    return pd.DataFrame({"finding": list(found), "value": [f"{v:.4g}" if isinstance(v, float) else str(v)
                                                           for v in found.values()]})


def _size(ctx: ReportContext, sec: Section) -> None:
    rows = claims_study.size_rows(ctx.runs, ctx.refs)
    if rows.empty:
        return
    tab = claims_study.size_table(rows)
    pairs = rows[["eta", "eps"]].drop_duplicates().to_numpy()
    stated = ", ".join(f"{stated_bound(float(a), float(b)):.4f} (eta {a:g}, eps {b:g})" for a, b in pairs)
    sec.table("Competitive ratio against size (trend: ratio = a + b ln(size) on proven optima)", tab)
    flat = tab[tab["verdict"].str.startswith(("no trend", "constant"))]
    sec.p(f"Constant competitive ratio: {len(flat)} of {len(tab)} (experiment, method) series show no trend "
          f"in size (constant, or the interval of b holds 0); the largest ratio to a proven optimum is "
          f"{np.nanmax(tab['max_ratio']):.4f}. The stated bound (1+eps)/eta is {stated}: below 1, so every "
          "feasible plan's ratio (at least 1) exceeds it; it is not a bound of this minimisation.")
    sec.fig("Cost / optimum against each size; triangles are upper bounds from exact's bound where it did not "
            "prove the optimum; dotted: the trend on proven optima.",
            claims_charts.size_figure(rows, ctx.fig_dir), claims_charts.size_chart(rows))


def _complexity(ctx: ReportContext, sec: Section) -> None:
    tab = claims_complexity.exponent_table(ctx.runs)
    if tab.empty:
        return
    sec.table("Per-stage CPU-time exponents against Property 2's terms", tab.round(4))
    for line in claims_complexity.verdicts(tab):
        sec.p(line)
