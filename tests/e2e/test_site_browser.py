"""The report's and the library's sites, driven in headless Chromium at 1280 px: every page loads
without a console error, loads nothing from the network, has no broken link or image and no
horizontal overflow; tables sort (``aria-sort``) and filter; a chart shows its hover text.

Screenshots of the index pages are written to ``$DEPLBENCH_SCREENSHOTS`` (default: the test's
``tmp_path``); ``DEPLBENCH_SCREENSHOTS=docs/screenshots`` rewrites the library's shots there
(``library-index-1280.png`` and ``-390``, ``library-instance-1280.png`` and ``-390``). Without Chromium the tests fail with one line saying how to install it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import browser
import pytest
from harness_configs import library_config

#: the library's quick subset with small samples (as tests/benchmarks/test_library.py)
LIB_KW = {"quick": True, "scenarios": (20, 40), "saa_nodes": 200, "time_limit": 300.0, "saa_time_limit": 300.0,
          "workers": 1, "log": lambda _m: None}


@pytest.fixture(scope="module")
def drv():
    d = browser.start()
    yield d
    browser.stop(d)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    """``deplbench run smoke``: its report folder (the run writes the site)."""
    from deplbench.benchmarks.api import run_config

    out = tmp_path_factory.mktemp("smoke")
    run_config("smoke", out, workers=1, progress=False)
    return out / "report"


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    from deplbench.benchmarks.library.catalog import build

    out = tmp_path_factory.mktemp("lib") / "quick"
    build(out, **LIB_KW)
    return out


def _shots(tmp_path: Path) -> Path:
    out = Path(os.environ.get("DEPLBENCH_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _screenshot(drv, page: Path, target: Path) -> None:
    drv.get(page.resolve().as_uri())
    time.sleep(0.5)
    height = drv.execute_script("return document.documentElement.scrollHeight")
    drv.set_window_size(browser.WIDTH, min(height + 140, 9000))
    drv.save_screenshot(str(target))
    drv.set_window_size(browser.WIDTH, 900)
    assert target.stat().st_size > 10_000


def _assert_clean(drv, pages: list[Path]) -> None:
    problems = {}
    for p in pages:
        r = browser.visit(drv, p)
        bad = {k: r[k] for k in ("errors", "remote", "broken") if r[k]}
        if r["width"] > browser.WIDTH:
            bad["width"] = r["width"]
        if bad:
            problems[p.name] = bad
    assert not problems, problems


@pytest.mark.slow
def test_report_site_pages_are_clean(drv, smoke, tmp_path):
    pages = browser.local_pages(smoke)
    names = {p.relative_to(smoke).as_posix() for p in pages}
    assert {"index.html", "report.html", "methods/index.html", "instances/index.html"} <= names
    assert any(n.startswith("sections/") for n in names) and any(n.startswith("experiments/e") or
                                                                 n.startswith("experiments/s") for n in names)
    assert not list(smoke.rglob("*.min.js"))[1:]  # plotly.min.js shipped once, in assets/
    assert (smoke / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    _assert_clean(drv, pages)
    _screenshot(drv, smoke / "index.html", _shots(tmp_path) / "report-index.png")


@pytest.mark.slow
def test_every_instance_and_method_has_a_page(smoke):
    from deplbench.benchmarks.api import read_results

    df = read_results(smoke.parent)
    for inst in df["instance"].unique():
        text = next((smoke / "instances").glob(f"{inst}*.html")).read_text()
        assert inst in text
    assert len(list((smoke / "methods").glob("*.html"))) == df["solver"].nunique() + 1  # + the list page


def _column(drv, table, idx: int) -> list[str]:
    return drv.execute_script(
        "return [...arguments[0].tBodies[0].rows].map(r => r.cells[arguments[1]].getAttribute('data-v') "
        "?? r.cells[arguments[1]].textContent)", table, idx)


@pytest.mark.slow
def test_sorting_a_table_reorders_rows_and_sets_aria_sort(drv, smoke):
    from selenium.webdriver.common.by import By

    page = next(p for p in (smoke / "experiments").glob("*.html") if p.name != "index.html")
    drv.get(page.resolve().as_uri())
    table = drv.find_elements(By.CSS_SELECTOR, "table.data")[0]
    heads = table.find_elements(By.CSS_SELECTOR, "thead th")
    idx = next(i for i, h in enumerate(heads) if h.get_attribute("title") == "sgm_time_s")
    before = _column(drv, table, idx)
    heads[idx].click()
    assert heads[idx].get_attribute("aria-sort") == "ascending"
    up = [float(v) for v in _column(drv, table, idx)]
    assert up == sorted(up) and sorted(up) == sorted(float(v) for v in before)
    heads[idx].click()
    assert heads[idx].get_attribute("aria-sort") == "descending"
    assert [float(v) for v in _column(drv, table, idx)] == sorted(up, reverse=True)
    assert heads[0].get_attribute("aria-sort") is None  # only the sorted column is marked


@pytest.mark.slow
def test_filtering_hides_rows(drv, library):
    from selenium.webdriver.common.by import By

    drv.get((library / "site" / "index.html").resolve().as_uri())
    box = next(b for b in drv.find_elements(By.CSS_SELECTOR, "div.tablebox")
               if b.find_elements(By.CSS_SELECTOR, "input.filter"))
    rows = box.find_elements(By.CSS_SELECTOR, "tbody tr")
    word = "knapsack"
    box.find_element(By.CSS_SELECTOR, "input.filter").send_keys(word)
    shown = [r for r in rows if r.is_displayed()]
    assert 0 < len(shown) < len(rows) and all(word in r.text for r in shown)
    assert sum(word in r.text for r in rows) == len(shown)


@pytest.mark.slow
def test_chart_shows_hover_text(drv, smoke):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    page = next(p for p in (smoke / "experiments").glob("*.html") if p.name != "index.html")
    drv.get(page.resolve().as_uri())
    points = drv.find_elements(By.CSS_SELECTOR, "div.plot g.points path.point")
    assert points, "no chart point drawn"
    text = ""
    for pt in points[1:6]:
        ActionChains(drv).move_to_element(pt).perform()
        time.sleep(0.3)
        text = " ".join(h.text for h in drv.find_elements(By.CSS_SELECTOR, "g.hovertext"))
        if text:
            break
    assert "instance:" in text and "method:" in text


@pytest.mark.slow
def test_library_site_is_clean_and_has_every_instance(drv, library, tmp_path):
    site = library / "site"
    man = json.loads((library / "manifest.json").read_text())
    names = [r["name"] for r in man["instances"]]
    for n in names:
        page = site / "instances" / f"{n}.html"
        text = page.read_text()
        rec = next(r for r in man["instances"] if r["name"] == n)
        assert rec["sha256"] in text and all(s["sha256"] in text for s in rec["saa"])
    _assert_clean(drv, browser.local_pages(site))
    drv.get((site / "index.html").resolve().as_uri())
    from selenium.webdriver.common.by import By

    rows = drv.find_elements(By.CSS_SELECTOR, "#instances tbody tr")
    assert sorted(r.find_element(By.TAG_NAME, "td").text for r in rows) == sorted(names)
    _screenshot(drv, site / "index.html", _shots(tmp_path) / "library-index.png")


# ---- what the index states first, one colour per method, every screen --------------------------

CLAIMS = {"Beats best-exp by over 27%", "Closely matches the optimum", "Complexity in eta", "Complexity in eps",
          "Constant competitive ratio", "Dataset selection optimal"}


def _expected(store: Path):
    """Recomputed from the stored rows: each heuristic's mean cost / proven optimum and the cheapest method."""
    from deplbench.benchmarks.api import read_results

    df = read_results(store)
    df["method"] = df["label"].where(df["label"].notna(), df["solver"])
    ok = df[df["feasible"].astype("boolean").fillna(False).astype(bool)]
    opt = ok[(ok["solver_kind"] == "exact") & (ok["status"] == "optimal")].groupby("instance")["cost"].min()
    heur = ok[(ok["solver_kind"] == "heuristic") & ok["instance"].isin(opt.index)]
    ratio = (heur.groupby(["method", "instance"])["cost"].min() / heur.groupby(["method", "instance"])["cost"]
             .min().index.get_level_values("instance").map(opt).to_numpy())
    means = ratio.groupby(level="method").mean()
    best = ok.groupby("instance")["cost"].min()
    wins = (ok.groupby(["method", "instance"])["cost"].min().reset_index()
            .assign(win=lambda t: t["cost"] <= t["instance"].map(best) * (1 + 1e-6)).groupby("method")["win"].sum())
    return means, wins[wins == wins.max()].index.tolist(), df


