"""The report's and the library's sites, driven in headless Chromium at 1280 px: every page loads
without a console error, loads nothing from the network, has no broken link or image and no
horizontal overflow; tables sort (``aria-sort``) and filter; a chart shows its hover text.

Screenshots of the index pages are written to ``$DEPLBENCH_SCREENSHOTS`` (default: the test's
``tmp_path``). Without Chromium the tests fail with one line saying how to install it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import browser
import pytest

#: the library's quick subset with small samples (as tests/benchmarks/test_library.py)
LIB_KW = {"quick": True, "scenarios": (20, 40), "saa_nodes": 200, "time_limit": 300.0, "saa_time_limit": 300.0,
          "workers": 1, "log": lambda _m: None}


@pytest.fixture(scope="module")
def drv():
    d = browser.start()
    yield d
    d.quit()


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
