"""Argument types and helpers shared by every command (one line and exit 2 for a bad value).

May import: ``deplbench.errors`` only (the CLI's start-up stays fast). Imported by every ``deplbench.cli`` module.
"""

from __future__ import annotations

import argparse
import math

from deplbench.errors import InputError


class Parser(argparse.ArgumentParser):
    """argparse that raises InputError (one line, exit 2) instead of printing usage."""

    def error(self, message: str):  # noqa: D102
        raise InputError(message, source=self.prog)


def parse_sets(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``."""
    out: dict[str, str] = {}
    for item in pairs or []:
        if "=" not in item:
            raise InputError(f"expected key=value, got '{item}'", source="--set")
        k, v = item.split("=", 1)
        if not k:
            raise InputError(f"empty key in '{item}'", source="--set")
        out[k.strip()] = v.strip()
    return out


def int_at_least(minimum: int):
    """An argparse type: an integer >= ``minimum`` (a bad value is one line, exit 2)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"'{text}' must be >= {minimum}")
        return v

    parse.__name__ = f"int >= {minimum}"
    return parse


nonneg_int = int_at_least(0)
positive_int = int_at_least(1)


def int_in(low: int, high: int):
    """An argparse type: an integer in ``[low, high]`` (a resource cap, docs/reliability.md)."""
    base = int_at_least(low)

    def parse(text: str) -> int:
        v = base(text)
        if v > high:
            raise argparse.ArgumentTypeError(f"'{text}' is over the limit of {high}")
        return v

    parse.__name__ = f"int in [{low}, {high}]"
    return parse


def float_in(low: float, high: float, low_open: bool = False):
    """An argparse type: a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if not (math.isfinite(v) and (v > low if low_open else v >= low) and v <= high):
            raise argparse.ArgumentTypeError(f"'{text}' must be a number in {'(' if low_open else '['}{low:g}, {high:g}]")
        return v

    parse.__name__ = "number"
    return parse


#: caps of the core commands' counts (docs/reliability.md)
MAX_SAMPLES = 10_000_000
MAX_SCENARIOS = 100_000


def pos_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"'{text}' must be a positive finite number")
    return v
