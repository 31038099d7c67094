"""Parameters declared once: type, default, valid range, one-line doc, and whether they name a variant.

A registered method or family declares its parameters as :class:`Param` objects; everything
else derives from the declaration: ``--set`` coercion and the config checks (one function,
:func:`parse`), ``deplbench solvers`` / ``families`` listings, the store's ``p_<name>``
columns and the report labels ``name[k=v,...]`` (:func:`variant_label`, benchopt's style).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deplbench.errors import InputError

_TRUE = ("1", "true", "yes", "on")
_NOUN = {int: "an integer", float: "a number", str: "a string", bool: "a boolean"}
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    Attributes
    ----------
    name : str
    type : type
        ``int``, ``float``, ``str`` or ``bool``.
    default : Any
        Its value when not given (``None`` only for an optional ``str``).
    doc : str
        One line for listings and docs.
    low, high : float, optional
        Inclusive bounds of a number (``low_open``: ``low`` itself excluded).
    choices : tuple, optional
        The allowed values of a ``str`` parameter.
    variant : bool
        Whether two runs that differ in it are different variants (labels, tables). Limits,
        seeds and thread counts are not.
    """

    name: str
    type: type
    default: Any
    doc: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[Any, ...] | None = None
    variant: bool = True

    def range_text(self) -> str:
        """The valid values, for messages and listings (``''`` when any value of the type is)."""
        if self.choices is not None:
            return "one of " + "|".join(str(c) for c in self.choices)
        if self.low is None and self.high is None:
            return ""
        show = (lambda x: str(int(x))) if self.type is int else (lambda x: f"{x:g}")
        lo = "-inf" if self.low is None else show(self.low)
        hi = "inf" if self.high is None else show(self.high)
        return f"in {'(' if self.low_open else '['}{lo}, {hi}]"

    def describe(self) -> str:
        """``name: type = default (range): doc``, one line."""
        rng = self.range_text()
        text = f"{self.name}: {self.type.__name__} = {format_value(self.default)}"
        return text + (f" ({rng})" if rng else "") + (f": {self.doc}" if self.doc else "")

    def check(self, value: Any, source: str | None = None, at: str | None = None) -> Any:
        """``value`` (a string from ``--set`` or a TOML/Python value) coerced and range-checked.

        Raises
        ------
        InputError
            One line naming ``source`` and ``at`` (the parameter by default).
        """
        at = at or self.name
        v = self._coerce(value, source, at)
        if v is None:
            return v
        if self.choices is not None and v not in self.choices:
            raise InputError(f"{self.name} must be {self.range_text()}, not {value!r}", source, at)
        if self.type in (int, float):
            too_low = self.low is not None and (v <= self.low if self.low_open else v < self.low)
            too_high = self.high is not None and v > self.high
            if too_low or too_high:
                raise InputError(f"{self.name} must be {_NOUN[self.type]} {self.range_text()}, not {value!r}",
                                 source, at)
        return v

    def _coerce(self, value: Any, source: str | None, at: str) -> Any:
        if value is None and self.default is None:
            return None
        if isinstance(value, str) and self.type is not str:
            return self._from_text(value, source, at)
        ok = isinstance(value, self.type) and not (self.type is not bool and isinstance(value, bool))
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if self.type is float and ok and not math.isfinite(value):
            ok = False
        if not ok:
            rng = self.range_text()
            raise InputError(f"{self.name} must be {_NOUN[self.type]}{' ' + rng if rng else ''}, not {value!r}",
                             source, at)
        return value

    def _from_text(self, text: str, source: str | None, at: str) -> Any:
        t = text.strip()
        try:
            if self.type is bool:
                if t.lower() in _TRUE:
                    return True
                if t.lower() in _FALSE:
                    return False
                raise ValueError
            out = int(t) if self.type is int else float(t)
            if not math.isfinite(out):
                raise ValueError
            return out
        except ValueError:
            raise InputError(f"{self.name}={text!r} is not {_NOUN[self.type]}", source, at) from None


def infer(name: str, default: Any, doc: str = "") -> Param:
    """A declaration from a bare default (the older ``defaults={...}`` form): type only, no range."""
    kind = type(default) if default is not None else str
    return Param(name, kind, default, doc)


def declare(params: Sequence[Param] | None, defaults: Mapping[str, Any] | None,
            common: Sequence[Param] = ()) -> dict[str, Param]:
    """The full declaration of a method or family: ``common`` first, then its own (which win)."""
    out = {p.name: p for p in common}
    for name, value in (defaults or {}).items():
        out[name] = infer(name, value)
    for p in params or ():
        out[p.name] = p
    return out


def parse(declared: Mapping[str, Param], raw: Mapping[str, Any] | None, what: str,
          source: str | None = "--set", at: str | None = None) -> dict[str, Any]:
    """Defaults updated by ``raw``, every value coerced and range-checked: the one validation.

    ``at`` is the JSON-style path of the parameter table in a config (``experiments[0]...``),
    ``None`` for the command line.
    """
    out = {name: p.default for name, p in declared.items()}
    for key, value in (raw or {}).items():
        where = f"{at}.{key}" if at else key
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise InputError(f"{what} has no parameter '{key}' (known: {known})", source, where)
        out[key] = declared[key].check(value, source, where)
    return out


def format_value(v: Any) -> str:
    """A parameter value as it appears in labels and listings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def variant_label(name: str, params: Mapping[str, Any], declared: Mapping[str, Param]) -> str:
    """``name[k=v,...]`` over the variant parameters that differ from their default (benchopt).

    Parameters not declared (an older store, a method no longer registered) are shown when
    present, so that two different runs never share a label.
    """
    parts = []
    for key in _ordered(params, declared):
        p = declared.get(key)
        v = params[key]
        if p is not None and (not p.variant or _same(v, p.default)):
            continue
        if p is None and key in ("time_limit", "seed", "threads"):
            continue
        parts.append(f"{key}={format_value(v)}")
    return f"{name}[{','.join(parts)}]" if parts else name


def _ordered(params: Mapping[str, Any], declared: Mapping[str, Param]) -> Iterable[str]:
    first = [k for k in declared if k in params]
    return first + sorted(k for k in params if k not in declared)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b
