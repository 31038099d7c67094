"""The files every site ships in its ``assets/`` folder: the stylesheet, the table script and
``plotly.min.js`` (copied from the installed ``plotly`` package; no CDN, nothing fetched)."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from deplbench.errors import InputError

ASSETS = "assets"
PLOTLY_JS = "plotly.min.js"
STATIC = ("site.css", "site.js")


def plotly_js_path() -> Path:
    """The ``plotly.min.js`` shipped with the ``plotly`` Python package."""
    try:
        import plotly
    except ImportError as exc:  # a dependency of depl-bench; its absence is a broken install
        raise InputError("the 'plotly' package is not installed (pip install plotly)", "plotly") from exc
    return Path(plotly.__file__).parent / "package_data" / PLOTLY_JS


def write_assets(root: Path, *, plotly: bool = True) -> Path:
    """Copy the stylesheet, the script and (when ``plotly``) ``plotly.min.js`` into ``root/assets``.

    ``plotly.min.js`` is copied only when missing or of another size (it is 4-5 MB).
    """
    from deplbench.files import atomic_path, write_bytes_atomic

    out = root / ASSETS
    pkg = resources.files("deplbench.benchmarks.site") / "static"
    for name in STATIC:
        write_bytes_atomic((pkg / name).read_bytes(), out / name)
    if plotly:
        src, dst = plotly_js_path(), out / PLOTLY_JS
        if not dst.exists() or dst.stat().st_size != src.stat().st_size:
            with atomic_path(dst) as tmp:
                shutil.copyfile(src, tmp)
    return out
