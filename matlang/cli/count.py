"""``matlang count``: exact subgraph counts of a small pattern, per graph, node or edge."""

from __future__ import annotations

import argparse
import json
from typing import Any

from matlang.cli.common import add_graph_arguments, graphs_from_args

EPILOG = """\
JSON (--json): {"pattern": name as given, "per": "graph"|"node"|"edge", "induced": bool,
  "graphs": [labels], "counts": [...]}: per graph one int per graph; per node / per edge one
  list of ints per graph (nodes in order; edges in the order of edge_index or the --edges file).

Patterns: triangle, C3…C8, P2…P8, K2…K8, star1…star7, diamond, tailed_triangle, house, bowtie;
an edge list "0-1 1-2 2-0"; or a graph6 string (connected, at most 8 nodes).
"""


def register(sub: Any) -> None:
    """Add ``count`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "count",
        help="exact subgraph counts of a small pattern, per graph, node or edge",
        description=(
            "Count the subgraphs isomorphic to a small connected pattern exactly, through its "
            "spasm and sparse homomorphism counts (no n × n table: large graphs welcome)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("pattern", help="a built-in name, an edge list ('0-1 1-2 2-0') or graph6")
    add_graph_arguments(p, required=False)
    p.add_argument(
        "--edges",
        action="append",
        default=[],
        metavar="FILE",
        help="a graph as an edge list (one 'u v' pair per line, each edge once or both ways, "
        "or a .npy (2, E) array); read sparse",
    )
    p.add_argument("--per", choices=("graph", "node", "edge"), default="graph")
    p.add_argument("--induced", action="store_true", help="count induced copies")
    p.add_argument("--json", action="store_true", help="print JSON (keys below)")
    p.set_defaults(func=run_count)


class EdgeFile:
    """An edge-list file as a PyG-like graph: its pairs in file order, then the reverse of each
    pair whose reverse the file lacks (per-edge counts are reported for the file's pairs)."""

    def __init__(self, path: str) -> None:
        import numpy as np

        from matlang.cli.common import read_edge_pairs
        from matlang.inputs import check_edge_index

        ei = read_edge_pairs(path, one_pair=True)
        n = check_edge_index(ei, None, path)
        self.given = int(ei.shape[1])
        keys = set((ei[0] * n + ei[1]).tolist())
        back = np.array([k not in keys for k in (ei[1] * n + ei[0]).tolist()], dtype=bool)
        self.edge_index = np.concatenate([ei, ei[::-1][:, back]], axis=1)
        self.num_nodes = n
        self.name = path


def run_count(args: argparse.Namespace) -> int:
    from matlang.runtime.subgraph_counts import count_arrays, read_count_pattern, read_graphs, split

    p, name = read_count_pattern(args.pattern)
    sources: list[tuple[Any, str]] = [(EdgeFile(f), f) for f in args.edges]
    if args.graph or args.graph6 or args.file or not sources:
        sources += [(g, g.label()) for g in graphs_from_args(args)]
    counts: list[Any] = []
    for g, _ in sources:
        gs = read_graphs(g)
        try:
            values = count_arrays(p, gs, args.per, args.induced)
        finally:
            gs.host.clear()
        out = split(values, gs, args.per)
        if args.per == "graph":
            out = out[0]
        elif isinstance(g, EdgeFile) and args.per == "edge":
            out = out[: g.given]
        counts.append(out)
    labels = [label for _, label in sources]
    if args.json:
        print(
            json.dumps(
                {
                    "pattern": name,
                    "per": args.per,
                    "induced": args.induced,
                    "graphs": labels,
                    "counts": counts,
                },
                ensure_ascii=False,
            )
        )
        return 0
    what = "induced copies" if args.induced else "copies"
    for label, c in zip(labels, counts):
        if args.per == "graph":
            print(f"{name} in {label}: {c} {what}")
        else:
            print(f"{name} in {label}, {what} per {args.per}: {' '.join(map(str, c))}")
    return 0
