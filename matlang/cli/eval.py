"""``matlang eval``: exact values of sentences on graphs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from matlang.cli.common import add_graph_arguments, graphs_from_args, read_sentences


def register(sub: Any) -> None:
    """Add ``eval`` to ``sub`` (an argparse subparsers object)."""
    e = sub.add_parser(
        "eval",
        help="evaluate sentences exactly on graphs",
        description="Evaluate sentences with the exact dense evaluator.",
    )
    e.add_argument("sentence", nargs="?", help="a sentence (or use --sentences FILE)")
    e.add_argument("--sentences", metavar="FILE", help="a file of (named) sentences")
    add_graph_arguments(e)
    e.add_argument("--float", action="store_true", help="evaluate in float64 instead of exactly")
    e.add_argument("--json", action="store_true", help="print JSON")
    e.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    from matlang.evaluator import evaluate_graph, format_value, to_json

    program = read_sentences(args)
    graphs = graphs_from_args(args)
    results = []
    for s in program:
        vals = [
            evaluate_graph(s.expr, g, exact=not args.float, input_order=program.inputs)
            for g in graphs
        ]
        results.append((s, vals))
    if args.json:
        if len(results) == 1:
            out: Any = {"values": to_json(results[0][1])}
        else:
            out = {
                "graphs": [g.label() for g in graphs],
                "sentences": [{"name": s.name, "values": to_json(v)} for s, v in results],
            }
        print(json.dumps(out))
        return 0
    for i, (s, vals) in enumerate(results):
        if len(results) > 1:
            print(f"{s.name or '#' + str(i)}:")
        for g, v in zip(graphs, vals):
            print(f"  {g.label()}: {format_value(v)}")
    sys.stdout.flush()
    return 0
