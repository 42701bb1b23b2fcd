"""Options and inputs shared by the subcommands: graphs (``--graph``, ``--graph6``, ``--file``)
and sentences (an argument or ``--sentences FILE``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from matlang.errors import MatlangError


def add_graph_arguments(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The graph options shared by ``eval``, ``classify`` and ``compile``."""
    g = p.add_argument_group("graphs (repeatable)")
    g.add_argument(
        "--graph",
        action="append",
        default=[],
        metavar="NAME",
        help="a built-in graph: decalin, petersen, cycle6, K4, ...",
    )
    g.add_argument("--graph6", action="append", default=[], metavar="G6", help="a graph6 string")
    g.add_argument("--file", action="append", default=[], metavar="FILE.g6", help="a graph6 file")


def graphs_from_args(args: argparse.Namespace, *, default: list[str] | None = None) -> list[Any]:
    from matlang.graphs import from_graph6, named, read_graph6

    graphs = [named(n) for n in args.graph]
    graphs += [from_graph6(s, name=s) for s in args.graph6]
    for f in args.file:
        graphs += read_graph6(f)
    if not graphs and default:
        graphs = [named(n) for n in default]
    if not graphs:
        raise MatlangError("no graphs: give --graph NAME, --graph6 G6 or --file FILE.g6")
    return graphs


def read_sentences(args: argparse.Namespace) -> Any:
    from matlang.parser import parse_program

    if args.sentences:
        path = Path(args.sentences)
        if not path.exists():
            raise MatlangError(f"no such sentence file: {path}")
        text = path.read_text(encoding="utf-8")
    elif args.sentence is not None:
        text = args.sentence
    else:
        raise MatlangError("give a sentence or --sentences FILE")
    program = parse_program(text)
    if not program.sentences:
        raise MatlangError("no sentence to work on (only definitions were given)")
    return program


