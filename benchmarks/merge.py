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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Kind:
    """How result files of some benches hold their runs, and how two of them merge.

    Args:
        runs: the list of runs (``"runs"``, BREC's ``"per_pair"``).
        parts: what a run adds (``"seeds"``, ``"seed_folds"``, ``"pairs"``), in summaries.
        part: the part one entry of ``runs`` is.
        merge: ``merge(into, old, source, new)``: ``old`` with ``new``'s runs, its ``partial``
            recomputed (``--append``'s merge; ``source`` names ``new`` in messages).
        headline: the numbers a table shows for a record of this kind.
    """

    runs: str
    parts: str
    part: Callable[[dict[str, Any]], Any]
    merge: Callable[[Path, dict[str, Any], Path, dict[str, Any]], dict[str, Any]]
    headline: Callable[[dict[str, Any]], list[str]]


def _action(source: Path) -> str:
    return f"matlang bench merge {source}"


def _implied(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the settings its bench implies for files written before they were
    recorded (what ``--append``'s ``ResultFile(implied=…)`` reads into an older file)."""
    implied: dict[str, Any] = {}
    if record["bench"] == "count":
        from benchmarks.paper.count import IMPLIED_CONFIG

        implied = IMPLIED_CONFIG
    elif record["bench"] == "tu":
        from benchmarks.paper.tu import implied_config

        implied = implied_config(record["model"])
    return {**record, "config": {**implied, **record.get("config", {})}} if implied else record


def _merge_seeds(
    into: Path, old: dict[str, Any], source: Path, new: dict[str, Any]
) -> dict[str, Any]:
    old, new = _implied(old), _implied(new)
    merged = merge_seeds(into, old, new, action=_action(source))
    missing = {s for piece in (old, new) for s in piece.get("partial", {}).get("missing_seeds", [])}
    return mark_missing_seeds(merged, sorted(missing - set(merged["seeds"])))


def _merge_folds(
    into: Path, old: dict[str, Any], source: Path, new: dict[str, Any]
) -> dict[str, Any]:
    from benchmarks.paper.tu import fold_parts, merge_folds

    old, new = _implied(old), _implied(new)
    folds = (old.get("config", {}).get("folds"), new.get("config", {}).get("folds"))
    if folds[0] != folds[1] and {**old["config"], "folds": 0} == {**new["config"], "folds": 0}:
        raise MatlangError(
            f"{_action(source)}: {into} is for folds {folds[0]}, {source} for folds "
            f"{folds[1]}: pieces of one 10-fold file are run with --folds A:B --append (each "
            "then a partial 10-fold file)"
        )
    merged = merge_folds(into, old, new, action=_action(source))
    return mark_missing_parts(merged, fold_parts(merged["seeds"], merged["config"]["folds"]))


def _merge_pairs(
    into: Path, old: dict[str, Any], source: Path, new: dict[str, Any]
) -> dict[str, Any]:
    from benchmarks.paper.brec import merge_pairs

    return merge_pairs(into, old, new, action=_action(source))


_SEEDS = Kind(
    "runs",
    "seeds",
    lambda r: r["seed"],
    _merge_seeds,
    lambda rec: [k for k in rec if k.startswith("median_")] + ["per_seed"],
)
#: The benches whose result files take ``--append``, hence ``merge``, and their kinds.
KINDS: dict[str, Kind] = {
    "count": _SEEDS,
    "exp-classify": _SEEDS,
    "filter": _SEEDS,
    "tu": Kind(
        "runs",
        "seed_folds",
        lambda r: (r.get("seed", 0), r["fold"]),
        _merge_folds,
        lambda rec: ["folds", "mean_accuracy", "std_accuracy", "best_epoch"],
    ),
    "brec": Kind(
        "per_pair",
        "pairs",
        lambda r: r["pair"],
        _merge_pairs,
        lambda rec: ["pairs", "separated", "counts"],
    ),
}


def read_piece(path: Path) -> dict[str, Any]:
    """A result file of a bench in :data:`KINDS`, or an error naming the file."""
    data = read_json_file(path, "matlang bench merge")
    bench = data.get("bench") if isinstance(data, dict) else None
    if bench not in KINDS:
        what = f"bench {bench!r}" if isinstance(bench, str) else "no bench"
        raise MatlangError(
            f"matlang bench merge: {path} is not a result file that takes --append ({what}; "
            f"mergeable: {', '.join(KINDS)})"
        )
    runs = KINDS[bench].runs
    if not isinstance(data.get(runs), list):
        raise MatlangError(f"matlang bench merge: {path} has no {runs!r} list")
    return data


def merge_into(
    into: Path, old: dict[str, Any], source: Path, new: dict[str, Any]
) -> dict[str, Any]:
    """``old`` (the file at ``into``) with the runs of ``new`` (the file at ``source``) added,
    as ``--append`` adds a run's; the pieces' provenance kept, ``partial`` recomputed."""
    if new["bench"] != old["bench"]:
        raise MatlangError(
            f"{_action(source)}: {into} is bench {old['bench']!r}, {source} is {new['bench']!r}"
        )
    merged = KINDS[old["bench"]].merge(into, old, source, new)
    # the earlier pieces of ``new`` (its own --append runs) stay beside those of ``old``
    merged["earlier"] = [*merged.get("earlier", []), *new.get("earlier", [])]
    return merged


def merge_files(into: Path, old: dict[str, Any], sources: Sequence[Path]) -> dict[str, Any]:
    """``old`` (the file at ``into``) with the runs of every file in ``sources`` added, in
    order."""
    seen = {into.resolve()}
    merged = old
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
    """What the merge added to ``old``: seeds, (seed, fold) pairs or BREC pairs, in order."""
    kind = KINDS[merged["bench"]]
    before = {kind.part(r) for r in old[kind.runs]}
    return {kind.parts: [kind.part(r) for r in merged[kind.runs] if kind.part(r) not in before]}


def headline(record: dict[str, Any]) -> dict[str, Any]:
    """The numbers a table shows for ``record``."""
    return {k: record[k] for k in KINDS[record["bench"]].headline(record) if k in record}


def bench(args: argparse.Namespace) -> int:
    """``matlang bench merge``: merge, check, write (in place, or ``--out``), summarise."""
    into = Path(args.into)
    sources = [Path(s) for s in args.sources]
    old = read_piece(into)
    merged = merge_files(into, old, sources)
    target = Path(args.out) if args.out else into
    if target.resolve() != into.resolve() and target.exists() and not args.force:
        raise MatlangError(
            f"matlang bench merge: {target} exists; it is never replaced without --force "
            "(without --out the merge goes into INTO, which only gains runs)"
        )
    if not args.dry_run:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_json(target, merged)
    summary = to_json(
        {  # plain JSON values, printed alike with and without --json
            "file": str(target),
            "written": not args.dry_run,
            "bench": merged["bench"],
            "model": merged.get("model"),
            "added": added(old, merged),
            **headline(merged),
            "partial": merged.get("partial"),
        }
    )
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        for k, v in summary.items():
            print(f"{k}: {plain(v)}")
    return 0


def plain(value: Any) -> str:
    """A summary value as a person reads it: yes/no, none, JSON for lists and objects (not
    Python's reprs: ``True``, ``None``, ``{'seeds': [3]}``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
