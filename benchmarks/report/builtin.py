"""The built-in report sections, each one registration (see :mod:`deplbench.benchmarks.report.sections`).

Method names appear here only as data (the headline's :data:`~deplbench.benchmarks.report.headline.HEADLINE_METHODS`);
every other section iterates over whatever methods the store holds.
"""

from __future__ import annotations

import importlib
import importlib.util

import pandas as pd

from deplbench.benchmarks.harness.frame import SHIFT_S
from deplbench.benchmarks.report import charts, claims, figures
from deplbench.benchmarks.report.comparison import comparison_table, performance_ratios
from deplbench.benchmarks.report.headline import HEADLINE_METHODS, headline
from deplbench.benchmarks.report.ratios import ratio_table
from deplbench.benchmarks.report.scaling import (
    stage_columns,
    stage_explanations,
    stage_scaling_table,
)
from deplbench.benchmarks.report.sections import ReportContext, Section, register_section
from deplbench.benchmarks.report.timings import basis_note, shared_note

CALIBRATION_MODULE = "deplbench.instances.calibration.plots"


@register_section("headline", order=10, title="Paper reproduction: headline")
def headline_section(ctx: ReportContext) -> Section:
    sec = Section("Paper reproduction: headline")
    d = ctx.runs
    h = headline(d, ctx.refs)
    if h.empty:
        return sec.p("No runs on the paper families (`paper-alexnet`, `paper-mobilenet`) in this store.")
    wanted = ", ".join(f"{s}" + (f" at {', '.join(f'{k} = {v:g}' for k, v in p.items())}" if p else "")
                       for _, s, p, _, _ in HEADLINE_METHODS)
    sec.p("Certified figures (the evaluator's `cost`, `feasible`, `q_hi`), never a solver's own. "
          "`optimum`: cheapest certified plan of an exact method with status optimal (else the cheapest "
          f"certified plan of any run, flagged as not proven); ratios are cost / optimum; methods: {wanted}; "
          "`flags` names plans the evaluator finds infeasible, optima that are not proven and methods "
          "shown at other parameters than these.")
    exact = (d["solver_kind"] == "exact").any()
    missing = [s for _, s, _, _, always in HEADLINE_METHODS if always and not (d["solver"] == s).any()]
    missing += [] if exact else ["an exact method"]
    if missing:
        sec.p(f"Missing solvers: {', '.join(missing)} (their columns are empty).")
    return sec.table("Per network x noise mode x target", h)


@register_section("overview", order=20, title="Runs in this store")
def overview_section(ctx: ReportContext) -> Section:
    d = ctx.runs
    sec = Section("Runs in this store")
    if d.empty:
        return sec.p("The store holds no runs.")
    counts = d.pivot_table(index="method", columns="harness_status", values="run_key", aggfunc="count",
                           fill_value=0)
    # the shown status: an SAA plan's "optimal" is for its sample, beside the evaluator's verdict
    status = d.pivot_table(index="method", columns="verdict", values="run_key", aggfunc="count", fill_value=0)
    sec.table("Harness outcome per method", counts.reset_index())
    sec.table("Solver status per method", status.reset_index())
    sec.p("A run whose method ended without a plan and without a proof has status unknown (a heuristic "
          "that gave up): a result of the method, finished by the harness, not an error; it counts as not "
          "solved and is not re-run by --retry-failed. Every run without a certified plan, and why:")
    unsolved = d[~d["solved"].astype(bool)]
    if len(unsolved):
        cols = ["method", "instance", "harness_status", "status", "reason"]
        sec.table("Runs without a certified plan", unsolved[cols].sort_values(["method", "instance"]))
    prov = {c: ", ".join(sorted(d[c].dropna().astype(str).unique())[:5]) or "-"
            for c in ("config", "package_version", "git_commit", "host", "cpu", "python")}
    return sec.table("Provenance", pd.DataFrame({"field": list(prov), "values": list(prov.values())}))


