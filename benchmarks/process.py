"""One run in its own process, forked from a preloaded ``forkserver``, watched for its limits.

The process that launched it (a thread of the harness, or a Dask worker) watches it: past
``time_limit + grace`` seconds it is killed (``timeout``); its resident memory is polled and,
with a memory limit, capped both by ``RLIMIT_AS`` in the child and by a kill when the polled
RSS exceeds the limit (``memory``). A crash, an exception or an ``error`` result is ``error``
with its text kept. :func:`execute` returns the run's complete store row.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import os
import resource
import signal
import threading
import time
import traceback
from collections.abc import Iterable
from multiprocessing.connection import wait
from typing import Any

from deplbench.benchmarks.config import RunSpec
from deplbench.benchmarks.rows import (
    harness_columns,
    instance_columns,
    now,
    provenance,
    result_columns,
    spec_columns,
)
from deplbench.results import Outcome, Status

#: Imported once by the fork server, so every run starts with them loaded.
PRELOAD = ["numpy", "scipy.stats", "pandas", "deplbench", "deplbench.registry", "deplbench.instances",
           "deplbench.benchmarks.rows", "deplbench.benchmarks.process"]
POLL_S = 0.05  # how often a running child's clock (and, under a memory limit, memory) is checked
MEM_POLL_S = 1.0  # memory polling without a limit: the child reports its own peak anyway
HARNESS_STATUSES = tuple(Outcome)
_LIVE: set[Any] = set()  # child processes in flight, killed if the harness is interrupted
_LIVE_LOCK = threading.Lock()


# ---- one run, in a child process ---------------------------------------------------------------

def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent (the fork server) exits, e.g. a killed harness."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _limit_memory(limit_mb: float) -> None:
    """Cap the address space so that growing past ``limit_mb`` of RSS raises MemoryError."""
    import psutil

    mi = psutil.Process().memory_info()
    room = max(limit_mb * 2**20 - mi.rss, 16 * 2**20)
    cap = int(mi.vms + room)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _child(spec: RunSpec, instance_json: dict, conn) -> None:
    """Body of the run process: solve, re-evaluate, send one payload back."""
    _die_with_parent()
    payload: dict[str, Any] = {"status": Outcome.ERROR, "error": None, "row": {}}
    try:
        if spec.memory_limit_mb:
            _limit_memory(spec.memory_limit_mb)
        from deplbench import registry
        from deplbench.instances.io import instance_from_dict

        inst = instance_from_dict(instance_json, f"store:{spec.family}")
        payload["row"].update(instance_columns(inst))
        registry.SOLVER_MODULES.setdefault(spec.solver, spec.solver_module)
        kind = registry.get_solver(spec.solver).kind
        res = registry.solve(spec.solver, inst, dict(spec.params))
        payload["row"].update(result_columns(spec, inst, res, kind))
        if res.status == Status.ERROR:
            memory = "MemoryError" in (res.message or "")
            payload.update(status=Outcome.MEMORY if memory else Outcome.ERROR, error=payload["row"].get("error"))
        else:
            payload["status"] = Outcome.OK
    except MemoryError:
        payload.update(status=Outcome.MEMORY, error="MemoryError: " + traceback.format_exc(limit=4)[-2000:])
    except BaseException as exc:  # noqa: BLE001 - anything the run does wrong is its result
        payload.update(status=Outcome.ERROR, error=f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=6)[-3000:])
    payload["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    try:
        conn.send(payload)
    except MemoryError:  # the row itself did not fit: still report the status
        conn.send({"status": Outcome.MEMORY, "error": "MemoryError while sending the result", "row": {},
                   "peak_mb": payload["peak_mb"]})
    conn.close()


_CTX_LOCK = threading.Lock()


def _context(preload: Iterable[str] = ()) -> mp.context.BaseContext:
    """The fork-server context; ``preload`` counts only before the server's first start."""
    ctx = mp.get_context("forkserver")
    with _CTX_LOCK:
        from multiprocessing import forkserver

        if forkserver._forkserver._forkserver_pid is None:
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ.setdefault(var, "1")  # runs are parallel processes: no BLAS oversubscription
            ctx.set_forkserver_preload(list(dict.fromkeys([*PRELOAD, *preload])))
    return ctx


