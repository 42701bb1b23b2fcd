"""Options and inputs shared by the subcommands: graphs (``--graph``, ``--graph6``, ``--file``)
and sentences (an argument or ``--sentences FILE``)."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path
from typing import Any

from matlang.errors import GraphError, MatlangError, SourceError


def add_graph_arguments(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The graph options shared by ``eval``, ``classify`` and ``compile``."""
    g = p.add_argument_group("graphs (repeatable)")
    g.add_argument(
        "--graph",
        action="append",
        default=[],
        metavar="NAME",
        help="a built-in graph (decalin, petersen, cycle6, K4, ...) or a graph6 string, as "
        "classify prints witnesses",
    )
    g.add_argument("--graph6", action="append", default=[], metavar="G6", help="a graph6 string")
    g.add_argument("--file", action="append", default=[], metavar="FILE.g6", help="a graph6 file")


def graphs_from_args(args: argparse.Namespace, *, default: list[str] | None = None) -> list[Any]:
    from matlang.graphs import from_graph6, named, read_graph6

    graphs = [named_or_graph6(n) for n in args.graph]
    graphs += [from_graph6(s, name=s) for s in args.graph6]
    for f in args.file:
        graphs += read_graph6(f)
    if not graphs and default:
        graphs = [named(n) for n in default]
    if not graphs:
        raise MatlangError("no graphs: give --graph NAME, --graph6 G6 or --file FILE.g6")
    return graphs


def named_or_graph6(name: str) -> Any:
    """``--graph NAME``: a built-in graph, else a graph6 string (classify prints witnesses
    either way), else an error that names the closest built-in graph."""
    from matlang.graphs import from_graph6, named, named_graph_names

    try:
        return named(name)
    except GraphError as not_named:
        try:
            return from_graph6(name, name=name)
        except GraphError:
            pass
        if re.fullmatch(r"(cycle|path|complete|star|empty|C|P|K)\d+", name):
            raise  # a family with a size out of range: named() said so
        known = [n.removesuffix("N") + "6" if n.endswith("N") else n for n in named_graph_names()]
        by_lower = {k.lower(): k for k in known}  # cospectral_g → cospectral_G, not _H
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
        if not close:
            raise
        hint = f" (did you mean '{by_lower[close[0]]}'?); known:"
        raise GraphError(str(not_named).replace("; known:", hint)) from not_named


def read_sentences(args: argparse.Namespace) -> Any:
    """The sentence argument, or the file of ``--sentences``. A bad line of the file is
    reported on stderr (``FILE:line:col``) and left out, and the others go on; the command
    then exits 1 (``args.bad_sentences`` counts them)."""
    from matlang.parser import parse_program

    if args.sentences:
        path = Path(args.sentences)
        if not path.exists():
            raise MatlangError(f"no such sentence file: {path}")
        program = _parse_file(path, path.read_text(encoding="utf-8-sig"), args)
    elif args.sentence is not None:
        program = parse_program(args.sentence)
    else:
        raise MatlangError("give a sentence or --sentences FILE")
    if not program.sentences:
        given = "only definitions were given" if _has_text(program) else "the text is empty"
        if vars(args).get("bad_sentences"):
            given = f"every sentence of {args.sentences} was left out, above"
        raise MatlangError(f"no sentence to work on ({given})")
    return program


def _parse_file(path: Path, text: str, args: argparse.Namespace) -> Any:
    """Parse ``text``; on an error at a line, blank that line (so later lines keep their
    numbers), report it and parse again."""
    from matlang.parser import parse_program

    lines = text.split("\n")
    bad: dict[int, str] = {}
    while True:
        try:
            program = parse_program("\n".join(lines))
            break
        except SourceError as e:
            if e.span is None or not lines[e.span.line - 1].strip():
                raise
            bad[e.span.line] = str(e if e.text is not None else e.located("\n".join(lines)))
            lines[e.span.line - 1] = ""
    for line in sorted(bad):  # in the file's order, whichever stage found them
        print(f"{path}:{bad[line]}\n{path}:{line}: line left out, going on", file=sys.stderr)
    args.bad_sentences = getattr(args, "bad_sentences", 0) + len(bad)
    return program


def output_options(p: argparse.ArgumentParser, *, threads: int | None = None) -> None:
    """Where a run's summary and result file go, and torch's threads (``threads``: the
    default, ``None`` for torch's choice); every bench that writes a result file takes them."""
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--out", default="results", help="folder for the result file")
    p.add_argument("--no-save", action="store_true", help="do not write a result file")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a result file that exists (never replaced otherwise)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="write into results/ from a tree with uncommitted changes (the file records the "
        "diff's hash and the report marks its cells); refused otherwise",
    )
    default = "torch's choice" if threads is None else threads
    p.add_argument(
        "--threads", type=int, default=threads, help=f"torch CPU threads (default {default})"
    )


def _has_text(program: Any) -> bool:
    """Whether a program's text holds anything but blanks and comments (a ``let``, an
    ``input``)."""
    lines = (program.text or "").splitlines()
    return any(ln.split("#", 1)[0].strip() for ln in lines)


def error_json(e: MatlangError) -> dict[str, object]:
    """An error as JSON: its kind, message, ``line:col`` and hint when it has them, and the
    text the command line prints."""
    span = getattr(e, "span", None)
    return {
        "kind": getattr(e, "kind", type(e).__name__),
        "message": getattr(e, "message", str(e)),
        "at": f"{span.line}:{span.col}" if span is not None else None,
        "hint": getattr(e, "hint", None),
        "text": str(e),
    }


def read_edge_pairs(path: str, *, one_pair: bool = False) -> Any:
    """An edge-list file (text: ``u v`` a line; or ``.npy``) as a ``(2, E)`` int64 array in
    file order, or a :class:`GraphError` naming the file and the first bad line. ``one_pair``:
    a file of a single edge (read as a 1-D array) is that edge."""
    import numpy as np

    try:
        raw = np.load(path) if path.endswith(".npy") else np.loadtxt(path, dtype=np.int64)
    except (OSError, ValueError) as err:
        where = _first_bad_line(path) if isinstance(err, ValueError) else None
        raise GraphError(f"cannot read the edge list {path}: {where or err}", path) from None
    ei = np.asarray(raw, dtype=np.int64)
    if one_pair and ei.ndim == 1 and ei.size == 2:
        ei = ei.reshape(1, 2)
    if ei.ndim == 2 and ei.shape[1] == 2 and ei.shape[0] != 2:
        ei = ei.T
    if ei.size == 0:
        ei = ei.reshape(2, 0)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise GraphError(f"an edge list must hold (u, v) pairs, got shape {raw.shape}", path)
    return ei


def _first_bad_line(path: str) -> str | None:
    """Where a text edge list is not two whole numbers a line (numpy's own message counts
    rows from 0 and columns from 1): ``line 2: 'x' is not a node id``."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for k, line in enumerate(lines, 1):
        fields = line.split("#")[0].split()
        if not fields:
            continue
        bad = next((f for f in fields if not f.lstrip("-").isdigit()), None)
        if bad is not None:
            return f"line {k}: {bad!r} is not a node id (a line holds two whole numbers, u v)"
        if len(fields) != 2:
            return f"line {k} holds {len(fields)} numbers, not an edge u v"
    return None
