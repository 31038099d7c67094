"""``deplbench report DIR``: Markdown and self-contained HTML report of a result store.

:func:`build_report` reads only ``DIR/results.duckdb`` (runs and the instances they used),
builds the sections in order (the paper reproduction's headline table first) and writes
``report.md``, ``report.html`` (figures embedded as base64 PNG) and ``figures/*.png|svg``.
A section whose data is missing says what it lacks; a section that fails says so in the
report instead of aborting the whole report.
"""

from __future__ import annotations

import base64
import html as htmllib
import importlib
import importlib.util
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from deplbench.benchmarks import claims, figures, paper_figures, tables
from deplbench.benchmarks.store import Store
from deplbench.benchmarks.tables import Section
from deplbench.instances.io import instance_from_dict

CALIBRATION_MODULE = "deplbench.instances.calibration_plots"


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
    """All runs (with derived columns) and the stored instances; the store is closed at once."""
    with Store(root, read_only=True) as st:
        runs = st.runs()
        raw = dict(st.con.execute("SELECT name, json FROM instances").fetchall())
    return tables.prepare(runs), _Instances(raw)


# ---- sections ------------------------------------------------------------------------------------

def headline_section(d: pd.DataFrame, refs: pd.DataFrame) -> Section:
    sec = Section("Paper reproduction: headline")
    h = tables.headline(d, refs)
    if h.empty:
        return sec.p("No runs on the paper families (`paper-alexnet`, `paper-mobilenet`) in this store.")
    sec.p("Certified figures (the evaluator's `cost`, `feasible`, `q_hi`), never a solver's own. "
          "`optimum`: cheapest certified plan of an exact method with status optimal (else the cheapest "
          "certified plan of any run, flagged as not proven); ratios are "
          f"cost / optimum; depl at eta = {tables.PAPER_ETA:g}, eps = {tables.PAPER_EPS:g}; "
          "`flags` names plans the evaluator finds infeasible and optima that are not proven.")
    missing = [s for s in ("bruteforce", "depl", "best-exp") if not (d["solver"] == s).any()]
    if missing:
        sec.p(f"Missing solvers: {', '.join(missing)} (their columns are empty).")
    return sec.table("Per network x noise mode x target", h)


def overview_section(d: pd.DataFrame) -> Section:
    sec = Section("Runs in this store")
    if d.empty:
        return sec.p("The store holds no runs.")
    counts = d.pivot_table(index="solver", columns="harness_status", values="run_key", aggfunc="count",
                           fill_value=0)
    status = d.pivot_table(index="solver", columns="status", values="run_key", aggfunc="count", fill_value=0)
    sec.table("Harness outcome per solver", counts.reset_index())
    sec.table("Solver status per solver", status.reset_index())
    prov = {c: ", ".join(sorted(d[c].dropna().astype(str).unique())[:5]) or "-"
            for c in ("config", "package_version", "git_commit", "host", "cpu", "python")}
    return sec.table("Provenance", pd.DataFrame({"field": list(prov), "values": list(prov.values())}))


def comparison_section(d: pd.DataFrame, out: Path) -> Section:
    sec = Section("Solver comparison")
    sec.p("Per experiment: runs, instances, solved (certified feasible plan; exact and SAA methods also "
          "proved optimal), shifted geometric mean of per-instance time with shift "
          f"{tables.SHIFT_S:g} s (unsolved charged the time limit), the solvers' mean MIP gap, the median "
          "certified cost gap to the best cost in the experiment, and wins (cheapest / fastest solved).")
    groups = d.assign(exp=d["config"].fillna("-") + "/" + d["experiment"].fillna("-")).groupby("exp", sort=True)
    for exp, g in groups:
        sec.table(f"Experiment {exp}", tables.comparison_table(g))
        r = tables.performance_ratios(g)
        shared = g.groupby("instance")["method"].nunique() >= 2  # a profile needs common instances
        if r.shape[1] >= 2 and shared.any():
            name = "profile_" + "".join(ch if ch.isalnum() else "_" for ch in exp)
            sec.fig(f"Dolan-More performance profile of time, experiment {exp}.",
                    figures.performance_profile(r, out, name, f"Performance profile: {exp}"))
    return sec


