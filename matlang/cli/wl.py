"""``matlang wl``: run the 1-WL or 3-WL (2-FWL) test on pairs of graphs or on all pairs.

Examples::

    matlang wl --test 3-wl --pairs pairs.g6          # lines 2k and 2k+1 form pair k
    matlang wl --test 1-wl --all-pairs graphs.g6 --json
    matlang wl --test 3-wl --dataset exp --features  # EXP's x as initial node colours
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from matlang.errors import DataError

if TYPE_CHECKING:  # numpy and the graphs load when the command runs, not with `matlang --help`
    import numpy as np

    from matlang.graphs import Graph

#: Datasets ``--dataset`` accepts, with the mode each runs in unless ``--mode`` says otherwise.
DATASET_MODES: dict[str, str] = {
    "graph8c": "all-pairs",
    "sr25": "all-pairs",
    "exp": "pairs",
    "paper_pairs": "pairs",
}

# Lists in the readable summary stop after this many entries (the JSON has them all).
_SHOW = 20


def register(sub: Any) -> None:
    """Add the ``wl`` subcommand to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "wl",
        help="run the 1-WL or 3-WL test on pairs of graphs",
        description="Run 1-WL colour refinement or 2-FWL (as strong as 3-WL) on graph pairs.",
    )
    p.add_argument(
        "--test",
        default="1-wl",
        choices=("1-wl", "3-wl", "2-fwl"),
        help="which test (2-fwl is another name for 3-wl; default 1-wl)",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--pairs", metavar="FILE.g6", help="graph6 file; lines 2k, 2k+1 = pair k")
    src.add_argument("--all-pairs", metavar="FILE.g6", help="graph6 file; compare every pair")
    src.add_argument("--dataset", choices=sorted(DATASET_MODES), help="a dataset of the paper")
    p.add_argument(
        "--graph",
        action="append",
        default=[],
        metavar="NAME",
        help="a built-in graph (rook4x4, shrikhande, petersen, cycle6, ...) or a graph6 string, "
        "as eval takes them (repeatable; graphs 2k and 2k+1 form pair k)",
    )
    p.add_argument(
        "--graph6", action="append", default=[], metavar="G6", help="a graph6 string (repeatable)"
    )
    p.add_argument(
        "--mode",
        choices=("pairs", "all-pairs"),
        help="with --dataset: compare its pairs or all pairs (default: the dataset's own task)",
    )
    p.add_argument(
        "--features",
        action="store_true",
        help="use the graphs' node features x as initial colours (EXP)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    from matlang.drawing import add_argument

    add_argument(p, "the first pair the test cannot tell apart, coloured by its stable colours")
    p.set_defaults(func=run)


def _progress(desc: str) -> Any:
    from tqdm import tqdm

    def wrap(items: Iterable[Any]) -> Iterable[Any]:
        # disable=None: a bar only on a terminal, so pipes and tests stay clean.
        return tqdm(items, desc=desc, disable=None, leave=False, file=sys.stderr)

    return wrap


def _source(args: argparse.Namespace) -> tuple[str, list[Graph], np.ndarray | None, str]:
    """(label, graphs, pairs or None, mode) for the parsed arguments."""
    from matlang.runtime.datasets import ExpData, load, load_graph6

    given = bool(args.graph or args.graph6)
    chosen = [f for f in ("pairs", "all_pairs", "dataset") if getattr(args, f)]
    if given and chosen:
        raise DataError(
            f"--graph/--graph6 and --{chosen[0].replace('_', '-')} are two sources: give one"
        )
    if given:
        from matlang.cli.common import named_or_graph6
        from matlang.graphs import from_graph6

        graphs = [named_or_graph6(n) for n in args.graph]
        graphs += [from_graph6(s, name=s) for s in args.graph6]
        return "the given graphs", graphs, None, args.mode or "pairs"
    if not chosen:
        raise DataError("no graphs: give --graph NAME (twice), --pairs, --all-pairs or --dataset")
    if args.dataset:
        data = load(args.dataset)
        graphs = data.graphs if isinstance(data, ExpData) else list(data)
        mode = args.mode or DATASET_MODES[args.dataset]
        pairs = data.pairs if isinstance(data, ExpData) else None
        return args.dataset, graphs, pairs, mode
    path = args.pairs or args.all_pairs
    graphs = load_graph6(path)
    return path, graphs, None, "pairs" if args.pairs else "all-pairs"


def _colours(args: argparse.Namespace) -> str:
    """Whether node features were used, for the summary line."""
    if args.features:
        return "node features: x as initial colours"
    return "no node features: one initial colour; --features uses x"


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from matlang.runtime.wl import normalize_test, pair_equivalence

    test = normalize_test(args.test)
    label, graphs, pairs, mode = _source(args)
    colors = "x" if args.features else None
    if mode == "all-pairs":
        return _all_pairs(args, test, label, graphs, colors)
    if pairs is None:
        if len(graphs) % 2:
            raise DataError(
                f"{label}: {len(graphs)} graphs, but pair mode needs an even number "
                "(lines 2k and 2k+1 form pair k)"
            )
        pairs = np.arange(len(graphs)).reshape(-1, 2)
    same = pair_equivalence(graphs, pairs, test, colors, progress=_progress(f"{test} pairs"))
    per_pair: list[dict[str, Any]] = [
        {
            "pair": k,
            "graphs": [graphs[i].label(), graphs[j].label()],
            "distinguished": not bool(same[k]),
        }
        for k, (i, j) in enumerate(np.asarray(pairs).tolist())
    ]
    distinguished = int((~same).sum())
    if getattr(args, "draw", None):
        from matlang.drawing import write_wl

        first = next((tuple(p) for p, s in zip(np.asarray(pairs).tolist(), same) if s), None)
        write_wl(args, graphs, first, test)
    if args.json:
        out = {
            "test": test,
            "pairs": len(per_pair),
            "distinguished": distinguished,
            "per_pair": per_pair,
        }
        print(json.dumps(out))
        return 0
    k = len(per_pair)
    print(
        f"{test} on {k} pair{'s' if k != 1 else ''} of {label}: {distinguished} distinguished, "
        f"{k - distinguished} equivalent ({_colours(args)})"
    )
    equiv = [e for e in per_pair if not e["distinguished"]]
    for e in equiv[:_SHOW]:
        print(f"  pair {e['pair']}: {e['graphs'][0]} ~ {e['graphs'][1]}")
    if len(equiv) > _SHOW:
        print(f"  ... and {len(equiv) - _SHOW} more (--json lists them all)")
    return 0


def _all_pairs(
    args: argparse.Namespace, test: str, label: str, graphs: list[Graph], colors: str | None
) -> int:
    from matlang.runtime.wl import classes, count_equivalent_pairs

    groups = classes(graphs, test, colors, progress=_progress(f"{test} classes"))
    multi = [g for g in groups if len(g) > 1]
    equivalent = count_equivalent_pairs(multi)
    if getattr(args, "draw", None):
        from matlang.drawing import write_wl

        write_wl(args, graphs, (multi[0][0], multi[0][1]) if multi else None, test)
    if args.json:
        print(
            json.dumps(
                {
                    "test": test,
                    "graphs": len(graphs),
                    "equivalent_pairs": equivalent,
                    "classes": multi,
                }
            )
        )
        return 0
    total = len(graphs) * (len(graphs) - 1) // 2
    print(
        f"{test} on all {total} pair{'s' if total != 1 else ''} of {len(graphs)} graphs "
        f"({label}): {equivalent} equivalent pair{'s' if equivalent != 1 else ''} in "
        f"{len(multi)} class{'es' if len(multi) != 1 else ''} of size > 1 ({_colours(args)})"
    )
    for grp in multi[:_SHOW]:
        print("  " + " ~ ".join(graphs[i].label() for i in grp))
    if len(multi) > _SHOW:
        print(f"  ... and {len(multi) - _SHOW} more classes (--json lists them all)")
    return 0
