"""Execute a grid: one process per run (:mod:`deplbench.benchmarks.harness.process`), parallel or on Dask.

Each run executes in its own process, forked from a ``forkserver`` that has already
imported numpy, scipy and the package (so a run costs a fork, not an interpreter
start). The process that launched it (a thread of the harness, or a Dask worker)
watches it: past ``time_limit + grace`` seconds it is killed (``timeout``); its
resident memory (of its whole tree) is polled and, with a memory limit, it is killed
when that exceeds the limit (``memory``; ``RLIMIT_AS`` only a safety net far above it). A crash,
an exception or an ``error`` result is ``error`` with its text kept. Only the
harness's main process writes the store, one committed row per finished run, so a
killed harness loses at most the runs in flight; a rerun skips finished keys.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from deplbench import watch
from deplbench.benchmarks.harness import machine, timing
from deplbench.benchmarks.harness.config import RunSpec
from deplbench.benchmarks.harness.process import (  # noqa: F401
    HARNESS_STATUSES,
    execute,
    generate_watched,
    grid_preload,
    kill_live,
    warm_caches,
    warm_up,
)
from deplbench.benchmarks.harness.rows import (
    harness_columns,
    now,
    provenance,
    spec_columns,
)
from deplbench.benchmarks.harness.stopping import GridStop, stop_on_signals
from deplbench.benchmarks.harness.store import Store, rows_missing
from deplbench.results import Outcome, Status

# ---- a grid ------------------------------------------------------------------------------------

@dataclass
class Summary:
    total: int
    skipped: int
    counts: Counter
    #: the signal that stopped the grid (its live runs stored as ``interrupted``), or None
    interrupted: int | None = None
    #: seconds spent filling the methods' compile caches before the first run (outside every clock)
    warmup_s: float = 0.0

    @property
    def ran(self) -> int:
        return sum(self.counts.values())


def pending_runs(runs: list[RunSpec], store: Store, retry_failed: bool = False) -> list[RunSpec]:
    """The runs of the grid not yet in the store (plus failed ones with ``retry_failed``)."""
    todo = set(rows_missing([r.key for r in runs], store.done(), retry_failed))
    return [r for r in runs if r.key in todo]


def prepare_instances(runs: list[RunSpec], store: Store, preload=()) -> dict[str, tuple]:
    """Generate each distinct instance once, in a watched process under the limits of the first run
    that needs it, and store it; ``instance_id -> (json, error text, outcome)``.

    A generation that outlives the run's wall limit (an absurd size) is a ``timeout`` row.
    """
    from deplbench.instances.io import instance_from_dict

    out: dict[str, tuple] = {}
    for r in runs:
        if r.instance_id in out:
            continue
        data, outcome, error = generate_watched(r, preload)
        if data is not None:
            try:
                store.put_instance(instance_from_dict(data, f"family {r.family}"), r.family,
                                   {**r.instance_params, "seed": r.instance_seed})
            except Exception as exc:  # noqa: BLE001 - a family that returns a bad instance: an error row
                data, outcome, error = None, Outcome.ERROR, f"instance generation: {type(exc).__name__}: {exc}"
        out[r.instance_id] = (data, error, outcome)
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
    dask = dask_client(workers, scheduler, cluster) if (scheduler or cluster) else None
    stop = GridStop(dask[0] if dask else None)
    watch.clear_stop()
    try:
        with stop_on_signals(stop):
            return _run(runs, out_dir, workers, dask, retry_failed, progress, on_row, stop)
    finally:
        watch.clear_stop()
        if dask is not None:
            dask[0].close()
            if dask[1] is not None:
                dask[1].close()


def _run(runs, out_dir, workers, dask, retry_failed, progress, on_row, stop: GridStop) -> Summary:
    with Store(out_dir) as store:
        machine.claim(store)  # one line and nothing run when the store is another host's
        todo = pending_runs(runs, store, retry_failed)
        summary = Summary(len(runs), len(runs) - len(todo), Counter())
        if not todo:
            return summary
        preload = grid_preload(todo)
        warm_up(preload)
        summary.warmup_s = warm_caches(todo, preload)
        machine.note_grid(store, summary.warmup_s, len(todo))  # after the fork server: its thread variables
        local = workers if dask is None or dask[1] is not None else None  # parallel runs on this machine
        instances = prepare_instances(todo, store, preload)
        jobs = [(r, *instances[r.instance_id]) for r in todo]
        bar = _bar(len(todo), progress)
        results = _results(jobs, preload, workers, dask, stop)
        stop.armed = True  # from here a first signal stops the runs and keeps their incumbents
        try:
            for row in results:
                if row is None:  # not started: the grid was stopped first
                    continue
                store.put_run(timing.with_workers(row, local, counted=dask is None))
                summary.counts[row["harness_status"]] += 1
                if on_row is not None:
                    on_row(row)
                bar.update(1)
                bar.set_postfix({k: summary.counts[k] for k in HARNESS_STATUSES}, refresh=False)
        finally:
            results.close()  # stops submitting (cancels queued runs) before the live ones are killed
            bar.close()
            kill_live()
    summary.interrupted = stop.signum
    return summary


def _bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", disable=not enabled, dynamic_ncols=True, smoothing=0.1)


def _results(jobs, preload, workers, dask, stop: GridStop):
    """Rows of finished runs, in completion order (``None`` for a run the stop kept from starting)."""
    if dask is not None:
        yield from _dask_results(dask[0], jobs, preload, stop)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run") as pool:
        futs = {pool.submit(execute, spec, inst, preload, err, oc): spec for spec, inst, err, oc in jobs}
        try:
            for f in as_completed(futs):
                yield f.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            kill_live()


#: Dask settings of ``--cluster local``, whose workers share the machine with the client: a quieter
#: cluster (measured in docs/library.md, "On a Dask cluster": idle, its processes take 2 % of a
#: core, against 16 % with Dask's defaults). The nanny's MALLOC_TRIM_THRESHOLD_ slowed the exact search (None removes it), the
#: statistical profiler samples every 10 ms, the event-loop tick and the memory and system monitors
#: run every 20-500 ms; no task waits on a busy worker (saturation 1.0), so nothing is to steal.
LOCAL_CLUSTER_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.scheduler.work-stealing": False,
}


def dask_client(workers: int, scheduler: str | None, cluster: str | None):
    """(client, local cluster or None); connecting fails before anything is written (also the library's)."""
    from distributed import Client, LocalCluster

    if cluster == "local":
        import dask

        signals = "deplbench.benchmarks.harness.worker_signals"  # the harness owns a Ctrl-C (stopping.py)
        with dask.config.set(LOCAL_CLUSTER_CONFIG):
            lc = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              preload=[signals], preload_nanny=[signals])
        return Client(lc), lc
    return _connect(scheduler), None


