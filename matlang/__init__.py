"""matlang: MATLANG sentences → typed ASTs, exact values, WL levels and GNN layers.

>>> import matlang
>>> e = matlang.parse("tr(A^3) / 6")
>>> matlang.evaluate(e, "K4")
4
"""

from __future__ import annotations

from typing import Any

from matlang.analyzer import Analysis, classify
from matlang.ast import Expr, Program, Sentence
from matlang.errors import MatlangError
from matlang.parser import parse, parse_program
from matlang.printer import to_latex, to_text

__version__ = "0.1.0"


def evaluate(expr: Expr | str, graph: Any, **kwargs: Any) -> Any:
    """The exact value of a sentence on a graph or a list of graphs (see
    :func:`compiler.dense.evaluate`)."""
    from compiler.dense import evaluate as _evaluate

    return _evaluate(expr, graph, **kwargs)


def compile(source: Any, **kwargs: Any) -> Any:  # noqa: A001 - the name the design asks for
    """A sentence (or several) as a trainable ``torch.nn.Module`` on batches of sparse graphs
    (see :func:`compiler.api.compile`; torch is imported here, not with ``import matlang``)."""
    from compiler.api import compile as _compile

    return _compile(source, **kwargs)


__all__ = [
    "Expr",
    "Program",
    "Sentence",
    "MatlangError",
    "parse",
    "parse_program",
    "to_text",
    "to_latex",
    "evaluate",
    "compile",
    "classify",
    "Analysis",
]