def _first_screen(drv, page: Path, width: int = browser.WIDTH, height: int = 900):
    drv.set_window_size(width, height)
    drv.get(page.resolve().as_uri())
    time.sleep(0.3)
    return drv.execute_script("return window.innerHeight")


@pytest.mark.slow
def test_index_first_screen_states_winner_ratios_and_one_verdict_per_claim(drv, smoke):
    from selenium.webdriver.common.by import By

    means, winners, df = _expected(smoke.parent)
    screen = _first_screen(drv, smoke / "index.html")

    def visible(el):
        return el.is_displayed() and drv.execute_script("return arguments[0].getBoundingClientRect().bottom",
                                                        el) <= screen

    items = drv.find_elements(By.CSS_SELECTOR, "ul.findings li")
    cheapest = next(i for i in items if i.text.startswith("Cheapest method"))
    assert visible(cheapest) and all(w in cheapest.text for w in winners)
    assert any(i.text.startswith("Fastest method") and visible(i) for i in items)
    tables = drv.find_elements(By.CSS_SELECTOR, "div.findings table.data")
    ratio = next(t for t in tables if "95% CI low" in t.text)
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r for r in ratio.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert set(rows) == set(means.index)  # one row per heuristic of the store
    heads = [h.text for h in ratio.find_elements(By.CSS_SELECTOR, "thead th")]
    for m, v in means.items():
        cells = dict(zip(heads, [c.text for c in rows[m].find_elements(By.TAG_NAME, "td")], strict=True))
        assert cells["Mean"] == f"{v:.3f}" and visible(rows[m])
        assert float(cells["95% CI low"]) <= v <= float(cells["95% CI high"])
    claims = next(t for t in tables if "Verdict" in t.text)
    verdicts = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
                for r in claims.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert set(verdicts) == CLAIMS and visible(claims.find_elements(By.CSS_SELECTOR, "tbody tr")[-1])
    paper = df.loc[df["family"].str.startswith("paper-"), "instance"].nunique()
    assert paper < 5 and set(verdicts.values()) == {"not tested here"}  # 2 paper instances: no verdict


