"""Report section of library runs, in Mittelmann's style: per tier, solved counts, shifted geometric mean
of time (shift 10 s, unsolved charged the time limit), rank, and a Dolan-More performance profile."""

from __future__ import annotations

import json

import pandas as pd

from deplbench.benchmarks.harness.frame import SHIFT_S, shifted_geomean
from deplbench.benchmarks.report import charts, figures
from deplbench.benchmarks.report.comparison import per_instance, performance_ratios
from deplbench.benchmarks.report.sections import ReportContext, Section, register_section

TIER_ORDER = ("easy", "medium", "hard")


def tiers_of(runs: pd.DataFrame, field: str = "tier") -> pd.Series:
    """The library tier (or another manifest ``field``, e.g. the reference kind ``ref``) of each
    run's instance, read from the manifest of its library folder."""
    from deplbench.benchmarks.library.catalog import Library

    out = pd.Series(index=runs.index, dtype=object)
    folders = runs["instance_params"].map(lambda t: json.loads(t).get("dir", "") if isinstance(t, str) else "")
    for folder, g in runs.groupby(folders):
        try:
            recs = Library.open(folder).manifest["instances"]
        except Exception:  # noqa: BLE001 - a library folder moved away: no tier
            continue
        val = {r["name"]: (r["reference"]["kind"] if field == "ref" else r[field]) for r in recs}
        out.loc[g.index] = g["instance"].map(val)
    return out


def with_infeasibility(d: pd.DataFrame) -> pd.DataFrame:
    """Count a run as solved when it proves infeasibility of an instance the library proves
    infeasible (``=inf=``), as MIPLIB does; ``wrong_inf`` marks an infeasibility claim on an
    instance with a feasible reference (a contradiction, never solved)."""
    ref = tiers_of(d, "ref")
    inf_claim = d["status"].eq("infeasible") & d["harness_status"].eq("ok")
    ok = inf_claim & ref.eq("inf")
    limit = pd.to_numeric(d["p_time_limit"], errors="coerce")
    run = pd.to_numeric(d["runtime_s"], errors="coerce")
    solved = d["solved"].astype(bool) | ok
    return d.assign(solved=solved, ttime=run.where(solved, limit.fillna(run)),
                    wrong_inf=inf_claim & ref.isin(["opt", "best"]))


def tier_table(d: pd.DataFrame) -> pd.DataFrame:
    """Per method: instances, solved, shifted geometric mean of time, rank (by the mean), refs matched."""
    pi = per_instance(d)
    wrong = d.groupby("method")["wrong_inf"].sum() if "wrong_inf" in d else pd.Series(dtype=int)
    rows = []
    for m, p in pi.groupby("method", sort=True):
        rows.append({"method": m, "instances": p["instance"].nunique(), "solved": int(p["solved"].sum()),
                     "wrong_inf": int(wrong.get(m, 0)), "sgm_time_s": shifted_geomean(p["ttime"])})
    tab = pd.DataFrame(rows)
    if tab.empty:
        return tab
    base = tab["sgm_time_s"].min()
    tab["scaled"] = tab["sgm_time_s"] / base if base > 0 else float("nan")
    tab["rank"] = tab["sgm_time_s"].rank(method="min").astype(int)
    return tab.sort_values(["rank", "method"]).reset_index(drop=True)


@register_section("library", order=35, title="Instance library (Mittelmann-style tables)",
                  needs=("instance_params",))
def library_section(ctx: ReportContext) -> Section | None:
    d = ctx.runs[ctx.runs["family"] == "library"]
    if d.empty:
        return None
    d = with_infeasibility(d.assign(tier=tiers_of(d)))
    sec = Section("Instance library (Mittelmann-style tables)")
    sec.p("Per tier of the library (graded by the measured time of the best exact method: easy within 60 s, "
          "medium within the reference limit, hard open): instances, solved (certified feasible plan; exact "
          f"methods also proved optimal, SAA methods optimal for their sample), shifted geometric mean of time with shift {SHIFT_S:g} s "
          "(unsolved runs charged the time limit), that mean scaled to the best, and the rank by it. A proof of "
          "infeasibility counts as solved on an instance the library proves infeasible (=inf=); wrong_inf counts "
          "infeasibility claims on instances with a feasible reference.")
    for tier in [t for t in TIER_ORDER if t in set(d["tier"].dropna())]:
        g = d[d["tier"] == tier]
        sec.table(f"Tier {tier}: {g['instance'].nunique()} instances", tier_table(g))
        r = performance_ratios(g)
        if r.shape[1] >= 2:
            sec.fig(f"Dolan-More performance profile of time, tier {tier}.",
                    figures.performance_profile(r, ctx.fig_dir, f"library_profile_{tier}",
                                                f"Library, tier {tier}"),
                    charts.performance_profile(r, f"Performance profile: library, tier {tier}"))
    return sec
