"""Tiny methods that exercise the harness (tests and ``perf/harness.py``), not DepL solvers.

They are not listed in :data:`deplbench.registry.SOLVER_MODULES`; a config names
them with ``module = "deplbench.benchmarks.harness.testing"``, which every run
process (local or on a Dask worker) can import.

* ``harness-ok``: the ``random`` family's reference plan (feasible by construction);
* ``harness-saa``: the same plan under kind ``saa`` (so it gets the out-of-sample check);
* ``harness-sleep``: sleeps ``seconds`` ignoring its time limit, then returns the plan;
* ``harness-busy``: burns CPU for ``seconds`` (a CPU-bound grid), then returns the plan;
* ``harness-busy-child``: a child process burns CPU for ``seconds`` and is waited for (CPU time of the tree);
* ``harness-give-up``: ends normally without a plan or a proof (status ``unknown``: a result, not a crash);
* ``harness-raise``: raises;
* ``harness-hog``: allocates and touches ``mb`` megabytes;
* ``harness-incumbent``: offers the reference plan as its incumbent, touches ``RELEASE.started-PID``, then
  sleeps ``seconds`` or until the file ``release`` exists (interrupts and resumes);
* ``harness-fill``: writes zeros to the file ``path`` until its disk is full, once (full-disk tests);
* ``harness-spawn``: starts a grandchild process (``sleep``) and sleeps ``seconds`` (process groups);
* ``harness-hog-child``: ``children`` grandchild processes allocate ``mb`` megabytes each (memory of the tree);
* ``harness-reserve``: reserves ``mb`` megabytes of address space without touching them (as solver thread
  arenas and JIT compilers do), touches ``touch`` megabytes, then returns the plan;
* ``harness-exit``: ends its own process with ``os._exit(code)`` (a method that kills its process), once
  when ``once`` names a file: not when that file exists;
* ``harness-segv``: crashes its process natively (a segmentation fault in C), with the same ``once``;
* ``harness-preloaded``: the reference plan, with ``extra["preloaded"]`` 1 when the module it declares
  (``testing_pid``) was imported by the fork server, 0 when by the run (the grid's preload);
* family ``harness-slow``: sleeps ``seconds`` before returning a ``random`` instance (generation limits).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

from deplbench.instances.plan import Plan, Segment
from deplbench.params import Param
from deplbench.registry import register_family, register_solver
from deplbench.results import SolveResult, Status

MODULE = __name__


def reference_plan(instance) -> Plan:
    """The reference plan a ``random`` instance carries in its metadata."""
    meta = instance.metadata
    return Plan(tuple(meta["reference_datasets"]), tuple(Segment(**s) for s in meta["reference_plan"]))


def _ok(instance) -> SolveResult:
    plan = reference_plan(instance)
    return SolveResult(Status.FEASIBLE, plan, objective=float(instance.metadata["reference_cost"]),
                       extra={"note": "reference plan"})


@register_solver("harness-ok", kind="heuristic", description="returns the reference plan")
def solve_ok(instance, *, time_limit, seed, threads) -> SolveResult:
    return _ok(instance)


@register_solver("harness-preloaded", kind="heuristic", imports=("deplbench.benchmarks.harness.testing_pid",),
                 description="the reference plan; extra 'preloaded': whether the fork server imported its declared module")
def solve_preloaded(instance, *, time_limit, seed, threads) -> SolveResult:
    from deplbench.benchmarks.harness import testing_pid

    res = _ok(instance)
    return SolveResult(res.status, res.plan, objective=res.objective,
                       extra={"preloaded": int(testing_pid.IMPORTED_IN != os.getpid())})


@register_solver("harness-saa", kind="saa", defaults={"scenarios": 200},
                 description="the reference plan, as a sampled method")
def solve_saa(instance, *, scenarios, time_limit, seed, threads) -> SolveResult:
    return _ok(instance)


@register_solver("harness-sleep", kind="heuristic", defaults={"seconds": 1.0},
                 description="sleeps, ignoring its time limit")
def solve_sleep(instance, *, seconds, time_limit, seed, threads) -> SolveResult:
    time.sleep(seconds)
    return _ok(instance)


@register_solver("harness-busy", kind="heuristic", defaults={"seconds": 0.5},
                 description="burns CPU for a while")
def solve_busy(instance, *, seconds, time_limit, seed, threads) -> SolveResult:
    end = time.process_time() + seconds  # CPU time, so that a busy machine does not shorten the work
    x = 0
    while time.process_time() < end:
        for i in range(10_000):
            x += i * i
    return _ok(instance)


@register_solver("harness-busy-child", kind="heuristic", defaults={"seconds": 0.5},
                 description="a child process burns CPU for a while; waited for (reaped)")
def solve_busy_child(instance, *, seconds, time_limit, seed, threads) -> SolveResult:
    code = ("import time\nend = time.process_time() + float(__import__('sys').argv[1])\n"
            "while time.process_time() < end:\n    sum(i * i for i in range(10_000))\n")
    subprocess.run([sys.executable, "-c", code, str(seconds)], check=True)
    return _ok(instance)


@register_solver("harness-give-up", kind="heuristic", description="ends normally without a plan or a proof (unknown)")
def solve_give_up(instance, *, time_limit, seed, threads) -> SolveResult:
    return SolveResult(Status.UNKNOWN, message="options exhausted: no plan found (not a proof of infeasibility)")


@register_solver("harness-raise", kind="heuristic", description="raises an exception")
def solve_raise(instance, *, time_limit, seed, threads) -> SolveResult:
    raise RuntimeError("boom: deliberate failure")


@register_solver("harness-hog", kind="heuristic", defaults={"mb": 1024.0},
                 description="allocates memory")
def solve_hog(instance, *, mb, time_limit, seed, threads) -> SolveResult:
    block = np.ones(int(mb * 2**20 / 8))  # touched pages: resident, not just reserved
    return SolveResult(Status.FEASIBLE, reference_plan(instance), extra={"sum": float(block[-1])})


@register_solver("harness-incumbent", kind="heuristic", defaults={"seconds": 60.0, "release": ""},
                 description="offers an incumbent, then sleeps (until the file `release` exists)")
def solve_incumbent(instance, *, seconds, release, time_limit, seed, threads) -> SolveResult:
    from pathlib import Path

    from deplbench.incumbent import offer

    res = _ok(instance)
    offer(res.plan, res.objective, source="reference plan")
    if release:  # tells a test that this run is under way with its incumbent (not a warm-up process)
        Path(f"{release}.started-{os.getpid()}").touch()
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (release and Path(release).exists()):
        time.sleep(0.05)
    return res


@register_solver("harness-fill", kind="heuristic", defaults={"path": "", "once": ""},
                 description="fills the disk of the file `path` (once: not when file `once` exists)")
def solve_fill(instance, *, path, once, time_limit, seed, threads) -> SolveResult:
    import errno
    from pathlib import Path

    if once:
        if Path(once).exists():
            return _ok(instance)
        Path(once).touch()
    block = bytes(2**16)
    try:
        with open(path, "ab") as fh:
            while True:
                fh.write(block)
                fh.flush()
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    return _ok(instance)


@register_solver("harness-spawn", kind="heuristic", defaults={"seconds": 30.0},
                 description="starts a grandchild process, then sleeps")
def solve_spawn(instance, *, seconds, time_limit, seed, threads) -> SolveResult:
    subprocess.Popen(["sleep", str(max(seconds, 1.0) * 10)])
    time.sleep(seconds)
    return _ok(instance)


_HOG_SRC = "import numpy as np, time; b = np.ones(int({mb} * 2**20 / 8)); time.sleep({hold})"


@register_solver("harness-hog-child", kind="heuristic", defaults={"mb": 200.0, "children": 2, "hold": 60.0},
                 description="grandchild processes allocate memory and hold it for `hold` seconds")
def solve_hog_child(instance, *, mb, children, hold, time_limit, seed, threads) -> SolveResult:
    kids = [subprocess.Popen([sys.executable, "-c", _HOG_SRC.format(mb=mb, hold=hold)]) for _ in range(children)]
    if any(k.wait() for k in kids):
        raise RuntimeError("a grandchild failed")
    return _ok(instance)


@register_solver("harness-reserve", kind="heuristic", defaults={"mb": 3000.0, "touch": 50.0},
                 description="reserves address space without touching it")
def solve_reserve(instance, *, mb, touch, time_limit, seed, threads) -> SolveResult:
    import mmap

    reserved = mmap.mmap(-1, int(mb * 2**20))  # virtual only: no page of it is resident
    block = np.ones(int(touch * 2**20 / 8))
    res = _ok(instance)
    return SolveResult(res.status, res.plan, objective=res.objective,
                       extra={"reserved_mb": len(reserved) / 2**20, "sum": float(block[-1])})


def _first_time(once: str) -> bool:
    """Whether this is the first call of a ``once`` method (no file ``once`` yet; then creates it)."""
    from pathlib import Path

    if not once:
        return True
    if Path(once).exists():
        return False
    Path(once).touch()
    return True


@register_solver("harness-exit", kind="heuristic", defaults={"code": 255, "once": ""},
                 description="ends its own process (os._exit)")
def solve_exit(instance, *, code, once, time_limit, seed, threads) -> SolveResult:
    if _first_time(once):
        os._exit(int(code))
    return _ok(instance)


@register_solver("harness-segv", kind="heuristic", defaults={"once": ""},
                 description="crashes its own process natively (segmentation fault)")
def solve_segv(instance, *, once, time_limit, seed, threads) -> SolveResult:
    import ctypes
    import faulthandler

    if _first_time(once):
        faulthandler.disable()  # no dump of the stacks: the crash as a native solver's would be
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return _ok(instance)


@register_family("harness-slow", params=(Param("seconds", float, 1.0, "sleep before generating", low=0.0,
                                               high=3600.0),),
                 description="sleeps, then returns a small random instance")
def slow_family(seed: int = 0, seconds: float = 1.0):
    from deplbench.instances.families.random import random_instance

    time.sleep(seconds)
    return random_instance(seed, models=2, clusters=2, levels=3, epochs=4)


def worker_settings() -> tuple:
    """What a Dask worker's process runs with: the malloc trim and BLAS thread variables and the
    profiler and tick settings (sent to workers by the tests; it lives here, not in a test module,
    because a worker can import the package but not the test folder)."""
    import dask
    import distributed  # noqa: F401  (registers the ``distributed`` config section)

    return (os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS"),
            dask.config.get("distributed.worker.profile.enabled"), dask.config.get("distributed.admin.tick.interval"))
