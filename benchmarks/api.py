"""The harness from Python (notebooks): run a grid, read its results. The CLI calls the same functions.

>>> import deplbench as db
>>> out = db.run_config("smoke", out="results/smoke")   # doctest: +SKIP
>>> df = db.read_results("results/smoke")               # one row per run, p_<param> / x_<output> columns
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deplbench.errors import InputError

if TYPE_CHECKING:  # pandas is imported by the functions that read a store
    import pandas as pd

DEFAULT_ROOT = "deplbench-results"


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run_config` did: the config's name, the folder, counts, and the report (if written)."""

    config: str
    out: Path
    total: int
    skipped: int
    counts: dict[str, int]
    failed_stored: int
    report: Path | None
    #: the signal (SIGINT, SIGTERM) that stopped the grid, or None; its live runs are stored as
    #: ``interrupted`` with their incumbents and re-run by the next call
    interrupted: int | None = None
    #: seconds spent filling the methods' compile caches before the first run (outside every clock)
    warmup_s: float = 0.0


def output_folder(config_name: str, out: str | Path | None) -> Path:
    """``out``, or ``deplbench-results/CONFIG``; an existing non-folder is an input error."""
    from deplbench.files import check_output_dir

    return check_output_dir(Path(out) if out else Path(DEFAULT_ROOT) / config_name)


def run_config(config: str | Path, out: str | Path | None = None, *, workers: int | None = None,
               scheduler: str | None = None, cluster: str | None = None, retry_failed: bool = False,
               progress: bool = True, report: bool = True) -> RunOutcome:
    """Run every pending run of ``config`` (a TOML path or a shipped config name) into ``out``.

    Parameters
    ----------
    config : str or Path
        A config file or the name of a shipped config (``paper``, ``smoke``, ...).
    out : path, optional
        The output folder (default ``deplbench-results/CONFIG``); finished runs are skipped.
    workers, scheduler, cluster, retry_failed, progress
        As the ``deplbench run`` options.
    report : bool
        Write the report of the folder afterwards.
    """
    from deplbench.benchmarks.harness.config import load_config
    from deplbench.benchmarks.harness.runner import run_grid
    from deplbench.benchmarks.harness.store import Store

    if scheduler and cluster:
        raise InputError("give either --scheduler or --cluster, not both", "--scheduler")
    cfg = load_config(config)
    folder = output_folder(cfg.name, out)
    summary = run_grid(cfg.runs, folder, workers=workers, scheduler=scheduler, cluster=cluster,
                       retry_failed=retry_failed, progress=progress)
    with Store(folder) as store:
        failed = sum(1 for s in store.done().values() if s not in ("ok", "interrupted"))
    html = None
    if report and summary.interrupted is None:  # a stopped grid ends now, without a report
        from deplbench.benchmarks.report.write import build_report

        html = build_report(folder)
    return RunOutcome(cfg.name, folder, summary.total, summary.skipped, dict(summary.counts), failed, html,
                      summary.interrupted, summary.warmup_s)


def read_results(folder: str | Path) -> pd.DataFrame:
    """The runs stored in ``folder`` as a DataFrame, with ``p_<param>`` and ``x_<output>`` columns.

    Derived report columns (``method``, ``solved``, ``ttime``, ...) are added too.
    """
    from deplbench.benchmarks.harness.frame import prepare
    from deplbench.benchmarks.harness.store import Store

    with Store(folder, read_only=True) as st:
        return prepare(st.runs())
