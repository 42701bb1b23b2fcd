"""``matlang parse``: canonical text, LaTeX and shape of sentences."""

from __future__ import annotations

import argparse
import json
from typing import Any

from matlang.cli.common import read_sentences


def register(sub: Any) -> None:
    """Add ``parse`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "parse",
        help="show a sentence's canonical text, LaTeX and shape",
        description="Parse sentences and print canonical text, LaTeX and shape of each.",
    )
    p.add_argument("sentence", nargs="?", help="a sentence (or use --sentences FILE)")
    p.add_argument("--sentences", metavar="FILE", help="a file of sentences")
    p.add_argument("--ascii", action="store_true", help="canonical text in ASCII")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_parse)


def run_parse(args: argparse.Namespace) -> int:
    from matlang.printer import to_latex, to_text

    program = read_sentences(args)
    rows = []
    for i, s in enumerate(program):
        rows.append(
            {
                "name": s.name or f"#{i}",
                "text": to_text(s.expr, ascii=args.ascii),
                "latex": to_latex(s.expr),
                "shape": str(s.expr.shape),
            }
        )
    if args.json:
        print(json.dumps(rows if len(rows) > 1 else rows[0], ensure_ascii=False, indent=2))
        return 0
    for r in rows:
        if len(rows) > 1:
            print(f"{r['name']}:")
        print(f"  text:  {r['text']}\n  latex: {r['latex']}\n  shape: {r['shape']}")
    return 0