@pytest.mark.slow
def test_each_method_has_one_colour_on_every_chart_of_every_page(drv, smoke):
    from deplbench.benchmarks.api import read_results

    df = read_results(smoke.parent)
    methods = set(df["label"].where(df["label"].notna(), df["solver"]))
    seen: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}
    _first_screen(drv, smoke / "index.html")
    for page in browser.local_pages(smoke):
        drv.get(page.resolve().as_uri())
        traces = drv.execute_script(
            "return [...document.querySelectorAll('div.plot')].flatMap(d => (d._fullData || []).map(t => "
            "[t.legendgroup || t.name, (t.marker && typeof t.marker.color === 'string') ? t.marker.color : "
            "(t.line && t.line.color) || '']))")
        for name, colour in traces:
            key = str(name).split(": ")[0]
            if key in methods:
                seen.setdefault(key, set()).add(colour.lower())
                where.setdefault(key, set()).add(page.name)
    assert len(seen) >= 3 and any(len(p) >= 2 for p in where.values()), where  # methods drawn on several pages
    assert {m: c for m, c in seen.items() if len(c) != 1} == {}


#: [legends on the page, the texts of x axis titles and tick labels whose boxes overlap a legend's]
_LEGEND_OVERLAPS = """
const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
const out = [];
let legends = 0;
document.querySelectorAll('div.plot.js-plotly-plot').forEach((div, i) => {
  const legend = div.querySelector('g.legend');
  if (!legend) return;
  legends += 1;
  const box = legend.getBoundingClientRect();
  div.querySelectorAll('text[class^="xtitle"], text[class^="x"][class$="title"], g.xtick text').forEach(el => {
    if (el.textContent && hit(box, el.getBoundingClientRect())) out.push(i + ': ' + el.textContent);
  });
});
return [legends, out];
"""


def _wider_than_the_window(drv, site: Path, width: int, height: int,
                           covered: dict | None = None) -> dict[str, int]:
    """At a ``width`` x ``height`` window, the pages of ``site`` wider than it: ``{"page@width": scrollWidth}``.

    With ``covered``, each page's chart legends that cover an x axis' title or tick labels go into it.
    """
    drv.set_window_size(width, height)
    inner = drv.execute_script("return window.innerWidth")
    wide = {}
    for page in browser.local_pages(site):
        drv.get(page.resolve().as_uri())
        w = drv.execute_script("return document.documentElement.scrollWidth")
        if w > inner:
            wide[f"{page.relative_to(site)}@{width}"] = w
        if covered is not None:
            covered[f"{page.relative_to(site)}@{width}"] = drv.execute_script(_LEGEND_OVERLAPS)
    return wide


@pytest.mark.slow
def test_no_page_is_wider_than_a_phone_or_a_laptop(drv, smoke):
    """No page wider than the window; on a phone the legend goes to the figure's foot and must not cover an
    x axis' title or tick labels (it sat just under the panels, over the axis title, before)."""
    wide, covered = {}, {}
    for width, height in ((390, 844), (browser.WIDTH, 900)):
        wide |= _wider_than_the_window(drv, smoke, width, height, covered if width < 640 else None)
    drv.set_window_size(browser.WIDTH, 900)
    assert wide == {}
    assert sum(n for n, _ in covered.values()) >= 2  # charts with legends were read
    assert {page: hits for page, (_, hits) in covered.items() if hits} == {}


