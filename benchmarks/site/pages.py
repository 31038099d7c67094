"""Pages of a static site: one layout (navigation bar, breadcrumbs, footer), relative links only.

A :class:`Site` knows its root folder and its navigation entries; :meth:`Site.page` writes one page
atomically, with every link, stylesheet and script relative to the page's own folder, so the folder
works when opened from disk or moved as a whole.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from deplbench.benchmarks.site.assets import ASSETS, PLOTLY_JS, write_assets
from deplbench.files import write_text_atomic


def slug(text: str) -> str:
    """A file name for ``text``: letters, digits, dots, dashes and underscores only."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_.")
    return s[:120] or "x"


def rel(from_page: str, to: str) -> str:
    """The relative URL from the page ``from_page`` to ``to`` (both relative to the site root)."""
    start = PurePosixPath(from_page).parent
    return os.path.relpath(to, start.as_posix() or ".").replace(os.sep, "/")


@dataclass
class Site:
    """A site rooted at ``root``: ``nav`` is a list of (label, page path relative to the root)."""

    root: Path
    title: str
    nav: list[tuple[str, str]] = field(default_factory=list)
    footer: str = ""
    written: list[str] = field(default_factory=list)

    def start(self, *, plotly: bool = True) -> None:
        """Create the root and copy the assets."""
        self.root.mkdir(parents=True, exist_ok=True)
        write_assets(self.root, plotly=plotly)

    def page(self, path: str, title: str, body: str, *, crumbs: list[tuple[str, str]] | None = None,
             charts: bool = False) -> Path:
        """Write the page ``path`` (relative to the root) and return its file.

        ``crumbs``: (label, page path) links above the title; ``charts``: load ``plotly.min.js``.
        """
        e = html.escape
        nav = "".join(f"<a href='{e(rel(path, p))}'{' class=here' if p == path else ''}>{e(label)}</a>"
                      for label, p in self.nav)
        trail = ""
        if crumbs:
            trail = "<div class='crumbs'>" + " / ".join(
                f"<a href='{e(rel(path, p))}'>{e(label)}</a>" for label, p in crumbs) + "</div>"
        scripts = f"<script src='{e(rel(path, f'{ASSETS}/{PLOTLY_JS}'))}'></script>" if charts else ""
        scripts += f"<script src='{e(rel(path, f'{ASSETS}/site.js'))}'></script>"
        index = rel(path, "index.html")
        doc = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
               f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
               f"<title>{e(title)} - {e(self.title)}</title>"
               f"<link rel='icon' href='data:,'>"
               f"<link rel='stylesheet' href='{e(rel(path, f'{ASSETS}/site.css'))}'>{scripts}</head><body>"
               f"<header class='top'><nav class='main' aria-label='site'><a class='brand' href='{e(index)}'>"
               f"{e(self.title)}</a>{nav}</nav></header><main>{trail}<h1>{e(title)}</h1>{body}</main>"
               f"<footer>{self.footer}</footer></body></html>")
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(doc, target)
        self.written.append(path)
        return target


def cards(items: list[tuple[str, str]]) -> str:
    """A row of figure cards: (big value, small label)."""
    e = html.escape
    return "<div class='cards'>" + "".join(f"<div class='card'><b>{e(v)}</b><span>{e(k)}</span></div>"
                                           for v, k in items) + "</div>"


def kv(items: list[tuple[str, str]], *, raw: bool = False) -> str:
    """A definition list of (key, value); ``raw`` values are HTML already."""
    e = html.escape
    return "<dl class='kv'>" + "".join(f"<dt>{e(k)}</dt><dd>{v if raw else e(str(v))}</dd>"
                                       for k, v in items) + "</dl>"


def link_list(items: list[tuple[str, str]], here: str) -> str:
    """A list of links (label, page path), relative to the page ``here``."""
    e = html.escape
    return "<ul class='links'>" + "".join(f"<li><a href='{e(rel(here, p))}'>{e(label)}</a></li>"
                                          for label, p in items) + "</ul>"
