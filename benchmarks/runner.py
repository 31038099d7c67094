"""Execute runs: one process per run with hard limits, parallel or on Dask, rows committed as they finish.

Each run executes in its own process, forked from a ``forkserver`` that has already
imported numpy, scipy and the package (so a run costs a fork, not an interpreter
start). The process that launched it (a thread of the harness, or a Dask worker)
watches it: past ``time_limit + grace`` seconds it is killed (``timeout``); its
resident memory is polled and, with a memory limit, capped both by ``RLIMIT_AS`` in
the child and by a kill when the polled RSS exceeds the limit (``memory``). A crash,
an exception or an ``error`` result is ``error`` with its text kept. Only the
harness's main process writes the store, one committed row per finished run, so a
killed harness loses at most the runs in flight; a rerun skips finished keys.
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
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
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
from deplbench.benchmarks.store import Store, rows_missing
from deplbench.results import Outcome, Status

#: Imported once by the fork server, so every run starts with them loaded.
PRELOAD = ["numpy", "scipy.stats", "pandas", "deplbench", "deplbench.registry", "deplbench.instances",
           "deplbench.benchmarks.rows", "deplbench.benchmarks.runner"]
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


# ---- a grid ------------------------------------------------------------------------------------

@dataclass
class Summary:
    total: int
    skipped: int
    counts: Counter

    @property
    def ran(self) -> int:
        return sum(self.counts.values())


def pending_runs(runs: list[RunSpec], store: Store, retry_failed: bool = False) -> list[RunSpec]:
    """The runs of the grid not yet in the store (plus failed ones with ``retry_failed``)."""
    todo = set(rows_missing([r.key for r in runs], store.done(), retry_failed))
    return [r for r in runs if r.key in todo]


def prepare_instances(runs: list[RunSpec], store: Store) -> dict[str, tuple[dict | None, str | None]]:
    """Generate each distinct instance once, store it; ``instance_id -> (json, error text)``."""
    from deplbench import registry

    out: dict[str, tuple[dict | None, str | None]] = {}
    for r in runs:
        if r.instance_id in out:
            continue
        try:
            registry.FAMILY_MODULES.setdefault(r.family, r.family_module)
            inst = registry.generate(r.family, r.instance_params, seed=r.instance_seed)
            store.put_instance(inst, r.family, {**r.instance_params, "seed": r.instance_seed})
            out[r.instance_id] = (inst.to_json_dict(), None)
        except Exception as exc:  # noqa: BLE001 - e.g. a family whose module has not landed yet
            out[r.instance_id] = (None, f"instance generation failed: {type(exc).__name__}: {exc}")
    return out


def run_grid(runs: list[RunSpec], out_dir, *, workers: int | None = None, scheduler: str | None = None,
             cluster: str | None = None, retry_failed: bool = False, progress: bool = True,
             on_row: Callable[[dict], None] | None = None) -> Summary:
    """Run every pending run of ``runs`` and commit each row to the store in ``out_dir``.

    Parameters
    ----------
    runs : list of RunSpec
    out_dir : path
        Folder of the result store.
    workers : int, optional
        Parallel runs (default: the number of CPU cores). With ``cluster='local'``,
        the number of Dask workers.
    scheduler : str, optional
        Address of an existing Dask distributed scheduler to send runs to.
    cluster : {'local'}, optional
        Start a Dask LocalCluster.
    retry_failed : bool
        Re-run stored runs whose harness status is not ``ok``.
    """
    workers = workers or os.cpu_count() or 1
    dask = _dask_client(workers, scheduler, cluster) if (scheduler or cluster) else None
    try:
        return _run(runs, out_dir, workers, dask, retry_failed, progress, on_row)
    finally:
        if dask is not None:
            dask[0].close()
            if dask[1] is not None:
                dask[1].close()


def _run(runs, out_dir, workers, dask, retry_failed, progress, on_row) -> Summary:
    with Store(out_dir) as store:
        todo = pending_runs(runs, store, retry_failed)
        summary = Summary(len(runs), len(runs) - len(todo), Counter())
        if not todo:
            return summary
        instances = prepare_instances(todo, store)
        preload = sorted({r.solver_module for r in todo})
        jobs = [(r, *instances[r.instance_id]) for r in todo]
        if dask is None:
            warm_up(preload)
        bar = _bar(len(todo), progress)
        results = _results(jobs, preload, workers, dask)
        try:
            for row in results:
                store.put_run(row)
                summary.counts[row["harness_status"]] += 1
                if on_row is not None:
                    on_row(row)
                bar.update(1)
                bar.set_postfix({k: summary.counts[k] for k in HARNESS_STATUSES}, refresh=False)
        finally:
            results.close()  # stops submitting (cancels queued runs) before the live ones are killed
            bar.close()
            kill_live()
    return summary


def _bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", disable=not enabled, dynamic_ncols=True, smoothing=0.1)


def _results(jobs, preload, workers, dask):
    """Rows of finished runs, in completion order."""
    if dask is not None:
        yield from _dask_results(dask[0], jobs, preload)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run") as pool:
        futs = {pool.submit(execute, spec, inst, preload, err): spec for spec, inst, err in jobs}
        try:
            for f in as_completed(futs):
                yield f.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            kill_live()


def _dask_client(workers: int, scheduler: str | None, cluster: str | None):
    """(client, local cluster or None); connecting fails before anything is written."""
    from distributed import Client, LocalCluster

    if cluster == "local":
        lc = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(lc), lc
    try:
        return Client(scheduler, timeout="20s"), None
    except (OSError, TimeoutError, ValueError) as exc:
        from deplbench.errors import InputError

        raise InputError(f"cannot connect to the Dask scheduler ({type(exc).__name__}: {exc})",
                         "--scheduler", scheduler) from None


def _dask_results(client, jobs, preload):
    from distributed import as_completed as dask_completed

    futs = {client.submit(execute, spec, inst, preload, err, key=f"depl-run-{spec.key}", pure=False): spec
            for spec, inst, err in jobs}
    try:
        for f in dask_completed(list(futs)):
            try:
                yield f.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker: the run is an error row
                spec = futs[f]
                row = spec_columns(spec)
                row.update(provenance())
                row.update(harness_columns(Outcome.ERROR, 0.0, None, f"dask: {type(exc).__name__}: {exc}", now(),
                                           now()))
                row["status"] = Status.ERROR
                yield row
    finally:
        client.cancel(list(futs))
