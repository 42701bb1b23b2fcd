"""The ``matlang`` command line.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``, which
adds a parser and sets ``func`` (called with the parsed namespace, returning an exit code). Other
distributions add commands through the ``matlang.cli`` entry point group
(:mod:`matlang.cli.plugins`: the experiments' ``bench`` and ``report``). Errors the user can
cause are :class:`~matlang.errors.MatlangError` and are printed without a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from matlang.cli import (
    bank,
    classify,
    compile,
    count,
    data,
    eval,
    models,
    parse,
    pattern,
    plugins,
    serve,
    wl,
)
from matlang.cli.common import error_json
from matlang.errors import MatlangError

#: The subcommands, in the order ``matlang --help`` lists them. Each module adds its parser in
#: ``register(subparsers)`` and imports what its command needs (torch, models, data) only when
#: the command runs, so ``matlang parse|eval|classify|wl`` start without torch. The plugins'
#: commands (:mod:`matlang.cli.plugins`) follow them.
COMMANDS = (parse, eval, compile, classify, pattern, count, wl, bank, models, data, serve)


class Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a mistyped command or choice (``matlang clasify``,
    ``matlang bench tus``); its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        m = re.match(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if m:
            # quoted choices, or unquoted as newer Pythons print them
            choices = re.findall(r"'([^']*)'", m.group(3)) or m.group(3).split(", ")
            close = difflib.get_close_matches(m.group(2), choices, n=1, cutoff=0.5)
            if close:
                message += f"; did you mean '{close[0]}'?"
        m = re.match(r"unrecognized arguments: (.*)$", message)
        sentence = next(
            (a for a in (m.group(1).split(" ") if m else []) if re.match(r"-[^-\s]*[^\w-]", a)),
            None,
        )
        if sentence is not None:  # '-A^2' read as an option: a sentence starting with '-'
            message += (
                f"; a sentence starting with '-' reads as an option: write it in brackets, "
                f"'({sentence})', or last, after '--'"
            )
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="matlang",
        description="Compile MATLANG sentences to graph neural network layers.",
    )
    from matlang import __version__

    parser.add_argument("--version", action="version", version=f"matlang {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    plugins.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the (sub)command that was given them, with its usage, not the top's
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = int(args.func(args) or 0)
    except MatlangError as e:
        if getattr(args, "json", False):  # a JSON reader gets JSON on stdout, errors included
            print(json.dumps({"error": error_json(e)}, ensure_ascii=False))
        print(str(e), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    # ``--sentences FILE`` goes on past a bad line (reported on stderr), but the run failed
    return 1 if code == 0 and vars(args).get("bad_sentences", 0) else code


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The parser of the deepest subcommand ``args`` went through (``matlang bench tu``)."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = None if sub is None else getattr(args, sub.dest or "", None)
        if sub is None or name not in sub.choices:
            return parser
        parser = sub.choices[name]


if __name__ == "__main__":
    sys.exit(main())
