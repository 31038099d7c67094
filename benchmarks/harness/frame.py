"""The run frame the report reads: store rows plus derived columns (pure pandas).

Every figure of the report uses the evaluator's certified columns (``cost``, ``feasible``,
``q_hi``), never a solver's own objective. See ``docs/report.md`` for the definitions.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.store import RUN_COLUMNS
from deplbench.benchmarks.harness.timing import method_time
from deplbench.registry import COMMON_PARAMS

SHIFT_S = 10.0  # shift of the shifted geometric mean of time (Mittelmann)
TIE_RTOL = 1e-6  # costs this close count as a tie (both win)
#: parameters that never distinguish variants (limits, seeds, threads): not a factor of a study
NON_FACTORS = tuple(f"p_{p.name}" for p in COMMON_PARAMS)
DERIVED = ("method", "network", "timed_out", "solved", "clock_s", "time_basis", "ttime", "verdict", "reason")


def ensure_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Add any store column the frame lacks (as missing values), so that old stores still report."""
    out = df.copy()
    for c in (*RUN_COLUMNS, "p_time_limit"):
        if c not in out.columns:
            out[c] = np.nan
    return out


def extra(row: pd.Series) -> dict[str, Any]:
    """The row's ``extra_json`` as a dict (empty when absent or unreadable)."""
    raw = row.get("extra_json")
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        out = json.loads(raw)
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


@lru_cache(maxsize=64)
def family_tag(family: str, tag: str) -> Any:
    """A tag the family declared at registration (e.g. ``network``), None if unknown."""
    from deplbench import registry

    try:
        return registry.get_family(family).tags.get(tag)
    except Exception:  # noqa: BLE001 - a family no longer registered has no tags
        return None


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Add derived columns: ``method``, ``network``, ``timed_out``, ``solved`` and ``ttime``.

    ``method`` is the stored label ``solver[k=v,...]``; ``network`` the paper network the
    family declares (its ``network`` tag). ``solved``: the harness finished, the evaluator
    certifies the plan feasible, and an exact method also proved optimality, or an SAA method
    optimality for its sample (status ``optimal``). ``reason``: why an unsolved run has no plan (:func:`reasons`). ``verdict``: the status as shown (SAA plans with the evaluator's verdict).
    ``clock_s``: the method's time that figures use, CPU time for single-threaded runs and wall-clock
    otherwise (``time_basis``, :func:`~deplbench.benchmarks.harness.timing.method_time`). ``ttime``:
    the time used for means and profiles, ``clock_s`` when solved and the time limit otherwise
    (unsolved runs are charged the limit, as in Mittelmann's tables).
    """
    d = ensure_columns(df)
    if d.empty:
        for c in DERIVED:
            d[c] = pd.Series(dtype=object)
        return d
    d["method"] = d["label"].where(d["label"].notna(), d["solver"]).astype(str)
    d["network"] = [family_tag(str(f), "network") for f in d["family"]]
    d["timed_out"] = (d["harness_status"] == "timeout") | (d["status"] == "timeout")
    feas = d["feasible"].astype("boolean").fillna(False).astype(bool)
    needs_opt = d["solver_kind"].isin(["exact", "saa"])
    ok_status = np.where(needs_opt, d["status"] == "optimal", d["status"].isin(["optimal", "feasible"]))
    d["solved"] = (d["harness_status"] == "ok") & feas & ok_status
    limit = pd.to_numeric(d["p_time_limit"], errors="coerce")
    run, d["time_basis"] = method_time(d)  # CPU time where single-threaded (harness/timing.py)
    d["clock_s"] = run
    fallback = run.fillna(pd.to_numeric(d["wall_s"], errors="coerce"))
    d["ttime"] = np.where(d["solved"], run, limit.fillna(fallback))
    d["verdict"] = verdicts(d)
    d["reason"] = reasons(d)
    return d


def reasons(d: pd.DataFrame) -> list[str | None]:
    """Why a run has no certified plan, in one line: the method's message (``unknown``, ``infeasible``,
    a limit, an error) or else the first line of the harness's error text; None for a solved run."""
    out: list[str | None] = []
    for solved, msg, err in zip(d["solved"], d["message"], d["error"], strict=True):
        text = msg if isinstance(msg, str) and msg else err if isinstance(err, str) and err else None
        out.append(None if solved or text is None else text.strip().splitlines()[0][:300])
    return out


def verdicts(d: pd.DataFrame) -> list[str]:
    """The status each row shows (:func:`deplbench.results.shown_status`): an SAA plan the evaluator
    rejects reads ``infeasible (saa optimal)``, never ``optimal``."""
    from deplbench.results import shown_status

    feas = d["feasible"].astype("boolean")
    return [shown_status(None if pd.isna(st) else str(st), None if pd.isna(k) else str(k),
                         None if pd.isna(f) else bool(f))
            for st, k, f in zip(d["status"], d["solver_kind"], feas, strict=True)]


def feasible_mask(d: pd.DataFrame) -> pd.Series:
    """Rows whose plan the evaluator certifies feasible (missing counts as not)."""
    return d["feasible"].astype("boolean").fillna(False).astype(bool)


def shifted_geomean(x, shift: float = SHIFT_S) -> float:
    """exp(mean(ln(x + shift))) - shift; NaN for no values."""
    a = np.asarray(x, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(a + shift))) - shift)
