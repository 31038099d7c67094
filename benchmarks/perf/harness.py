"""Harness overhead per run and the speedup of 2 workers over 1 on a CPU-bound grid.

Run: ``python -m deplbench.benchmarks.perf.harness [--runs N] [--busy S]``.

* overhead: a grid of ``harness-ok`` runs (the method itself takes microseconds) on one
  worker; per run, the elapsed time of the grid divided by the runs (process fork,
  limits, re-evaluation with 20,000 Monte-Carlo samples, the store commit), and the
  same without the re-evaluation (``eval_samples = 0``) — aim: under 0.2 s;
* speedup: a grid of ``harness-busy`` runs (each burns ``S`` s of CPU) on 1 and on 2
  workers — aim: at least 1.7 on 2 idle cores (other load on the machine lowers it;
  the load average and the speedup of the same work as plain processes, without
  the harness, are printed beside it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deplbench.benchmarks.harness.config import expand
from deplbench.benchmarks.harness.runner import run_grid, warm_up
from deplbench.benchmarks.harness.testing import MODULE


def grid(solver: str, params: dict, n: int, eval_samples: int, tag: str) -> list:
    data = {"harness": {"grace": 30.0, "eval_samples": eval_samples},
            "experiments": [{"name": tag, "instances": [{"family": "random", "seeds": list(range(n)),
                                                         "params": {"epochs": 6}}],
                             "solvers": [{"name": solver, "module": MODULE, "params": params}]}]}
    return expand(data, f"bench-{tag}").runs


def timed(runs: list, workers: int) -> tuple[float, float]:
    """(elapsed s of the grid, mean solver runtime s)."""
    from deplbench.benchmarks.harness.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_grid(runs, Path(tmp), workers=workers, progress=False)
        elapsed = time.perf_counter() - t0
        with Store(tmp) as st:
            df = st.runs()
    assert (df["harness_status"] == "ok").all(), df["error"].dropna().head()
    return elapsed, float(df["runtime_s"].mean())


BUSY = ("import time\nend = time.process_time() + {s}\nx = 0\nwhile time.process_time() < end:\n"
        "    for i in range(10000): x += i * i\n")


def raw(n: int, seconds: float, parallel: int) -> float:
    """The same CPU work as plain processes, ``parallel`` at a time, no harness: what the machine gives."""
    t0 = time.perf_counter()
    for i in range(0, n, parallel):
        procs = [subprocess.Popen([sys.executable, "-c", BUSY.format(s=seconds)]) for _ in range(min(parallel, n - i))]
        for p in procs:
            p.wait()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs per grid")
    ap.add_argument("--busy", type=float, default=1.0, help="CPU seconds per busy run")
    a = ap.parse_args(argv)
    warm_up([MODULE])
    timed(grid("harness-ok", {}, 2, 0, "warm"), 1)  # first-use costs out of the figures

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, cores: {os.cpu_count()}")
    print(f"{'figure':<44} {'value':>10}  aim")
    for samples in (20_000, 0):
        el, rt = timed(grid("harness-ok", {}, a.runs, samples, f"ok{samples}"), 1)
        print(f"{f'overhead per run, eval_samples={samples}':<44} {(el / a.runs - rt) * 1e3:>8.1f}ms  < 200 ms")
    busy = grid("harness-busy", {"seconds": a.busy}, max(a.runs // 2, 4), 0, "busy")
    t1, _ = timed(busy, 1)
    t2, _ = timed(busy, 2)
    print(f"{f'busy grid ({len(busy)} x {a.busy:g} s CPU), 1 worker':<44} {t1:>9.2f}s")
    print(f"{f'busy grid ({len(busy)} x {a.busy:g} s CPU), 2 workers':<44} {t2:>9.2f}s")
    print(f"{'speedup 2 workers / 1':<44} {t1 / t2:>10.2f}  >= 1.7")
    r1, r2 = raw(len(busy), a.busy, 1), raw(len(busy), a.busy, 2)
    print(f"{'same work as plain processes: speedup 2 / 1':<44} {r1 / r2:>10.2f}  (the machine's own)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
