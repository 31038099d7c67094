"""Record the plans of ``depl``, ``depl-plus`` and ``best-exp`` as a JSON fixture.

Run: ``python tests/data/make_depl_plans.py OUT.json``. The shipped
``depl_plans_before.json`` was made by the code of the commit it names (before the
speed-up of issue 16); ``tests/heuristics/test_depl_identical.py`` checks that today's code
returns the very same plans (datasets and segments, compared exactly).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from deplbench.instances.families.paper import canonical_names, load_paper
from deplbench.registry import generate, solve

METHODS = ("depl", "depl-plus", "best-exp")
PARAMS = {"eta": 200, "eps": 0.05}
RANDOM = [("per_run", s) for s in range(10)] + [("per_epoch", s) for s in range(10)]


def instances():
    """(key, instance) of every fixture instance: the 20 paper ones and random seeds 0-9 in both modes."""
    for name in canonical_names():
        yield name, load_paper(name)
    for mode, seed in RANDOM:
        yield f"random-{mode}-s{seed}", generate("random", {"noise_mode": mode}, seed=seed)


def plan_record(res) -> dict:
    """Status and plan (datasets, segments) of a result, as JSON-ready data."""
    if res.plan is None:
        return {"status": str(res.status), "datasets": None, "segments": None}
    return {"status": str(res.status), "datasets": list(res.plan.datasets),
            "segments": [[s.model, s.cluster, s.level, s.epochs] for s in res.plan.segments]}


def main(out: str) -> int:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    rec = {"commit": commit, "params": PARAMS, "plans": {}}
    for key, inst in instances():
        for m in METHODS:
            rec["plans"][f"{m}|{key}"] = plan_record(solve(m, inst, PARAMS))
        print(key, flush=True)
    Path(out).write_text(json.dumps(rec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
