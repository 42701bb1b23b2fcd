"""Subcommands of the language: ``matlang parse`` and ``matlang eval``."""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from matlang.errors import MatlangError


def register(sub: Any) -> None:
    """Add ``parse`` and ``eval`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "parse",
        help="show a sentence's canonical text, LaTeX and shape",
        description="Parse sentences and print canonical text, LaTeX and shape of each.",
    )
    p.add_argument("sentence", nargs="?", help="a sentence (or use --sentences FILE)")
    p.add_argument("--sentences", metavar="FILE", help="a file of sentences")
    p.add_argument("--ascii", action="store_true", help="canonical text in ASCII")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_parse)

    e = sub.add_parser(
        "eval",
        help="evaluate sentences exactly on graphs",
        description="Evaluate sentences with the exact dense evaluator.",
    )
    e.add_argument("sentence", nargs="?", help="a sentence (or use --sentences FILE)")
    e.add_argument("--sentences", metavar="FILE", help="a file of (named) sentences")
    add_graph_arguments(e)
    e.add_argument("--float", action="store_true", help="evaluate in float64 instead of exactly")
    e.add_argument("--json", action="store_true", help="print JSON")
    e.set_defaults(func=run_eval)


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
    from runtime.graphs import from_graph6, named, read_graph6

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


def jsonable(v: Any) -> Any:
    """Exact integers stay JSON integers; fractions become [numerator, denominator]-free floats
    only when inexact: a Fraction is written as the string 'p/q'."""
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.tolist()] if v.dtype != object else [jsonable(x) for x in v]
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    if isinstance(v, (float, np.floating)):
        return float(v)
    return v


def show(v: Any) -> str:
    j = jsonable(v)
    return json.dumps(j) if isinstance(j, list) else str(j)


def run_parse(args: argparse.Namespace) -> int:
    from matlang.printer import to_latex, to_text

    program = read_sentences(args)
    rows = []
    for i, s in enumerate(program):
        rows.append(
            {
                "name": s.name or f"#{i}",
                "text": to_text(s.expr, ascii=args.ascii),
                "latex": to_latex(s.expr),
                "shape": str(s.expr.shape),
            }
        )
    if args.json:
        print(json.dumps(rows if len(rows) > 1 else rows[0], ensure_ascii=False, indent=2))
        return 0
    for r in rows:
        if len(rows) > 1:
            print(f"{r['name']}:")
        print(f"  text:  {r['text']}\n  latex: {r['latex']}\n  shape: {r['shape']}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from compiler.dense import evaluate_graph

    program = read_sentences(args)
    graphs = graphs_from_args(args)
    results = []
    for s in program:
        vals = [
            evaluate_graph(s.expr, g, exact=not args.float, input_order=program.inputs)
            for g in graphs
        ]
        results.append((s, vals))
    if args.json:
        if len(results) == 1:
            out: Any = {"values": jsonable(results[0][1])}
        else:
            out = {
                "graphs": [g.label() for g in graphs],
                "sentences": [{"name": s.name, "values": jsonable(v)} for s, v in results],
            }
        print(json.dumps(out))
        return 0
    for i, (s, vals) in enumerate(results):
        if len(results) > 1:
            print(f"{s.name or '#' + str(i)}:")
        for g, v in zip(graphs, vals):
            print(f"  {g.label()}: {show(v)}")
    sys.stdout.flush()
    return 0
