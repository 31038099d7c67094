"""Run a function in a watched child process that is its own process group (the one machinery).

Used by the harness (one run, :mod:`deplbench.benchmarks.harness.process`), by instance generation in
a run and by ``deplbench solve``. Guarantees (docs/reliability.md):

* the child is the leader of a new session, so it and everything it starts form one process
  group, killed as a whole (``killpg``) on a limit or when the caller stops watching;
* the child dies with its parent (``PR_SET_PDEATHSIG``), and a small *reaper* process, started
  once per watching process, kills every live group when that process dies, even by SIGKILL
  (it notices the end of its stdin pipe), so no grandchild outlives a killed harness;
* the wall clock is checked every :data:`POLL_S`; the memory limit is the resident memory of the
  whole process tree, summed every :data:`TREE_POLL_S` (the child alone every :data:`POLL_S`), and
  ``RLIMIT_AS`` caps the child's address space only as a generous safety net (:func:`limit_memory`),
  far above the limit, so that memory a method reserves without touching (thread arenas, a JIT) is free;
* the peak stored for a run (:attr:`Watched.peak_mb`) is the largest sum of the tree's resident memory
  seen, and at least the largest single process's own peak (``ru_maxrss``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from deplbench import cputime
from deplbench.forksignals import hold_stop_signals, release_stop_signals
from deplbench.memlimit import (  # noqa: F401 - re-exported
    address_space_net_mb,
    limit_memory,
    own_peak_mb,
    rss_mb,
    tree_rss_mb,
)
from deplbench.results import Outcome

POLL_S = 0.05  # how often a running child's clock (and, under a memory limit, memory) is checked
TREE_POLL_S = 0.25  # how often the whole tree is summed under a memory limit (a /proc scan)
MEM_POLL_S = 1.0  # memory polling without a limit: peak only
CPU_POLL_S = 1.0  # how often the tree's CPU time is read (and once more before a kill)

_REAPER_SRC = r"""
import os, signal, sys
for _s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # nothing but the end of its pipe stops the clean-up
    signal.signal(_s, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    op, _, pg = line.strip().partition(" ")
    if pg.isdigit():
        (groups.add if op == "+" else groups.discard)(int(pg))
for pg in groups:
    try:
        os.killpg(pg, signal.SIGKILL)
    except OSError:
        pass
"""
_REAPER: dict[int, subprocess.Popen] = {}  # pid of the watching process -> its reaper
_REAPER_LOCK = threading.Lock()
_LIVE: dict[int, Any] = {}  # pgid -> process object, killed by :func:`kill_all`
_LIVE_LOCK = threading.Lock()


#: seconds a child has, after it was asked to stop (SIGINT), to answer before its group is killed
STOP_GRACE_S = 2.5


class Stop:
    """A request to stop a watched child early (set by a signal handler of the watcher).

    :func:`call` forwards SIGINT to the child's group on the first :meth:`request` (the
    method returns its incumbent as ``interrupted``), and kills the group :attr:`grace_s`
    seconds later if no answer came (``Outcome.INTERRUPTED``).
    """

    def __init__(self, grace_s: float = STOP_GRACE_S):
        self.grace_s = grace_s
        self.at: float | None = None
        self.signum: int | None = None

    def request(self, signum: int = signal.SIGINT) -> None:
        if self.at is None:
            self.at, self.signum = time.perf_counter(), signum


@contextlib.contextmanager
def signals_handled(handler):
    """Inside the block SIGINT and SIGTERM call ``handler(signum, frame)``; the old handlers after.

    Signals can be caught in the main thread only: elsewhere (a notebook's thread) the block
    runs without handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


_ALL: list[Stop | None] = [None]  # the process-wide stop of :func:`stop_all` (a harness grid, a Dask worker)


def stop_all(signum: int = signal.SIGINT) -> None:
    """Ask every watched child of this process, now and later, to stop (a grid's Ctrl-C or SIGTERM).

    Live children get SIGINT and return their incumbent (:class:`Stop`); :func:`stopping` tells
    the harness not to start new ones. Called on the harness and, through ``client.run``, on
    every Dask worker; :func:`clear_stop` undoes it before the next grid.
    """
    if _ALL[0] is None:
        _ALL[0] = Stop()
    _ALL[0].request(signum)


def clear_stop() -> None:
    """Forget a :func:`stop_all` (a new grid starts)."""
    _ALL[0] = None


def stopping() -> bool:
    """Whether :func:`stop_all` was called since the last :func:`clear_stop`."""
    return _ALL[0] is not None and _ALL[0].at is not None


@dataclass
class Watched:
    """What the watcher saw: an outcome, the child's value (if it sent one), the error text."""

    outcome: Outcome
    value: Any = None
    error: str | None = None
    peak_mb: float | None = None
    wall_s: float = 0.0
    #: (user, system) seconds of the child's process tree (:mod:`deplbench.cputime`), None if unread
    cpu: tuple[float, float] | None = None


# ---- in the child ------------------------------------------------------------------------------

def die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent exits (a killed harness or ``solve``)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _interrupt_once(signum, frame) -> None:
    """The first SIGINT / SIGTERM raises ``KeyboardInterrupt``; later ones are ignored.

    A stop reaches a run twice when a whole job is signalled (the scheduler's signal, then the
    watcher's SIGINT): a second ``KeyboardInterrupt`` would break the certification of the
    incumbent the first one produced. The watcher kills the group if the answer is late.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def _child(fn: Callable, args: tuple, memory_limit_mb: float | None, conn, setup: Callable | None = None) -> None:
    """Body of the child: own session, ``setup(*args)``, limits, ``fn(*args)``, one message back."""
    with contextlib.suppress(OSError):
        os.setsid()
    die_with_parent()
    # a forked child inherits its watcher's handlers: SIGINT and SIGTERM raise KeyboardInterrupt
    # here, which deplbench.registry.solve turns into an ``interrupted`` result with the incumbent
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, _interrupt_once)
    try:
        if setup is not None:  # before the address-space cap: see :func:`call`
            setup(*args)
    except KeyboardInterrupt:  # a stop before the run began: nothing to keep
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the watcher may be gone already
            conn.send(("interrupted", None, "interrupted before the run started",
                       resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, cputime.own_and_reaped()))
            conn.close()
        return
    try:
        if memory_limit_mb:
            limit_memory(memory_limit_mb)
        msg = ("ok", fn(*args), None)
    except MemoryError:
        msg = ("memory", None, "MemoryError (address space above the safety net of "
               f"{address_space_net_mb(memory_limit_mb or 0):g} MB over the start): " + traceback.format_exc(limit=4)[-2000:])
    except BaseException as exc:  # noqa: BLE001 - anything the child does wrong is its result
        msg = ("error", None, f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=6)[-3000:])
    peak = own_peak_mb()
    try:
        try:
            conn.send((*msg, peak, cputime.own_and_reaped()))
        except MemoryError:  # the value itself did not fit: still report the outcome
            conn.send(("memory", None, "MemoryError while sending the result", peak, cputime.own_and_reaped()))
        conn.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the watcher is gone (its command was stopped): no one to tell, and no traceback on its stderr


# ---- in the watcher ----------------------------------------------------------------------------

def _reaper_send(line: str) -> None:
    """Tell this process's reaper to add (``+ PGID``) or forget (``- PGID``) a group."""
    with _REAPER_LOCK:
        r = _REAPER.get(os.getpid())
        if r is None or r.poll() is not None:
            # its own session: a SIGKILL of the watcher's whole process group (a scheduler's kill
            # of a job) must not reach the reaper, which then kills every live run group
            r = subprocess.Popen([sys.executable, "-c", _REAPER_SRC], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                                 start_new_session=True)
            _REAPER[os.getpid()] = r
        with contextlib.suppress(OSError, ValueError):
            r.stdin.write(line + "\n")
            r.stdin.flush()


def kill_group(proc) -> None:
    """SIGKILL the child's process group (the child and everything it started), then the child."""
    with contextlib.suppress(OSError, TypeError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.kill()


def kill_all() -> None:
    """Kill every watched group in flight (on interrupt or at the end of a grid)."""
    with _LIVE_LOCK:
        for p in list(_LIVE.values()):
            kill_group(p)


@contextlib.contextmanager
def _allow_children():
    """Dask worker processes are daemonic, and multiprocessing forbids them children.

    The rule exists because a daemon's children could be orphaned; ours are always killed
    and joined by :func:`call`, and die with their parent.
    """
    import multiprocessing as mp

    cfg = mp.current_process()._config
    daemon = cfg.get("daemon")
    cfg["daemon"] = False
    try:
        yield
    finally:
        if daemon is not None:
            cfg["daemon"] = daemon


def call(ctx, fn: Callable, args: tuple = (), *, wall_limit_s: float, memory_limit_mb: float | None = None,
         t0: float | None = None, stop: Stop | None = None, setup: Callable | None = None) -> Watched:
    """Run ``fn(*args)`` in a child of multiprocessing context ``ctx`` under the limits.

    Parameters
    ----------
    ctx : multiprocessing context
        ``forkserver`` (the harness) or ``fork`` (``deplbench solve``); ``fn`` must be picklable
        by reference for ``forkserver``.
    wall_limit_s : float
        The child is killed (``Outcome.TIMEOUT``) once this many seconds have passed since ``t0``.
    memory_limit_mb : float, optional
        Resident memory of the whole tree above this: killed, ``Outcome.MEMORY``.
    t0 : float, optional
        ``time.perf_counter()`` at which the clock started (default: now).
    stop : Stop, optional
        Once requested, the child is sent SIGINT and, without an answer within its grace,
        killed (``Outcome.INTERRUPTED``).
    setup : callable, optional
        ``setup(*args)`` runs in the child before the memory limit (on the clock): the imports a
        method declares. The address-space cap is the child's virtual size plus the room left
        below the limit, and a library that reserves far more address space than it touches
        (numba's LLVM: 170 MB virtual for 53 MB resident) would otherwise meet the cap while it
        loads; its resident pages still count against the limit. A Ctrl-C during ``setup`` is
        ``Outcome.INTERRUPTED``.

    Returns
    -------
    Watched
        Never raises for the child's failure.
    """
    t0 = time.perf_counter() if t0 is None else t0
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, args, memory_limit_mb, send, setup), daemon=True)
    held = hold_stop_signals()
    try:
        with _allow_children():
            proc.start()
    except BaseException:
        release_stop_signals(held)
        raise
    send.close()
    _reaper_send(f"+ {proc.pid}")
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc
    cpu: list = [None]  # the watcher's last reading of the tree's CPU time
    try:
        release_stop_signals(held)  # a stop that came during the fork is handled now, with the child watched
        msg, killed, peak = _watch(proc, recv, wall_limit_s, memory_limit_mb, t0, stop, cpu)
    finally:
        cpu[0] = cputime.larger(cputime.group(proc.pid), cpu[0])  # descendants still alive count too
        kill_group(proc)  # whatever the child started dies with it, also on success
        proc.join(timeout=10)
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
        _reaper_send(f"- {proc.pid}")
        recv.close()
    wall = time.perf_counter() - t0
    if msg is not None:
        outcome, value, error, child_peak, child_cpu = msg
        return Watched(Outcome(outcome), value, error, max(peak, child_peak or 0.0) or None, wall,
                       cputime.larger(child_cpu, cpu[0]))
    if killed == Outcome.TIMEOUT:
        return Watched(killed, None, f"killed after {wall:.3g} s (limit {wall_limit_s:g} s)", peak or None, wall,
                       cpu[0])
    if killed == Outcome.INTERRUPTED:
        return Watched(killed, None, f"killed {(stop or _ALL[0] or Stop()).grace_s:g} s after it was asked to stop",
                       peak or None, wall, cpu[0])
    if killed == Outcome.MEMORY:
        return Watched(killed, None, f"killed at {peak:.0f} MB resident memory of its process tree "
                                     f"(limit {memory_limit_mb:g} MB)", peak or None, wall, cpu[0])
    return Watched(Outcome.ERROR, None, f"process died (exit code {proc.exitcode}) without a result",
                   peak or None, wall, cpu[0])


