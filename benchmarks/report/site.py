"""The report as a small static site (``report/index.html``): an overview that answers the paper's
questions at a glance, one page per section (from the section registry), per experiment, per method
and per instance. Pages are built by :mod:`deplbench.benchmarks.site`; every file is local.

Pages (relative to the report folder)::

    index.html                 headline, solver means, scaling exponents, claims, links
    sections/NAME.html         one registered section, all its tables and charts
    experiments/EXP.html       comparison table, profile, cost and time per instance and method
    methods/METHOD.html        parameters, variants, results per instance, wins and losses
    instances/NAME.html        stored instance, reference, every method's result and plan
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from deplbench.benchmarks.report import site_entities as ent
from deplbench.benchmarks.report.sections import ReportContext, Section
from deplbench.benchmarks.site.charts import embed
from deplbench.benchmarks.site.pages import Site, cards, link_list, rel, slug
from deplbench.benchmarks.site.tables import html_table

#: short labels of the sections in the navigation bar (others: their title)
NAV_LABELS = {"findings": "Findings", "headline": "Headline", "overview": "Runs", "comparison": "Solvers", "library": "Library",
              "ratio": "Ratios", "scaling": "Scaling", "stage-scaling": "Stages", "paper-figures": "Paper figures",
              "saa-bounds": "SAA", "claims": "Claims", "calibration": "Calibration"}
#: what the overview shows of each section: (section name, captions of the tables kept; empty: all)
INDEX_TABLES = (("headline", ()), ("scaling", ("Fitted exponents",)), ("claims", ("Stated vs measured",)))


def inline(text: str) -> str:
    """Escape ``text`` and show its `code` spans as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


class Ids:
    """Unique element ids within a page."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def render_blocks(blocks: list[tuple], page: str, out: Path, ids: Ids, links: dict | None = None) -> tuple[str, bool]:
    """HTML of a section's blocks on the page ``page``; also whether a chart is among them."""
    parts, charts = [], False
    for b in blocks:
        if b[0] == "p":
            parts.append(f"<p>{inline(b[1])}</p>")
        elif b[0] == "table":
            parts.append(html_table(b[2], b[1], table_id=ids("t"), links=links))
        elif b[0] == "fig":
            png = rel(page, Path(b[2]).relative_to(out).as_posix())
            chart = b[3] if len(b) > 3 else None
            if chart is not None:
                parts.append(embed(chart, ids("c"), b[1], png))
                charts = True
            else:
                parts.append(f"<figure class='chart'><img src='{html.escape(png)}' alt='{html.escape(b[1])}'>"
                             f"<figcaption>{html.escape(b[1])}</figcaption></figure>")
    return "".join(parts), charts


def build_site(out: Path, title: str, sections: list[Section], ctx: ReportContext) -> Path:
    """Write the report's site into ``out`` (beside ``report.md`` and ``figures/``); returns ``index.html``."""
    d = ctx.runs
    site = Site(out, title, footer="depl-bench report: every file of this site is local; tables sort on a "
                                   "click on a header. report.md holds the same tables as text.")
    sec_pages = {s.name or slug(s.title): f"sections/{slug(s.name or s.title)}.html" for s in sections}
    titles = {s.title: s.name or slug(s.title) for s in sections}  # a finding names its section by title
    site.nav = [("Overview", "index.html")]
    site.nav += [(NAV_LABELS.get(s.name, s.title), sec_pages[s.name or slug(s.title)]) for s in sections]
    exps = ent.experiments(d)
    methods = sorted(d["method"].dropna().astype(str).unique()) if "method" in d else []
    instances = sorted(d["instance"].dropna().astype(str).unique()) if "instance" in d else []
    mpage = {m: f"methods/{slug(m)}.html" for m in methods}
    ipage = {i: f"instances/{slug(i)}.html" for i in instances}
    epage = {x: f"experiments/{slug(x)}.html" for x in exps}
    site.nav += [("Experiments", "experiments/index.html"), ("Methods", "methods/index.html"),
                 ("Instances", "instances/index.html")]
    site.start()

    def links(page: str) -> dict:
        return {"method": lambda v: rel(page, mpage[v]) if v in mpage else None,
                "instance": lambda v: rel(page, ipage[v]) if v in ipage else None,
                "section": lambda v: rel(page, sec_pages[titles[v]]) if titles.get(v) in sec_pages else None}

    for s in sections:
        page = sec_pages[s.name or slug(s.title)]
        body, charts = render_blocks(s.blocks, page, out, Ids(), links(page))
        site.page(page, s.title, body, crumbs=[("Overview", "index.html")], charts=charts)
    _index(site, sections, ctx, exps, epage, mpage, ipage, sec_pages, links("index.html"))
    _lists(site, exps, epage, methods, mpage, instances, ipage, ctx, links)
    for x in exps:
        ent.experiment_page(site, x, ent.experiment_runs(d, x), epage[x], links(epage[x]))
    refs = ctx.refs
    for m in methods:
        ent.method_page(site, m, d, refs, mpage, links(mpage[m]))
    for i in instances:
        ent.instance_page(site, i, d[d["instance"] == i], refs, ctx.instances, ipage[i], links(ipage[i]))
    return out / "index.html"


