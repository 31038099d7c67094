"""MIPLIB's ``.solu`` format: one reference line per problem.

``=opt=  NAME VALUE`` (proven optimum), ``=best= NAME VALUE`` (best known feasible value, not
proven), ``=bestdual= NAME VALUE`` (best proven lower bound, beside a ``=best=``), ``=inf= NAME``
(proven infeasible), ``=unkn= NAME`` (nothing known). NAME is the file's base name without
extension. Values are written with Python's shortest round-trip ``repr``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from deplbench.errors import InputError

KINDS = ("opt", "best", "inf", "unkn")


@dataclass(frozen=True)
class Reference:
    """The reference of one problem: ``kind`` in :data:`KINDS`, ``value`` (opt/best), ``bound`` (best)."""

    kind: str
    value: float | None = None
    bound: float | None = None

    def lines(self, name: str) -> list[str]:
        if self.kind in ("inf", "unkn"):
            return [f"={self.kind}= {name}"]
        out = [f"={self.kind}= {name} {self.value!r}"]
        if self.kind == "best" and self.bound is not None:
            out.append(f"=bestdual= {name} {self.bound!r}")
        return out

    def to_dict(self) -> dict:
        return {k: v for k, v in (("kind", self.kind), ("value", self.value), ("bound", self.bound))
                if v is not None}


def write_solu(refs: list[tuple[str, Reference]], path: str | Path) -> None:
    """Write the lines of every (name, reference), in the given order."""
    text = "".join(line + "\n" for name, ref in refs for line in ref.lines(name))
    Path(path).write_text(text)


def read_solu(path: str | Path) -> dict[str, Reference]:
    """Parse a ``.solu`` file; a malformed line is an :class:`InputError` naming the line."""
    refs: dict[str, dict] = {}
    for i, raw in enumerate(Path(path).read_text().splitlines(), start=1):
        tok = raw.split()
        if not tok:
            continue
        tag = tok[0]
        kind = tag.strip("=")
        if tag not in ("=opt=", "=best=", "=bestdual=", "=inf=", "=unkn=") or len(tok) < 2:
            raise InputError(f"not a .solu line: {raw.strip()!r}", str(path), f"line {i}")
        name = tok[1]
        if kind in ("inf", "unkn"):
            refs.setdefault(name, {})["kind"] = kind
            continue
        try:
            v = float(tok[2])
        except (IndexError, ValueError):
            raise InputError(f"{tag} needs a number", str(path), f"line {i}") from None
        if not math.isfinite(v):
            raise InputError(f"{tag} needs a finite number", str(path), f"line {i}")
        if kind == "bestdual":
            refs.setdefault(name, {}).setdefault("kind", "best")
            refs[name]["bound"] = v
        else:
            refs.setdefault(name, {})["kind"] = kind
            refs[name]["value"] = v
    return {n: Reference(**d) for n, d in refs.items()}
