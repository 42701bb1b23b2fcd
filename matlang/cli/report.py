"""``matlang report``: assemble results/*.json into Markdown tables and plots."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add ``report``."""
    from matlang.cli.common import add_missing_benchmarks, benchmarks_installed

    if not benchmarks_installed():
        add_missing_benchmarks(sub, "report", "assemble results/*.json into tables and plots")
        return
    rep = sub.add_parser(
        "report",
        help="assemble results/*.json into Markdown tables and plots",
        description="Write <out>/report.md and one PNG per paper table from the result files.",
    )
    rep.add_argument("--results", default="results", help="folder of result JSON files")
    rep.add_argument("--out", help="where to write report.md and the PNGs (default: --results)")
    rep.add_argument("--no-plots", action="store_true", help="Markdown only")
    rep.add_argument(
        "--force", action="store_true", help="replace files of those names it did not write"
    )
    rep.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    from benchmarks.paper.report import write_report

    written = write_report(args.results, args.out, plots=not args.no_plots, force=args.force)
    for path in written:
        print(path)
    return 0
