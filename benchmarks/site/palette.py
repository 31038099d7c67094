"""One colour, one marker and one display name per method, on every chart of every page.

A method is named ``solver`` or ``solver[k=v,...]`` (its family and its variant). The family picks
the hue and the marker (:data:`FAMILIES`; a family not listed gets a hue from a hash of its name,
so it is still the same on every page); the variant picks a shade of that hue, also by a hash, so
``depl[eta=25]`` is a darker or lighter blue than ``depl`` on every chart. :func:`apply` restyles
every trace of a Plotly figure whose name (or ``legendgroup``) is a method, so the colours do not
depend on the order in which a chart adds its series. Add a family here: one entry.
"""

from __future__ import annotations

import colorsys
import hashlib
import re
from dataclasses import dataclass
from typing import Any

#: family -> (base colour, marker symbol, display name of the family)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "depl": ("#1f5fbf", "circle", "depl"),
    "best-exp": ("#e8710a", "diamond", "best-exp"),
    "depl-plus": ("#1e8e3e", "square", "depl-plus"),
    "bruteforce": ("#3c3c3c", "x", "bruteforce"),
    "exact": ("#7b2fa8", "cross", "exact"),
    "milp-highs": ("#c5221f", "triangle-up", "milp-highs"),
    "milp-highs-direct": ("#d93f8c", "triangle-down", "milp-highs-direct"),
    "milp-cpsat": ("#8c564b", "star", "milp-cpsat"),
    "milp-scip": ("#0f9d9a", "pentagon", "milp-scip"),
    "milp-scip-bc": ("#5b8c00", "hexagon", "milp-scip-bc"),
    "mps": ("#7f7f7f", "star-square", "mps"),
    "optimum": ("#111111", "star", "optimum"),  # the reference curve of the paper figures
}
#: markers of families not listed (chosen by hash)
SPARE_MARKERS = ("circle-open", "square-open", "diamond-open", "triangle-up-open", "star-open")
_METHOD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)(\[[^\]]*\])?$")


@dataclass(frozen=True)
class Look:
    """How a method is drawn: its colour, its marker and its display name."""

    color: str
    marker: str
    name: str


def split(method: str) -> tuple[str, str] | None:
    """``(family, variant)`` of a method name ``solver[k=v,...]`` (variant ``""``), None if not one."""
    m = _METHOD.match(str(method).strip())
    if m is None:
        return None
    return m.group(1), (m.group(2) or "")[1:-1]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:4], "big")


def _shade(hex_color: str, variant: str) -> str:
    """The family's colour, lighter or darker by a step fixed by ``variant`` (the default: as is)."""
    if not variant:
        return hex_color
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, lum, s = colorsys.rgb_to_hls(r, g, b)
    step = (-0.18, 0.16, -0.1, 0.24, 0.08)[_hash(variant) % 5]
    r, g, b = colorsys.hls_to_rgb(h, min(0.8, max(0.15, lum + step)), s)
    return "#" + "".join(f"{round(v * 255):02x}" for v in (r, g, b))


def look(method: str) -> Look | None:
    """The colour, marker and display name of ``method`` (None when the name is not a method's)."""
    parts = split(method)
    if parts is None:
        return None
    family, variant = parts
    if family in FAMILIES:
        base, marker, shown = FAMILIES[family]
    else:
        hue = (_hash(family) % 360) / 360
        r, g, b = colorsys.hls_to_rgb(hue, 0.42, 0.65)
        base = "#" + "".join(f"{round(v * 255):02x}" for v in (r, g, b))
        marker, shown = SPARE_MARKERS[_hash(family) % len(SPARE_MARKERS)], family
    return Look(_shade(base, variant), marker, f"{shown}[{variant}]" if variant else shown)


def color_of(method: str, fallback: str = "#7f7f7f") -> str:
    """The colour of ``method`` (for matplotlib figures too); ``fallback`` when it is not a method's name."""
    lk = look(method)
    return lk.color if lk is not None else fallback


def display_name(method: str) -> str:
    """The one name a method is shown by (its registered name and variant)."""
    lk = look(method)
    return lk.name if lk is not None else str(method)


def apply(fig: Any, methods: set[str] | None = None) -> Any:
    """Give every trace of ``fig`` that draws a method the method's colour and marker.

    A trace draws a method when its ``legendgroup`` or its ``name`` is a method name (a key of
    :data:`FAMILIES` with an optional variant; with ``methods``, any of those names). Per-point
    marker symbols a chart set on purpose (e.g. ``x`` for an infeasible plan or a missing point) are
    kept; a trace without a symbol gets the method's.
    """
    for t in fig.data:
        key = None
        for cand in (getattr(t, "legendgroup", None), getattr(t, "name", None)):
            cand = str(cand or "").split(": ")[0]
            parts = split(cand)
            if parts and (parts[0] in FAMILIES or (methods and cand in methods)):
                key = cand
                break
        if key is None:
            continue
        lk = look(key)
        if lk is None:
            continue
        kind = t.type
        if kind in ("scatter", "scattergl"):
            t.line.color = lk.color
            t.marker.color = lk.color
            symbol = t.marker.symbol
            if symbol is None:
                t.marker.symbol = lk.marker
            elif isinstance(symbol, str) and "thin" in symbol:  # a line-only symbol draws with its line
                t.marker.line.color = lk.color
        elif kind == "bar":
            t.marker.color = lk.color
    return fig
