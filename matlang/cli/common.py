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




# --------------------------------------------------------------------------- the experiments

#: How to get the experiments when they are not installed (they are not part of the wheel).
BENCHMARKS_HINT = (
    "the experiments are the separate distribution matlang-benchmarks: from a clone of the "
    "repository, run `pip install -e benchmarks` (bash .ci/setup does)"
)


def benchmarks_installed() -> bool:
    """Whether the ``benchmarks`` distribution (the paper's experiments) can be imported: a
    package named ``benchmarks`` whose folder holds ``paper/`` and ``records.py`` (a user's own
    ``benchmarks/`` folder in the working directory is not it)."""
    from importlib.util import find_spec

    try:
        spec = find_spec("benchmarks")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(
        (Path(loc) / "paper").is_dir() and (Path(loc) / "records.py").is_file()
        for loc in spec.submodule_search_locations
    )


def add_missing_benchmarks(sub: Any, name: str, help: str) -> None:
    """Register ``name`` as a command that says how to install the experiments."""
    p = sub.add_parser(name, help=f"{help} (needs matlang-benchmarks)", add_help=True)
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def missing(args: Any) -> int:
        raise MatlangError(f"matlang {name}: {BENCHMARKS_HINT}")

    p.set_defaults(func=missing)
