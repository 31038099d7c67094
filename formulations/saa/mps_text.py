"""The MPS text of an SAA model: fixed format (any MPS reader) or free format with exact numbers.

*Fixed* format puts every field at its columns (names within 8 characters, numbers within 12),
as every MPS reader accepts, GLPK's ``glpsol --mps`` included. A number is written by its
shortest round-trip decimal when that fits in 12 characters (then the file holds the model's
value exactly), else as the nearest decimal of at most 12 characters (a relative change below
``1e-9``): :class:`MpsText` says whether any number was so rounded. Names are the model's when
they fit in 8 characters, else ``C`` and the column's index (:func:`fixed_names`); rows ``r0``, ``r1``...

*Free* format (``glpsol --freemps``, HiGHS, CBC, SCIP) writes every number as its shortest
round-trip decimal (``repr``): the file is the model, to the bit, with the model's names.

Both carry the model's name in ``NAME``, bounds written explicitly for every integer column
(``BV``, ``LO``/``UP``/``PL``: no reader's default is relied on), ``L`` rows with a ``RANGES``
entry for a two-sided row, and an objective constant as the negated right-hand side of the
objective row (as HiGHS, CBC and CPLEX read it; GLPK reads the other sign: the SAA models have none).

May import: numpy (``formulations.saa.model`` for its types). Imported by: ``formulations.saa.io``,
``formulations.backends.mps`` and ``benchmarks.library.check`` (the fixed names).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from deplbench.formulations.saa.model import SaaModel

#: width of a fixed-format name and number field
NAME_W, NUM_W = 8, 12
OBJ = "OBJ"


@dataclass(frozen=True)
class MpsText:
    """The file's text; ``exact``: every number and name is the model's (no rounding, no renaming)."""

    text: str
    exact: bool
    rounded: int = 0  #: how many numbers were rounded to fit the fixed format
    max_rel_change: float = 0.0  #: the largest relative change of a rounded number
    renamed: bool = False  #: a column named ``C`` and its index (its model name is too long)


def shortest(v: float) -> str:
    """The shortest decimal that reads back as ``v`` (``repr``, without a trailing ``.0``)."""
    s = repr(float(v))
    if s.endswith(".0"):
        s = s[:-2]
    return "0" if s == "-0" else s


def fixed_number(v: float) -> tuple[str, bool]:
    """``v`` within 12 characters: (text, whether it reads back as ``v`` exactly).

    Not exact: the nearest of the decimals of at most 12 characters in %g and %e layouts (the
    exponent without its leading zeros).
    """
    s = shortest(v)
    if len(s) <= NUM_W:
        return s, True
    best = None
    for digits in range(NUM_W, 0, -1):
        for t in (f"{v:.{digits}g}", f"{v:.{digits - 1}e}"):
            if "e" in t:
                mant, exp = t.split("e")
                t = f"{mant}e{int(exp)}"
            if len(t) <= NUM_W and (best is None or abs(float(t) - v) < abs(float(best) - v)):
                best = t
        if best is not None and float(best) == v:
            break
    if best is None:  # pragma: no cover - %.0e always fits
        raise ValueError(f"{v!r} has no 12-character decimal")
    return best, bool(float(best) == v)


class _Writer:
    def __init__(self, fixed: bool) -> None:
        self.fixed, self.lines = fixed, []
        self.rounded, self.worst = 0, 0.0

    def num(self, v: float) -> str:
        if not self.fixed:
            return shortest(v)
        s, exact = fixed_number(v)
        if not exact:
            self.rounded += 1
            self.worst = max(self.worst, abs(float(s) - v) / abs(v))
        return s

    def line(self, f1: str = "", f2: str = "", f3: str = "", f4: str = "") -> None:
        """One data line: fixed fields at columns 2-3, 5-12, 15-22 and 25-36; free: space separated."""
        if self.fixed:
            s = f" {f1:<2} {f2:<8}  {f3:<8}  {f4:>12}" if f3 or f4 else f" {f1:<2} {f2}"
        else:
            s = " " + " ".join(t for t in (f1, f2, f3, f4) if t)
        self.lines.append(s.rstrip())

    def marker(self, n: int, start: bool) -> None:
        """An integer marker line: its name at columns 5-12, 'MARKER' at 15-22, the keyword at 40-47."""
        name, key = f"M{n:07d}", "'INTORG'" if start else "'INTEND'"
        self.lines.append(f"    {name}  'MARKER'{' ' * 17}{key}" if self.fixed else f" {name} 'MARKER' {key}")


def fixed_names(model: SaaModel) -> list[str]:
    """The fixed file's column names: the model's where within 8 characters, else ``C`` and the index.

    Every model name holds an underscore (``formulations.saa.model``), so ``C17`` names no other column.
    """
    names = list(model.names) if model.names else [""] * model.n_vars
    return [n if n and len(n) <= NAME_W else f"C{j}" for j, n in enumerate(names)]


def _names(model: SaaModel, fixed: bool) -> tuple[list[str], list[str], bool]:
    """(column names, row names ``r0``, ``r1``..., whether a column was renamed)."""
    cols = fixed_names(model) if fixed or not model.names else list(model.names)
    rows = [f"r{i}" for i in range(model.n_cons)]
    if fixed and model.n_cons > 10 ** (NAME_W - 1):
        raise ValueError(f"{model.n_cons} rows: more than fixed-format names can number")
    return cols, rows, bool(model.names) and cols != list(model.names)


def _row_kind(lo: float, hi: float) -> tuple[str, float | None, float | None]:
    """(type, rhs, range) of a row ``lo <= a x <= hi``; a free row is ``N``."""
    if lo == hi:
        return "E", lo, None
    if math.isinf(lo) and math.isinf(hi):
        return "N", None, None
    if math.isinf(lo):
        return "L", hi, None
    if math.isinf(hi):
        return "G", lo, None
    return "L", hi, hi - lo


def _bounds(lo: float, hi: float, integer: bool) -> list[tuple[str, float | None]]:
    """The BOUNDS entries of a column, explicit for integer columns (readers differ on their defaults)."""
    if integer and lo == 0 and hi == 1:
        return [("BV", None)]
    if lo == hi:
        return [("FX", lo)]
    if math.isinf(lo) and math.isinf(hi):
        return [("FR", None)]
    out: list[tuple[str, float | None]] = []
    if math.isinf(lo):
        out.append(("MI", None))
    elif lo != 0 or integer or hi < 0:  # a negative upper bound alone would make the column free below
        out.append(("LO", lo))
    if not math.isinf(hi):
        out.append(("UP", hi))
    elif integer:
        out.append(("PL", None))
    return out


def mps_text(model: SaaModel, name: str = "", *, fixed: bool = True) -> MpsText:
    """The MPS text of ``model`` named ``name``, fixed or free format (module docstring)."""
    w = _Writer(fixed)
    cols, rows, renamed = _names(model, fixed)
    lo_r, hi_r = np.asarray(model.row_lb, dtype=float), np.asarray(model.row_ub, dtype=float)
    kinds = [_row_kind(float(a), float(b)) for a, b in zip(lo_r, hi_r, strict=True)]
    w.lines.append(f"NAME          {name}".rstrip() if fixed else f"NAME {name}".rstrip())
    w.lines.append("ROWS")
    w.line("N", OBJ)
    for r, (kind, _, _) in zip(rows, kinds, strict=True):
        w.line(kind, r)
    w.lines.append("COLUMNS")
    A = model.A.tocsc()
    A.sort_indices()
    c = np.asarray(model.c, dtype=float)
    integer = np.asarray(model.integer, dtype=bool)
    marker, n_marks = False, 0
    for j in range(model.n_vars):
        if bool(integer[j]) != marker:
            marker = bool(integer[j])
            w.marker(n_marks, marker)
            n_marks += 1
        entries = [(OBJ, c[j])] if c[j] != 0 else []
        lo, hi = A.indptr[j], A.indptr[j + 1]
        entries += [(rows[i], v) for i, v in zip(A.indices[lo:hi].tolist(), A.data[lo:hi].tolist(), strict=True)
                    if v != 0]
        if not entries:  # a column on no row is listed all the same
            entries = [(OBJ, 0.0)]
        for r, v in entries:
            w.line("", cols[j], r, w.num(v))
    if marker:
        w.marker(n_marks, False)
    w.lines.append("RHS")
    if model.offset != 0:
        w.line("", "RHS", OBJ, w.num(-float(model.offset)))
    for r, (kind, rhs, _) in zip(rows, kinds, strict=True):
        if kind != "N" and rhs != 0:
            w.line("", "RHS", r, w.num(rhs))
    ranged = [(r, rng) for r, (_, _, rng) in zip(rows, kinds, strict=True) if rng is not None]
    if ranged:
        w.lines.append("RANGES")
        for r, rng in ranged:
            w.line("", "RNG", r, w.num(rng))
    range_exact = all(hi - (hi - lo) == lo for lo, hi in zip(lo_r, hi_r, strict=True)
                      if math.isfinite(lo) and math.isfinite(hi) and lo != hi)
    w.lines.append("BOUNDS")
    for j in range(model.n_vars):
        for kind, v in _bounds(float(model.lb[j]), float(model.ub[j]), bool(integer[j])):
            w.line(kind, "BND", cols[j], "" if v is None else w.num(v))
    w.lines.append("ENDATA")
    exact = w.rounded == 0 and not renamed and range_exact
    return MpsText("\n".join(w.lines) + "\n", exact, w.rounded, w.worst, renamed)
