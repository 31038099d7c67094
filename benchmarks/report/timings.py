"""What the report says of its timings: each run's clocks (method, CPU, wall), load and shared cores, and which figures rest on shared cores.

A run *shared a core* (column ``shared_core``, :mod:`deplbench.benchmarks.harness.timing`) when
more runs than cores were in flight or the load average exceeded the cores: its wall-clock
times may include waiting. :func:`timing_table` is the per-run table of the method and
instance pages; :func:`shared_note` the sentence under a figure built from such runs.
"""

from __future__ import annotations

import pandas as pd

from deplbench.benchmarks.site.tables import html_table

#: the per-run timing columns shown on the method and instance pages
TIMING_SHOWN = ("runtime_s", "method_cpu_s", "wall_s", "cpu_s", "peak_mem_mb", "load_start", "load_end",
                "runs_beside", "cores", "shared_core")

#: their headers in words
TIMING_WORDS = {"runtime_s": "Method time (s)", "method_cpu_s": "Method CPU time (s)", "wall_s": "Run wall time (s)",
                "cpu_s": "Run CPU time, process tree (s)", "peak_mem_mb": "Peak memory (MB)",
                "load_start": "Load at start", "load_end": "Load at end", "runs_beside": "Runs beside it",
                "cores": "Cores it could use", "shared_core": "Shared a core", "repetition": "Repetition",
                "timing": "Timing"}


def shared_runs(d: pd.DataFrame) -> pd.Series:
    """Rows that shared a core (missing: a store older than the flag, counted as not known)."""
    if "shared_core" not in d.columns:
        return pd.Series(False, index=d.index)
    return d["shared_core"].astype("boolean").fillna(False).astype(bool)


def shared_note(d: pd.DataFrame, what: str = "these times") -> str:
    """One sentence: how many of the runs behind ``what`` shared a core ("" when none or unknown)."""
    n = int(shared_runs(d).sum())
    if not n:
        return ""
    return (f"{n} of the {len(d)} runs behind {what} shared a core (more runs than cores, or a load above the "
            "cores): wall-clock times from them may include waiting for a core, CPU times (method_cpu_s) do not.")


def basis_note(d: pd.DataFrame) -> str:
    """One sentence: which time the figures use (CPU time for single-threaded runs, else wall clock)."""
    if "time_basis" not in d.columns or d.empty:
        return "Times are the method's wall-clock runtime (runtime_s)."
    n_cpu = int((d["time_basis"] == "cpu").sum())
    return (f"Times: the CPU time of the method's call (method_cpu_s) for the {n_cpu} single-threaded runs of "
            f"{len(d)} (one thread asked, at most one core used), the wall-clock runtime (runtime_s) for the "
            "others; unsolved runs are charged their time limit.")


def repetitions(runs: pd.DataFrame, keys: tuple[str, ...] = ("method", "instance")) -> pd.DataFrame:
    """Per (method, instance) timed more than once: the repetitions, median and spread of the time figures use.

    The time is ``clock_s`` (CPU time where single-threaded, :func:`basis_note`), else ``runtime_s``;
    the spread is max - min, and relative to the median.
    """
    col = "clock_s" if "clock_s" in runs.columns else "runtime_s"
    keys = tuple(k for k in keys if k in runs.columns)
    if col not in runs.columns or not keys:
        return pd.DataFrame()
    t = runs.assign(_t=pd.to_numeric(runs[col], errors="coerce"))
    g = t.groupby(list(keys))["_t"].agg(["count", "median", "min", "max"])
    g = g[g["count"] > 1]
    if g.empty:
        return pd.DataFrame()
    out = g.rename(columns={"count": "repetitions", "median": "median_s", "min": "min_s", "max": "max_s"})
    out["spread_s"] = out["max_s"] - out["min_s"]
    out["relative_spread"] = out["spread_s"] / out["median_s"]
    return out.reset_index()


def timing_table(runs: pd.DataFrame, caption: str, table_id: str, links: dict | None = None,
                 keys: tuple[str, ...] = ("method", "instance")) -> str:
    """The runs' clocks, memory, load and shared-core flag as an HTML table, with the shared-core note."""
    cols = [c for c in (*keys, "repetition", "timing", *TIMING_SHOWN) if c in runs.columns]
    tab = runs[cols].sort_values([c for c in keys if c in cols])
    note = shared_note(runs, "this table")
    out = html_table(tab, caption, table_id=table_id, links=links, best=False,
                     headers=TIMING_WORDS) + (f"<p>{note}</p>" if note else "")
    reps = repetitions(runs, keys)
    if len(reps):
        out += html_table(reps, "Repeated timings: median and spread (max - min) over the repetitions of the "
                          "time the figures use (CPU time where single-threaded)", table_id=f"{table_id}r",
                          links=links, best=False)
    return out
