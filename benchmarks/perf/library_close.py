"""Try to close a built library's open instances: ``exact`` with a larger work limit, checked.

Run: ``python -m deplbench.benchmarks.perf.library_close LIBRARY_DIR [--work UNITS] [NAME ...]``.
For each named instance (default: every ``hard`` one of the manifest) it runs ``exact`` with
``max_work`` = ``--work`` (deterministic; safety time limit 4 times that in reference seconds)
and prints one Markdown row: status, cost, bound, gap, work and wall time, next to the
library's reference. A family proof (``benchmarks/library/known.py``) is used first when one
applies. A result that contradicts the reference (an optimum above its ``=best=`` or below its
``=bestdual=``) stops the script: one of the two is wrong.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from deplbench.benchmarks.library.build import SAFETY_FACTOR
from deplbench.benchmarks.library.known import known_reference
from deplbench.formulations.exact.work import UNITS_PER_S
from deplbench.registry import generate, solve

RTOL = 1e-9


def _contradicts(ref: dict, status: str, cost: float | None) -> bool:
    """A proven result that the library's reference rules out."""
    if status == "infeasible":
        return ref.get("kind") in ("opt", "best")
    if status != "optimal" or cost is None:
        return False
    if ref.get("kind") == "inf":
        return True
    above_best = ref.get("value") is not None and cost > ref["value"] * (1 + RTOL)
    below_dual = ref.get("bound") is not None and cost < ref["bound"] * (1 - RTOL)
    return above_best or below_dual


def close_one(rec: dict, work: int) -> str:
    """One instance: its row (raises ``SystemExit`` on a contradiction)."""
    inst = generate(rec["family"], rec["params"], rec["seed"])
    if inst.name != rec["name"]:
        raise SystemExit(f"{rec['name']}: regenerated as {inst.name} (another code version?)")
    t0 = time.perf_counter()
    known = known_reference(inst)
    if known is not None:
        status, cost, bound, gap, used, how = known.status, known.cost, known.cost, 0.0, 0, known.method
    else:
        r = solve("exact", inst, {"max_work": work, "time_limit": SAFETY_FACTOR * work / UNITS_PER_S})
        cost = None if r.evaluation is None or r.plan is None else float(r.evaluation.cost)
        status, bound, gap, used, how = str(r.status), r.bound, r.gap, round(r.extra.get("work", 0)), "exact"
    ref = rec["reference"]
    if _contradicts(ref, status, cost):
        raise SystemExit(f"{inst.name}: {how} proves {status} {cost}, the library says {ref}")
    fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
    return (f"| {inst.name} | {how} | {status} | {fmt(cost)} | {fmt(bound)} | "
            f"{'-' if gap is None else f'{100 * gap:.2f}%'} | {used} | {time.perf_counter() - t0:.1f} | "
            f"{ref.get('kind')} {fmt(ref.get('value'))} / {fmt(ref.get('bound'))} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", type=Path, help="a built library folder (with manifest.json)")
    ap.add_argument("names", nargs="*", help="instances to try (default: every hard one)")
    ap.add_argument("--work", type=int, default=1_200_000, help="exact's max_work (units of about 1 ms)")
    args = ap.parse_args(argv)
    man = json.loads((args.library / "manifest.json").read_text())
    recs = {r["name"]: r for r in man["instances"]}
    names = args.names or [n for n, r in recs.items() if r["tier"] == "hard"]
    unknown = [n for n in names if n not in recs]
    if unknown:
        raise SystemExit(f"{args.library / 'manifest.json'}: no instance {unknown[0]!r}")
    print(f"library {man.get('version')} at {args.library}; exact max_work {args.work:,}")
    print("| instance | method | status | cost | bound | gap | work | s | library reference (best / bestdual) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in names:
        print(close_one(recs[n], args.work), flush=True)


if __name__ == "__main__":
    main()
