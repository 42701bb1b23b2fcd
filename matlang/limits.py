"""The bounds of every entry point, as a feature: past one, matlang stops at once with a project
error that names the bound (and this module's constant), never a hang or a foreign exception.

=========================  ==========  =====================================================
bound                      value       where it is checked
=========================  ==========  =====================================================
``MAX_SENTENCE_CHARS``     100 000     parser: the length of a program text
``MAX_NESTING``            200         parser: brackets and operators nested in one another
``MAX_LITERAL_DIGITS``     100         parser: significant digits of a number literal
``MAX_LITERAL_EXPONENT``   300         parser: ``|e|`` of a literal ``1e300`` (float64 range)
``MAX_EXPONENT``           10 000      every AST: a power ``M^k`` (parser, ``ast.Power``)
``MAX_DIGITS``             4 000       exact evaluator: digits of an exact number (beyond,
                                       ``exact=False`` / ``--float`` answers in float64)
``MAX_COMPILED_SIZE``      256         compiler: operations of a sentence with its powers
                                       multiplied out and its ``let`` bindings expanded
                                       (``tr(A^254)``: 256)
``MAX_DIAG_POWER``         100         ``classify``: a power ``diag(v)^k`` (the rewrites unroll
                                       it into ``k`` nested products; Python's recursion
                                       follows about 110)
``WITNESS_SECONDS``        20          ``classify``: time spent searching a witness pair
``MAX_DENSE_NODES``        20 000      dense graphs (:class:`~matlang.graphs.Graph`, built-in
                                       names such as ``K20000``, the dense evaluator): nodes of
                                       one graph held as an ``n × n`` array (3.2 GB of int64)
``MAX_NODES``              10⁹         sparse batches (compiled modules, layers, ``--sparse``,
                                       ``--edges``): ``num_nodes`` and every node id + 1 (the
                                       node arrays are O(N): 8 GB per int64 vector)
=========================  ==========  =====================================================

Every value is generous for the language's use (the paper's sentences use powers up to 5,
literals of a few digits) and small enough that reaching it takes well under a second.
"""

from __future__ import annotations

MAX_SENTENCE_CHARS = 100_000
MAX_NESTING = 200
MAX_LITERAL_DIGITS = 100
MAX_LITERAL_EXPONENT = 300
MAX_EXPONENT = 10_000
# Python refuses to print ints of more than 4300 digits (sys.int_info.default_max_str_digits):
# every exact value the evaluator returns stays printable.
MAX_DIGITS = 4_000
MAX_COMPILED_SIZE = 256
MAX_DIAG_POWER = 100
WITNESS_SECONDS = 20.0
MAX_DENSE_NODES = 20_000
MAX_NODES = 1_000_000_000


def named(constant: str) -> str:
    """``"the limit MAX_X = v (matlang.limits)"``, for error messages."""
    value = globals()[constant]
    shown = f"{value:_}".replace("_", " ") if isinstance(value, int) else f"{value:g}"
    return f"the limit {constant} = {shown} (matlang.limits)"


__all__ = [
    "MAX_COMPILED_SIZE",
    "MAX_DENSE_NODES",
    "MAX_DIAG_POWER",
    "MAX_DIGITS",
    "MAX_EXPONENT",
    "MAX_LITERAL_DIGITS",
    "MAX_LITERAL_EXPONENT",
    "MAX_NESTING",
    "MAX_NODES",
    "MAX_SENTENCE_CHARS",
    "WITNESS_SECONDS",
    "named",
]