def ratio_section(d: pd.DataFrame, refs: pd.DataFrame, out: Path) -> tuple[Section, pd.DataFrame]:
    sec = Section("Competitive ratio of DepL")
    ratios = tables.depl_ratios(d, refs)
    if ratios.empty:
        why = "no `depl` runs" if not (d["solver"] == "depl").any() else "no reference cost on its instances"
        return sec.p(f"Not measured: {why}."), pd.DataFrame()
    sec.p("Ratio = depl's certified cost / reference. The reference is the proven optimum (exact method, "
          "or the family's known optimum); otherwise the optimum lies in [best exact lower bound, best "
          "certified cost], and the ratio is an interval: `mean_ratio`/`max_ratio` use the lower end, "
          "`max_ratio_upper` the upper end (inf without a bound). The paper's Property 3 states "
          "(1/eta)(1+eps), which is below 1 for eta > 1 and so impossible for a minimisation "
          "(MODEL.md section 7 item 4); it is printed beside the measurement, not claimed.")
    tab = tables.ratio_table(ratios)
    sec.table("Measured ratio per (eta, eps)", tab)
    sec.fig("DepL cost ratio vs eta and eps; dashed: the stated (1+eps)/eta.", figures.ratio_plots(ratios, out))
    return sec, tab


def scaling_section(d: pd.DataFrame, out: Path) -> tuple[Section, pd.DataFrame]:
    sec = Section("Runtime scaling")
    series = tables.scaling_series(d)
    if not series:
        return sec.p("Not measured: no solver has runs where one of eta, eps, max_epochs, n_models, "
                     "n_clusters or n_datasets takes 3 or more values with the rest fixed."), pd.DataFrame()
    tab = tables.scaling_table(series)
    sec.p("Least-squares fit of ln(runtime) = a + b ln(x) on finished runs, 95% t-interval of b. "
          "Timeouts are censored (drawn at their limit, not fitted): with censored runs at the large end "
          "the exponent is an underestimate. Property 2 claims O(|M|^2 K^2 / eta^4); the corrected "
          "bound (MODEL.md section 7 item 3) of the layered DP is O(|M|^2 K eta^2).")
    sec.table("Fitted exponents", tab)
    sec.fig("Runtime vs each variable (log-log), fit with 95% band; ^ = timeout (censored).",
            figures.scaling_plot(series, out))
    return sec, tab


def claims_section(d: pd.DataFrame, get: Callable, ratio_tab: pd.DataFrame, scal: pd.DataFrame) -> Section:
    sec = Section("Claim checks")
    sub, source = claims.submodularity(d, get)
    sec.p(f"Submodularity of stage 1's objective K(D)T(D) per family (MODEL.md section 7 item 9): {source}.")
    if not sub.empty:
        sec.table("Largest submodularity violation per family", sub)
    rows = [t for t in (claims.ratio_claims(ratio_tab) if not ratio_tab.empty else None,
                        claims.exponent_claims(scal) if not scal.empty else None) if t is not None]
    if rows:
        sec.table("Stated vs measured", pd.concat(rows, ignore_index=True))
    else:
        sec.p("Property 2 and 3: not measured (no ratio or scaling data).")
    return sec


def calibration_section(root: Path, out: Path) -> Section | None:
    params = sorted((root / "calibration").glob("*.json"))
    if not params:
        return None
    sec = Section("Calibration")
    try:
        found = importlib.util.find_spec(CALIBRATION_MODULE) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return sec.p(f"{len(params)} calibration file(s) found but `{CALIBRATION_MODULE}` is not installed.")
    mod = importlib.import_module(CALIBRATION_MODULE)
    for p in params:
        target = out / f"calibration_{p.stem}"
        res = mod.make_figures(p, target)
        paths = [Path(x) for x in res] if isinstance(res, (list, tuple)) else sorted(target.glob("*.png"))
        for fig in paths:
            if fig.suffix == ".png":
                sec.fig(f"Calibration {p.stem}: {fig.stem}", fig)
    return sec