@register_section("comparison", order=30, title="Solver comparison", needs=("method",))
def comparison_section(ctx: ReportContext) -> Section:
    d = ctx.runs
    sec = Section("Solver comparison")
    sec.p("Per experiment: runs, instances, solved (certified feasible plan; exact methods also proved "
          f"optimal, SAA methods optimal for their sample), shifted geometric mean of per-instance time with shift {SHIFT_S:g} s "
          "(unsolved charged the time limit), the solvers' mean MIP gap, the median certified cost gap to "
          "the best cost in the experiment, and wins (cheapest / fastest solved). Methods are labelled "
          "`name[k=v,...]` with every declared variant parameter that differs from its default.")
    sec.p(" ".join(x for x in (basis_note(d), shared_note(d, "these times")) if x))
    groups = d.assign(exp=d["config"].fillna("-") + "/" + d["experiment"].fillna("-")).groupby("exp", sort=True)
    for exp, g in groups:
        sec.table(f"Experiment {exp}", comparison_table(g))
        r = performance_ratios(g)
        shared = g.groupby("instance")["method"].nunique() >= 2  # a profile needs common instances
        if r.shape[1] >= 2 and shared.any():
            name = "profile_" + "".join(ch if ch.isalnum() else "_" for ch in exp)
            sec.fig(f"Dolan-More performance profile of time, experiment {exp}.",
                    figures.performance_profile(r, ctx.fig_dir, name, f"Performance profile: {exp}"),
                    charts.performance_profile(r, f"Performance profile: {exp}"))
    return sec


@register_section("ratio", order=40, title="Competitive ratio of the heuristics")
def ratio_section(ctx: ReportContext) -> Section:
    sec = Section("Competitive ratio of the heuristics")
    ratios = ctx.ratios
    if ratios.empty:
        return sec.p("Not measured: no heuristic run with eta and eps on an instance with a reference cost.")
    sec.p("Ratio = the heuristic's certified cost / reference. The reference is the proven optimum (exact "
          "method, or the family's known optimum); otherwise the optimum lies in [best exact lower bound, "
          "best certified cost], and the ratio is an interval: `mean_ratio`/`max_ratio` use the lower end, "
          "`max_ratio_upper` the upper end (inf without a bound). The paper's Property 3 states "
          "(1/eta)(1+eps), which is below 1 for eta > 1 and so impossible for a minimisation "
          "(MODEL.md section 7 item 4); it is printed beside the measurement, not claimed.")
    for solver, g in ratios.groupby("solver", sort=True):
        sec.table(f"Measured ratio per (eta, eps): {solver}", ratio_table(g))
        sec.fig(f"{solver}: cost / optimum vs eta and eps (mean over instances, bars from the smallest lower "
                "end to the largest upper end); the stated (1+eps)/eta lies below 1 and is not drawn.",
                figures.ratio_plots(g, ctx.fig_dir, f"ratio_{solver}"), charts.ratio_chart(g))
    return sec


@register_section("scaling", order=50, title="Runtime scaling", needs=("runtime_s",))
def scaling_section(ctx: ReportContext) -> Section:
    sec = Section("Runtime scaling")
    series, tab = ctx.scaling
    if not series:
        return sec.p("Not measured: no method has runs where one of eta, eps, max_epochs, n_models, "
                     "n_clusters or n_datasets takes 3 or more values with the rest fixed.")
    sec.p("Least-squares fit of ln(runtime) = a + b ln(x) on finished runs, 95% t-interval of b. "
          "Timeouts are censored (drawn at their limit, not fitted): with censored runs at the large end "
          "the exponent is an underestimate. Property 2 claims O(|M|^2 K^2 / eta^4); the corrected "
          "bound (MODEL.md section 7 item 3) of the layered DP is O(|M|^2 K eta^2).")
    sec.p(basis_note(ctx.runs) + " The column time_used names the time of each fit; shared_core_points counts "
          "its points from runs that shared a core (their times may include waiting).")
    sec.table("Fitted exponents", tab)
    return sec.fig("Runtime vs each variable (log-log), fit with 95% band; ^ = timeout (censored).",
                   figures.scaling_plot(series, ctx.fig_dir), charts.scaling_chart(series))


