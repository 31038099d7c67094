"""Start-up of the command line against ``python -c "import numpy"``, measured in one run.

Run: ``python -m deplbench.benchmarks.perf.startup [--runs 15]``. Each command is started as a
whole process, in turns (numpy, ``--help``, ``solvers``, ``families``, numpy, ...), after one
warm-up round; the table gives the median wall time of each and its ratio to the numpy import,
against the goals (``--help`` within 3 times, ``solvers`` within 4 times).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS: dict[str, list[str]] = {
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "deplbench --help": [sys.executable, "-m", "deplbench.cli", "--help"],
    "deplbench solvers": [sys.executable, "-m", "deplbench.cli", "solvers"],
    "deplbench families": [sys.executable, "-m", "deplbench.cli", "families"],
}
#: the start-up goals (ratio to the numpy import)
GOALS = {"deplbench --help": 3.0, "deplbench solvers": 4.0}


def _wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def measure(runs: int) -> dict[str, list[float]]:
    """Wall seconds of every command, ``runs`` rounds in turns after one warm-up round."""
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for i in range(runs + 1):
        for name, argv in COMMANDS.items():
            w = _wall(argv)
            if i:
                times[name].append(w)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args(argv)
    times = measure(args.runs)
    base = statistics.median(times["python -c 'import numpy'"])
    print(f"| command | median wall (s) | ratio to numpy | goal |  ({args.runs} runs each, in turns)")
    print("|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        goal = GOALS.get(name)
        verdict = "" if goal is None else (f"<= {goal:g}: {'met' if med / base <= goal else 'NOT met'}")
        print(f"| `{name}` | {med:.3f} | {med / base:.2f} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
