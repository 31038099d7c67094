"""``deplbench report DIR [--out OUTDIR]``: write the Markdown and HTML report of a result store."""

from __future__ import annotations

from pathlib import Path


def cmd_report(args) -> int:
    from deplbench.benchmarks.report.write import build_report
    from deplbench.files import check_output_dir

    if args.out:
        check_output_dir(args.out)
    html = build_report(Path(args.dir), Path(args.out) if args.out else None)
    print(f"wrote {html.with_name('index.html')} (the site), {html} and {html.with_name('report.md')}")
    return 0


def register(subparsers) -> None:
    """Add the ``report`` command."""
    s = subparsers.add_parser("report", help="Markdown + HTML report (tables, figures) of a result folder")
    s.add_argument("dir", help="output folder of `deplbench run` (holds results.duckdb)")
    s.add_argument("--out", default=None, help="report folder (default: DIR/report)")
    s.set_defaults(func=cmd_report)
