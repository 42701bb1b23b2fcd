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
    e.add_argument(
        "--sparse",
        action="store_true",
        help="evaluate exactly on GraphBLAS (sparse; sentences without inputs; any graph size)",
    )
    e.add_argument(
        "--edges",
        action="append",
        default=[],
        metavar="FILE",
        help="a graph as an edge list (one 'u v' pair per line, both directions, or a .npy "
        "(2, E) array); read sparse, for graphs too large for the dense evaluator (--sparse)",
    )
    e.add_argument("--json", action="store_true", help="print JSON")
    e.set_defaults(func=run_eval)


class _EdgeList:
    """An edge-list file as a PyG-like graph (sorted row-major, ``num_nodes`` = largest id + 1)."""

    def __init__(self, path: str) -> None:
        import numpy as np
        import torch

        from matlang.cli.common import read_edge_pairs
        from matlang.inputs import check_edge_index

        ei = read_edge_pairs(path)

        # ids past MAX_NODES are refused before any node array is allocated
        num_nodes = check_edge_index(ei, None, path)
        order = np.lexsort((ei[1], ei[0]))
        self.edge_index = torch.from_numpy(np.ascontiguousarray(ei[:, order]))
        self.num_nodes = num_nodes
        self.name = path


def _run_sparse(args: argparse.Namespace, program: Any) -> list[tuple[Any, list[Any], list[str]]]:
    """Each sentence on GraphBLAS over the --edges files and the dense graphs given."""
    from matlang.compiler.exact import evaluate_sparse
    from matlang.compiler.support import FullMaskError

    sources: list[tuple[Any, str]] = [(_EdgeList(p), p) for p in args.edges]
    if args.graph or args.graph6 or args.file or not sources:
        sources += [(g, g.label()) for g in graphs_from_args(args)]
    results = []
    for s in program:
        try:
            vals = [evaluate_sparse(s.expr, g) for g, _ in sources]
        except FullMaskError as e:  # the compiler's hint names compile's --dense, not eval's
            raise FullMaskError(
                e.message,
                e.span,
                e.text if e.text is not None else getattr(program, "text", None),
                "drop --sparse: the dense evaluator computes it on all n² entries of each graph",
            ) from None
        results.append((s, vals, [name for _, name in sources]))
    return results


def run_eval(args: argparse.Namespace) -> int:
    from matlang.evaluator import evaluate_graph

    program = read_sentences(args)
    if args.sparse or args.edges:
        if args.float:
            print("matlang eval: --sparse computes exact values; drop --float", file=sys.stderr)
            return 2
        sparse = _run_sparse(args, program)
        labels = sparse[0][2] if sparse else []
        return _print(args, [(s, [_plain(v) for v in vals]) for s, vals, _ in sparse], labels)
    graphs = graphs_from_args(args)
    results = []
    for s in program:
        vals = [
            evaluate_graph(s.expr, g, exact=not args.float, input_order=program.inputs)
            for g in graphs
        ]
        results.append((s, vals))
    return _print(args, results, [g.label() for g in graphs])


def _plain(v: Any) -> Any:
    """A sparse matrix value as a dense array for printing (small graphs only)."""
    return v.toarray() if hasattr(v, "toarray") else v


def _print(
    args: argparse.Namespace, results: list[tuple[Any, list[Any]]], labels: list[str]
) -> int:
    from matlang.evaluator import format_value, to_json

    if args.json:
        if len(results) == 1:
            out: Any = {"values": to_json(results[0][1])}
        else:
            out = {
                "graphs": labels,
                "sentences": [{"name": s.name, "values": to_json(v)} for s, v in results],
            }
        print(json.dumps(out))
        return 0
    for i, (s, vals) in enumerate(results):
        if len(results) > 1 or args.sentences:  # a file's sentences are named, even one left
            print(f"{s.name or '#' + str(i)}:")
        for label, v in zip(labels, vals):
            print(f"  {label}: {format_value(v)}")
    sys.stdout.flush()
    return 0
