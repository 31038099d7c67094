"""Drive generated pages in headless Chromium (Selenium): console errors, network loads, local links
and images, page width, sortable tables and chart hover. Used by ``test_site_browser.py``.

Chromium and its driver come from Debian (``apt-get install -y chromium chromium-driver``); without
them the tests fail with :data:`INSTALL` (one line), they are never skipped silently.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

from deplbench.leftovers import make_owned_tempdir

INSTALL = ("no headless Chromium found: install it with "
           "'apt-get update && apt-get install -y chromium chromium-driver' and 'pip install selenium'")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,900", "--hide-scrollbars")
WIDTH = 1280


def find_browser() -> tuple[str, str] | None:
    """(chromium binary, chromedriver) or None."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver") or next(
        (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None)
    return (binary, driver) if binary and driver else None


def start():
    """A headless Chromium at 1280 px with a fresh profile, logging the console and the network."""
    import pytest

    found = find_browser()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        found = None
    if found is None:
        pytest.fail(INSTALL, pytrace=False)
    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for flag in FLAGS:
        opts.add_argument(flag)
    # named after this process: a SIGKILLed test run's profile is removed by the next browser test
    profile = str(make_owned_tempdir("deplbench-chromium-"))
    opts.add_argument("--user-data-dir=" + profile)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    drv = webdriver.Chrome(service=Service(found[1]), options=opts)
    drv.set_window_size(WIDTH, 900)
    drv.profile_dir = profile  # removed by stop()
    return drv


def stop(drv) -> None:
    """Quit the browser and remove its profile folder (the tests leave nothing in TMPDIR)."""
    try:
        drv.quit()
    finally:
        shutil.rmtree(drv.profile_dir, ignore_errors=True)


def visit(drv, path: Path) -> dict:
    """Load a page and return what it did: console errors, non-local requests, broken links and
    images, its width, and its tables and charts."""
    import json

    drv.get_log("performance")  # drop the previous page's entries
    drv.get_log("browser")
    drv.get(path.resolve().as_uri())
    drv.execute_script("return document.readyState")
    errors = [e["message"] for e in drv.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    requests = []
    for entry in drv.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            requests.append(msg["params"]["request"]["url"])
    resources = drv.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    remote = [u for u in requests + resources if not u.startswith(("file:", "data:", "about:", "blob:"))]
    refs = drv.execute_script(
        "return [].concat([...document.querySelectorAll('a[href]')].map(a => a.href),"
        "[...document.querySelectorAll('img[src]')].map(i => i.src),"
        "[...document.querySelectorAll('script[src]')].map(s => s.src),"
        "[...document.querySelectorAll('link[href]')].map(l => l.href))")
    broken = []
    for url in refs:
        u = urlparse(url)
        if u.scheme == "file":
            if not Path(unquote(u.path)).exists():
                broken.append(url)
        elif u.scheme not in ("data", "about", "javascript"):
            broken.append(url)  # a link that leaves the machine
    bad_images = drv.execute_script(
        "return [...document.images].filter(i => i.complete && i.naturalWidth === 0 && "
        "getComputedStyle(i).display !== 'none').map(i => i.src)")
    return {"errors": errors, "remote": remote, "broken": broken + bad_images,
            "width": drv.execute_script("return document.documentElement.scrollWidth"),
            "tables": drv.execute_script("return document.querySelectorAll('table.data').length"),
            "charts": drv.execute_script("return document.querySelectorAll('div.plot').length")}


def local_pages(root: Path) -> list[Path]:
    """Every HTML page of a site folder."""
    return sorted(p for p in root.rglob("*.html"))


def screenshot(drv, page: Path, target: Path, width: int, height: int, anchor: str | None = None) -> Path:
    """A viewport-sized PNG of ``page`` in a ``width`` x ``height`` window, scrolled so that the
    element ``#anchor`` (if given) is at the top, in 128 colours; the window is put back to 1280 x 900.

    ``DEPLBENCH_SCREENSHOTS=docs/screenshots`` makes the browser tests write the shots of
    docs/screenshots/ (``test_library_site_with_results_on_a_laptop_and_a_phone``).
    """
    import time

    drv.set_window_size(width, height)
    drv.get(page.resolve().as_uri())
    if anchor:
        drv.execute_script(  # below the sticky navigation bar (static on a phone)
            "var el = document.getElementById(arguments[0]), bar = document.querySelector('header.top');"
            "var over = bar && getComputedStyle(bar).position === 'sticky' ? bar.offsetHeight : 0;"
            "if (el) { window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - over - 8); }", anchor)
    time.sleep(0.4)
    target.parent.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(target))
    drv.set_window_size(WIDTH, 900)
    try:  # 128 colours, as the shots of docs/screenshots/ (a third of the size, text as sharp)
        from PIL import Image
    except ImportError:
        return target
    with Image.open(target) as im:
        small = im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(target, optimize=True)
    return target
