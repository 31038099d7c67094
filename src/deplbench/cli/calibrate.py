"""CLI: ``deplbench train-curves`` (real loss curves) and ``deplbench calibrate`` (fit them).

``train-curves --out CURVES.csv`` trains the small digits network of
:mod:`deplbench.instances.calibration.curves` (optional extra ``[calibrate]``);
``calibrate CURVES.csv --out PARAMS.json`` fits the loss model to any curves file
and prints a Table-I-like summary with naive and bootstrap p-values.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from deplbench.cli.args import float_in, int_in, nonneg_int

_pos_int = int_in(1, 100_000)


def _floats(text: str) -> tuple[float, ...]:
    try:
        v = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None
    if not all(abs(x) < float("inf") for x in v):  # also false for NaN
        raise argparse.ArgumentTypeError(f"'{text}' holds a value that is not finite")
    return v


def _bounds(text: str) -> tuple[float, float]:
    v = _floats(text)
    if len(v) != 2 or not v[0] <= v[1] or not all(abs(x) < float("inf") for x in v):
        raise argparse.ArgumentTypeError(f"'{text}' is not LOW,HIGH with LOW <= HIGH")
    return v[0], v[1]


def _fmt_p(p) -> str:
    return "-" if p is None else f"{p:.3g}"


def summary_table(params: dict) -> str:
    """The Table-I-like summary of a calibration document (models, then switches)."""
    lines = ["| model | density | A | B | p | noise (best) | mean | var | KS p (naive) | "
             "bootstrap p | shared var | per-run best | per-run var | per-run bootstrap p |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, r in params["models"].items():
        pe, pr = r["noise"]["per_epoch"], r["noise"]["per_run"]
        f = pe["fits"][pe["best"]]
        g = pr["fits"][pr["best"]] if pr else None
        dens = "-" if r["density"] is None else f"{r['density']:g}"
        run_cols = f"{pr['best']} | {g['var']:.3g} | {_fmt_p(g['bootstrap_p'])}" if g else "- | - | -"
        lines.append(
            f"| {m} | {dens} | {r['progress']['A']:.4g} | {r['progress']['B']:.3g} | "
            f"{r['progress']['p']:.3g} | {pe['best']} | {f['mean']:.4g} | {f['var']:.3g} | "
            f"{_fmt_p(f['ks_p'])} | {_fmt_p(f['bootstrap_p'])} | "
            f"{r['variance']['shared_fraction']:.2f} | {run_cols} |")
    if params["switches"]:
        lines += ["", "| switch | n | df | loc | scale | [low, high] | mean | KS p (naive) | bootstrap p |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for s in params["switches"]:
            p = s["penalty"]
            lines.append(f"| {s['from']} -> {s['to']} | {s['n']} | {p['df']:.3g} | {p['loc']:.4g} | "
                         f"{p['scale']:.3g} | [{p['low']:.3g}, {p['high']:.3g}] | {s['mean']:.4g} | "
                         f"{_fmt_p(s['ks_p'])} | {_fmt_p(s['bootstrap_p'])} |")
    ef = [e for r in params["models"].values() for e in r["epoch_fits"]]
    if ef:
        for key in ("ks_p", "bootstrap_p"):
            ps = [e[key] for e in ef if e[key] is not None]
            if ps:
                lines.append(f"per-epoch fits: {len(ps)}, {key} < 0.05 in {sum(p < 0.05 for p in ps)}, "
                             f"median {sorted(ps)[len(ps) // 2]:.3g}")
    lines.append(f"shared variance fraction suggests noise_mode = {params['recommended_noise_mode']}")
    return "\n".join(lines)


def cmd_calibrate(args) -> int:
    from deplbench.files import check_output_path
    from deplbench.instances.calibration.pipeline import calibrate, read_curves
    from deplbench.instances.io import write_json_atomic

    check_output_path(args.out)
    t0 = time.perf_counter()
    table = read_curves(args.curves)
    params = calibrate(table, fit_p=args.fit_p, n_mc=args.bootstrap, seed=args.seed,
                       penalty_bounds=args.penalty_bounds, penalty_df=args.penalty_df,
                       source=str(args.curves))
    write_json_atomic(params, args.out)
    print(summary_table(params))
    print(f"wrote {args.out} ({time.perf_counter() - t0:.1f} s)")
    return 0


def cmd_train_curves(args) -> int:
    from deplbench.files import check_output_path
    from deplbench.instances.calibration.curves import TrainConfig, train_curves

    check_output_path(args.out)
    cfg = TrainConfig(epochs=args.epochs, hidden=args.hidden, lr=args.lr, batch=args.batch)
    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"\r{msg} ({time.perf_counter() - t0:.0f} s)", end="", file=sys.stderr, flush=True)

    df = train_curves(args.seeds, cfg, args.factors, args.switch_seeds, args.seed, progress)
    if not args.quiet:
        print(file=sys.stderr)
    out = Path(args.out)
    from deplbench.files import atomic_path

    with atomic_path(out) as tmp:  # renamed when whole; a SIGKILLed write's file goes with the next one
        df.to_csv(tmp, index=False, float_format="%.8g")
    print(f"wrote {out} ({df['run'].nunique()} runs, {len(df)} rows, {time.perf_counter() - t0:.1f} s)")
    return 0


def register(sub) -> None:
    """Add ``calibrate`` and ``train-curves`` to the ``deplbench`` command line."""
    s = sub.add_parser("calibrate", help="fit the loss model (A, B, p, noise, penalties) to curves")
    s.add_argument("curves", help="CSV with columns run, model, epoch, loss (optional density)")
    s.add_argument("--out", required=True, help="PARAMS.json (depl-calibration/1)")
    s.add_argument("--fit-p", action="store_true", help="fit the exponent p too (default p = 0.5)")
    s.add_argument("--bootstrap", type=int_in(0, 100_000), default=200,
                   help="parametric-bootstrap samples per goodness-of-fit test (0: naive KS only)")
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--penalty-bounds", type=_bounds, default=None, metavar="LOW,HIGH",
                   help="truncation of the penalties (default [min(0, smallest), largest + range])")
    s.add_argument("--penalty-df", type=float_in(0.0, 1e6, low_open=True), default=None,
                   help="fix the t's degrees of freedom instead of fitting them")
    s.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("train-curves", help="train a pruned network on digits and write loss curves "
                       "(needs pip install -e .[calibrate])")
    s.add_argument("--out", required=True, help="CURVES.csv")
    s.add_argument("--seeds", type=_pos_int, default=40, help="runs per pruning factor")
    s.add_argument("--switch-seeds", type=_pos_int, default=None,
                   help="runs per switch pair (default: --seeds)")
    s.add_argument("--epochs", type=_pos_int, default=30)
    s.add_argument("--factors", type=_floats, default=(0.5, 0.75, 0.9), metavar="F1,F2,...",
                   help="pruning factors (switches go towards more pruning)")
    s.add_argument("--hidden", type=_pos_int, default=64)
    s.add_argument("--lr", type=float_in(0.0, 10.0, low_open=True), default=0.002)
    s.add_argument("--batch", type=_pos_int, default=64)
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=cmd_train_curves)

