"""Report sections as a registry: each table or figure is one registered function.

A section is ``func(ctx: ReportContext) -> Section | None`` registered with a name, an order
and the store columns it needs; :func:`build_sections` iterates over the registry in order.
A section whose columns are absent (or empty) is replaced by a note saying so; a section that
fails says so inside the report instead of aborting it. Adding a table is one registration::

    from deplbench.benchmarks.report.sections import Section, register_section

    @register_section("my-table", order=55, title="My table", needs=("cost", "p_eta"))
    def my_table(ctx):
        return Section("My table").table("Cost per eta", ctx.runs.groupby("p_eta")["cost"].mean().reset_index())

The built-in sections live in :mod:`deplbench.benchmarks.report.builtin` (and the paper
figures in :mod:`deplbench.benchmarks.report.paper_figures`); :data:`SECTION_MODULES` lists them.
"""

from __future__ import annotations

import errno
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from deplbench.errors import InputError

#: Modules whose import registers the built-in sections.
SECTION_MODULES = ("deplbench.benchmarks.report.findings", "deplbench.benchmarks.report.builtin",
                   "deplbench.benchmarks.report.paper_figures",
                   "deplbench.benchmarks.library.report", "deplbench.benchmarks.report.saa",
                   "deplbench.benchmarks.report.claims_section")


@dataclass
class Section:
    """One report section: an ordered list of blocks ``(kind, payload...)``.

    Kinds: ``("p", text)``, ``("table", caption, DataFrame)``, ``("fig", caption, png_path, chart)``
    with ``chart`` the interactive version of the figure for the site (a Plotly figure, or None:
    the site shows the PNG). ``name`` is the registered name (set by :func:`build_sections`).
    """

    title: str
    blocks: list[tuple] = field(default_factory=list)
    name: str = ""

    def p(self, text: str) -> Section:
        self.blocks.append(("p", text))
        return self

    def table(self, caption: str, df: pd.DataFrame) -> Section:
        self.blocks.append(("table", caption, df))
        return self

    def fig(self, caption: str, path, chart=None) -> Section:
        """A figure: its PNG (``report.md``) and, optionally, its interactive Plotly version (the site)."""
        self.blocks.append(("fig", caption, path, chart))
        return self


@dataclass
class ReportContext:
    """What a section may read: the prepared runs, the stored instances and where figures go.

    Results several sections share (references, ratios, scaling fits) are cached properties, so
    no section depends on another having run first.
    """

    runs: pd.DataFrame
    instances: Callable[[str], Any]
    fig_dir: Path
    root: Path

    @cached_property
    def refs(self) -> pd.DataFrame:
        from deplbench.benchmarks.report.references import references

        return references(self.runs)

    @cached_property
    def ratios(self) -> pd.DataFrame:
        from deplbench.benchmarks.report.ratios import heuristic_ratios

        return heuristic_ratios(self.runs, self.refs)

    @cached_property
    def scaling(self) -> tuple[list[dict[str, Any]], pd.DataFrame]:
        from deplbench.benchmarks.report.scaling import scaling_series, scaling_table

        series = scaling_series(self.runs, time_col="clock_s")  # CPU time where single-threaded
        return series, scaling_table(series) if series else pd.DataFrame()


@dataclass(frozen=True)
class SectionSpec:
    name: str
    order: float
    title: str
    func: Callable[[ReportContext], Section | None]
    needs: tuple[str, ...] = ()


_SECTIONS: dict[str, SectionSpec] = {}


def register_section(name: str, *, order: float, title: str, needs: tuple[str, ...] = ()):
    """Decorator: register ``func(ctx) -> Section | None`` (None: nothing to say, left out)."""

    def deco(func):
        _SECTIONS[name] = SectionSpec(name, float(order), title, func, tuple(needs))
        return func

    return deco


def unregister_section(name: str) -> None:
    """Remove a section (tests that register temporary ones)."""
    _SECTIONS.pop(name, None)


def registered_sections() -> list[SectionSpec]:
    """Every registered section, built-in ones included, in report order."""
    for module in SECTION_MODULES:
        importlib.import_module(module)
    return sorted(_SECTIONS.values(), key=lambda s: (s.order, s.name))


#: errors of the disk, not of a section: they end the report (one line from the command)
DISK_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EPERM, errno.EIO)


def build_sections(ctx: ReportContext) -> list[Section]:
    """Run every registered section in order; missing columns give a note, a failure a message."""
    out = []
    for spec in registered_sections():
        missing = [c for c in spec.needs if c not in ctx.runs.columns or ctx.runs[c].isna().all()]
        if missing:
            out.append(Section(spec.title, name=spec.name).p(f"Skipped: the store has no values in column(s) {', '.join(missing)}."))
            continue
        try:
            sec = spec.func(ctx)
        except InputError:  # a figure that cannot be written (full disk): the report ends, one line
            raise
        except OSError as exc:
            if exc.errno in DISK_ERRNOS:  # a full or read-only disk fails every section: one line, once
                raise
            print(f"deplbench report: section '{spec.name}' failed: {exc!r}", file=sys.stderr)
            sec = Section(spec.title).p(f"This section could not be built: {type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - one broken section must not lose the whole report
            print(f"deplbench report: section '{spec.name}' failed: {exc!r}", file=sys.stderr)
            sec = Section(spec.title, name=spec.name).p(f"This section could not be built: {type(exc).__name__}: {exc}")
        if sec is not None:
            sec.name = sec.name or spec.name
            out.append(sec)
    return out
