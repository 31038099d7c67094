"""Exact check of a MIP solution against its MPS file, in rational arithmetic (as MIPLIB's checker).

Every number of the MPS file and of the solution is read as the exact rational its decimal text
denotes (:class:`fractions.Fraction`), so row activities carry no round-off. The tolerances are
MIPLIB's: a row or bound holds when its violation is at most ``FEAS_TOL`` relative to
``max(1, |side|)``, a column is integral within ``INT_TOL``, and a stated objective must match
the computed one within ``FEAS_TOL`` relative. The largest violation of each kind is reported.

May import: the standard library only. Imported by: ``benchmarks.library.check``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

FEAS_TOL = Fraction(1, 10**6)
INT_TOL = Fraction(1, 10**5)
KINDS = ("row", "bound", "integrality", "objective")


@dataclass
class MpsModel:
    """The parts of an MPS file a check needs (free or fixed format with names without spaces)."""

    objective: str = ""
    senses: dict[str, str] = field(default_factory=dict)  # row -> E, L or G
    rhs: dict[str, Fraction] = field(default_factory=dict)
    ranges: dict[str, Fraction] = field(default_factory=dict)
    columns: dict[str, dict[str, Fraction]] = field(default_factory=dict)  # column -> {row: a}
    integer: set[str] = field(default_factory=set)
    lower: dict[str, Fraction | None] = field(default_factory=dict)  # None: -inf
    upper: dict[str, Fraction | None] = field(default_factory=dict)  # None: +inf


def read_mps(path: str | Path) -> MpsModel:
    """Parse an MPS file exactly (numbers as rationals of their decimal text)."""
    m, section, marker = MpsModel(), "", False
    for raw in Path(path).read_text().splitlines():
        if not raw.strip() or raw.startswith("*"):
            continue
        if not raw[0].isspace():
            section = raw.split()[0]
            continue
        tok = raw.split()
        if section == "ROWS":
            if tok[0] == "N" and not m.objective:
                m.objective = tok[1]
            elif tok[0] in ("E", "L", "G"):
                m.senses[tok[1]] = tok[0]
        elif section == "COLUMNS":
            if "'MARKER'" in tok:
                marker = "'INTORG'" in tok
                continue
            col = m.columns.setdefault(tok[0], {})
            if marker:
                m.integer.add(tok[0])
            for row, val in zip(tok[1::2], tok[2::2], strict=True):
                col[row] = col.get(row, Fraction(0)) + Fraction(val)
        elif section in ("RHS", "RANGES"):
            target = m.rhs if section == "RHS" else m.ranges
            for row, val in zip(tok[1::2], tok[2::2], strict=True):
                target[row] = Fraction(val)
        elif section == "BOUNDS":
            _bound(m, tok)
    return m


def _bound(m: MpsModel, tok: list[str]) -> None:
    kind, col = tok[0], tok[2]
    val = Fraction(tok[3]) if len(tok) > 3 else None
    if kind in ("UP", "UI"):
        m.upper[col] = val
        if val is not None and val < 0 and col not in m.lower:
            m.lower[col] = None  # MPS: a negative upper bound without a lower one makes the column free below
    elif kind in ("LO", "LI"):
        m.lower[col] = val
    elif kind == "FX":
        m.lower[col] = m.upper[col] = val
    elif kind == "FR":
        m.lower[col], m.upper[col] = None, None
    elif kind == "MI":
        m.lower[col] = None
    elif kind == "PL":
        m.upper[col] = None
    elif kind == "BV":
        m.lower[col], m.upper[col] = Fraction(0), Fraction(1)
    if kind in ("UI", "LI", "BV"):
        m.integer.add(col)


@dataclass
class Verdict:
    """The largest relative violation of each kind, where it occurs, and whether all are within tolerance."""

    worst: dict[str, tuple[Fraction, str]] = field(default_factory=lambda: {k: (Fraction(0), "") for k in KINDS})
    objective: Fraction = Fraction(0)

    def add(self, kind: str, violation: Fraction, where: str) -> None:
        if violation > self.worst[kind][0]:
            self.worst[kind] = (violation, where)

    @property
    def ok(self) -> bool:
        tol = {"row": FEAS_TOL, "bound": FEAS_TOL, "integrality": INT_TOL, "objective": FEAS_TOL}
        return all(v <= tol[k] for k, (v, _) in self.worst.items())

    def lines(self) -> list[str]:
        return [f"largest {k} violation {float(v):.3g}" + (f" ({w})" if w else "") for k, (v, w) in self.worst.items()]


def _relative(violation: Fraction, side: Fraction) -> Fraction:
    return max(violation, Fraction(0)) / max(Fraction(1), abs(side))


def check_solution(m: MpsModel, values: dict[str, str | Fraction], stated: str | float | None = None) -> Verdict:
    """Check ``values`` (column -> value, absent columns 0) against ``m`` exactly."""
    x = {c: Fraction(str(v)) if not isinstance(v, Fraction) else v for c, v in values.items()}
    out = Verdict()
    act: dict[str, Fraction] = {}
    for col, entries in m.columns.items():
        v = x.get(col, Fraction(0))
        if v:
            for row, a in entries.items():
                act[row] = act.get(row, Fraction(0)) + a * v
        lo = m.lower.get(col, Fraction(0))
        hi = m.upper.get(col)
        if lo is not None:
            out.add("bound", _relative(lo - v, lo), f"{col} >= {float(lo):g}")
        if hi is not None:
            out.add("bound", _relative(v - hi, hi), f"{col} <= {float(hi):g}")
        if col in m.integer:
            out.add("integrality", abs(v - round(v)), col)
    for row, sense in m.senses.items():
        a, b = act.get(row, Fraction(0)), m.rhs.get(row, Fraction(0))
        lo, hi = _sides(sense, b, m.ranges.get(row))
        if lo is not None:
            out.add("row", _relative(lo - a, lo), row)
        if hi is not None:
            out.add("row", _relative(a - hi, hi), row)
    out.objective = act.get(m.objective, Fraction(0)) - m.rhs.get(m.objective, Fraction(0))
    if stated is not None:
        s = Fraction(str(stated))
        out.add("objective", abs(s - out.objective) / max(Fraction(1), abs(out.objective)), f"stated {float(s):g}")
    return out


def _sides(sense: str, b: Fraction, r: Fraction | None) -> tuple[Fraction | None, Fraction | None]:
    """(lower, upper) of a row (MPS ranges: R on L gives [b-|R|, b], on G [b, b+|R|], on E by R's sign)."""
    if sense == "E":
        if r is None:
            return b, b
        return (b, b + r) if r > 0 else (b + r, b)
    if sense == "L":
        return (None if r is None else b - abs(r)), b
    return b, (None if r is None else b + abs(r))
