"""Before/after timing of an SAA method on the paper per_run instances, one interpreter per version.

Each (instance, version) is run in a fresh subprocess of the given interpreter (so two
checkouts, each installed in its own venv, are compared under the same load: the runs are
interleaved instance by instance). Prints, per instance, the status, objective, runtime of
each version and whether the plans are identical, then the shifted geometric mean (shift 10 s,
unsolved runs counted at the limit) per version.

Usage::

    python -m deplbench.benchmarks.perf.saa_prep --python before=/work/venv-old/bin/python \\
        --python after=/work/venv-new/bin/python --scenarios 1000 --time-limit 60
    python -m deplbench.benchmarks.perf.saa_prep --set bigm=worst --set fixing=off --set cuts=quantile
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from deplbench.benchmarks.harness.frame import shifted_geomean

PAPER = [f"paper-{n}-per_run-t{t}" for n in ("alexnet", "mobilenet") for t in (5, 7, 9, 11, 13)]
CHILD = """
import json, sys
from deplbench.instances.families.paper import load_paper
from deplbench.registry import solve
name, method, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
r = solve(method, load_paper(name), params)
print(json.dumps({"status": str(r.status), "objective": r.objective, "runtime": r.runtime_s,
                  "plan": repr(r.plan.segments) if r.plan is not None else None,
                  "prep_s": r.extra.get("prep_s"), "root_s": r.extra.get("root_s")}))
"""


def run_one(python: str, name: str, method: str, params: dict, limit: float) -> dict:
    """One solve in a fresh subprocess of ``python``."""
    out = subprocess.run([python, "-c", CHILD, name, method, json.dumps(params)], capture_output=True,
                         text=True, timeout=limit + 120)
    if out.returncode:
        return {"status": "crash", "objective": None, "runtime": limit, "plan": None,
                "message": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", default=[], help="LABEL=INTERPRETER (repeatable)")
    ap.add_argument("--method", default="milp-scip")
    ap.add_argument("--scenarios", type=int, default=1000)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE method parameter (repeatable)")
    ap.add_argument("--instances", default=",".join(PAPER), help="comma-separated paper instance names")
    a = ap.parse_args(argv)
    versions = dict(p.split("=", 1) for p in a.python) or {"current": sys.executable}
    params = {"scenarios": a.scenarios, "time_limit": a.time_limit, "threads": 1}
    for kv in a.set:
        k, _, v = kv.partition("=")
        params[k] = v
    names = a.instances.split(",")
    print(f"# {a.method} {params}")
    print(f"{'instance':<30} " + " ".join(f"{v:>18}" for v in versions) + "  same plan")
    times: dict[str, list[float]] = {v: [] for v in versions}
    for name in names:
        res = {v: run_one(py, name, a.method, params, a.time_limit) for v, py in versions.items()}
        cells = []
        for v, r in res.items():
            t = r["runtime"] if r["status"] == "optimal" else a.time_limit
            times[v].append(min(t, a.time_limit))
            cells.append(f"{r['status'][:4]} {r['objective'] or float('nan'):>7.6g} {r['runtime']:6.2f}")
        same = len({r["plan"] for r in res.values()}) == 1 and len({r["objective"] for r in res.values()}) == 1
        print(f"{name:<30} " + " ".join(f"{c:>18}" for c in cells) + f"  {same}", flush=True)
    print("shifted geometric mean (shift 10 s): "
          + ", ".join(f"{v} {shifted_geomean(ts):.2f} s" for v, ts in times.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
