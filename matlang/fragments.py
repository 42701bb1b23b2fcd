"""Which fragment of MATLANG a sentence is in, and the operations that force it.

The paper (Balcilar et al., ICML 2021, Remarks 1–4, after Geerts 2020) fixes three fragments of
MATLANG, each with the ``+`` enrichment (sums, differences, scalar products and quotients, and
pointwise functions of vectors or scalars, which never raise the level):

* **L1** = {·, ᵀ, 𝟏, diag}: two graphs agree on every L1⁺ sentence exactly when 1-WL cannot tell
  them apart (Remark 1), so one L1⁺ sentence is *at most 1-WL*.
* **L2** = L1 ∪ {tr}: strictly more than 1-WL, strictly less than 3-WL (Remark 2).
* **L3** = L2 ∪ {⊙}: exactly as strong as 3-WL (Remark 3), so one sentence is *at most 3-WL*.

A Hadamard product of vectors or scalars is L1 (v ⊙ w = diag(v) w), and so is a pointwise function
of vectors. A pointwise function of matrices counts as ⊙ unless it is affine in its matrix
arguments: ``square(M)`` *is* M ⊙ M, and ``1ᵀ square(A²) 1`` separates the 1-WL-equivalent pair
cycle8 / two 4-cycles, so only affine functions of matrices (a·M + b) stay in the enrichment.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import sympy as sp

from matlang import ast
from matlang.errors import Span
from matlang.functions import Function, polynomial_degree

#: Names of the fragments, by level.
FRAGMENTS: dict[int, str] = {1: "L1", 2: "L2", 3: "L3"}


# --------------------------------------------------------------------------- function facts


@lru_cache(maxsize=512)
def _affine(fn: Function, constants: tuple[tuple[int, Fraction], ...]) -> tuple | None:
    formula = fn.specialize(dict(constants))
    syms = [s for i, s in enumerate(fn.symbols) if i not in dict(constants)]
    degree = polynomial_degree(formula, syms)
    if degree is None or degree > 1:
        return None
    if not syms:
        return None
    poly = sp.Poly(sp.expand(formula), *syms)
    coeffs = []
    for s in syms:
        c = poly.coeff_monomial(s)
        coeffs.append(Fraction(int(c.p), int(c.q)))
    c0 = poly.coeff_monomial(1)
    return tuple(coeffs), Fraction(int(c0.p), int(c0.q))


def affine_coefficients(node: ast.Apply) -> tuple[tuple[Fraction, ...], Fraction] | None:
    """``(a, b)`` when ``f(x₁..x_k) = Σ aᵢ xᵢ + b`` in its non-literal arguments (rational
    coefficients), else None. Decided by sympy."""
    return _affine(node.function, tuple(sorted(node.constants.items())))


# --------------------------------------------------------------------------- fragments


@dataclass(frozen=True)
class Reason:
    """One operation that forces a level: what it is, where it is, and why."""

    level: int
    operation: str
    span: Span | None
    text: str
    why: str
    stage: str = "syntactic"  # "syntactic" (the sentence as written) or "normalized"

    @property
    def at(self) -> str:
        return f"{self.span.line}:{self.span.col}" if self.span is not None else "?"

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "level": FRAGMENTS[self.level],
            "operation": self.operation,
            "at": self.at,
            "text": self.text,
            "why": self.why,
        }

    def __str__(self) -> str:
        return f"{self.at}  {self.operation}  {self.text}  → {FRAGMENTS[self.level]} ({self.why})"


def _matrix_args(node: ast.Apply) -> tuple[ast.Expr, ...]:
    return tuple(a for a in node.variable_args if a.shape.is_matrix)


def forced_level(node: ast.Expr) -> tuple[int, str, str] | None:
    """The level this node's own operation forces, with the operation's name and why; None when
    the operation is in L1⁺ (·, ᵀ, 𝟏, diag, +, −, scalar ×, /, pointwise f of vectors)."""
    if isinstance(node, ast.Trace):
        return 2, "tr", "the trace is in L2 but not in L1"
    if isinstance(node, ast.Hadamard) and node.shape.is_matrix:
        return 3, "⊙", "an entrywise product of matrices is in L3 only"
    if isinstance(node, ast.Apply) and _matrix_args(node):
        if affine_coefficients(node) is not None:
            return None  # a·M + b·𝟏𝟏ᵀ: sums and scalar products only
        name = node.function.name
        if len(node.variable_args) > 1:
            return 3, f"{name}(…)", "a pointwise function of several matrices counts as ⊙"
        return (
            3,
            f"{name}(…)",
            f"a non-affine pointwise function of a matrix counts as ⊙ ({name}(M) can express "
            "M ⊙ M)",
        )
    return None


def fragment(e: ast.Expr) -> int:
    """The level (1, 2 or 3) of the smallest fragment L1⁺ ⊆ L2⁺ ⊆ L3⁺ containing ``e``."""
    level = 1
    for node in e.walk():
        f = forced_level(node)
        if f is not None and f[0] > level:
            level = f[0]
            if level == 3:
                break
    return level


def reasons(e: ast.Expr, *, stage: str = "syntactic") -> list[Reason]:
    """Every operation in ``e`` that forces a level above L1, in source order."""
    from matlang.printer import to_text

    out = []
    for node in e.walk():
        f = forced_level(node)
        if f is not None:
            level, op, why = f
            out.append(Reason(level, op, node.span, to_text(node, definitions=False), why, stage))
    out.sort(key=lambda r: (r.span.start if r.span is not None else 1 << 60, -r.level))
    return out


__all__ = [
    "FRAGMENTS",
    "Reason",
    "affine_coefficients",
    "forced_level",
    "fragment",
    "reasons",
]
