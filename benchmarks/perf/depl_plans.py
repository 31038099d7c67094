"""DepL's plans on the paper instances and ``random`` seeds 0-2 (both modes), saved or compared.

Run: ``python -m deplbench.benchmarks.perf.depl_plans save FILE`` on one version of the
code, ``... check FILE`` on another: prints every instance whose status, objective or plan
differs (a speed-up must change none) and exits 1 if any does.
"""

from __future__ import annotations

import json
import sys

from deplbench.instances.families.paper import canonical_names, load_paper
from deplbench.registry import generate, solve


def instances():
    """(name, instance) of the 20 paper instances and random seeds 0-2 in both noise modes."""
    for name in canonical_names():
        yield name, load_paper(name)
    for mode in ("per_run", "per_epoch"):
        for seed in range(3):
            yield f"random-{mode}-{seed}", generate("random", {"noise_mode": mode}, seed=seed)


def outcomes() -> dict[str, list]:
    """name -> [status, objective, plan] of DepL with its defaults."""
    out = {}
    for name, inst in instances():
        res = solve("depl", inst)
        plan = None if res.plan is None else [list(res.plan.datasets),
                                              [[s.model, s.cluster, s.level, s.epochs] for s in res.plan.segments]]
        cost = None if res.evaluation is None else res.evaluation.cost
        out[name] = [str(res.status), cost, plan]
    return out


def main(argv: list[str] | None = None) -> int:
    """``save FILE`` or ``check FILE``."""
    cmd, path = (argv if argv is not None else sys.argv[1:])[:2]
    now = outcomes()
    if cmd == "save":
        with open(path, "w") as fh:
            json.dump(now, fh, indent=1)
        print(f"saved {len(now)} outcomes to {path}")
        return 0
    with open(path) as fh:
        before = json.load(fh)
    diff = [k for k in before if before[k] != now.get(k)]
    for k in diff:
        print(f"DIFFERS {k}: before {before[k]} now {now.get(k)}")
    print(f"{len(before) - len(diff)} of {len(before)} outcomes identical")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
