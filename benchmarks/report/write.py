"""``deplbench report DIR``: Markdown and self-contained HTML report of a result store.

:func:`build_report` reads only ``DIR/results.duckdb`` (runs and the instances they used),
builds the registered sections in order (the paper reproduction's headline table first) and writes
``report.md``, ``report.html`` (figures embedded as base64 PNG) and ``figures/*.png|svg``.
A section whose data is missing says what it lacks; a section that fails says so in the
report instead of aborting the whole report.
"""

from __future__ import annotations

import base64
import html as htmllib
import json
import math
import re
from pathlib import Path

import pandas as pd

from deplbench.benchmarks.harness.frame import prepare
from deplbench.benchmarks.harness.store import Store
from deplbench.benchmarks.report.sections import ReportContext, Section, build_sections
from deplbench.instances.io import instance_from_dict


class _Instances:
    """Lazy, cached access to the instances stored beside the runs."""

    def __init__(self, raw: dict[str, str]):
        self.raw, self.cache = raw, {}

    def __contains__(self, name: str) -> bool:
        return name in self.raw

    def __call__(self, name: str):
        if name not in self.cache:
            self.cache[name] = instance_from_dict(json.loads(self.raw[name]), f"store:{name}")
        return self.cache[name]


def load(root: Path) -> tuple[pd.DataFrame, _Instances]:
    """All runs (expanded and with derived columns) and the stored instances; the store is closed at once."""
    with Store(root, read_only=True) as st:
        runs = st.runs()
        raw = dict(st.con.execute("SELECT name, json FROM instances").fetchall())
    return prepare(runs), _Instances(raw)


def build_report(root: Path, out: Path | None = None) -> Path:
    """Write the report of the store in ``root`` into ``out`` (default ``root/report``).

    The sections are the registered ones (:mod:`deplbench.benchmarks.report.sections`), in order.

    Returns
    -------
    Path
        The self-contained HTML page (``report.md`` and ``figures/`` are beside it).
    """
    from deplbench.benchmarks.report.staging import staged

    root = Path(root)
    out = Path(out) if out is not None else root / "report"
    d, get = load(root)
    with staged(out) as stage:  # written aside, moved into place whole: a stopped report leaves no half
        fig_dir = stage / "figures"
        fig_dir.mkdir(parents=True, exist_ok=True)
        ctx = ReportContext(d, get, fig_dir, root)
        sections = build_sections(ctx)
        title = f"depl-bench report: {root.resolve().name}"
        _write(stage / "report.md", render_markdown(title, sections, stage))
        _write(stage / "report.html", render_html(title, sections))
        from deplbench.benchmarks.report.site import build_site

        build_site(stage, title, sections, ctx)
    return out / "report.html"


def _write(path: Path, text: str) -> None:
    """Atomic write; a full disk or a permission problem is one InputError naming ``path``, no temporary left."""
    from deplbench.files import write_text_atomic

    write_text_atomic(text, path)


# ---- rendering -----------------------------------------------------------------------------------

def fmt(v) -> str:
    """A table cell: 4 significant digits, '-' for missing, 'inf' for infinity, yes/no for booleans."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.6g}"
    return str(v)


def _cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The headers in words (:func:`~deplbench.benchmarks.site.labels.header`) and the formatted cells."""
    from deplbench.benchmarks.site.labels import header

    head = [header(str(c)) for c in df.columns]
    body = [[fmt(v.item() if hasattr(v, "item") else v) for v in row] for row in df.itertuples(index=False)]
    return head, body


def render_markdown(title: str, sections: list[Section], out: Path) -> str:
    """The report as Markdown (table headers in words); figures are linked relative to ``out``."""
    lines = [f"# {title}", ""]
    for sec in sections:
        lines += [f"## {sec.title}", ""]
        for b in sec.blocks:
            if b[0] == "p":
                lines += [b[1], ""]
            elif b[0] == "table":
                head, body = _cells(b[2])
                esc = [[c.replace("|", "\\|") for c in r] for r in [head, *body]]
                lines += [f"*{b[1]}*", "", "| " + " | ".join(esc[0]) + " |",
                          "|" + "|".join("---" for _ in head) + "|"]
                lines += ["| " + " | ".join(r) + " |" for r in esc[1:]] + [""]
            elif b[0] == "fig":
                rel = Path(b[2]).relative_to(out).as_posix()
                svg = f" ([SVG]({rel[:-4]}.svg))" if Path(b[2]).with_suffix(".svg").exists() else ""
                lines += [f"![{b[1]}]({rel})", "", f"*{b[1]}*{svg}", ""]
    return "\n".join(lines)


CSS = ("body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
       "table{border-collapse:collapse;font-size:13px;margin:0.5em 0 1.5em}"
       "th,td{border:1px solid #ccc;padding:3px 6px;text-align:left}th{background:#f2f2f2}td.n{text-align:right}"
       "caption{text-align:left;font-style:italic;padding:4px 0}"
       "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:13px;color:#444}"
       ".scroll{overflow-x:auto;max-width:100%}p,h1,h2,figcaption,caption{overflow-wrap:anywhere}"
       "code{background:#eef1f4;padding:0 3px;border-radius:3px}")


def _align(cell: str) -> str:
    """The class of a number's cell (right-aligned); text stays left-aligned."""
    return " class='n'" if re.fullmatch(r"[-+]?[0-9][0-9.,e+-]*%?|inf|-inf|-", cell) else ""


def render_html(title: str, sections: list[Section]) -> str:
    """The report as one self-contained HTML page (PNG figures embedded as base64)."""
    e = htmllib.escape
    from deplbench.benchmarks.report.site import inline

    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{e(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{e(title)}</h1>"
             "<p>One page with every section; the browsable site with sortable tables and interactive "
             "charts starts at <a href='index.html'>index.html</a>.</p>"]
    for sec in sections:
        parts.append(f"<h2>{e(sec.title)}</h2>")
        for b in sec.blocks:
            if b[0] == "p":
                parts.append(f"<p>{inline(b[1])}</p>")
            elif b[0] == "table":
                head, body = _cells(b[2])
                rows = "".join("<tr>" + "".join(f"<td{_align(c)}>{e(c)}</td>" for c in r) + "</tr>" for r in body)
                parts.append(f"<div class='scroll'><table><caption>{e(b[1])}</caption><tr>"
                             + "".join(f"<th>{e(h)}</th>" for h in head) + f"</tr>{rows}</table></div>")
            elif b[0] == "fig":
                data = base64.b64encode(Path(b[2]).read_bytes()).decode("ascii")
                parts.append(f"<figure><img alt='{e(b[1])}' src='data:image/png;base64,{data}'>"
                             f"<figcaption>{e(b[1])}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)