#: seconds ``--scheduler`` waits for a scheduler to connect; the command ends CONNECT_GRACE_S later at most
CONNECT_TIMEOUT_S = 20.0
CONNECT_GRACE_S = 5.0


def _connect(scheduler: str):
    """A client of the scheduler at ``scheduler``, or one line (exit 3) within the connect timeout and its grace.

    Dask bounds the TCP connection only: a scheduler that accepts and stays silent would be waited for
    without end, and one that answers with garbage raises whatever its decoder does (a struct error, a
    gigantic allocation). So the connection runs in a thread, waited for at most the timeout and grace.
    """
    import threading

    from distributed import Client

    from deplbench.errors import EnvironmentFailure

    box: dict = {}

    def connect() -> None:
        try:
            box["client"] = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S:g}s")
        except BaseException as exc:  # noqa: BLE001 - reported below as one line
            box["error"] = exc

    t = threading.Thread(target=connect, name="deplbench-connect", daemon=True)
    t.start()
    t.join(CONNECT_TIMEOUT_S + CONNECT_GRACE_S)
    if t.is_alive():
        raise EnvironmentFailure(f"no answer from a Dask scheduler within {CONNECT_TIMEOUT_S:g} s "
                                 "(is it a Dask scheduler, and running?)", "--scheduler", scheduler)
    exc = box.get("error")
    if exc is None:
        return box["client"]
    text = " ".join(str(exc).split())[:200]
    raise EnvironmentFailure(f"cannot connect to the Dask scheduler ({type(exc).__name__}: {text})",
                             "--scheduler", scheduler) from None


def _dask_results(client, jobs, preload, stop: GridStop):
    from distributed import as_completed as dask_completed

    client.run(watch.clear_stop)  # a worker of an earlier, stopped grid
    client.run(warm_up, preload)  # each worker's fork server starts before the clocks of its runs
    client.run(warm_caches, [spec for spec, *_ in jobs], preload)  # each worker's own compile caches
    futs = {client.submit(execute, spec, inst, preload, err, oc, key=f"depl-run-{spec.key}", pure=False): spec
            for spec, inst, err, oc in jobs}
    try:
        for f in _completed(dask_completed(list(futs)), stop):
            try:
                yield f.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker: the run is an error row
                if stop.requested:  # a worker that a Ctrl-C stopped too: the run is still to do
                    continue
                spec = futs[f]
                row = spec_columns(spec)
                row.update(provenance())
                row.update(harness_columns(Outcome.ERROR, 0.0, None, f"dask: {type(exc).__name__}: {exc}", now(),
                                           now()))
                row["status"] = Status.ERROR
                yield row
    finally:
        client.cancel(list(futs))


#: seconds a stopped grid waits for the rows of its Dask runs beyond the runs' own grace
DASK_STOP_WAIT_S = 10.0


def _completed(ac, stop: GridStop):
    """The futures of ``ac`` as they finish; after a stop, only for a bounded time.

    A terminal's Ctrl-C reaches the workers of a ``--cluster local`` too, and a worker that
    stops leaves its runs pending for ever: their rows are given up (the next run re-runs them).
    """
    import time

    while not ac.is_empty():
        batch = ac.next_batch(block=False)
        yield from batch
        if batch:
            continue
        if stop.requested and stop.at is not None and time.monotonic() > stop.at + DASK_STOP_WAIT_S:
            return
        time.sleep(0.05)
