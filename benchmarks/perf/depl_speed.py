"""DepL's speed against an older commit's code, measured in one run on one machine.

Run: ``python -m deplbench.benchmarks.perf.depl_speed [--old COMMIT] [--rounds N] [--eta 200]``.

The old code is the commit ``--old`` (default: ``OLD_COMMIT``, the code before stage 2's bounding boxes), taken
from this repository with ``git archive`` into a temporary folder and imported from
there in a subprocess; the new code is the installed ``deplbench``, also in a subprocess.
The two alternate for ``--rounds`` rounds (so the load of a shared machine hits both
alike) and every instance keeps its least time. Printed per method: the shifted
geometric mean of the runtime (shift 10 s, as the report's tables), the plain geometric
mean, the arithmetic mean, the speed-up, and how many plans are identical (datasets and
segments compared exactly). Times are ``SolveResult.runtime_s`` (the method's own
call, as the result store records it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from deplbench.benchmarks.harness.frame import shifted_geomean

OLD_COMMIT = "30512cf8c12fce84d153d53a398c04662c9b73aa"  # main before stage 2's bounding boxes and kept minima
SUBPACKAGES = ("instances", "formulations", "heuristics", "benchmarks")

WORKER = r"""
import json, sys
from deplbench.instances.families.paper import canonical_names, load_paper
from deplbench.registry import solve
methods, eta = sys.argv[1].split(","), int(sys.argv[2])
out = {}
for method in methods:
    solve(method, load_paper(canonical_names()[0]), {"eta": eta})  # warm-up (imports, caches of constants)
    for name in canonical_names():
        res = solve(method, load_paper(name), {"eta": eta, "eps": 0.05})
        plan = None if res.plan is None else [list(res.plan.datasets),
                                              [[s.model, s.cluster, s.level, s.epochs] for s in res.plan.segments]]
        out[f"{method}|{name}"] = [res.runtime_s, str(res.status), plan]
print(json.dumps(out))
"""


def old_tree(commit: str, dest: Path) -> Path:
    """Lay out ``commit``'s code as an importable ``deplbench`` package under ``dest``; return the path root."""
    repo = Path(__file__).resolve().parents[2]  # benchmarks/perf/ -> the repository
    arch = dest / "src.tar"
    with open(arch, "wb") as fh:
        subprocess.run(["git", "-C", str(repo), "archive", commit], stdout=fh, check=True)
    src = dest / "src"
    with tarfile.open(arch) as tf:
        tf.extractall(src, filter="data")
    pkg = dest / "pkg"
    shutil.copytree(src / "src" / "deplbench", pkg / "deplbench")
    for sub in SUBPACKAGES:
        shutil.copytree(src / sub, pkg / "deplbench" / sub)
    return pkg


def run_worker(methods: str, eta: int, pythonpath: Path | None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    out = subprocess.run([sys.executable, "-c", WORKER, methods, str(eta)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(label: str, times: list[float]) -> str:
    return (f"{label}: sgm(10 s) {shifted_geomean(times):.4f} s  geomean {math.exp(np.mean(np.log(times))):.4f} s"
            f"  mean {np.mean(times):.4f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default=OLD_COMMIT, help="commit of the old code")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--eta", type=int, default=200)
    ap.add_argument("--methods", default="depl,depl-plus")
    args = ap.parse_args(argv)
    best: dict[str, dict] = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as tmp:
        pkg = old_tree(args.old, Path(tmp))
        for _ in range(args.rounds):
            for which, path in (("old", pkg), ("new", None)):
                for key, (t, status, plan) in run_worker(args.methods, args.eta, path).items():
                    prev = best[which].get(key)
                    if prev is None or t < prev[0]:
                        best[which][key] = (t, status, plan)
    print(f"paper instances, eta {args.eta}, eps 0.05; old = {args.old[:12]}, new = installed code "
          f"(least of {args.rounds} alternating rounds)")
    for method in args.methods.split(","):
        keys = [k for k in best["old"] if k.startswith(method + "|")]
        old = [best["old"][k][0] for k in keys]
        new = [best["new"][k][0] for k in keys]
        same = sum(best["old"][k][1:] == best["new"][k][1:] for k in keys)
        print(f"[{method}] {len(keys)} instances, plans identical on {same}")
        print("  " + summarise("old", old))
        print("  " + summarise("new", new))
        print(f"  speed-up: sgm {shifted_geomean(old) / shifted_geomean(new):.2f}x, "
              f"geomean {math.exp(np.mean(np.log(old)) - np.mean(np.log(new))):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
