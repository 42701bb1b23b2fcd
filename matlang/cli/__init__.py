"""The ``matlang`` command line.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``, which
adds a parser and sets ``func`` (called with the parsed namespace, returning an exit code). Errors
the user can cause are :class:`~matlang.errors.MatlangError` and are printed without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from matlang.cli import (
    bank,
    bench,
    classify,
    compile,
    data,
    eval,
    models,
    parse,
    pattern,
    report,
    wl,
)
from matlang.errors import MatlangError

#: The subcommands, in the order ``matlang --help`` lists them. Each module adds its parser in
#: ``register(subparsers)`` and imports what its command needs (torch, models, data) only when
#: the command runs, so ``matlang parse|eval|classify|wl`` start without torch.
COMMANDS = (parse, eval, compile, classify, pattern, wl, bank, models, data, bench, report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="matlang",
        description="Compile MATLANG sentences to graph neural network layers.",
    )
    from matlang import __version__

    parser.add_argument("--version", action="version", version=f"matlang {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MatlangError as e:
        print(str(e), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