def _watch(proc, recv, wall_limit_s: float, memory_limit_mb: float | None, t0: float, stop: Stop | None = None,
           cpu: list | None = None):
    """Wait for the child's message, its death or a limit; returns (message, killed, peak MB).

    ``cpu[0]``: the last reading of the group's CPU time, every :data:`CPU_POLL_S` and before a kill.
    """
    killed, peak, next_mem, asked, next_cpu = None, 0.0, 0.0, False, CPU_POLL_S
    cpu = [None] if cpu is None else cpu
    while True:
        if (stop is None or stop.at is None) and _ALL[0] is not None and _ALL[0].at is not None:
            stop = _ALL[0]
        if stop is not None and stop.at is not None:
            if not asked:  # the whole group: the method and any solver process it started
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGINT)
                asked = True
            elif time.perf_counter() > stop.at + stop.grace_s:
                cpu[0] = cputime.larger(cputime.group(proc.pid), cpu[0])
                kill_group(proc)
                return None, Outcome.INTERRUPTED, peak
        ready = wait([recv, proc.sentinel], timeout=POLL_S)
        if recv in ready:
            try:
                return recv.recv(), None, peak
            except (EOFError, OSError):
                return None, None, peak
        if proc.sentinel in ready:
            return None, None, peak
        elapsed = time.perf_counter() - t0
        rss = None
        if memory_limit_mb:
            rss = rss_mb(proc.pid)
            if elapsed >= next_mem:  # the tree (a /proc scan) a few times a second
                rss = tree_rss_mb(proc.pid)
                next_mem = elapsed + TREE_POLL_S
        elif elapsed >= next_mem:  # no limit: the tree's peak, less often
            rss = tree_rss_mb(proc.pid)
            next_mem = elapsed + MEM_POLL_S
        peak = max(peak, rss or 0.0)
        if elapsed >= next_cpu:
            cpu[0] = cputime.larger(cputime.group(proc.pid), cpu[0])
            next_cpu = elapsed + CPU_POLL_S
        if elapsed > wall_limit_s:
            killed = Outcome.TIMEOUT
        elif memory_limit_mb and rss is not None and rss > memory_limit_mb:
            killed = Outcome.MEMORY
        if killed:
            cpu[0] = cputime.larger(cputime.group(proc.pid), cpu[0])
            kill_group(proc)
            return None, killed, peak