def warm_up(preload: Iterable[str] = ()) -> None:
    """Start the fork server now (it imports the preloaded modules once, about a second)."""
    _context(preload)
    from multiprocessing import forkserver

    forkserver.ensure_running()


@contextlib.contextmanager
def _allow_children():
    """Dask worker processes are daemonic, and multiprocessing forbids them children.

    The rule exists because a daemon's children could be orphaned; ours are always
    killed and joined by :func:`execute`, and die with the fork server.
    """
    cfg = mp.current_process()._config
    daemon = cfg.get("daemon")
    cfg["daemon"] = False
    try:
        yield
    finally:
        if daemon is not None:
            cfg["daemon"] = daemon


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_mb(pid: int) -> float | None:
    """Resident memory of process ``pid`` (cheap: one read of /proc, no process scan)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE / 2**20
    except (OSError, ValueError, IndexError):
        pass
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return None


def execute(spec: RunSpec, instance_json: dict | None, preload: Iterable[str] = (),
            instance_error: str | None = None) -> dict[str, Any]:
    """Run ``spec`` in its own process under its limits; returns the complete store row.

    Runs in a harness thread or on a Dask worker. Never raises for a run's failure.
    """
    started, t0 = now(), time.perf_counter()
    row = spec_columns(spec)
    row.update(provenance())
    if instance_error is not None:
        row.update(harness_columns(Outcome.ERROR, 0.0, None, instance_error, started, now()))
        row["status"] = Status.ERROR
        return row
    ctx = _context(preload)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(spec, instance_json, send), daemon=True)
    with _allow_children():
        proc.start()
    send.close()
    with _LIVE_LOCK:
        _LIVE.add(proc)
    payload, killed, peak, next_mem = None, None, 0.0, 0.0
    try:
        while True:
            ready = wait([recv, proc.sentinel], timeout=POLL_S)
            if recv in ready:
                try:
                    payload = recv.recv()
                except (EOFError, OSError):
                    payload = None
                break
            if proc.sentinel in ready:
                break
            elapsed = time.perf_counter() - t0
            rss = None
            if elapsed >= next_mem:  # every poll under a memory limit, else once a second (peak only)
                rss = _rss_mb(proc.pid)
                next_mem = elapsed + (POLL_S if spec.memory_limit_mb else MEM_POLL_S)
                peak = max(peak, rss or 0.0)
            if elapsed > spec.wall_limit_s:
                killed = Outcome.TIMEOUT
            elif spec.memory_limit_mb and rss is not None and rss > spec.memory_limit_mb:
                killed = Outcome.MEMORY
            if killed:
                proc.kill()
                break
        proc.join(timeout=10)
        if proc.is_alive():  # pragma: no cover - a child that ignores SIGKILL
            proc.kill()
            proc.join()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        recv.close()
    wall = time.perf_counter() - t0
    if payload is not None:
        row.update(payload["row"])
        status, error = payload["status"], payload["error"]
        peak = max(peak, payload.get("peak_mb") or 0.0)
    elif killed == Outcome.TIMEOUT:
        status, error = Outcome.TIMEOUT, f"killed after {wall:.3g} s (limit {spec.wall_limit_s:g} s = time_limit + grace)"
        row["status"] = Status.TIMEOUT
    elif killed == Outcome.MEMORY:
        status, error = Outcome.MEMORY, f"killed at {peak:.0f} MB resident (limit {spec.memory_limit_mb:g} MB)"
        row["status"] = Status.MEMOUT
    else:
        status, error = Outcome.ERROR, f"run process died (exit code {proc.exitcode}) without a result"
        row["status"] = Status.ERROR
    if payload is None:
        row.update(_instance_columns_safe(instance_json))
    row.update(harness_columns(status, wall, peak or None, error, started, now()))
    return row


def _instance_columns_safe(instance_json: dict | None) -> dict[str, Any]:
    from deplbench.instances.io import instance_from_dict

    try:
        return instance_columns(instance_from_dict(instance_json, "store"))
    except Exception:  # noqa: BLE001 - a bad instance is already reported as the run's error
        return {}


def kill_live() -> None:
    """Kill every run process in flight (on interrupt)."""
    with _LIVE_LOCK:
        for p in list(_LIVE):
            with contextlib.suppress(Exception):
                p.kill()