def _safe(title: str, build: Callable[[], Section]) -> Section:
    """Build a section; on an unexpected failure report it inside the section instead of aborting."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - one broken section must not lose the whole report
        print(f"deplbench report: section '{title}' failed: {exc!r}", file=sys.stderr)
        return Section(title).p(f"This section could not be built: {type(exc).__name__}: {exc}")


# ---- entry point ---------------------------------------------------------------------------------

def build_report(root: Path, out: Path | None = None) -> Path:
    """Write the report of the store in ``root`` into ``out`` (default ``root/report``).

    Returns
    -------
    Path
        The self-contained HTML page (``report.md`` and ``figures/`` are beside it).
    """
    root = Path(root)
    out = Path(out) if out is not None else root / "report"
    d, get = load(root)
    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    refs = tables.references(d)
    holder: dict[str, pd.DataFrame] = {"ratio": pd.DataFrame(), "scal": pd.DataFrame()}

    def ratio() -> Section:
        sec, holder["ratio"] = ratio_section(d, refs, fig_dir)
        return sec

    def scaling() -> Section:
        sec, holder["scal"] = scaling_section(d, fig_dir)
        return sec

    sections = [
        _safe("Paper reproduction: headline", lambda: headline_section(d, refs)),
        _safe("Runs in this store", lambda: overview_section(d)),
        _safe("Solver comparison", lambda: comparison_section(d, fig_dir)),
        _safe("Competitive ratio of DepL", ratio),
        _safe("Runtime scaling", scaling),
        _safe("Paper figures", lambda: paper_figures.paper_section(d, refs, get, fig_dir)),
        _safe("Claim checks", lambda: claims_section(d, get, holder["ratio"], holder["scal"])),
    ]
    cal = _safe("Calibration", lambda: calibration_section(root, fig_dir) or Section(""))
    if cal.title:
        sections.append(cal)
    title = f"depl-bench report: {root.resolve().name}"
    _write(out / "report.md", render_markdown(title, sections, out))
    html = out / "report.html"
    _write(html, render_html(title, sections))
    return html


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


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
    head = [str(c) for c in df.columns]
    body = [[fmt(v.item() if hasattr(v, "item") else v) for v in row] for row in df.itertuples(index=False)]
    return head, body


def render_markdown(title: str, sections: list[Section], out: Path) -> str:
    """The report as Markdown; figures are linked relative to ``out``."""
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
       "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f2f2f2}"
       "td:first-child,th:first-child{text-align:left}caption{text-align:left;font-style:italic;padding:4px 0}"
       "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:13px;color:#444}")


def render_html(title: str, sections: list[Section]) -> str:
    """The report as one self-contained HTML page (PNG figures embedded as base64)."""
    e = htmllib.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{e(title)}</h1>"]
    for sec in sections:
        parts.append(f"<h2>{e(sec.title)}</h2>")
        for b in sec.blocks:
            if b[0] == "p":
                parts.append(f"<p>{e(b[1])}</p>")
            elif b[0] == "table":
                head, body = _cells(b[2])
                rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in body)
                parts.append(f"<table><caption>{e(b[1])}</caption><tr>"
                             + "".join(f"<th>{e(h)}</th>" for h in head) + f"</tr>{rows}</table>")
            elif b[0] == "fig":
                data = base64.b64encode(Path(b[2]).read_bytes()).decode("ascii")
                parts.append(f"<figure><img alt='{e(b[1])}' src='data:image/png;base64,{data}'>"
                             f"<figcaption>{e(b[1])}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)
