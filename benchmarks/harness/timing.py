"""The timing columns of a run beside its wall time: CPU time, load, runs beside it, cores, and whether it shared a core.

The watcher (:mod:`deplbench.watch`) measures the CPU time of the run's whole process tree;
this module adds what says how far its clock can be trusted: the machine's 1-minute load
average when the run started and ended, how many other runs of the same harness process were
in flight beside it, how many cores it could use (its affinity), and the verdict
``shared_core``: more runs than cores, or a load above the cores. A timing resting on such a
run may be inflated by waiting for a core (docs/harness.md, "What a run records").
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
from collections.abc import Iterator
from typing import Any

import pandas as pd

#: The timing columns of table ``runs`` (part of :data:`deplbench.benchmarks.harness.store.RUN_COLUMNS`).
TIMING_COLUMNS: dict[str, str] = {
    "cpu_user_s": "DOUBLE",  # user seconds of the run's whole process tree (the span of wall_s)
    "cpu_sys_s": "DOUBLE",  # system seconds of the same
    "cpu_s": "DOUBLE",  # their sum
    "method_cpu_s": "DOUBLE",  # CPU seconds of the method's call (the span of runtime_s) and its reaped children
    "load_start": "DOUBLE",  # 1-minute load average when the run started
    "load_end": "DOUBLE",  # and when it ended
    "runs_beside": "INTEGER",  # most other runs of the same harness process in flight during it
    "cores": "INTEGER",  # CPUs the run could use (affinity)
    "workers": "INTEGER",  # parallel runs of the grid on this machine (NULL on a remote Dask cluster)
    "shared_core": "BOOLEAN",  # more runs than cores or a load above the cores: its times may include waiting
    "timing": "INTEGER",  # which repeated timing of the same run (harness ``timings``), 0 the first
}

_LOCK = threading.Lock()
_LIVE: dict[int, list[int]] = {}  # id of a run in flight in this process -> [most runs seen beside it]


def load() -> float | None:
    """The 1-minute load average, or None where the system has none."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return None


def cores() -> int:
    """How many CPUs this process (and the runs it forks) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def in_flight() -> Iterator[list[int]]:
    """Count a run as in flight; yields a one-element list: the most other runs seen beside it."""
    seen = [0]
    with _LOCK:
        _LIVE[id(seen)] = seen
        for other in _LIVE.values():
            other[0] = max(other[0], len(_LIVE) - 1)
    try:
        yield seen
    finally:
        with _LOCK:
            _LIVE.pop(id(seen), None)


def rusage_cpu() -> float:
    """User plus system seconds of this process and its reaped children (the method's span in the child)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def shared(beside: int | None, n_cores: int | None, loads: tuple[float | None, ...]) -> bool:
    """Whether a run shared a core: more runs in flight than cores, or a load average above the cores."""
    n = n_cores or 1
    if beside is not None and beside + 1 > n:
        return True
    return any(x is not None and x > n for x in loads)


def columns(cpu: tuple[float, float] | None, load_start: float | None, beside: int, n_cores: int) -> dict[str, Any]:
    """The timing columns of a finished run (read at its end: the closing load average)."""
    load_end = load()
    user, system = cpu if cpu is not None else (None, None)
    return {"cpu_user_s": user, "cpu_sys_s": system, "cpu_s": None if cpu is None else user + system,
            "load_start": load_start, "load_end": load_end, "runs_beside": beside, "cores": n_cores,
            "shared_core": shared(beside, n_cores, (load_start, load_end))}


#: a run counts as single-threaded when its method's CPU time is at most this factor of its time (plus
#: :data:`SINGLE_FLOOR_S`): it kept at most one core busy on average
SINGLE_FACTOR, SINGLE_FLOOR_S = 1.05, 0.02


def method_time(d: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """The time of each run's method that figures use, and its basis (``cpu`` or ``wall``).

    ``cpu``: ``method_cpu_s``, for a run asked for one thread (``p_threads``) whose CPU time shows it
    used at most one core: waiting for a shared core does not count in it. ``wall``: ``runtime_s``,
    for a multi-threaded run and a store older than the CPU column. A method that waits without
    computing (sleep, network) is single-threaded by this rule too, and its waits then do not count.
    """
    wall = pd.to_numeric(d["runtime_s"], errors="coerce") if "runtime_s" in d else pd.Series(float("nan"), d.index)
    cpu = pd.to_numeric(d["method_cpu_s"], errors="coerce") if "method_cpu_s" in d else pd.Series(float("nan"), d.index)
    threads = pd.to_numeric(d["p_threads"], errors="coerce").fillna(1) if "p_threads" in d else 1
    single = (threads == 1) & cpu.notna() & wall.notna() & (cpu <= wall * SINGLE_FACTOR + SINGLE_FLOOR_S)
    return cpu.where(single, wall), pd.Series(["cpu" if x else "wall" for x in single], index=d.index)


def with_workers(row: dict[str, Any], workers: int | None, counted: bool = True) -> dict[str, Any]:
    """``row`` with the grid's parallel workers on this machine.

    ``counted``: the runs beside it were counted (the harness's own threads); otherwise (Dask
    workers, each a process of its own) more workers than cores marks ``shared_core``.
    """
    if workers is None:
        return row
    row["workers"] = workers
    if not counted and row.get("cores") and workers > row["cores"]:
        row["shared_core"] = True
    return row