def _index(site: Site, sections: list[Section], ctx: ReportContext, exps: list[str], epage: dict, mpage: dict,
           ipage: dict, sec_pages: dict, links: dict) -> None:
    d = ctx.runs
    ids = Ids()
    by_name = {s.name: s for s in sections}
    body = []
    f = by_name.get("findings")
    if f is not None:  # the answer first: what the runs show, and the paper's claims
        body.append(findings_html(f, links))
    body.append(cards([(str(len(d)), "runs"), (str(d["instance"].nunique()), "instances"),
                       (str(d["method"].nunique()), "methods"), (str(len(exps)), "experiments")]))
    charts = False
    h = by_name.get("headline")
    if h is not None:
        body.append(f"<h2>{html.escape(h.title)}</h2>")
        tables = [b for b in h.blocks if b[0] == "table"]
        if tables:
            fig = ent.headline_chart(tables[0][2])
            if fig is not None:
                body.append(embed(fig, ids("c"), "Cost / optimum per paper instance: each heuristic against the "
                                                  "certified optimum (1 = optimal; hover for the instance)."))
                charts = True
        html_part, _ = render_blocks(h.blocks, "index.html", site.root, ids, links)
        body.append(html_part)
    if exps:
        body.append("<h2>Solvers: shifted geometric mean of time and profiles</h2>")
        body.append(html_table(ent.sgm_summary(d, exps), "Shifted geometric mean of time per method and "
                               "experiment (s; shift 10 s; unsolved charged the limit) and instances solved",
                               table_id=ids("t"), best=False, links={"experiment": lambda v: epage.get(v), **links}))
        comp = by_name.get("comparison")
        if comp is not None:
            figs = [b for b in comp.blocks if b[0] == "fig"]
            part, c = render_blocks(figs, "index.html", site.root, ids, links)
            body.append(part)
            charts |= c
    for name, captions in INDEX_TABLES[1:]:
        s = by_name.get(name)
        if s is None:
            continue
        keep = [b for b in s.blocks if b[0] == "table" and (not captions or b[1] in captions)]
        if keep:
            body.append(f"<h2>{html.escape(s.title)}</h2>")
            body.append(render_blocks(keep, "index.html", site.root, ids, links)[0])
            body.append(f"<p><a href='{html.escape(sec_pages[name])}'>The whole section</a></p>")
    body.append("<h2>Every page</h2>")
    body.append(link_list([(s.title, sec_pages[s.name or slug(s.title)]) for s in sections]
                          + [(f"Experiment {x}", epage[x]) for x in exps], "index.html"))
    site.page("index.html", site.title, "".join(body), charts=charts)


def findings_html(sec: Section, links: dict) -> str:
    """The findings section, compact for the index's first screen: plain findings as a list (one line
    each, evidence in grey, a link to the section), tables of findings without filter boxes."""
    e = html.escape
    parts, ids = ["<div class='findings'>"], Ids()
    for b in sec.blocks:
        if b[0] != "table":
            continue
        df = b[2]
        if list(df.columns) == ["finding", "result", "evidence", "section"]:
            items = []
            for r in df.itertuples(index=False):
                href = links["section"](r.section) if r.section else None
                what = f"<a href='{e(href)}'>{e(r.finding)}</a>" if href else e(r.finding)
                items.append(f"<li><b>{what}</b>: {e(r.result)} <span class='ev'>({e(r.evidence)})</span></li>")
            parts.append(f"<ul class='findings'>{''.join(items)}</ul>")
        else:  # the first column links to the section that shows it
            first = str(df.columns[0])
            to = dict(zip(df[first], df["section"], strict=True)) if "section" in df else {}
            here = {**links, first: (lambda v, to=to: links["section"](to.get(v)) if to.get(v) else None)} if to \
                else links
            parts.append(html_table(df.drop(columns=["section"], errors="ignore"), b[1], table_id=ids("f"),
                                    links=here, best=False, filter_box=False))
    return "".join(parts) + "</div>"


def _lists(site: Site, exps: list[str], epage: dict, methods: list[str], mpage: dict, instances: list[str],
           ipage: dict, ctx: ReportContext, links) -> None:
    """The index pages: experiments (links), methods and instances (tables, as MIPLIB's)."""
    from deplbench.benchmarks.report.site_indexes import instances_index, methods_index

    crumbs = [("Overview", "index.html")]
    site.page("experiments/index.html", "Experiments", link_list([(x, epage[x]) for x in exps], "experiments/index.html")
              or "<p>None.</p>", crumbs=crumbs)
    here = "methods/index.html"
    body = html_table(methods_index(ctx.runs, ctx.refs), "Every method: its runs, instances solved (certified; exact "
                      "and SAA methods also proved optimal), runs without a plan (unknown) or failed, mean cost / "
                      "proven optimum where it has a certified plan, shifted geometric mean of time (s; shift 10 s, "
                      "unsolved charged the limit)", table_id="t1", links=links(here)) if methods else "<p>None.</p>"
    site.page(here, "Methods", body, crumbs=crumbs)
    here = "instances/index.html"
    body = html_table(instances_index(ctx.runs, ctx.refs), "Every instance: family, size (models x clusters x max "
                      "epochs), reference cost (proven optimum, else the best certified cost), the cheapest methods, "
                      "runs and runs without a certified plan", table_id="t1", links=links(here),
                      best=False) if instances else "<p>None.</p>"
    site.page(here, "Instances", body, crumbs=crumbs)


__all__ = ["build_site", "render_blocks"]
