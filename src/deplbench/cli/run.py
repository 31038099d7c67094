"""``deplbench run [CONFIG]`` and ``deplbench export-results DIR``.

``run`` expands a config (a path or the name of a shipped config, default ``paper``),
skips the runs already in ``OUT/results.duckdb`` and executes the others; then, if the
report module is installed, writes the report of the folder.
"""

from __future__ import annotations

from pathlib import Path

from deplbench.benchmarks.api import DEFAULT_ROOT
from deplbench.cli.args import positive_int

DEFAULT_CONFIG = "paper"




def cmd_run(args) -> int:
    from deplbench.benchmarks.api import output_folder, run_config
    from deplbench.benchmarks.harness.config import load_config
    from deplbench.benchmarks.harness.store import DB_NAME

    if args.dry_run:
        cfg = load_config(args.config)
        return _dry_run(cfg, output_folder(cfg.name, args.out), args.retry_failed)
    res = run_config(args.config, args.out, workers=args.workers, scheduler=args.scheduler, cluster=args.cluster,
                     retry_failed=args.retry_failed, progress=not args.quiet, report=not args.no_report)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items())) or "nothing to run"
    print(f"{res.config}: {res.total} runs, {res.skipped} already done, ran {sum(res.counts.values())} ({counts});"
          f" store {res.out / DB_NAME}")
    if res.warmup_s:
        print(f"warm-up (compile caches, outside every run's clock): {res.warmup_s:.1f} s")
    if res.failed_stored:
        print(f"{res.failed_stored} stored runs did not finish ok (see harness_status/error; "
              "--retry-failed re-runs them)")
    if res.report is not None:
        print(f"wrote {res.report} and the site {res.report.with_name('index.html')}")
    if res.interrupted is not None:
        import signal

        n = res.counts.get("interrupted", 0)
        print(f"stopped by {signal.Signals(res.interrupted).name}: {n} runs in flight stored as interrupted with "
              "their best plans; run the same command again to finish the grid (it re-runs them)")
        return 128 + int(res.interrupted)
    return 0


def _dry_run(cfg, out: Path, retry_failed: bool) -> int:
    from deplbench.benchmarks.harness.store import DB_NAME, Store

    done: dict[str, str] = {}
    if (out / DB_NAME).exists():
        with Store(out, read_only=True) as store:
            done = store.done()
    n_todo = 0
    print(f"{'key':<20}  {'state':<10}  {'experiment':<14}  {'instance':<44}  solver  params")
    for r in cfg.runs:
        state = done.get(r.key, "todo")
        if state in ("todo", "interrupted") or (retry_failed and state != "ok"):
            n_todo += 1
            state = state if state in ("todo", "interrupted") else f"{state}*"
        inst = f"{r.family}({_short(r.instance_params)}) s{r.instance_seed}"
        params = _short({k: v for k, v in r.params.items() if k not in ("threads",)})
        print(f"{r.key:<20}  {state:<10}  {r.experiment:<14}  {inst:<44}  {r.solver}  {params}")
    print(f"{cfg.name}: {len(cfg.runs)} runs, {len(cfg.runs) - n_todo} done, {n_todo} to run; store {out / DB_NAME}")
    return 0


def _short(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def cmd_export(args) -> int:
    from deplbench.benchmarks.harness.store import Store
    from deplbench.files import check_output_dir

    if args.out:
        check_output_dir(args.out)
    with Store(args.dir, read_only=True) as store:
        paths = store.export(args.format, args.out)
        paths += export_machine(store, Path(args.out) if args.out else Path(args.dir))
    if args.bundle:
        from deplbench.benchmarks.harness.bundle import SUFFIX, write_bundle

        folder = Path(args.dir).resolve()
        out = Path(args.out) if args.out else folder
        paths.append(write_bundle(folder, paths, out / f"{folder.name}{SUFFIX}"))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def export_machine(store, out: Path) -> list[Path]:
    """Write the store's machine record and warm-ups as ``out/machine.json`` (none in an older store)."""
    import json

    from deplbench.benchmarks.harness import machine
    from deplbench.files import write_text_atomic

    rec = machine.read(store.con)
    if rec is None:
        return []
    target = out / "machine.json"
    write_text_atomic(json.dumps({**rec, "warmups": machine.read(store.con, "warmups") or []}, indent=1,
                                 sort_keys=True) + "\n", target)
    return [target]


def register(subparsers) -> None:
    """Add the ``run`` and ``export-results`` commands."""
    s = subparsers.add_parser("run", help="run a benchmark grid (a config) into a result store")
    s.add_argument("config", nargs="?", default=DEFAULT_CONFIG,
                   help=f"config file or shipped config name (default: {DEFAULT_CONFIG})")
    s.add_argument("--out", default=None, help=f"output folder (default: {DEFAULT_ROOT}/CONFIG)")
    s.add_argument("--workers", type=positive_int, default=None, help="parallel runs (default: CPU cores)")
    s.add_argument("--scheduler", default=None, metavar="ADDRESS", help="an existing Dask scheduler")
    s.add_argument("--cluster", choices=["local"], default=None, help="start a Dask LocalCluster")
    s.add_argument("--dry-run", action="store_true", help="list the runs and which are done")
    s.add_argument("--retry-failed", action="store_true", help="re-run stored runs that did not finish ok")
    s.add_argument("--no-report", action="store_true", help="do not write the report afterwards")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_run)

    s = subparsers.add_parser("export-results", help="export a result store to Parquet or CSV")
    s.add_argument("dir", help="output folder of `deplbench run`")
    s.add_argument("--format", required=True, choices=["parquet", "csv"])
    s.add_argument("--out", default=None, help="folder of the exported files (default: DIR)")
    s.add_argument("--bundle", action="store_true", help="also pack the store, the exported files, machine.json "
                   "and the report into one DIRNAME.tar.gz (`deplbench compare` opens it)")
    s.set_defaults(func=cmd_export)


