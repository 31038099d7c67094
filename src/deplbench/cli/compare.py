"""``deplbench compare DIR DIR [...] [--out OUT]``: result folders side by side, their differences marked."""

from __future__ import annotations

import shutil
from pathlib import Path

from deplbench.benchmarks.api import DEFAULT_ROOT

DEFAULT_OUT = f"{DEFAULT_ROOT}/compare"


def cmd_compare(args) -> int:
    from deplbench.benchmarks.harness.store import DB_NAME
    from deplbench.benchmarks.report.compare import write_compare
    from deplbench.errors import InputError
    from deplbench.files import check_output_dir

    if len(args.dirs) < 2:
        raise InputError("needs at least two results folders to compare", "DIR")
    from deplbench.benchmarks.harness.bundle import is_bundle, open_bundle

    for d in args.dirs:
        if not is_bundle(d) and not (Path(d) / DB_NAME).is_file():
            raise InputError(f"no result store {DB_NAME} in this folder", d)
    out = check_output_dir(Path(args.out))
    unpacked: list[Path] = []
    try:
        for d in args.dirs:
            if is_bundle(d):
                unpacked.append(open_bundle(d))
        it = iter(unpacked)
        dirs = [next(it) if is_bundle(d) else Path(d) for d in args.dirs]
        page, md, n_diff = write_compare(dirs, out, names=[str(d) for d in args.dirs])
    finally:
        for p in unpacked:
            shutil.rmtree(p, ignore_errors=True)
    print(f"compared {len(args.dirs)} result sets: {n_diff} rows differ from the first; wrote {page} and {md}")
    return 0


def register(subparsers) -> None:
    """Add the ``compare`` command."""
    s = subparsers.add_parser("compare", help="put result folders side by side (status, cost, time) and mark "
                                              "their differences")
    s.add_argument("dirs", nargs="+", metavar="DIR", help="results folders of `deplbench run`, or their archives "
                                                          "(`export-results --bundle`); the first is the baseline")
    s.add_argument("--out", default=DEFAULT_OUT, help=f"folder of the page and compare.md (default: {DEFAULT_OUT})")
    s.set_defaults(func=cmd_compare)
