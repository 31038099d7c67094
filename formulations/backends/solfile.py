"""Read a MIP solution file as written by HiGHS, CBC or SCIP (or a plain ``name value`` list).

The three formats (detected from the first lines):

* HiGHS (``--solution_file``): ``Model status`` / status line, ``# Primal solution values``,
  ``Feasible`` or ``None``, ``Objective V``, ``# Columns N`` then ``name value`` lines, ``# Rows``...
* CBC (``solve solu FILE``): a first line ``Optimal - objective value V`` (or ``Infeasible``,
  ``Stopped on time``...), then ``index name value reduced_cost`` for the nonzero columns. When
  it stopped before any integer solution, CBC writes its LP relaxation's point instead, saying
  ``(no integer solution - continuous used)`` in the first line: that point is no solution;
* SCIP (``write solution``): ``solution status: optimal solution found``, ``objective value: V``,
  then ``name value (obj:c)`` for the nonzero columns, or ``no solution available``.

A plain file of ``name value`` lines (no status) is read with status ``unknown``. Columns
not listed are 0 (CBC and SCIP list only the nonzeros).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from deplbench.errors import InputError
from deplbench.results import Status

#: status words of the three formats -> Status (lower case, matched as prefixes, longest first);
#: unknown otherwise (``mps`` then calls a run with a plan ``feasible``)
STATUS_MAP: dict[str, Status] = {
    # also CBC's "optimal (within gap tolerance)": stopped at the requested ratio (mip_gap)
    "optimal": Status.OPTIMAL, "optimal solution found": Status.OPTIMAL,
    # as a prefix also SCIP's "infeasible or unbounded" (scip_file): the SAA MILP's objective, a
    # cost, is at least 0, so it is infeasible
    "infeasible": Status.INFEASIBLE, "integer infeasible": Status.INFEASIBLE,
    "problem proven infeasible": Status.INFEASIBLE,
    "time limit reached": Status.TIMEOUT, "stopped on time": Status.TIMEOUT,
    # CBC's other stops (limits the presets do not set, a Ctrl-C): stopped with the optimum
    # unproven, the written solution (if any) is the incumbent, as at the time limit
    "stopped on iterations": Status.TIMEOUT, "stopped on nodes": Status.TIMEOUT,
    "stopped on solutions": Status.TIMEOUT, "stopped on ctrl-c": Status.TIMEOUT,
    "memory limit reached": Status.MEMOUT,
    # SCIP stopped at the requested relative gap: optimal at mip_gap, as HiGHS reports it
    "gap limit reached": Status.OPTIMAL,
}
#: e.g. ``Optimal - objective value 5``, ``Optimal (within gap tolerance) - objective value 5``
_CBC_HEAD = re.compile(r"^(?P<st>[A-Za-z][A-Za-z \-()]*?)\s*-\s*objective value\s+(?P<obj>\S+)")
#: CBC writes this objective when it has no solution
CBC_NO_SOLUTION = 1e49
#: CBC's first line when it stopped without an integer solution and wrote the LP relaxation's point
CBC_CONTINUOUS = "no integer solution"


@dataclass
class SolFile:
    """A parsed solution: status word mapped to a Status, stated objective, column values."""

    fmt: str
    status: Status
    raw_status: str
    objective: float | None
    values: dict[str, float] = field(default_factory=dict)

    @property
    def has_solution(self) -> bool:
        return bool(self.values)


def status_of(text: str) -> Status:
    t = text.strip().lower()
    for key in sorted(STATUS_MAP, key=len, reverse=True):
        if t.startswith(key):
            return STATUS_MAP[key]
    return Status.UNKNOWN


def _number(tok: str, path, line: int) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise InputError(f"'{tok}' is not a number", str(path), f"line {line}") from None
    if not math.isfinite(v):
        raise InputError(f"'{tok}' is not a finite number", str(path), f"line {line}")
    return v


def read_solution(path: str | Path) -> SolFile:
    """Parse ``path``; bad content is an :class:`InputError` naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the solution file ({exc})", str(path)) from None
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    if first.lower() == "model status":
        return _highs(path, lines)
    if first.lower().startswith("solution status:") or first.lower().startswith("objective value:"):
        return _scip(path, lines)
    if _CBC_HEAD.match(first):
        return _cbc(path, lines)
    return _plain(path, lines, 0, "plain", Status.UNKNOWN, "", None)