# ---- the library's site with every method's results, on a laptop and on a phone -----------------

#: (width, height) of the windows: a laptop and a phone (issue 64)
SCREENS = ((browser.WIDTH, 900), (390, 844))


@pytest.fixture(scope="module")
def library_with_results(library, tmp_path_factory) -> tuple[Path, Path]:
    """A copy of the quick library whose pages show the runs of two methods on three of its instances
    (``deplbench library site --results``); (library folder, results folder)."""
    import shutil

    from deplbench.benchmarks.api import run_config
    from deplbench.cli import main

    man = json.loads((library / "manifest.json").read_text())
    names = [man["benchmark"]["instances"][i] for i in (0, 1, 2)]
    work = tmp_path_factory.mktemp("libres")
    cfg = library_config(work / "lib.toml", library, names)
    results = work / "res"
    run_config(cfg, results, workers=1, progress=False)
    copy = work / "lib"  # the library fixture's own pages stay without results (other tests read them)
    shutil.copytree(library, copy, ignore=shutil.ignore_patterns("site"))
    assert main(["library", "site", "--library", str(copy), "--results", str(results)]) == 0
    return copy, results


def _right_edge(drv, element) -> float:
    return drv.execute_script("return arguments[0].getBoundingClientRect().right", element)


@pytest.mark.slow
def test_library_site_with_results_on_a_laptop_and_a_phone(drv, library_with_results, tmp_path):
    """At 1280 and 390 px: no page wider than the window; the index links each instance's JSON file
    (visible without scrolling sideways); an instance page lists every method of the results store with
    its certified cost and status, the cost visible without scrolling sideways."""
    from selenium.webdriver.common.by import By

    from deplbench.benchmarks.api import read_results
    from deplbench.benchmarks.site.labels import status_word

    lib, results = library_with_results
    site = lib / "site"
    man = json.loads((lib / "manifest.json").read_text())
    files = {r["name"]: (lib / r["file"]).resolve() for r in man["instances"]}
    df = read_results(results)
    df["shown"] = df["label"].where(df["label"].notna(), df["solver"])
    assert df["shown"].nunique() == 2 and df["instance"].nunique() == 3
    shots = _shots(tmp_path)
    wide, problems = {}, []
    for width, height in SCREENS:
        wide |= _wider_than_the_window(drv, site, width, height)
        inner = drv.execute_script("return window.innerWidth")
        drv.get((site / "index.html").resolve().as_uri())
        links = {}
        for row in drv.find_elements(By.CSS_SELECTOR, "#instances tbody tr"):
            name = row.find_element(By.TAG_NAME, "td").text
            a = row.find_element(By.CSS_SELECTOR, "td a[href$='.json']")
            links[name] = Path(unquote(urlparse(a.get_attribute("href")).path))
            if _right_edge(drv, a) > inner:
                problems.append(f"index@{width}: the download link of {name} is off the screen")
        assert links == files, (width, links)  # one link per instance, to its own (existing) file
        assert all(p.is_file() for p in links.values())
        for inst, runs in df.groupby("instance"):
            drv.get((site / "instances" / f"{inst}.html").resolve().as_uri())
            table = drv.find_element(By.CSS_SELECTOR, "#runs table.data")
            heads = [h.get_attribute("title") for h in table.find_elements(By.CSS_SELECTOR, "thead th")]
            cost, status = heads.index("cost"), heads.index("status")
            shown = {}
            for row in table.find_elements(By.CSS_SELECTOR, "tbody tr"):
                cells = row.find_elements(By.TAG_NAME, "td")
                shown[cells[0].text] = (float(cells[cost].get_attribute("data-v") or "nan"), cells[status].text)
                if _right_edge(drv, cells[cost]) > inner:
                    problems.append(f"{inst}@{width}: the cost of {cells[0].text} is off the screen")
            want = {r.shown: (r.cost, status_word(r.status)) for r in runs.itertuples()}
            assert set(shown) == set(want), (inst, shown)
            for m, (c, st) in want.items():
                assert shown[m][0] == pytest.approx(c, rel=1e-9, nan_ok=True) and shown[m][1] == st, (m, shown[m])
        others = set(files) - set(df["instance"])
        page = (site / "instances" / f"{sorted(others)[0]}.html").read_text()
        assert "No results" in page and "id='runs'" not in page
        first = sorted(df.loc[df["cost"].notna(), "instance"].unique())[0]  # one with certified costs
        browser.screenshot(drv, site / "index.html", shots / f"library-index-{width}.png", width, height)
        browser.screenshot(drv, site / "instances" / f"{first}.html", shots / f"library-instance-{width}.png",
                           width, height, anchor="saa-problems" if width > 640 else "results")
    drv.set_window_size(browser.WIDTH, 900)
    assert wide == {} and problems == []
