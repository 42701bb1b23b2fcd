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

``--replace`` lets FROM's runs take the place of INTO's runs of the same seeds, folds or pairs
(a piece re-run from a clean tree, say, over one written from a dirty one). Nothing is thrown
away: a piece of INTO's provenance every run of which was replaced moves from ``"earlier"`` to
``"replaced"`` (with ``"replaced_by"``, the command that replaced it) and no longer counts as
the file's provenance (:func:`benchmarks.records.is_dirty` reads the live pieces); a piece only
some of whose runs were replaced stays, listing them under ``"replaced_parts"``. Which runs a
piece added is read from the parts it lists (``seeds``, BREC's ``pairs_run``), oldest piece
first; TU pieces list seeds, not folds, so theirs stay in place.

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
        listed: the parts a provenance piece lists (the runs it added, with those of the
            pieces before it for an ``--append`` run), or None where it lists none it can be
            told by.
    """

    runs: str
    parts: str
    part: Callable[[dict[str, Any]], Any]
    merge: Callable[[Path, dict[str, Any], Path, dict[str, Any]], dict[str, Any]]
    headline: Callable[[dict[str, Any]], list[str]]
    listed: Callable[[dict[str, Any]], set[Any] | None]


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


def _listed(key: str) -> Callable[[dict[str, Any]], set[Any] | None]:
    def listed(piece: dict[str, Any]) -> set[Any] | None:
        parts = piece.get(key)
        return set(parts) if isinstance(parts, list) else None

    return listed


_SEEDS = Kind(
    "runs",
    "seeds",
    lambda r: r["seed"],
    _merge_seeds,
    lambda rec: [k for k in rec if k.startswith("median_")] + ["per_seed"],
    _listed("seeds"),
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
        lambda piece: None,  # a piece lists seeds; its folds are not recorded
    ),
    "brec": Kind(
        "per_pair",
        "pairs",
        lambda r: r["pair"],
        _merge_pairs,
        lambda rec: ["pairs", "separated", "counts"],
        _listed("pairs_run"),
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


def contributions(
    kind: Kind, record: dict[str, Any]
) -> list[tuple[dict[str, Any], set[Any] | None]]:
    """Each provenance piece of ``record`` (the top one, then ``"earlier"``) with the parts it
    added: what it lists less what the pieces finished before it list (an ``--append`` run
    lists the seeds of the file it grew); None where it lists none."""
    pieces = [record, *record.get("earlier", [])]
    order = sorted(range(len(pieces)), key=lambda i: (str(pieces[i].get("finished") or ""), -i))
    seen: set[Any] = set()
    added: dict[int, set[Any] | None] = {}
    for i in order:
        listed = kind.listed(pieces[i])
        added[i] = None if listed is None else listed - seen
        seen |= listed or set()
    return [(pieces[i], added[i]) for i in range(len(pieces))]


def _without(kind: Kind, record: dict[str, Any], parts: set[Any]) -> dict[str, Any]:
    """``record`` less its runs of ``parts`` (the summary is recomputed by the merge)."""
    runs = [r for r in record[kind.runs] if kind.part(r) not in parts]
    rest = {**record, kind.runs: runs}
    if kind.parts == "seeds":
        rest["seeds"] = [r["seed"] for r in runs]
    return rest


def merge_into(
    into: Path,
    old: dict[str, Any],
    source: Path,
    new: dict[str, Any],
    *,
    replace: bool = False,
) -> dict[str, Any]:
    """``old`` (the file at ``into``) with the runs of ``new`` (the file at ``source``) added,
    as ``--append`` adds a run's; the pieces' provenance kept, ``partial`` recomputed. With
    ``replace``, ``new``'s runs take the place of ``old``'s of the same parts, and the pieces of
    ``old`` they wholly replace move to ``"replaced"`` (module docstring)."""
    if new["bench"] != old["bench"]:
        raise MatlangError(
            f"{_action(source)}: {into} is bench {old['bench']!r}, {source} is {new['bench']!r}"
        )
    kind = KINDS[old["bench"]]
    again = {kind.part(r) for r in new[kind.runs]} & {kind.part(r) for r in old[kind.runs]}
    if not (replace and again):
        merged = kind.merge(into, old, source, new)
        # the earlier pieces of ``new`` (its own --append runs) stay beside those of ``old``
        merged["earlier"] = [*merged.get("earlier", []), *new.get("earlier", [])]
        return merged
    pieces = contributions(kind, old)
    merged = kind.merge(into, _without(kind, old, again), source, new)
    # the piece that was old's top keeps the parts it listed, not what is left of them
    listed_key = "seeds" if kind.parts == "seeds" else None
    if listed_key and merged.get("earlier"):
        merged["earlier"][0][listed_key] = old.get(listed_key)
    # every kind's merge puts old's top piece first under "earlier", then old's "earlier"
    live: list[dict[str, Any]] = []
    gone: list[dict[str, Any]] = []
    for piece, (_, added) in zip(merged.get("earlier", []), pieces, strict=True):
        if added and added <= again:
            gone.append(
                {**piece, "replaced_parts": sorted(added), "replaced_by": new.get("command")}
            )
        elif added and added & again:
            live.append({**piece, "replaced_parts": sorted(added & again)})
        else:
            live.append(piece)
    merged["earlier"] = [*live, *new.get("earlier", [])]
    merged["replaced"] = [*old.get("replaced", []), *gone]
    return merged


def merge_files(
    into: Path, old: dict[str, Any], sources: Sequence[Path], *, replace: bool = False
) -> dict[str, Any]:
    """``old`` (the file at ``into``) with the runs of every file in ``sources`` added, in
    order (``replace``: :func:`merge_into`)."""
    seen = {into.resolve()}
    merged = old
    for source in sources:
        if source.resolve() in seen:
            raise MatlangError(f"matlang bench merge: {source} is given twice")
        seen.add(source.resolve())
        piece = read_piece(source)
        try:
            merged = merge_into(into, merged, source, piece, replace=replace)
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


def replaced(old: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    """Which of ``old``'s runs the merge replaced (``--replace``), in order: the parts whose
    run in ``merged`` is not ``old``'s (a merge keeps the run objects it does not replace)."""
    kind = KINDS[merged["bench"]]
    before = {kind.part(r): r for r in old[kind.runs]}
    return {
        kind.parts: [
            kind.part(r)
            for r in merged[kind.runs]
            if kind.part(r) in before and before[kind.part(r)] is not r
        ]
    }


def headline(record: dict[str, Any]) -> dict[str, Any]:
    """The numbers a table shows for ``record``."""
    return {k: record[k] for k in KINDS[record["bench"]].headline(record) if k in record}


def bench(args: argparse.Namespace) -> int:
    """``matlang bench merge``: merge, check, write (in place, or ``--out``), summarise."""
    into = Path(args.into)
    sources = [Path(s) for s in args.sources]
    target = Path(args.out) if args.out else into
    if target.is_dir():  # --force replaces a file, never a folder
        raise MatlangError(
            f"matlang bench merge: --out {target} is a folder; --out names the merged file "
            f"(e.g. {target / into.name})"
        )
    old = read_piece(into)
    replace = bool(getattr(args, "replace", False))
    merged = merge_files(into, old, sources, replace=replace)
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
            **({"replaced": replaced(old, merged)} if replace else {}),
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
