"""``matlang compile``: lower sentences to a plan, explain its cost, and run it on graphs.

    matlang compile "SENTENCE" [--explain] [--graph NAME|--graph6 G6|--file F.g6] [--json]
                    [--dense] [--backend B] [--dtype float32|float64]

With graphs it runs the compiled module and prints the values, the masks it built, the number
of message-passing layers, and the cost model's predicted bytes and FLOPs per graph. ``--explain``
prints the plan and the cost model before anything runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from matlang.cli.common import add_graph_arguments, graphs_from_args, read_sentences


def register(sub: Any) -> None:
    """Add ``compile`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "compile",
        help="compile sentences to masked message passing; explain the plan, run it on graphs",
        description="Compile sentences into a sparse message-passing module (a Plan), print the "
        "plan and its cost model (--explain), and run it on graphs.",
    )
    p.add_argument("sentence", nargs="?", help="a sentence (or use --sentences FILE)")
    p.add_argument("--sentences", metavar="FILE", help="a file of (named) sentences")
    p.add_argument("--explain", action="store_true", help="print the plan and its cost first")
    add_graph_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--dense",
        action="store_true",
        help="allow matrices with a full support (n² entries per graph)",
    )
    # The names of runtime.sparse.BACKENDS, spelled out so that `matlang --help` need not import
    # torch (test_cli_compile checks that they agree).
    p.add_argument(
        "--backend", choices=("torch_sparse", "torch"), default=None, help="sparse backend"
    )
    p.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float64",
        help="number type (default: float64, so counts print exactly; matlang.compile's is "
        "float32, torch's default)",
    )
    p.set_defaults(func=run_compile)


def _number(v: float) -> int | float:
    """Integral values as integers (they are exact in float64 below 2⁵³)."""
    if v == v and abs(v) < 2**53 and float(v).is_integer():
        return int(v)
    return float(v)


def _values(model: Any, graphs: list[Any], torch_dtype: Any) -> list[Any]:
    """One value per graph: a number, a list per node, or [i, j, value] entries; a list over
    sentences when there are several."""
    from matlang.runtime.batch import Batch

    batch = Batch.from_graphs(graphs)
    level = model.level
    if level == "matrix":
        index, vals = model.edge_values(batch)[0]
        out: list[Any] = []
        for g in range(batch.num_graphs):
            lo, hi = int(batch.ptr[g]), int(batch.ptr[g + 1])
            sel = (index[0] >= lo) & (index[0] < hi)
            rows = (index[:, sel] - lo).tolist()
            vs = vals[sel].detach().tolist()
            out.append([[i, j, _number(v)] for i, j, v in zip(rows[0], rows[1], vs)])
        return out
    result = model(batch).detach().to(torch_dtype)
    many = model.num_outputs > 1
    if level == "graph":
        rows = result.tolist()
        return [[_number(x) for x in r] if many else _number(r) for r in rows]
    out = []
    for g in range(batch.num_graphs):
        part = result[int(batch.ptr[g]) : int(batch.ptr[g + 1])].tolist()
        out.append([[_number(x) for x in r] if many else _number(r) for r in part])
    return out


def run_compile(args: argparse.Namespace) -> int:
    import torch

    from matlang.compiler.api import explain
    from matlang.compiler.cost import predict
    from matlang.compiler.lower import lower
    from matlang.compiler.module import CompiledModule

    program = read_sentences(args)
    plan = lower(program, dense=args.dense)
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    nbytes = 8 if dtype == torch.float64 else 4
    has_graphs = bool(args.graph or args.graph6 or args.file)
    if args.explain or not has_graphs:
        print(explain(plan, dtype_bytes=nbytes))
        sys.stdout.flush()
    if not has_graphs:
        return 0
    graphs = graphs_from_args(args)
    model = CompiledModule(plan, dtype=dtype, backend=args.backend)
    values = _values(model, graphs, dtype)
    costs = [predict(plan, g, dtype_bytes=nbytes).as_dict() for g in graphs]
    masks = [
        {
            "register": plan.name(m.register),
            "support": m.support,
            "entries": [c["mask_entries"][str(m.register)] for c in costs],
        }
        for m in plan.masks
    ]
    report = {
        "values": values,
        "mask": masks,
        "layers": plan.layers(),
        "predicted_bytes": [c["predicted_bytes"] for c in costs],
        "predicted_flops": [c["predicted_flops"] for c in costs],
    }
    names = [s.name or f"#{i}" for i, s in enumerate(program)]
    if args.json:
        report["graphs"] = [g.label() for g in graphs]
        report["sentences"] = names
        print(json.dumps(report, ensure_ascii=False))
        return 0
    if len(names) > 1:  # each graph's list of values, in this order
        print(f"  sentences: {', '.join(names)}")
    for g, v, c in zip(graphs, values, costs):
        print(
            f"  {g.label()}: {json.dumps(v)}  (predicted {c['predicted_bytes']} bytes, "
            f"{c['predicted_flops']} FLOPs)"
        )
    for m in masks:
        print(f"  mask {m['register']} = {m['support']}: entries {m['entries']}")
    print(f"  layers: {plan.layers()}")
    return 0


__all__ = ["register", "run_compile"]
