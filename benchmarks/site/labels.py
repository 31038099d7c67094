"""Column headers in words, with units, and statuses as words.

A table of the report keeps its raw column names (sections and the tests read them); the site,
``report.md`` and ``report.html`` show :func:`header` of each name. Add a word for a new column here (one entry); a column without
an entry is shown with its underscores as spaces and a unit taken from its suffix (``_s``: seconds).
"""

from __future__ import annotations

#: raw column name -> header in words (units in parentheses)
WORDS: dict[str, str] = {
    "network": "Network", "noise_mode": "Noise mode", "target": "Loss target", "instance": "Instance",
    "method": "Method", "solver": "Solver", "family": "Family", "tier": "Tier", "kind": "Kind",
    "optimum": "Optimum cost", "opt_time_s": "Optimum: time (s)",
    "depl_cost": "depl cost", "depl_ratio": "depl cost / optimum", "depl_q_hi": "depl loss quantile (upper bound)",
    "depl_time_s": "depl time (s)",
    "bestexp_cost": "best-exp cost", "bestexp_ratio": "best-exp cost / optimum",
    "bestexp_q_hi": "best-exp loss quantile (upper bound)", "bestexp_time_s": "best-exp time (s)",
    "deplplus_cost": "depl-plus cost", "deplplus_ratio": "depl-plus cost / optimum",
    "deplplus_q_hi": "depl-plus loss quantile (upper bound)", "deplplus_time_s": "depl-plus time (s)",
    "flags": "Notes",
    "runs": "Runs", "instances": "Instances", "solved": "Solved", "timeouts": "Time-outs", "errors": "Errors",
    "gave_up": "No plan (unknown)", "best_method": "Cheapest method(s)", "download": "Download (instance JSON)", "unsolved": "Without a certified plan", "reason": "Reason (the method's message)",
    "infeasible_plans": "Infeasible plans", "sgm_time_s": "Shifted geo. mean time (s)",
    "mean_mip_gap": "Mean MIP gap", "median_cost_gap": "Median cost gap to best",
    "wins_cost": "Wins (cost)", "wins_time": "Wins (time)",
    "max_oos_cp_upper": "Max out-of-sample violation (95% upper bound)",
    "eta": "eta", "eps": "eps", "mean_ratio": "Mean cost / optimum", "max_ratio": "Max cost / optimum",
    "max_ratio_upper": "Max cost / optimum (upper end)", "proven_refs": "Proven references",
    "stated": "Stated", "claim_stated": "Stated in the paper", "finding": "Finding", "result": "Result",
    "evidence": "Evidence", "ratio_mean": "Mean", "ratio_ci_lo": "95% CI low", "ratio_ci_hi": "95% CI high",
    "ratio_max": "Max", "section": "Shown in", "no_plan": "No certified plan on", "within_stated": "Within stated bound",
    "variable": "Variable", "points": "Points", "censored": "Censored (time-out)", "range": "Range",
    "exponent": "Fitted exponent", "ci95_lo": "95% CI low", "ci95_hi": "95% CI high", "r2": "r²",
    "claimed_P2": "Claimed (Property 2)", "corrected": "Corrected bound", "stage": "Stage",
    "fixed_part": "Fixed part (s)", "exponent_beyond_fixed": "Exponent beyond fixed part",
    "ci95_beyond_lo": "95% CI low (beyond fixed)", "ci95_beyond_hi": "95% CI high (beyond fixed)",
    "r2_beyond_fixed": "r² (beyond fixed)", "predicted": "Predicted exponent",
    "claim": "Claim", "setting": "Setting", "measured": "Measured", "verdict": "Verdict",
    "instances_checked": "Instances checked", "max_violation": "Largest violation (s)",
    "not_applicable": "Not applicable", "field": "Field", "values": "Values",
    "S": "Scenarios S", "R": "Replications R", "optimal": "Proven optimal", "optimal_on": "Optimal on (instances)", "root_gap": "Root LP gap",
    "runtime_s": "Time (s)", "oos_rate": "Out-of-sample violation rate",
    "oos_cp95_max": "Max violation (95% upper bound)", "certified": "Certified feasible",
    "lb_rank": "Rank L", "lower_bound": "Replication lower bound", "rho": "rho",
    "best_certified": "Best certified cost", "exact_optimum": "Exact optimum",
    "wrong_inf": "Wrong infeasibility claims", "scaled": "Time / best", "rank": "Rank",
    "cost": "Certified cost", "ratio": "Cost / reference", "q_hi": "Loss quantile (upper bound)",
    "q_lo": "Loss quantile (lower bound)", "loss_mean": "Expected loss", "feasible": "Feasible",
    "status": "Status", "harness_status": "Run outcome", "verdict_word": "Verdict", "gap": "MIP gap",
    "reference": "Reference", "ref_kind": "Reference kind", "ref_value": "Reference value",
    "proving_method": "Proving method", "proof_work": "Work of the proof (units)", "proof_s": "Time to prove (s)", "size": "Size",
    "models": "Models", "clusters": "Clusters", "datasets": "Datasets", "epochs": "Max epochs",
    "best_cost": "Best cost here", "rank_cost": "Rank by cost", "time_s": "Time (s)",
}

#: solver / harness statuses as words
STATUS_WORDS: dict[str, str] = {
    "optimal": "optimal", "feasible": "feasible (no proof)", "infeasible": "infeasible",
    "timeout": "time limit hit", "error": "error", "memory": "memory limit hit", "ok": "finished",
    "unknown": "unknown (no plan, no proof)", "not_run": "not run",
}

#: columns whose values are statuses
STATUS_COLUMNS = frozenset({"status", "harness_status"})

#: unit suffixes of raw names
SUFFIX_UNITS = (("_time_s", " time (s)"), ("_s", " (s)"), ("_mb", " (MB)"))


def header(name: str) -> str:
    """The header in words of the raw column ``name``."""
    if name in WORDS:
        return WORDS[name]
    for suffix, unit in SUFFIX_UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return (name[: -len(suffix)].replace("_", " ") + unit).capitalize()
    if name.startswith("p_"):
        return f"Parameter {name[2:]}"
    return name.replace("_", " ").capitalize() if "_" in name else name


def status_word(value: object) -> str:
    """A status as words (unknown statuses are shown as they are)."""
    return STATUS_WORDS.get(str(value), str(value))
