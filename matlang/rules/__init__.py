"""The rewrite rules as data: one table per family, each rule with its identity.

A rule is ``Rule(name, identity, fn, assumes)`` (:class:`matlang.rewrite.Rule`): ``fn(node,
ctx)`` returns the rewritten node or None. :data:`RULES` is the families' tables in the order the
engine (:func:`matlang.rewrite.normalize`) tries them at every node. Rules are chosen so that
they can lower the fragment (tr(A²) → 𝟏ᵀA𝟏 leaves L2; 𝟏ᵀ(M ⊙ N)𝟏 → tr(M Nᵀ) leaves L3) or bring
a sentence into the canonical shape the lowering rules match (transposes pushed to the leaves,
products flattened and left-associated, linear combinations collected by sympy).

Soundness. Every rule preserves the value of a sentence on every **simple undirected graph**
(A symmetric, 0/1, empty diagonal) wherever the sentence is defined; rules that need one of these
facts list it in ``assumes``. A rule may make a sentence defined where it was not (0·(1/0) → 0).
Each rule is tested against the exact evaluator in ``tests/matlang/test_rewrite_soundness.py``.

Identities in paper notation; u, v, w are columns, r a row, s a scalar, M, N matrices, c r an
outer product, dg(M) = (M ⊙ I)𝟏.
"""

from __future__ import annotations

from matlang.rewrite import BINARY, LOOPLESS, SYMMETRIC, Rule
from matlang.rules.hadamard import HADAMARD_RULES
from matlang.rules.pointwise import LINEAR_RULES, POINTWISE_RULES
from matlang.rules.products import DIAG_POWER_RULES, PRODUCT_RULES, TRANSPOSE_RULES
from matlang.rules.traces import BILINEAR_RULES, TRACE_RULES

#: The rule table, tried in this order at every node.
RULES: tuple[Rule, ...] = (
    *TRANSPOSE_RULES,
    *DIAG_POWER_RULES,
    *PRODUCT_RULES,
    *HADAMARD_RULES,
    *TRACE_RULES,
    *BILINEAR_RULES,
    *POINTWISE_RULES,
    *LINEAR_RULES,
)

RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}


__all__ = [
    "BINARY",
    "BILINEAR_RULES",
    "DIAG_POWER_RULES",
    "HADAMARD_RULES",
    "LINEAR_RULES",
    "LOOPLESS",
    "POINTWISE_RULES",
    "PRODUCT_RULES",
    "RULES",
    "RULES_BY_NAME",
    "SYMMETRIC",
    "TRACE_RULES",
    "TRANSPOSE_RULES",
]