@register_section("stage-scaling", order=55, title="Runtime scaling per stage")
def stage_scaling_section(ctx: ReportContext) -> Section | None:
    tab, series = stage_scaling_table(ctx.runs)
    if not stage_columns(ctx.runs):
        return None  # no method reports per-stage times
    sec = Section("Runtime scaling per stage")
    if tab.empty:
        return sec.p("Per-stage times are stored (`x_t_<stage>_s`) but no series moves eta or eps over 3 "
                     "or more values with the rest fixed.")
    sec.p("Each stage's time (the method's `x_t_<stage>_s` output) fitted like the total runtime, against "
          "eta and 1/eps. Predicted (MODEL.md errata 3 and 7): stage 2's layered DP grows like eta^2, stage "
          "3's knapsack FPTAS like 1/eps, and a stage a parameter does not enter stays flat (exponent 0). "
          "A fit with low r^2 on a flat stage is the expected outcome, not a failed one. The row `stage2 DP "
          "states` fits the number of DP states stage 2 computes (`x_dp_cells`): eta^2 is the dense grid, "
          "and the DP fills only the bounding box of the reachable states of each layer. For the stage a "
          "parameter drives, `fixed_part` and `exponent_beyond_fixed` fit ln t = ln(a + b x^p): a part that "
          "does not grow with the parameter beside one that grows like x^p, which a single power law "
          "cannot separate (it bends in log-log).")
    sec.table("Fitted per-stage exponents", tab)
    for line in stage_explanations(tab):
        sec.p(line)
    return sec.fig("Per-stage time vs eta and 1/eps (log-log), fit with 95% band.",
                   figures.scaling_plot(series, ctx.fig_dir, "scaling_stages"),
                   charts.scaling_chart(series, "Per-stage time scaling"))


@register_section("claims", order=70, title="Claim checks")
def claims_section(ctx: ReportContext) -> Section:
    sec = Section("Claim checks")
    sub, source = claims.submodularity(ctx.runs, ctx.instances)
    sec.p(f"Submodularity of stage 1's objective K(D)T(D) per family (MODEL.md section 7 item 9): {source}.")
    if not sub.empty:
        sec.table("Largest submodularity violation per family", sub)
    ratio_tabs = [ratio_table(g).assign(solver=s) for s, g in ctx.ratios.groupby("solver", sort=True)]
    scal = ctx.scaling[1]
    rows = [claims.ratio_claims(t) for t in ratio_tabs] + ([claims.exponent_claims(scal)] if not scal.empty else [])
    rows += [claims.savings_claims(ctx.runs), claims.dataset_claims(ctx.runs, ctx.refs)]
    rows = [r for r in rows if not r.empty]
    if rows:
        return sec.table("Stated vs measured", pd.concat(rows, ignore_index=True))
    return sec.p("Property 2 and 3: not measured (no ratio or scaling data).")


@register_section("calibration", order=90, title="Calibration")
def calibration_section(ctx: ReportContext) -> Section | None:
    params = sorted((ctx.root / "calibration").glob("*.json"))
    if not params:
        return None
    sec = Section("Calibration")
    mod = importlib.import_module(CALIBRATION_MODULE)
    for p in params:
        target = ctx.fig_dir / f"calibration_{p.stem}"
        res = mod.make_figures(p, target)
        paths = [type(target)(x) for x in res] if isinstance(res, (list, tuple)) else sorted(target.glob("*.png"))
        for fig in paths:
            if fig.suffix == ".png":
                sec.fig(f"Calibration {p.stem}: {fig.stem}", fig)
    return sec
