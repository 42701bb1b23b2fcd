"""``matlang pattern``: the exact subgraph-count sentence of a pattern and the WL level it needs."""

from __future__ import annotations

import argparse
import json
from typing import Any

JSON_HELP = """\
JSON (--json): one object
  pattern        graph6 of the pattern        name       as given
  nodes, edges   its size                     automorphisms  |Aut(P)|
  rooted         whether the sentence is the per-node count (a column)
  sentence       the counting program: `let H1 = …` per homomorphism term, then their
                 combination; null when no MATLANG sentence counts the pattern
  fragment       "L1" | "L2" | "L3" (the analyzer on the sentence, after rewrites) | "none"
  wl             the WL statement (as `matlang classify` gives it; "beyond 3-WL" for none)
  reason         the spasm criterion: every quotient a forest (1-WL), treewidth ≤ 2 (3-WL),
                 or the quotient of treewidth ≥ 3 that rules MATLANG out
  quotients      [{"graph6", "nodes", "edges", "root"?, "coefficient", "treewidth"}]:
                 sub(P, G) = Σ coefficient · hom(Q, G) (coefficients: integers or "p/q")
  witness        null, or {"level": "1-WL"|"L2"|"3-WL", "pair": [g, h], "values": [a, b],
                 "source"}: graphs that level cannot tell apart, with different counts
                 (a lower bound; for "none", the 2-FWL certificate)

Patterns: triangle, C3…C10, P2…P10 (paths on N nodes), K2…K10, star1…star9, diamond,
tailed_triangle, house, bowtie; an edge list "0-1 1-2 2-0"; or a graph6 string.
"""


def register(sub: Any) -> None:
    """Add ``pattern`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "pattern",
        help="the exact counting sentence of a pattern, its fragment and WL level",
        description=(
            "Write the subgraph count of a small pattern as a MATLANG sentence (through its "
            "spasm of homomorphism counts), classify it, and say which WL level counting it "
            "needs, with a witness pair."
        ),
        epilog=JSON_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "pattern",
        help="a built-in name, an edge list ('1-2 2-3': the nodes it names) or a graph6 string",
    )
    p.add_argument("--json", action="store_true", help="print JSON (keys below)")
    p.add_argument(
        "--rooted", action="store_true", help="the per-node count (copies through each node)"
    )
    p.add_argument("--no-witness", action="store_true", help="skip the witness search")
    p.add_argument(
        "--datasets",
        action="store_true",
        help="also search the data folder's pairs (sr25, graph8c, EXP) for witnesses",
    )
    from matlang.drawing import add_argument

    add_argument(p, "the witness pair (for a pattern no sentence counts: the certificate pair)")
    p.set_defaults(func=run_pattern)


def run_pattern(args: argparse.Namespace) -> int:
    from matlang import pattern

    result = pattern(
        args.pattern, rooted=args.rooted, witness=not args.no_witness, datasets=args.datasets
    )
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        print(result.explain())
    if args.draw:
        import sys

        from matlang.drawing import write

        sys.stdout.flush()
        write(args, result)
    return 0
