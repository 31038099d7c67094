"""Fit the library's work model: CPU seconds of the exact methods as a linear model of their counters.

Run::

    python -m deplbench.benchmarks.perf.work_model collect --out rows.jsonl [--stride 2] [--large 0-9]
    python -m deplbench.benchmarks.perf.work_model fit rows.jsonl [more.jsonl ...]

``collect`` runs every exact method as the library build does (same order, same deterministic
limits, :func:`~deplbench.benchmarks.library.build.method_params`) on every ``stride``-th entry
of the library (and, with ``--large``, on the larger ``random`` tier of ``perf/exact.py`` at
those seeds, ``per_run``), one JSON row per run: entry, method, status, CPU and wall seconds,
counters. A library build also records these rows (``timings.json``, ``runs``).

``fit`` fits per method non-negative weights (``scipy.optimize.nnls``) of CPU seconds on the
counters of :data:`~deplbench.formulations.exact.work.FEATURES` plus an intercept, on relative
errors (each row divided by its seconds, floored at 0.5 s: a 300 s run and a 1 s run count
alike), prints the weights as a :data:`~deplbench.formulations.exact.work.WORK_MODEL` literal,
the relative errors and the rows graded differently at the 60 s line by time and by work.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

LINE_S = 60.0  # the easy line of the grade in reference seconds (library.build.EASY_S)
FLOOR_S = 0.5


def _rows_of(entry_name: str, inst, limit: float, exact_work: int) -> list[dict]:
    from deplbench.benchmarks.library.build import exact_methods, method_params
    from deplbench.formulations.exact.work import counters
    from deplbench.registry import solve

    rows = []
    for name in exact_methods():
        params = method_params(name, limit, exact_work)
        c0, w0 = time.process_time(), time.perf_counter()
        r = solve(name, inst, params)
        rows.append({"entry": entry_name, "instance": inst.name, "method": name, "status": str(r.status),
                     "cpu_s": round(time.process_time() - c0, 4), "wall_s": round(time.perf_counter() - w0, 4),
                     "counters": counters(name, r.extra), "message": (r.message or "")[:80]})
    return rows


def collect(out: Path, stride: int, limit: float, large: list[int], start: int = 0) -> None:
    from deplbench.benchmarks.library.build import EXACT_WORK
    from deplbench.benchmarks.library.spec import entries
    from deplbench.benchmarks.perf.exact import LARGE
    from deplbench.registry import generate

    todo = [(f"{e.family}:{e.param_dict}:{e.seed}", e.family, e.param_dict, e.seed, EXACT_WORK * e.budget)
            for e in entries()[0][start::stride]]
    todo += [(f"large:{s}", "random", {**LARGE, "noise_mode": "per_run"}, s, 0) for s in large]
    with out.open("a") as fh:
        for i, (name, fam, params, seed, work) in enumerate(todo):
            for row in _rows_of(name, generate(fam, params, seed), limit, work):
                fh.write(json.dumps(row) + "\n")
                fh.flush()
            print(f"[{i + 1}/{len(todo)}] {name}", file=sys.stderr, flush=True)


def fit_method(rows: list[dict], features: tuple[str, ...]) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """NNLS weights on relative errors; the fitted model, the seconds and the predictions."""
    from scipy.optimize import nnls

    X = np.array([[1.0] + [r["counters"].get(k, 0.0) for k in features] for r in rows])
    y = np.array([r["cpu_s"] for r in rows])
    scale = 1.0 / np.maximum(y, FLOOR_S)
    w, _ = nnls(X * scale[:, None], y * scale)
    model = {"intercept": float(w[0])} | {k: float(v) for k, v in zip(features, w[1:], strict=True) if v > 0}
    return model, y, X @ w


def fit(paths: list[Path]) -> dict[str, dict[str, float]]:
    from deplbench.formulations.exact.work import FEATURES, UNITS_PER_S

    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]
    out = {}
    for method, feats in FEATURES.items():
        mine = [r for r in rows if r["method"] == method and r["counters"]]
        if len(mine) < len(feats) + 1:
            print(f"{method}: {len(mine)} rows, too few to fit")
            continue
        model, y, pred = fit_method(mine, feats)
        out[method] = {k: float(f"{v * UNITS_PER_S:.4g}") for k, v in model.items()}  # seconds -> work units
        rel = np.abs(pred - y) / np.maximum(y, FLOOR_S)
        big = y >= 5.0
        flips = [(r["instance"], round(float(a), 1), round(float(b), 1))
                 for r, a, b in zip(mine, y, pred, strict=True) if (a <= LINE_S) != (b <= LINE_S)]
        print(f"{method}: {len(mine)} runs ({int(big.sum())} of 5 s or more), CPU {y.min():.2f}-{y.max():.1f} s; "
              f"relative error median {np.median(rel):.1%}, 90th pct {np.quantile(rel, 0.9):.1%}, "
              f"max {rel.max():.1%}; on runs of 5 s or more: median {np.median(rel[big]) if big.any() else 0:.1%}")
        print(f"  graded differently at {LINE_S:.0f} s (instance, CPU s, work s): {flips or 'none'}")
    print("WORK_MODEL = " + json.dumps(out, indent=4))
    _check_current(rows)
    return out


def _check_current(rows: list[dict]) -> None:
    """How the committed model (formulations/exact/work.py) predicts the same rows."""
    from deplbench.formulations.exact.work import UNITS_PER_S, work_units

    for method in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == method and r["counters"]]
        y = np.array([r["cpu_s"] for r in mine])
        pred = np.array([work_units(method, r["counters"]) / UNITS_PER_S for r in mine])
        rel = np.abs(pred - y) / np.maximum(y, FLOOR_S)
        flips = sum((a <= LINE_S) != (b <= LINE_S) for a, b in zip(y, pred, strict=True))
        print(f"committed model, {method}: relative error median {np.median(rel):.1%}, max {rel.max():.1%}; "
              f"{flips} of {len(mine)} runs graded differently at {LINE_S:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--stride", type=int, default=1)
    c.add_argument("--start", type=int, default=0)
    c.add_argument("--time-limit", type=float, default=300.0)
    c.add_argument("--large", default="", help="seeds of the larger tier, e.g. 0-9")
    f = sub.add_parser("fit")
    f.add_argument("rows", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "collect":
        lo_hi = [int(x) for x in args.large.split("-")] if args.large else []
        large = list(range(lo_hi[0], lo_hi[-1] + 1)) if lo_hi else []
        collect(args.out, args.stride, args.time_limit, large, args.start)
    else:
        fit(args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
