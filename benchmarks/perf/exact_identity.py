"""Twelve fixed runs of ``exact`` whose every output must stay the same across a refactoring.

Run: ``python -m deplbench.benchmarks.perf.exact_identity --out new.jsonl`` (about 10 minutes on
one core), then ``--compare old.jsonl new.jsonl``. The runs cover ``per_run`` and ``per_epoch``
on the default, m5/e40, six-model and large tiers of ``random``, some to proof and some stopped by
``max_work`` (deterministic, unlike a time limit). Each line holds the status, objective, bound,
gap, plan, message and every counter of the result except timings and memory; two codes that make
the same decisions give byte-identical files.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys

#: (tier, family parameters, seed, max_work; 0: run to proof)
RUNS = (
    ("default", {}, 0, 0), ("default", {}, 1, 0),
    ("m5e40", {"models": 5, "epochs": 40}, 0, 60000), ("m5e40", {"models": 5, "epochs": 40}, 9, 30000),
    ("next", {"models": 6, "epochs": 60, "clusters": 4, "levels": 10, "datasets": 3}, 0, 30000),
)
PER_MODE = {"per_run": ("large", {"models": 5, "epochs": 60, "clusters": 4, "levels": 10, "datasets": 3}, 2, 30000),
            "per_epoch": ("combo", {"models": 4, "epochs": 60, "datasets": 3}, 1, 30000)}
SKIP = {"peak_mem_mb"}  # and every key ending in _s (timings)


def run_all(out) -> None:
    """Run the twelve and write one JSON line each to ``out``."""
    from deplbench.instances.evaluator import caches
    from deplbench.registry import generate, solve

    for mode in ("per_run", "per_epoch"):
        for tier, params, seed, work in (*RUNS, PER_MODE[mode]):
            inst = generate("random", {**params, "noise_mode": mode}, seed=seed)
            caches.clear()
            gc.collect()
            res = solve("exact", inst, {"time_limit": 900.0, "max_work": work})
            extra = {k: v for k, v in sorted((res.extra or {}).items()) if k not in SKIP and not k.endswith("_s")}
            plan = repr((res.plan.datasets, res.plan.segments)) if res.plan else None
            line = {"tier": tier, "mode": mode, "seed": seed, "max_work": work, "status": res.status.value,
                    "objective": repr(res.objective), "bound": repr(res.bound), "gap": repr(res.gap),
                    "plan": plan, "extra": extra, "message": res.message}
            out.write(json.dumps(line, sort_keys=True) + "\n")
            out.flush()
            print(f"{tier} {mode} seed {seed}: {res.status.value} {res.objective} work={extra.get('work')}",
                  file=sys.stderr, flush=True)


def compare(a: str, b: str) -> int:
    """0 when the two files hold the same runs line by line; else 1, naming each difference."""
    la, lb = open(a).read().splitlines(), open(b).read().splitlines()
    diffs = [i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y]
    if len(la) != len(lb):
        print(f"{a}: {len(la)} runs, {b}: {len(lb)} runs")
    for i in diffs:
        x, y = json.loads(la[i]), json.loads(lb[i])
        keys = sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))
        print(f"run {i + 1} ({x['tier']} {x['mode']} seed {x['seed']}): differs in {', '.join(keys)}")
    same = not diffs and len(la) == len(lb)
    print("identical" if same else f"{len(diffs)} of {min(len(la), len(lb))} runs differ")
    return 0 if same else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the twelve runs here (JSON lines)")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two such files")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        ap.error("give --out FILE or --compare OLD NEW")
    with open(args.out, "w") as out:
        run_all(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
