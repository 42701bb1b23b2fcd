"""``matlang bench merge INTO FROM...``: result files trained apart, made one.

Two cores fill one table cell faster than one: each trains other seeds (``bench count``,
``exp-classify``, ``filter``), other folds (``bench tu``) or other pairs (``bench brec``) into
a folder of its own (``--out DIR``, or another worktree), and this command adds the runs of
each FROM file to INTO with the checks ``--append`` makes: the same bench, model and settings,
and no seed, (seed, fold) pair or BREC pair twice. The merged file is what ``--append`` would
have written had the runs been made one after the other: the summary recomputed over every run,
the provenance of each piece kept (the last piece's at the top, the others under
``"earlier"``), and ``"partial"`` recomputed from what the pieces together still lack.

INTO is rewritten in place (it only gains runs) unless ``--out FILE`` names another file; FROM
files are only read. Nothing is written when a check fails.

Example: ten TU folds on two cores, one file::

    matlang bench tu --dataset enzymes --model gat --folds 1:5 --append
    matlang bench tu --dataset enzymes --model gat --folds 6:10 --append --out aside
    matlang bench merge results/tu-enzymes-gat.json aside/tu-enzymes-gat.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.records import (
    mark_missing_parts,
    mark_missing_seeds,
    merge_seeds,
    read_json_file,
    write_json,
)
from matlang.errors import MatlangError
from matlang.evaluator import to_json

#: The benches whose result files take ``--append``, hence ``merge``.
MERGEABLE = ("count", "exp-classify", "filter", "tu", "brec")


def read_piece(path: Path) -> dict[str, Any]:
    """A result file of a bench in :data:`MERGEABLE`, or an error naming the file."""
    data = read_json_file(path, "matlang bench merge")
    bench = data.get("bench") if isinstance(data, dict) else None
    if bench not in MERGEABLE:
        what = f"bench {bench!r}" if isinstance(bench, str) else "no bench"
        raise MatlangError(
            f"matlang bench merge: {path} is not a result file that takes --append ({what}; "
            f"mergeable: {', '.join(MERGEABLE)})"
        )
    runs = "per_pair" if bench == "brec" else "runs"
    if not isinstance(data.get(runs), list):
        raise MatlangError(f"matlang bench merge: {path} has no {runs!r} list")
    return data


def merge_into(
    into: Path, old: dict[str, Any], source: Path, new: dict[str, Any]
) -> dict[str, Any]:
    """``old`` (the file at ``into``) with the runs of ``new`` (the file at ``source``) added,
    as ``--append`` adds a run's; the pieces' provenance kept, ``partial`` recomputed."""
    action = f"matlang bench merge {source}"
    bench = old["bench"]
    if new["bench"] != bench:
        raise MatlangError(f"{action}: {into} is bench {bench!r}, {source} is {new['bench']!r}")
    if bench == "tu":
        from benchmarks.paper.tu import fold_parts, merge_folds

        folds = (old.get("config", {}).get("folds"), new.get("config", {}).get("folds"))
        if folds[0] != folds[1] and {**old["config"], "folds": 0} == {**new["config"], "folds": 0}:
            raise MatlangError(
                f"{action}: {into} is for folds {folds[0]}, {source} for folds {folds[1]}: "
                "pieces of one 10-fold file are run with --folds A:B --append (each then a "
                "partial 10-fold file)"
            )
        merged = merge_folds(into, old, new, action=action)
        merged = mark_missing_parts(merged, fold_parts(merged["seeds"], merged["config"]["folds"]))
    elif bench == "brec":
        from benchmarks.paper.brec import merge_pairs

        merged = merge_pairs(into, old, new, action=action)
    else:
        if bench == "count":  # settings an older file did not record yet had these values
            from benchmarks.paper.count import IMPLIED_CONFIG

            old = {**old, "config": {**IMPLIED_CONFIG, **old.get("config", {})}}
            new = {**new, "config": {**IMPLIED_CONFIG, **new.get("config", {})}}
        merged = merge_seeds(into, old, new, action=action)
        missing = {
            s for piece in (old, new) for s in piece.get("partial", {}).get("missing_seeds", [])
        }
        merged = mark_missing_seeds(merged, sorted(missing - set(merged["seeds"])))
    # the earlier pieces of ``new`` (its own --append runs) stay beside those of ``old``
    merged["earlier"] = [*merged.get("earlier", []), *new.get("earlier", [])]
    return merged


def merge_files(into: Path, sources: Sequence[Path]) -> dict[str, Any]:
    """The file at ``into`` with the runs of every file in ``sources`` added, in order."""
    seen = {into.resolve()}
    merged = read_piece(into)
    for source in sources:
        if source.resolve() in seen:
            raise MatlangError(f"matlang bench merge: {source} is given twice")
        seen.add(source.resolve())
        piece = read_piece(source)
        try:
            merged = merge_into(into, merged, source, piece)
        except (KeyError, IndexError, StopIteration, TypeError, AttributeError) as e:
            what = f"the field {e}" if isinstance(e, KeyError) else f"a field ({e!r})"
            raise MatlangError(
                f"matlang bench merge {source}: it or {into} lacks {what} that a result file "
                "of its bench has"
            ) from None
    return merged


def added(old: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    """What the merge added to ``old``: seeds, (seed, fold) pairs or BREC pairs."""
    if merged["bench"] == "brec":
        before = {r["pair"] for r in old["per_pair"]}
        return {"pairs": sorted(r["pair"] for r in merged["per_pair"] if r["pair"] not in before)}
    if merged["bench"] == "tu":
        before = {(r.get("seed", 0), r["fold"]) for r in old["runs"]}
        pairs = [(r.get("seed", 0), r["fold"]) for r in merged["runs"]]
        return {"seed_folds": [list(p) for p in pairs if p not in before]}
    return {"seeds": [s for s in merged["seeds"] if s not in set(old["seeds"])]}


def headline(record: dict[str, Any]) -> dict[str, Any]:
    """The numbers a table shows for ``record``."""
    if record["bench"] == "brec":
        keys = ["pairs", "separated", "counts"]
    elif record["bench"] == "tu":
        keys = ["folds", "mean_accuracy", "std_accuracy", "best_epoch"]
    else:
        keys = [k for k in record if k.startswith("median_")] + ["per_seed"]
    return {k: record[k] for k in keys if k in record}


def bench(args: argparse.Namespace) -> int:
    """``matlang bench merge``: merge, check, write (in place, or ``--out``), summarise."""
    into = Path(args.into)
    sources = [Path(s) for s in args.sources]
    old = read_piece(into)
    merged = merge_files(into, sources)
    target = Path(args.out) if args.out else into
    if target.resolve() != into.resolve() and target.exists() and not args.force:
        raise MatlangError(
            f"matlang bench merge: {target} exists; it is never replaced without --force "
            "(without --out the merge goes into INTO, which only gains runs)"
        )
    if not args.dry_run:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_json(target, merged)
    summary = {
        "file": str(target),
        "written": not args.dry_run,
        "bench": merged["bench"],
        "model": merged.get("model"),
        "added": added(old, merged),
        **headline(merged),
        "partial": merged.get("partial"),
    }
    if args.json:
        print(json.dumps(to_json(summary), ensure_ascii=False))
    else:
        for k, v in summary.items():
            print(f"{k}: {v}")
    return 0
