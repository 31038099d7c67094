"""Readable HTML tables: headers in words, one precision per column, statuses as words, the best
value marked, sortable (click a header; ``aria-sort`` marks the column) and filterable (a text box),
scrolled inside their own box when wider than the page (``static/site.js`` does the sorting).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from deplbench.benchmarks.site.labels import STATUS_COLUMNS, header, status_word

#: per-row groups: within a row, the smallest value of the columns ending in one suffix is the best
ROW_BEST_SUFFIXES = ("_cost", "_ratio", "_ttime")
#: prefixes of summaries of one series (mean_ratio beside max_ratio are not rivals)
AGGREGATES = ("mean_", "max_", "min_", "median_", "best_")
#: per-column best in tables whose rows are methods: column -> "min" or "max"
COLUMN_BEST = {"sgm_time_s": "min", "solved": "max", "wins_cost": "max", "wins_time": "max",
               "median_cost_gap": "min", "scaled": "min", "mean_ratio": "min", "max_ratio": "min",
               "cost": "min", "ratio": "min"}
#: columns shown with a fixed number of decimals whatever their magnitude
FIXED_DECIMALS = {"ref_value": 4, "value": 4, "ratio_mean": 3, "ratio_ci_lo": 3, "ratio_ci_hi": 3, "ratio_max": 3,
                  "mean_ratio": 3, "max_ratio": 3, "max_ratio_upper": 3}
#: columns whose text may wrap (long notes)
WRAP_COLUMNS = frozenset({"flags", "measured", "setting", "claim", "values", "corrected", "notes", "result",
                          "evidence", "claim_stated", "no_plan", "reason", "finding", "best_method"})
#: columns of supporting detail, in a smaller grey type
SMALL_COLUMNS = frozenset({"evidence"})
#: a verdict's class (coloured by ``static/site.css``)
VERDICT_CLASSES = {"holds": "v-holds", "does not hold": "v-fails", "inconclusive": "v-open",
                   "not tested here": "v-none"}


def _is_missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def decimals(values: Sequence[float]) -> int | None:
    """Decimals that show the column's largest value with 4 significant digits (0 to 4).

    None means scientific notation (every value below 0.01 in magnitude, but not all zero).
    """
    finite = [abs(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not finite or all(float(v).is_integer() for v in finite):
        return 0
    top = max(finite)
    if 0 < top < 0.01:
        return None
    return int(min(4, max(0, 3 - math.floor(math.log10(top))))) if top > 0 else 0


def _number(v: float, dec: int | None) -> str:
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if dec is None:
        return f"{v:.3g}" if v else "0"
    return f"{v:,.{dec}f}"


def _column_kind(s: pd.Series) -> str:
    vals = [v for v in s.tolist() if not _is_missing(v)]
    if vals and all(isinstance(v, (bool, np.bool_)) for v in vals):
        return "bool"
    if vals and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                    for v in vals):
        return "num"
    return "text"


def best_cells(df: pd.DataFrame) -> set[tuple[int, str]]:
    """(row position, column) of the best value: per row among the ``*_cost`` (and ``*_ratio``)
    columns, per column in tables of methods (:data:`COLUMN_BEST`; rows whose ``feasible`` is false
    never win). Ties are all marked."""
    marks: set[tuple[int, str]] = set()
    for suffix in ROW_BEST_SUFFIXES:
        cols = [c for c in df.columns if (str(c).endswith(suffix) and not str(c).startswith(AGGREGATES))
                or (suffix == "_cost" and c == "optimum")]
        if len(cols) < 2:
            continue
        vals = df[cols].apply(pd.to_numeric, errors="coerce")
        for i, row in enumerate(vals.itertuples(index=False)):
            finite = [v for v in row if isinstance(v, float) and math.isfinite(v)]
            if len(finite) >= 2:
                low = min(finite)
                marks |= {(i, c) for c, v in zip(cols, row, strict=True) if math.isfinite(v) and v <= low * (1 + 1e-9)}
    if "method" in df.columns and len(df) >= 2:
        for col, how in COLUMN_BEST.items():
            if col not in df.columns:
                continue
            v = pd.to_numeric(df[col], errors="coerce")
            if "feasible" in df.columns:  # an infeasible plan's cost is never the best
                v = v[df["feasible"].astype("boolean").fillna(False).astype(bool)]
            v = v[np.isfinite(v)]
            if v.nunique() >= 2:
                target = v.min() if how == "min" else v.max()
                marks |= {(df.index.get_loc(i), col) for i in v.index[np.isclose(v, target, rtol=1e-9)]}
    return marks


def html_table(df: pd.DataFrame, caption: str = "", *, links: Mapping[str, Callable[[object], str | None]] | None = None,
               table_id: str = "t", best: bool = True, filter_box: bool | None = None,
               headers: Mapping[str, str] | None = None,
               texts: Mapping[str, Callable[[object], str]] | None = None, wrap: Collection[str] = ()) -> str:
    """One table as HTML (a ``div.tablebox``: caption, filter box, scrolled table).

    Parameters
    ----------
    df
        The table with its raw column names (shown in words, :func:`~deplbench.benchmarks.site.labels.header`).
    caption
        Shown above the table.
    links
        Column -> function of a cell value returning a relative URL (or None: no link).
    table_id
        Unique id of the table in its page.
    best
        Mark the best values (:func:`best_cells`).
    filter_box
        Show the filter box (default: when the table has more than 5 rows).
    headers
        Raw column name -> header shown, for columns named by data (e.g. methods).
    texts
        Column -> function of a cell value returning the text shown (e.g. "JSON" for a link to a
        file); sorting and filtering use the shown text.
    wrap
        Text columns whose cells wrap on a narrow screen only (long names: ``td.nwrap`` in
        ``static/site.css``).

    Returns
    -------
    str
        The HTML of the table's box.
    """
    e = html.escape
    df = df.reset_index(drop=True)
    links = links or {}
    texts = texts or {}
    kinds = {c: _column_kind(df[c]) for c in df.columns}
    decs = {c: FIXED_DECIMALS.get(str(c), decimals([float(v) for v in df[c] if not _is_missing(v)]))
            for c in df.columns if kinds[c] == "num"}
    marks = best_cells(df) if best else set()
    head = []
    for c in df.columns:
        cls = "txt" if kinds[c] != "num" else ""
        shown = (headers or {}).get(str(c)) or header(str(c))
        head.append(f"<th scope='col' class='{cls}' title='{e(str(c))}'>{e(shown)}</th>")
    rows = []
    for i, row in enumerate(df.itertuples(index=False)):
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            v = v.item() if hasattr(v, "item") else v
            classes, sort = [], None
            if _is_missing(v):
                text = "–"
                sort = ""
            elif kinds[c] == "num":
                text, sort = _number(float(v), decs[c]), repr(float(v))
            elif kinds[c] == "bool":
                text = "yes" if v else "no"
                classes.append("txt")
                if c == "feasible" and not v:
                    classes.append("bad")
            elif str(c) == "verdict" and str(v) in VERDICT_CLASSES:
                text = str(v)
                classes += ["txt", VERDICT_CLASSES[text]]
            elif str(c) in STATUS_COLUMNS:
                text = status_word(v)
                classes.append("txt")
            else:
                text = texts[c](v) if c in texts else str(v)
                classes.append("wrap" if str(c) in WRAP_COLUMNS and len(text) > 40 else "txt")
                if c in wrap:
                    classes.append("nwrap")
                if str(c) in SMALL_COLUMNS:
                    classes.append("ev")
            if (i, c) in marks:
                classes.append("best")
            body = e(text)
            href = links[c](v) if c in links and not _is_missing(v) else None
            if href:
                body = f"<a href='{e(href)}'>{body}</a>"
            attrs = f" class='{' '.join(classes)}'" if classes else ""
            attrs += f" data-v='{e(sort)}'" if sort is not None else ""
            cells.append(f"<td{attrs}>{body}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    show_filter = len(df) > 5 if filter_box is None else filter_box
    tools = ""
    if show_filter:
        tools = (f"<div class='tools'><input class='filter' type='search' placeholder='Filter rows' "
                 f"aria-label='Filter the rows of {e(caption or table_id)}'>"
                 f"<span class='count'>{len(df)} rows</span><span>click a header to sort</span></div>")
    cap = f"<div class='caption'>{e(caption)}</div>" if caption else ""
    marked = " Bold on green: the best value." if marks else ""
    note = f"<div class='tools'><span>{marked}</span></div>" if marked and not show_filter else ""
    if marked and show_filter:
        tools = tools.replace("</div>", f"<span>{marked}</span></div>", 1)
    return (f"<div class='tablebox' id='{e(table_id)}'>{cap}{tools}{note}<div class='scroll'>"
            f"<table class='data'><thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(rows)}</tbody>"
            f"</table></div></div>")
