"""``matlang bank``: which pairs of graphs some sentence of a fragment (up to a size) separates.

Examples::

    matlang bank --fragment L3 --max-size 10 --pairs brec --json
    matlang bank --fragment L2 --max-size 12 --pairs pairs.g6      # lines 2k, 2k+1 = pair k
    matlang bank --fragment L3 --max-size 10 --pairs graph8c       # all pairs of a graph set
    matlang bank --fragment L3 --rounds 10 --pairs brec            # refinement sentences

Pair sets (``brec``, ``exp``, a file) run the exact per-pair search of :mod:`matlang.bank` and
print, for each separated pair, the smallest separating sentence (check it with ``matlang eval
SENTENCE --graph6 G6``). Graph sets (``sr25``, ``graph8c``) compare all pairs through the bank's
sentence list (deduplicated on random graphs), grouping graphs by their values.

``--rounds R`` replaces the size-bounded enumeration by the refinement sentences of
:mod:`matlang.refinement`: L3+ sentences that run up to R rounds of a hashed 2-FWL in the
language; a separated pair gets its witness as a ``let`` program (``matlang eval --sentences
FILE --graph6 G6 --graph6 H6`` prints the two values).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Any

from matlang.errors import DataError, MatlangError

PAIR_SETS = ("brec", "exp")
GRAPH_SETS = ("sr25", "graph8c")

# Lists in the readable summary stop after this many entries (the JSON has them all).
_SHOW = 10


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bank",
        help="separate pairs of graphs with every sentence of a fragment up to a size",
        description="Enumerate the scalar sentences of L1, L2 or L3 (with +) up to a size, "
        "evaluate them exactly (mod a prime: a difference is certain) and report the pairs "
        "some sentence separates, with the smallest witness per pair.",
    )
    p.add_argument("--fragment", required=True, type=str.upper, choices=("L1", "L2", "L3"))
    family = p.add_mutually_exclusive_group(required=True)
    family.add_argument("--max-size", type=int, metavar="K", help="AST nodes per sentence")
    family.add_argument(
        "--rounds",
        type=int,
        metavar="R",
        help="L3 only: the refinement sentences of L3+ (up to R rounds of a hashed 2-FWL "
        "written in the language) instead of all sentences up to a size",
    )
    p.add_argument(
        "--pairs",
        required=True,
        metavar="SET",
        help="brec, exp, sr25, graph8c, or a graph6 file whose lines 2k, 2k+1 form pair k",
    )
    p.add_argument(
        "--no-multiset",
        action="store_true",
        help="read vectors by their sum only (default: also by their entry multiset)",
    )
    p.add_argument("--limit", type=int, help="only the first N pairs (pair sets)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from matlang.drawing import add_argument

    add_argument(p, "the first separated pair, with its witness sentence's values (pair sets)")
    p.set_defaults(func=run)


def _progress(args: argparse.Namespace, desc: str) -> Any:
    from tqdm import tqdm

    def wrap(items: Any) -> Any:
        return tqdm(
            items,
            desc=desc,
            disable=True if args.no_progress else None,
            leave=False,
            file=sys.stderr,
        )

    return wrap


def _pair_source(name: str) -> tuple[list[Any], list[tuple[int, int]], list[str] | None]:
    """(graphs, pairs, category per pair or None) of a pair set or a pairs file."""
    from matlang.runtime import datasets

    if name == "brec":
        data = datasets.load_brec()
        return data.graphs, [tuple(p) for p in data.pairs.tolist()], list(data.categories())
    if name == "exp":
        exp = datasets.load_exp()
        return exp.graphs, [tuple(p) for p in exp.pairs.tolist()], None
    graphs = datasets.load_graph6(name)
    if len(graphs) % 2:
        raise DataError(
            f"{name}: {len(graphs)} graphs, but a pairs file needs an even number "
            "(lines 2k and 2k+1 form pair k)"
        )
    return graphs, [(2 * k, 2 * k + 1) for k in range(len(graphs) // 2)], None


def run(args: argparse.Namespace) -> int:
    if args.rounds is not None:
        if args.fragment != "L3":
            raise MatlangError("--rounds (refinement sentences) is for --fragment L3 only")
        if args.rounds < 0:
            raise MatlangError(f"--rounds must be at least 0, got {args.rounds}")
    elif args.max_size < 1:
        raise MatlangError(f"--max-size must be at least 1, got {args.max_size}")
    if args.limit is not None and args.limit < 0:
        # pairs[:-1] would silently drop the last pair instead of keeping the first N
        raise MatlangError(f"--limit must be at least 0, got {args.limit}")
    if args.limit is not None and args.pairs in GRAPH_SETS:
        # all pairs of the set are compared: a first-N cut of pairs has no meaning there
        raise MatlangError(
            f"--limit takes the first N pairs of a pair set; {args.pairs} is compared all "
            "pairs against all (drop --limit, or take a pair set such as brec or exp)"
        )
    start = time.perf_counter()
    if args.rounds is not None:
        out = _refinement(args)
    elif args.pairs in GRAPH_SETS:
        out = _graph_set(args)
    else:
        out = _pair_set(args)
    out["seconds"] = round(time.perf_counter() - start, 2)
    if getattr(args, "draw", None):
        from matlang.drawing import write_bank

        write_bank(args, out)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    _print(out)
    return 0


def _pair_set(args: argparse.Namespace) -> dict[str, Any]:
    from matlang.bank import bank, search_pair, sentences, witness_record

    graphs, pairs, cats = _pair_source(args.pairs)
    if args.limit is not None:
        pairs = pairs[: args.limit]
        cats = None if cats is None else cats[: args.limit]
    per_pair = []
    for k in _progress(args, f"bank {args.fragment} ≤ {args.max_size}")(range(len(pairs))):
        i, j = pairs[k]
        s = search_pair(
            graphs[i].adjacency,
            graphs[j].adjacency,
            args.fragment,
            args.max_size,
            multiset=not args.no_multiset,
        )
        found = witness_record(s)
        row: dict[str, Any] = {"pair": k, "separated": found is not None}
        if cats is not None:
            row["category"] = cats[k]
        if found is not None:
            row |= found | {"graphs": [_g6(graphs[i]), _g6(graphs[j])]}
        elif s.truncated:
            row["complete_size"] = s.complete_size
        per_pair.append(row)
    separated = sum(r["separated"] for r in per_pair)
    out: dict[str, Any] = {
        "fragment": args.fragment,
        "max_size": args.max_size,
        "multiset": not args.no_multiset,
        "set": args.pairs,
        "pairs": len(per_pair),
        "separated": separated,
        "sentences": len(sentences(bank(args.fragment, args.max_size))),
        "truncated": sum(1 for r in per_pair if "complete_size" in r),
    }
    if cats is not None:
        out["categories"] = _by_category(per_pair)
    out["per_pair"] = per_pair
    return out


def _refinement(args: argparse.Namespace) -> dict[str, Any]:
    from matlang import refinement
    from matlang.runtime import datasets

    out: dict[str, Any] = {
        "fragment": "L3+",
        "rounds": args.rounds,
        "modulus": refinement.MODULUS,
        "set": args.pairs,
    }
    if args.pairs in GRAPH_SETS:
        graphs = datasets.load_sr25() if args.pairs == "sr25" else datasets.load_graph8c()
        sig = refinement.signatures([g.adjacency for g in graphs], args.rounds)
        total = len(graphs) * (len(graphs) - 1) // 2
        undistinguished = sum(c * (c - 1) // 2 for c in Counter(sig).values())
        return out | {
            "graphs": len(graphs),
            "pairs": total,
            "separated": total - undistinguished,
            "undistinguished": undistinguished,
        }
    graphs, pairs, cats = _pair_source(args.pairs)
    if args.limit is not None:
        pairs = pairs[: args.limit]
        cats = None if cats is None else cats[: args.limit]
    per_pair = []
    for k in _progress(args, f"refinement ≤ {args.rounds} rounds")(range(len(pairs))):
        i, j = pairs[k]
        r = refinement.search_pair(graphs[i].adjacency, graphs[j].adjacency, args.rounds)
        row: dict[str, Any] = {"pair": k, "separated": r.separation is not None}
        if cats is not None:
            row["category"] = cats[k]
        found = refinement.witness_record(r)
        if found is not None:
            row |= found | {"graphs": [_g6(graphs[i]), _g6(graphs[j])]}
        per_pair.append(row)
    out |= {"pairs": len(per_pair), "separated": sum(r["separated"] for r in per_pair)}
    if cats is not None:
        out["categories"] = _by_category(per_pair)
    out["per_pair"] = per_pair
    return out


def _by_category(per_pair: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    by_cat: dict[str, list[int]] = {}
    for r in per_pair:
        got = by_cat.setdefault(r["category"], [0, 0])
        got[0] += int(r["separated"])
        got[1] += 1
    return {c: {"separated": a, "pairs": b} for c, (a, b) in by_cat.items()}


def _g6(g: Any) -> str:
    from matlang.graphs import to_graph6

    return to_graph6(g)


def _graph_set(args: argparse.Namespace) -> dict[str, Any]:
    from matlang.bank import bank, sentences, signatures
    from matlang.runtime import datasets

    graphs = datasets.load_sr25() if args.pairs == "sr25" else datasets.load_graph8c()
    b = bank(args.fragment, args.max_size)
    sig = signatures(b, [g.adjacency for g in graphs], multiset=not args.no_multiset)
    classes = Counter(sig)
    total = len(graphs) * (len(graphs) - 1) // 2
    undistinguished = sum(c * (c - 1) // 2 for c in classes.values())
    return {
        "fragment": args.fragment,
        "max_size": args.max_size,
        "multiset": not args.no_multiset,
        "set": args.pairs,
        "graphs": len(graphs),
        "pairs": total,
        "separated": total - undistinguished,
        "undistinguished": undistinguished,
        "sentences": len(sentences(b)),
    }


def _print(out: dict[str, Any]) -> None:
    if "rounds" in out:
        _print_refinement(out)
        return
    head = (
        f"bank {out['fragment']} (sentences of size ≤ {out['max_size']}, {out['sentences']} "
        f"distinct on random graphs{', multiset readouts' if out['multiset'] else ''}) on "
        f"{out['set']}: {out['separated']}/{out['pairs']} pairs separated in {out['seconds']} s"
    )
    print(head)
    for cat, c in out.get("categories", {}).items():
        print(f"  {cat}: {c['separated']}/{c['pairs']}")
    if out.get("truncated"):
        print(f"  {out['truncated']} pair(s) stopped early by the memory budget (see --json)")
    rows = [r for r in out.get("per_pair", []) if r["separated"]]
    for r in rows[:_SHOW]:
        print(f"  pair {r['pair']}: {r['witness']}   (size {r['size']}, {r['readout']})")
    if len(rows) > _SHOW:
        print(f"  ... and {len(rows) - _SHOW} more (--json lists them all)")


def _print_refinement(out: dict[str, Any]) -> None:
    print(
        f"refinement sentences of L3+ (up to {out['rounds']} rounds of hashed 2-FWL, mod "
        f"{out['modulus']}) on {out['set']}: {out['separated']}/{out['pairs']} pairs separated "
        f"in {out['seconds']} s"
    )
    for cat, c in out.get("categories", {}).items():
        print(f"  {cat}: {c['separated']}/{c['pairs']}")
    rows = [r for r in out.get("per_pair", []) if r["separated"]]
    for r in rows[:_SHOW]:
        print(f"  pair {r['pair']}: round {r['round']}, power {r['power']}: {r['values']}")
    if rows:
        print(f"  the witness of pair {rows[0]['pair']} (matlang eval it on the two graphs):")
        for line in rows[0]["witness"].splitlines():
            print(f"    {line}")
    if len(rows) > _SHOW:
        print(f"  ... and {len(rows) - _SHOW} more (--json lists them all with their witnesses)")