def _pairs(path, lines, start: int, stop_prefix: str | None = None) -> dict[str, float]:
    vals: dict[str, float] = {}
    for i in range(start, len(lines)):
        tok = lines[i].split()
        if not tok or tok[0].startswith("#") and stop_prefix is None:
            continue
        if stop_prefix is not None and lines[i].startswith(stop_prefix):
            break
        if len(tok) < 2:
            raise InputError("expected 'name value'", str(path), f"line {i + 1}")
        if tok[0] in vals:
            raise InputError(f"column '{tok[0]}' is listed twice", str(path), f"line {i + 1}")
        vals[tok[0]] = _number(tok[1], path, i + 1)
    return vals


def _plain(path, lines, start, fmt, status, raw, obj) -> SolFile:
    return SolFile(fmt, status, raw, obj, _pairs(path, lines, start))


def _highs(path, lines) -> SolFile:
    stripped = [ln.strip() for ln in lines]
    i0 = stripped.index("Model status") if "Model status" in stripped else stripped.index("model status")
    raw = stripped[i0 + 1] if i0 + 1 < len(stripped) else ""
    obj = None
    vals: dict[str, float] = {}
    feasible = "Feasible" in stripped
    for i, ln in enumerate(stripped):
        if ln.startswith("Objective "):
            obj = _number(ln.split()[1], path, i + 1)
        if ln.startswith("# Columns") and feasible:
            vals = _pairs(path, lines, i + 1, stop_prefix="# Rows")
            break
    return SolFile("highs", status_of(raw), raw, obj if feasible else None, vals)


def _scip(path, lines) -> SolFile:
    raw, obj, start = "", None, 0
    for i, ln in enumerate(lines):
        low = ln.strip().lower()
        if low.startswith("solution status:"):
            raw = ln.split(":", 1)[1].strip()
        elif low.startswith("objective value:"):
            obj = _number(ln.split(":", 1)[1].strip(), path, i + 1)
        elif low.startswith("no solution available"):
            return SolFile("scip", status_of(raw), raw, None, {})
        else:
            start = i
            break
    else:
        start = len(lines)
    return SolFile("scip", status_of(raw), raw, obj, _pairs(path, lines, start))


def _cbc(path, lines) -> SolFile:
    m = _CBC_HEAD.match(lines[0].strip())
    raw = m.group("st").strip()
    obj = _number(m.group("obj"), path, 1)
    vals: dict[str, float] = {}
    for i in range(1, len(lines)):
        tok = lines[i].split()
        if not tok:
            continue
        if tok[0] == "**":  # CBC marks columns outside their bounds with '**'
            tok = tok[1:]
        if len(tok) < 3:
            raise InputError("expected 'index name value [reduced cost]'", str(path), f"line {i + 1}")
        vals[tok[1]] = _number(tok[2], path, i + 1)
    status = status_of(raw)
    if abs(obj) >= CBC_NO_SOLUTION or status == Status.INFEASIBLE or CBC_CONTINUOUS in lines[0].lower():
        return SolFile("cbc", status, raw, None, {})
    return SolFile("cbc", status, raw, obj, vals)


#: lines of a solver's log that state its dual bound (the last one counts): HiGHS's summary, CBC's
#: stop report and partial search, SCIP's statistics (printed by ``scip_file``)
_DUAL_BOUND = (
    re.compile(r"^\s*Dual bound\s+(\S+)\s*$", re.M),
    re.compile(r"^Lower bound:\s+(\S+)", re.M),
    re.compile(r"best possible (\S+?)\)", re.M),
    re.compile(r"^Dual Bound\s*:\s*(\S+)", re.M),
)


def dual_bound(log: str, sf: SolFile) -> float | None:
    """The dual bound the solver stated in its log, or None when it stated none.

    Only a bound the solver printed counts, never the objective of a solution it calls optimal
    within a gap tolerance. One exception, also the solver's word: CBC's "Result - Optimal
    solution found" (without "within gap tolerance") ends a search that explored the whole tree,
    so its objective is the bound.
    """
    found = None
    for rx in _DUAL_BOUND:
        for m in rx.finditer(log):
            try:
                v = float(m.group(1).rstrip(",;"))
            except ValueError:
                continue
            if math.isfinite(v):
                found = v
    if found is None and sf.fmt == "cbc" and re.search(r"^Result - Optimal solution found\s*$", log, re.M):
        found = sf.objective
    return found
