"""``matlang classify``: which WL level a sentence needs, why, and a witness pair."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

JSON_HELP = """\
JSON (--json): one object per sentence (a list when there are several):
  sentence            canonical text of the sentence as given
  syntactic_fragment  "L1" | "L2" | "L3": smallest fragment containing the sentence as written
  fragment            "L1" | "L2" | "L3": after the sound rewrites (the upper bound)
  wl                  e.g. "beyond 1-WL (witness), at most L2 (strictly weaker than 3-WL)"
  normalized          canonical text of the rewritten sentence (parseable)
  reasons             [{"stage": "syntactic"|"normalized", "level": "L2"|"L3",
                        "operation": "tr"|"⊙"|"f(…)", "at": "line:col", "text", "why"}]
  rules               [{"rule": name, "identity": "..."}]: rewrites that fired, first use first
  witness             null, or {"level": "1-WL"|"L2", "pair": [g, h], "values": [a, b],
                        "source": "..."}: g and h are built-in graph names or graph6 strings
                        that level cannot separate but the sentence does; values are exact
                        (JSON integers, "p/q" strings for fractions, floats otherwise); a vector
                        sentence gives its sorted entries, a matrix sentence its sum 1ᵀM1.

The rewrites and the witness search assume simple undirected graphs (A symmetric, 0/1, no
self-loops). Fragments follow the paper's Remarks 1-4: L1 = {·, ᵀ, 𝟏, diag} (= 1-WL),
L2 = L1 ∪ {tr}, L3 = L2 ∪ {⊙} (= 3-WL); +, scalar ×, / and pointwise f of vectors never raise
the level; a pointwise f of matrices counts as ⊙ unless f is affine.
"""


def register(sub: Any) -> None:
    """Add ``classify`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "classify",
        help="which WL level a sentence needs (L1/L2/L3), why, and a witness pair",
        description=(
            "Classify sentences into the fragments L1/L2/L3 of the paper, after sound rewrites, "
            "and search built-in libraries of graph pairs for a witness that a lower level "
            "cannot separate."
        ),
        epilog=JSON_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("sentence", nargs="?", help="a sentence (or use --sentences FILE)")
    p.add_argument("--sentences", metavar="FILE", help="a file of (named) sentences")
    p.add_argument("--json", action="store_true", help="print JSON (keys below)")
    p.add_argument("--no-witness", action="store_true", help="skip the witness search")
    p.add_argument(
        "--datasets",
        action="store_true",
        help="also search graph8c, EXP and sr25 from the data folder (slower; cached)",
    )
    from matlang.drawing import add_argument

    add_argument(p, "the witness pair (one sentence)")
    p.set_defaults(func=run_classify)


#: The data folder's datasets ``--datasets`` searches for witnesses.
WITNESS_DATASETS = ("graph8c", "exp", "sr25")


def _check_data_folder() -> None:
    """``--datasets`` needs the data folder: an error without it (naming where it looked), a
    note on stderr for each of its datasets that is not there."""
    from matlang.errors import DataError
    from matlang.runtime.datasets import data_available, data_root

    root = data_root()  # a DataError naming MATLANG_DATA when there is no folder
    missing = [name for name in WITNESS_DATASETS if not data_available(name)]
    if len(missing) == len(WITNESS_DATASETS):
        raise DataError(
            f"classify --datasets: none of {', '.join(WITNESS_DATASETS)} is in the data folder "
            f"{root} (set MATLANG_DATA to the folder holding them)"
        )
    if missing:
        print(
            f"classify --datasets: {', '.join(missing)} not in {root}; searching the others",
            file=sys.stderr,
        )


def run_classify(args: argparse.Namespace) -> int:
    from matlang import classify
    from matlang.cli.common import read_sentences
    from matlang.errors import MatlangError

    program = read_sentences(args)
    if args.datasets and not args.no_witness:
        _check_data_folder()
    results = []
    for s in program:
        a = classify(s.expr, witness=not args.no_witness, datasets=args.datasets)
        results.append((s.name, a))
    if getattr(args, "draw", None) and len(results) != 1:
        raise MatlangError(f"--draw draws one sentence's witness pair, got {len(results)}")
    if args.json:
        rows = []
        for name, a in results:
            row = a.to_json()
            if len(results) > 1:
                row = {"name": name, **row}
            rows.append(row)
        print(json.dumps(rows if len(rows) > 1 else rows[0], ensure_ascii=False, indent=2))
        return _draw(args, results)
    for i, (name, a) in enumerate(results):
        if len(results) > 1:
            print(f"{name or '#' + str(i)}:")
        text = a.explain()
        print("\n".join("  " + ln for ln in text.splitlines()) if len(results) > 1 else text)
    return _draw(args, results)


def _draw(args: argparse.Namespace, results: list[Any]) -> int:
    """``--draw FILE``: the witness pair of the one sentence, after its output."""
    if getattr(args, "draw", None):
        from matlang.drawing import write

        sys.stdout.flush()
        write(args, results[0][1])
    return 0
