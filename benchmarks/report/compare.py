"""Result sets side by side (as BenchExec's table-generator): per instance and method, each set's status, cost and time, differences marked.

A *result set* is one results folder (its store ``results.duckdb`` and machine record). Each is
named by its folder, host, suite version and commit, so two machines or versions are never
pooled. A row is one (experiment, instance, method); per set it gives the solver status, the
certified cost (the evaluator's, on a feasible plan), the median method time, its spread over
the repetitions, the median CPU time and how many of its runs shared a core. Against the first
set (the baseline) a row is marked where the status differs, the certified cost differs beyond
:data:`COST_RTOL`, or the time moved beyond its spread (:func:`time_changed`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask

#: certified costs this close (relative) are the same
COST_RTOL = 1e-6
#: a time moved when the sets' ranges, each widened by this fraction and by :data:`TIME_FLOOR_S`, do not meet
TIME_RTOL = 0.25
#: timer noise and process start-up: differences of times below this never count
TIME_FLOOR_S = 0.05
KEYS = ("experiment", "instance", "label")


@dataclass
class ResultSet:
    """One results folder: its name in the tables, its runs and its machine record."""

    name: str
    root: Path
    runs: pd.DataFrame
    machine: dict[str, Any]


def load_set(root: str | Path, name: str | None = None) -> ResultSet:
    """Read the store of the folder ``root`` (read-only); ``name``: how the tables call the folder."""
    from deplbench.benchmarks.harness import machine
    from deplbench.benchmarks.harness.store import Store

    root = Path(root)
    with Store(root, read_only=True) as store:
        runs, rec = store.runs(), machine.read(store.con) or {}
    return ResultSet(_name(Path(name) if name else root, runs, rec), Path(name) if name else root, runs, rec)


def _first(runs: pd.DataFrame, col: str) -> str | None:
    vals = runs[col].dropna() if col in runs.columns else pd.Series(dtype=object)
    return str(vals.mode().iloc[0]) if len(vals) else None


def _name(root: Path, runs: pd.DataFrame, rec: dict) -> str:
    """``folder (host, version commit)``: the machine record's, else the rows' provenance."""
    host = rec.get("host") or _first(runs, "host") or "?"
    suite = rec.get("suite") or {}
    version = suite.get("version") or _first(runs, "package_version") or "?"
    commit = (suite.get("git_commit") or _first(runs, "git_commit") or "")[:8]
    return f"{root.name} ({host}, {version}{' ' + commit if commit else ''})"


def summarize(rs: ResultSet) -> pd.DataFrame:
    """One row per (experiment, instance, method) of a set: status, cost, time and its spread, CPU time."""
    d = rs.runs.copy()
    for c in ("status", "cost", "feasible", "runtime_s", "method_cpu_s", "shared_core"):
        if c not in d.columns:
            d[c] = None
    d["fcost"] = pd.to_numeric(d["cost"], errors="coerce").where(feasible_mask(d))
    d["t"] = pd.to_numeric(d["runtime_s"], errors="coerce")
    d["c"] = pd.to_numeric(d["method_cpu_s"], errors="coerce")
    d["sh"] = d["shared_core"].astype("boolean").fillna(False).astype(int)
    g = d.groupby(list(KEYS), dropna=False)
    out = g.agg(status=("status", lambda s: "/".join(sorted({str(v) for v in s.dropna()})) or None),
                cost=("fcost", "median"), time=("t", "median"), time_lo=("t", "min"), time_hi=("t", "max"),
                cpu=("c", "median"), shared=("sh", "sum"), n=("t", "size"))
    return out


def time_changed(a: pd.Series, b: pd.Series) -> float | None:
    """The ratio of ``b``'s median time to ``a``'s when their ranges (widened) do not meet, else None."""
    if any(math.isnan(float(x)) for x in (a["time"], b["time"], a["time_lo"], b["time_lo"])):
        return None

    def widened(r):
        return (r["time_lo"] * (1 - TIME_RTOL) - TIME_FLOOR_S, r["time_hi"] * (1 + TIME_RTOL) + TIME_FLOOR_S)

    (alo, ahi), (blo, bhi) = widened(a), widened(b)
    if blo > ahi or bhi < alo:
        return float(b["time"] / a["time"]) if a["time"] > 0 else math.inf
    return None


def _cost_differs(a: float, b: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return False
    if math.isnan(a) or math.isnan(b):
        return True
    return abs(a - b) > COST_RTOL * max(1.0, abs(a), abs(b))


def side_by_side(sets: list[ResultSet]) -> pd.DataFrame:
    """The comparison table: the keys, per set ``i`` its ``status_i``, ``cost_i``, ``time_s_i``, ``spread_i``,
    ``cpu_s_i``, ``shared_i``, and ``differences`` against set 0 (empty: none)."""
    sums = [summarize(s) for s in sets]
    index = sums[0].index
    for s in sums[1:]:
        index = index.union(s.index)
    cols: dict[str, list] = {k: [] for k in KEYS}
    for i in range(len(sets)):
        for c in ("status", "cost", "time_s", "spread", "cpu_s", "shared"):
            cols[f"{c}_{i}"] = []
    cols["differences"] = []
    empty = pd.Series({"status": None, "cost": math.nan, "time": math.nan, "time_lo": math.nan,
                       "time_hi": math.nan, "cpu": math.nan, "shared": 0, "n": 0})
    for key in sorted(index, key=lambda k: tuple(str(x) for x in k)):
        for k, v in zip(KEYS, key, strict=True):
            cols[k].append(v)
        rows = [s.loc[key] if key in s.index else empty for s in sums]
        notes = []
        for i, r in enumerate(rows):
            cols[f"status_{i}"].append(r["status"] or ("not run" if r["n"] == 0 else None))
            cols[f"cost_{i}"].append(r["cost"])
            cols[f"time_s_{i}"].append(r["time"])
            spread = r["time_hi"] - r["time_lo"] if r["n"] > 1 else math.nan
            cols[f"spread_{i}"].append(spread)
            cols[f"cpu_s_{i}"].append(r["cpu"])
            cols[f"shared_{i}"].append(int(r["shared"]))
            if i == 0:
                continue
            tag = f"[{i}]" if len(sets) > 2 else ""
            if (rows[0]["status"] or "") != (r["status"] or ""):
                notes.append(f"status{tag}")
            if _cost_differs(float(rows[0]["cost"]), float(r["cost"])):
                notes.append(f"cost{tag}")
            ratio = time_changed(rows[0], r)
            if ratio is not None:
                notes.append(f"time{tag} x{ratio:.2g}")
        cols["differences"].append(", ".join(notes))
    out = pd.DataFrame(cols)
    return out[[*KEYS, "differences", *[c for c in out.columns if c not in (*KEYS, "differences")]]]


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _ram(m: dict) -> str:
    return f"{m['ram_mb']:.0f}" if isinstance(m.get("ram_mb"), (int, float)) else "–"


def markdown(sets: list[ResultSet], table: pd.DataFrame) -> str:
    """The comparison as Markdown: the sets, then one row per (experiment, instance, method)."""
    lines = ["# Result sets side by side", "", "| set | folder | host | CPU | cores | RAM (MB) | suite | runs |",
             "|---|---|---|---|---|---|---|---|"]
    for i, s in enumerate(sets):
        m, suite = s.machine, s.machine.get("suite") or {}
        lines.append(f"| {i} | {s.root} | {m.get('host') or _first(s.runs, 'host') or '–'} | "
                     f"{m.get('cpu') or _first(s.runs, 'cpu') or '–'} | {m.get('cores', '–')} | "
                     f"{_ram(m)} | {suite.get('version', '–')} {suite.get('git_commit') or ''} | "
                     f"{len(s.runs)} |")
    n_diff = int((table["differences"] != "").sum())
    lines += ["", f"{len(table)} rows, {n_diff} with differences against set 0. Time: the method's median "
              "runtime_s (s) over the repetitions, spread max − min; a time change is marked when the ranges, "
              f"widened by {TIME_RTOL:.0%} and {TIME_FLOOR_S:g} s, do not meet. † after a time: some of its "
              "runs shared a core (their times may include waiting). Cost –: no plan the evaluator certifies "
              "feasible.", ""]
    head = ["experiment", "instance", "method"]
    for i in range(len(sets)):
        head += [f"status {i}", f"cost {i}", f"time {i}"]
    lines += ["| " + " | ".join(head) + " | differences |", "|" + "---|" * (len(head) + 1)]
    for r in table.to_dict("records"):
        cells = [_fmt(r["experiment"]), _fmt(r["instance"]), _fmt(r["label"])]
        for i in range(len(sets)):
            t = _fmt(r[f"time_s_{i}"]) + ("†" if r[f"shared_{i}"] else "")
            cells += [_fmt(r[f"status_{i}"]), _fmt(r[f"cost_{i}"]), t]
        diff = r["differences"]
        lines.append("| " + " | ".join(cells) + f" | {'**' + diff + '**' if diff else ''} |")
    return "\n".join(lines) + "\n"


def write_compare(dirs: list[str | Path], out: str | Path, names: list[str] | None = None) -> tuple[Path, Path, int]:
    """Write ``out/compare.md`` and the page ``out/index.html``; (page, Markdown file, rows with differences).

    ``names``: how the tables call each folder (default: its path), e.g. the archive it was unpacked from.
    """
    from deplbench.benchmarks.site.pages import Site, cards, kv
    from deplbench.benchmarks.site.tables import html_table
    from deplbench.files import write_text_atomic

    sets = [load_set(d, n) for d, n in zip(dirs, names or [None] * len(dirs), strict=True)]
    table = side_by_side(sets)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "compare.md"
    write_text_atomic(markdown(sets, table), md)
    n_diff = int((table["differences"] != "").sum())
    site = Site(out, "deplbench compare", nav=[("Comparison", "index.html")])
    site.start(plotly=False)
    headers = {"experiment": "Experiment", "label": "Method", "differences": "Differences against set 0"}
    for i in range(len(sets)):
        for c, word in (("status", "status"), ("cost", "certified cost"), ("time_s", "time (s)"),
                        ("spread", "spread (s)"), ("cpu_s", "CPU time (s)"), ("shared", "runs on a shared core")):
            headers[f"{c}_{i}"] = f"[{i}] {word}"
    e = html.escape
    parts = [cards([(str(len(sets)), "result sets"), (str(len(table)), "rows"), (str(n_diff), "with differences")])]
    for i, s in enumerate(sets):
        m, suite = s.machine, s.machine.get("suite") or {}
        parts.append(f"<h2>Set {i}: {e(s.name)}</h2>")
        parts.append(kv([("folder", str(s.root)), ("host", m.get("host") or _first(s.runs, "host") or "-"),
                         ("CPU", f"{m.get('cpu') or _first(s.runs, 'cpu') or '-'} ({m.get('cores', '?')} cores)"),
                         ("RAM (MB)", _ram(m)), ("OS", f"{m.get('os', '-')} {m.get('kernel', '')}"),
                         ("suite", f"{suite.get('version', '-')} {suite.get('git_commit') or ''}"),
                         ("runs", str(len(s.runs)))]))
    parts.append("<h2>Differences</h2>")
    diff = table[table["differences"] != ""]
    parts.append(html_table(diff, "Rows whose status, certified cost or time differs from set 0", table_id="t1",
                            best=False, headers=headers) if len(diff) else "<p>None: every row agrees with set 0.</p>")
    parts.append("<h2>Every row</h2>")
    parts.append(html_table(table, "Per instance and method: each set's status, certified cost, median time and "
                            "its spread over the repetitions", table_id="t2", best=False, headers=headers))
    page = site.page("index.html", "Result sets side by side", "".join(parts))
    return page, md, n_diff
