"""Wall time of ``deplbench solve --time-limit T`` per registered method on a large instance.

Usage: ``python -m deplbench.benchmarks.perf.limits [T]`` (default 5). Prints one line per method: the
seconds the command took (in-process, after the parser is built) and the status it wrote.
The instance is the ``random`` family at its caps (50 models, 50 clusters, 100 levels,
1000 epochs, 4 datasets), which takes every method far longer than T.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from deplbench.cli import build_parser, main
from deplbench.registry import get_solver, solver_names


def run(limit: float = 5.0) -> None:
    with tempfile.TemporaryDirectory() as d:
        inst = Path(d) / "big.json"
        main(["generate", "random", "--set", "models=50", "--set", "clusters=50", "--set", "levels=100",
              "--set", "epochs=1000", "--set", "datasets=4", "--out", str(inst)])
        build_parser()
        for m in solver_names():
            get_solver(m)
            out = Path(d) / f"{m}.json"
            t = time.perf_counter()
            main(["solve", str(inst), "--solver", m, "--time-limit", str(limit), "--out", str(out)])
            took = time.perf_counter() - t
            print(f"== {m:<18} {took:6.2f} s  status {json.loads(out.read_text())['status']}", flush=True)


if __name__ == "__main__":
    run(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
