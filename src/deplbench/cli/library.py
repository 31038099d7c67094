"""``deplbench library build|check|site``: the graded instance library, its solution checker and its pages."""

from __future__ import annotations

import os
import signal
import sys


class _Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM during a build (its number in ``signum``)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_SIGNALS: list[int] = []  # the signals received during a build


def _raise_stop(signum, _frame) -> None:
    _SIGNALS.append(signum)
    raise _Stopped(signum)


def cmd_build(args) -> int:
    from deplbench.benchmarks.library.catalog import build
    from deplbench.watch import signals_handled

    tiers = tuple(t.strip() for t in args.tiers.split(",") if t.strip())
    if args.calibration is not None:  # a missing file is refused, not a library built without it
        from deplbench.files import check_input_file

        check_input_file(args.calibration)
    try:
        with signals_handled(_raise_stop):
            s = build(args.out, tiers=tiers, quick=args.quick, calibration=args.calibration,
                      time_limit=args.time_limit, saa_time_limit=args.saa_time_limit, saa_nodes=args.saa_nodes,
                      exact_work=args.exact_work, workers=args.workers, scheduler=args.scheduler,
                      cluster=args.cluster)
    except KeyboardInterrupt as stop:  # the workers ended, finished entries kept in the checkpoint (catalog.build)
        # a solver that caught the signal returned 'interrupted' and the build raised its own stop
        signum = int(getattr(stop, "signum", _SIGNALS[-1] if _SIGNALS else signal.SIGINT))
        print(f"deplbench: library build stopped by signal {signum}: {args.out} is unchanged "
              "(finished entries stay in the build's checkpoint for the next run)", file=sys.stderr)
        return 128 + signum
    fams = ", ".join(f"{k} {v}" for k, v in sorted(s["families"].items()))
    print(f"library {s['out']}: {s['instances']} instances ({fams}); tiers "
          + ", ".join(f"{t} {s['tiers'].get(t, 0)}" for t in ("easy", "medium", "hard")))
    print(f"{s['problems']} reference lines: " + ", ".join(f"={k}= {v}" for k, v in sorted(s["references"].items())))
    if s["left_out"]:
        print("left out (tier not selected): " + ", ".join(f"{k} {v}" for k, v in sorted(s["left_out"].items())))
    for n in s["notes"]:
        print(f"note: {n}")
    if s["safety_hits"]:
        print(f"not deterministic: a safety time limit was hit ({len(s['safety_hits'])}; these references may "
              "differ between builds): " + ", ".join(s["safety_hits"][:10]))
    else:
        print("deterministic: every reference and tier was decided by deterministic limits (work, nodes); "
              "no safety time limit was hit")
    if s.get("published") is not None:
        print(s["published"].line())
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"pages: {os.path.join(s['out'], 'site', 'index.html')}")
    engine = f"Dask scheduler {args.scheduler}" if args.scheduler else (
        f"Dask LocalCluster of {args.workers} workers" if args.cluster else f"{args.workers} workers")
    kept = f", {s['kept']} entries taken from the checkpoint of a stopped build" if s["kept"] else ""
    print(f"build time {s['build_s']:.1f} s ({s['build_s'] / 60:.1f} min, {engine}, load {load}{kept})")
    return 0


def cmd_check(args) -> int:
    from deplbench.benchmarks.library.catalog import Library
    from deplbench.benchmarks.library.check import check, report_json

    res = check(Library.open(args.library), args.solution, args.instance)
    print(report_json(res) if args.json else "\n".join(res.lines()))
    return 0 if res.consistent else 1


def cmd_site(args) -> int:
    from deplbench.benchmarks.library.site import build_library_site
    from deplbench.files import check_output_dir

    check_output_dir(os.path.join(args.library, "site"))
    index = build_library_site(args.library, args.results)
    print(f"wrote {index}")
    return 0


def register(subparsers) -> None:
    """Add ``library build``, ``library check`` and ``library site``."""
    from deplbench.benchmarks.library.build import (
        EXACT_WORK,
        SAA_NODES,
        SAA_SAFETY_S,
        SAFETY_FACTOR,
    )
    from deplbench.benchmarks.library.catalog import DEFAULT_DIR
    from deplbench.benchmarks.library.runs import EXACT_GRACE_S, SAA_SOLVE_GRACE_S
    from deplbench.cli.args import pos_float, positive_int

    p = subparsers.add_parser("library", help="graded instance library with references; solution checker")
    sub = p.add_subparsers(dest="library_command", metavar="ACTION", parser_class=type(p))
    s = sub.add_parser("build", help="build the library (instances, SAA MPS files, library.solu, manifest)",
                       description="Build the library. Finished entries are kept in a checkpoint beside it "
                                   "(.OUT.partial): a stopped build continues when the same command runs again.")
    s.add_argument("--out", default=DEFAULT_DIR)
    s.add_argument("--tiers", default="easy,medium,hard", help="comma-separated tiers to keep")
    s.add_argument("--quick", action="store_true", help="the small subset used by the tests (~12 instances)")
    s.add_argument("--calibration", default=None, help="calibration file: include the calibrated family")
    s.add_argument("--time-limit", type=pos_float, default=None,
                   help=f"safety time limit of each exact method run (s; default: {SAFETY_FACTOR:g} times --exact-work in "
                        "reference seconds; an entry's budget multiplies it); the run is killed "
                        f"{EXACT_GRACE_S:g} s past it; the deterministic limit is --exact-work")
    s.add_argument("--exact-work", type=positive_int, default=EXACT_WORK,
                   help="work limit of the 'exact' method (deterministic work units, about 1 ms of the reference "
                        "machine each: formulations/exact/work.py)")
    s.add_argument("--saa-time-limit", type=pos_float, default=SAA_SAFETY_S,
                   help=f"safety time limit of an SAA reference solve (s; killed {SAA_SOLVE_GRACE_S:g} s past it); "
                        "the deterministic limit is --saa-nodes")
    s.add_argument("--saa-nodes", type=positive_int, default=SAA_NODES,
                   help="branch-and-bound nodes of an SAA reference solve (deterministic limit)")
    s.add_argument("--workers", type=positive_int, default=2,
                   help="worker processes (with --cluster local: Dask workers)")
    s.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="build on an existing Dask scheduler (e.g. tcp://host:8786); same files as a local build")
    s.add_argument("--cluster", choices=["local"], default=None, help="build on a Dask LocalCluster")
    s.set_defaults(func=cmd_build)
    s = sub.add_parser("check", help="certify a solution and compare it with the library's reference")
    s.add_argument("solution", help="plan file (.json) or MIP solution file (.sol) of an MPS file")
    s.add_argument("--instance", required=True, help="problem name: an instance, or an MPS file's base name")
    s.add_argument("--library", default=DEFAULT_DIR)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_check)
    s = sub.add_parser("site", help="rebuild the library's web pages (DIR/site/index.html)")
    s.add_argument("--library", default=DEFAULT_DIR)
    s.add_argument("--results", default=None, help="results folder of 'deplbench run library': show every method's runs")
    s.set_defaults(func=cmd_site)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
