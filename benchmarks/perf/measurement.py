"""Overhead of what every run records beside its wall time: the run group's CPU time, load, cores, the machine record.

Run: ``python -m deplbench.benchmarks.perf.measurement [--runs N] [--seconds S] [--rounds R]
[--config NAME --workers W]``.

* the pieces: one reading of a run group's CPU time (:func:`deplbench.cputime.group`, taken
  every second of a run and once before a kill), the child's own ``getrusage``, the load average
  and affinity read per run, and the machine record written once per grid;
* end to end: a grid of ``N`` ``harness-sleep`` runs of ``S`` s (so that the periodic readings
  happen) on one worker, with the measurement on and off (the readings replaced by no-ops in
  the watching process), alternated ``R`` times; per run, the grid's time without its warm-up;
* with ``--config NAME`` (``paper``, say): that shipped config's whole grid instead, on ``W``
  workers, measured on and off alternately in the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

from deplbench import cputime, watch
from deplbench.benchmarks.harness import machine, runner, timing
from deplbench.benchmarks.harness.config import expand, load_config
from deplbench.benchmarks.harness.testing import MODULE


def per_call(fn, n: int) -> float:
    """Mean seconds of one call of ``fn()`` over ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def grid(n: int, seconds: float) -> list:
    data = {"harness": {"grace": 30.0, "eval_samples": 0},
            "experiments": [{"name": "m", "instances": [{"family": "random", "seeds": list(range(n)),
                                                         "params": {"epochs": 4}}],
                             "solvers": [{"name": "harness-sleep", "module": MODULE,
                                          "params": {"seconds": seconds}}]}]}
    return expand(data, "bench-measurement").runs


@contextlib.contextmanager
def measurement_off():
    """The watcher's readings (group CPU, load, cores, machine record) as no-ops, in this process."""
    saved = (cputime.group, watch.CPU_POLL_S, timing.load, timing.cores, machine.record)
    cputime.group = lambda pid: None
    watch.CPU_POLL_S = 1e9
    timing.load, timing.cores = (lambda: None), (lambda: 1)
    machine.record = lambda: {"host": __import__("socket").gethostname()}
    try:
        yield
    finally:
        cputime.group, watch.CPU_POLL_S, timing.load, timing.cores, machine.record = saved


def per_run(runs: list, workers: int = 1) -> float:
    """Seconds per run of the grid, its warm-up left out."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = runner.run_grid(runs, Path(tmp), workers=workers, progress=False)
        return (time.perf_counter() - t0 - summary.warmup_s) / len(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--config", default=None, help="a shipped config whose grid replaces the sleep grid")
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    pid = os.getpid()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"cputime.group (one reading, this process group): {per_call(lambda: cputime.group(os.getpgid(pid)), 200) * 1e3:.3f} ms")
    print(f"cputime.own_and_reaped: {per_call(cputime.own_and_reaped, 2000) * 1e6:.1f} us")
    print(f"load + cores (per run): {per_call(lambda: (timing.load(), timing.cores()), 2000) * 1e6:.1f} us")
    print(f"machine.record (per grid): {per_call(machine.record, 3):.3f} s")
    runs = load_config(a.config).runs if a.config else grid(a.runs, a.seconds)
    what = f"{len(runs)} runs of {a.config}" if a.config else f"{a.runs} runs of harness-sleep {a.seconds:g} s"
    runner.warm_up(runner.grid_preload(runs))
    on, off = [], []
    for _ in range(a.rounds):
        on.append(per_run(runs, a.workers))
        with measurement_off():
            off.append(per_run(runs, a.workers))
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"{what}, {a.workers} worker(s), {a.rounds} rounds: per run "
          f"{m_on:.3f} s measured, {m_off:.3f} s without (median), overhead {m_on - m_off:+.3f} s per run "
          f"({(m_on - m_off) / m_off:+.1%}); rounds on {[round(x, 3) for x in on]}, off {[round(x, 3) for x in off]}")


if __name__ == "__main__":
    main()
