"""Findings as a registry: each statement the report opens with is one registered function.

A finding is ``func(ctx: ReportContext) -> list[Finding]`` registered with a name and an order;
:func:`findings` runs them in order and the ``findings`` section (order 0, so first in
``report.md``, ``report.html`` and the site's index) shows them as two tables: what the runs show,
and, where the store holds the paper's instances, one verdict per claim of the paper. Adding a
finding is one registration in one file::

    from deplbench.benchmarks.report.findings import Finding, register_finding

    @register_finding("slowest", order=30)
    def slowest(ctx):
        t = ctx.runs.groupby("method")["runtime_s"].median()
        return [Finding("Slowest method", f"{t.idxmax()}: median {t.max():.3g} s",
                        f"{len(ctx.runs)} runs", section="comparison")]

The built-in findings live in :mod:`deplbench.benchmarks.report.findings_builtin` and
:mod:`deplbench.benchmarks.report.findings_claims` (:data:`FINDING_MODULES`). A statement is never
stronger than its data: :data:`MIN_INSTANCES` instances at least for a verdict, ``not tested here``
where an axis was not swept.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from deplbench.benchmarks.report.claims import (
    MIN_INSTANCES,  # the fewest instances a verdict rests on
)
from deplbench.benchmarks.report.sections import (
    ReportContext,
    Section,
    register_section,
    registered_sections,
)

#: modules whose import registers the built-in findings
FINDING_MODULES = ("deplbench.benchmarks.report.findings_builtin", "deplbench.benchmarks.report.findings_claims")
#: resamples and seed of the bootstrap intervals (fixed: the report is reproducible)
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 0
#: the words a claim's verdict may take
VERDICTS = ("holds", "does not hold", "inconclusive", "not tested here")


@dataclass(frozen=True)
class Finding:
    """One statement of the report's first screen.

    Attributes
    ----------
    what : str
        What is stated (a short label: "Cheapest method", or the paper's claim).
    result : str
        The measured figure, with its interval where it has one.
    evidence : str
        What it rests on: how many instances and runs, which ones.
    section : str
        The registered name of the section that shows it (linked on the site).
    verdict : str
        For a claim of the paper: one of :data:`VERDICTS`; empty for a plain finding.
    stated : str
        For a claim: what the paper states.
    table : str
        Findings that share a ``table`` (its caption) are shown as one table of their ``columns``
        (e.g. one row per heuristic) instead of one line each.
    columns : dict
        Raw column name -> value of this finding's row in its ``table``.
    """

    what: str
    result: str
    evidence: str
    section: str = ""
    verdict: str = ""
    stated: str = ""
    table: str = ""
    columns: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FindingSpec:
    name: str
    order: float
    func: Callable[[ReportContext], list[Finding]]


_FINDINGS: dict[str, FindingSpec] = {}


def register_finding(name: str, *, order: float):
    """Decorator: register ``func(ctx) -> list[Finding]`` (an empty list: nothing to state)."""

    def deco(func):
        _FINDINGS[name] = FindingSpec(name, float(order), func)
        return func

    return deco


def unregister_finding(name: str) -> None:
    """Remove a finding (tests that register temporary ones)."""
    _FINDINGS.pop(name, None)


def findings(ctx: ReportContext) -> list[Finding]:
    """Every registered finding in order; one that fails is reported as such, not raised."""
    for module in FINDING_MODULES:
        importlib.import_module(module)
    out: list[Finding] = []
    for spec in sorted(_FINDINGS.values(), key=lambda s: (s.order, s.name)):
        try:
            out += spec.func(ctx)
        except Exception as exc:  # noqa: BLE001 - one broken finding must not lose the others
            print(f"deplbench report: finding '{spec.name}' failed: {exc!r}", file=sys.stderr)
            out.append(Finding(spec.name, f"could not be computed: {type(exc).__name__}: {exc}", ""))
    return out


def bootstrap_mean(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaN, NaN for fewer than 2 values)."""
    v = np.asarray([x for x in values if math.isfinite(x)], dtype=float)
    if v.size < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = v[rng.integers(0, v.size, size=(BOOTSTRAP_RESAMPLES, v.size))].mean(axis=1)
    a = (1.0 - level) / 2.0
    return float(np.quantile(means, a)), float(np.quantile(means, 1.0 - a))


def interval_verdict(lo: float, hi: float, threshold: float, n: int, *, above: bool) -> str:
    """``holds`` when the whole interval is on the claimed side of ``threshold``, ``does not hold``
    when it is wholly on the other side, else ``inconclusive``; ``not tested here`` below
    :data:`MIN_INSTANCES` instances or without an interval."""
    if n < MIN_INSTANCES or math.isnan(lo) or math.isnan(hi):
        return "not tested here"
    ok, bad = (lo > threshold, hi < threshold) if above else (hi <= threshold, lo > threshold)
    return "holds" if ok else "does not hold" if bad else "inconclusive"


def names(items: Sequence[str], most: int = 3) -> str:
    """``a, b, c and 4 more``: a few of ``items`` by name."""
    items = list(items)
    if len(items) <= most:
        return ", ".join(items)
    return ", ".join(items[:most]) + f" and {len(items) - most} more"


@register_section("findings", order=0, title="What the store shows")
def findings_section(ctx: ReportContext) -> Section | None:
    found = findings(ctx)
    if not found:
        return None
    sec = Section("What the store shows")
    titles = {s.name: s.title for s in registered_sections()}
    found = [replace(f, section=titles.get(f.section, f.section)) for f in found]
    plain = [f for f in found if not f.verdict and not f.table]
    if plain:
        sec.table("Findings, computed from the stored runs",
                  pd.DataFrame([{"finding": f.what, "result": f.result, "evidence": f.evidence,
                                 "section": f.section or None} for f in plain]))
    for caption in dict.fromkeys(f.table for f in found if f.table):
        rows = [f for f in found if f.table == caption]
        sec.table(caption, pd.DataFrame([f.columns for f in rows]))
    claims = [f for f in found if f.verdict and not f.table]
    if claims:
        sec.table(f"The paper's claims, on its instances (DepL: the headline's variant; a verdict needs "
                  f"{MIN_INSTANCES} instances; inconclusive: the interval straddles the stated figure)",
                  pd.DataFrame([{"claim": f.what, "verdict": f.verdict, "claim_stated": f.stated,
                                 "measured": f.result, "evidence": f.evidence, "section": f.section or None}
                                for f in claims]))
    return sec
