"""Rewrite rules on pointwise functions (facts from sympy) and linear combinations (collected
and expanded by sympy)."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from matlang.algebra import (
    column,
    identity,
    is_adjacency,
    number,
    ones,
)
from matlang.ast import (
    Add,
    Apply,
    Diag,
    Expr,
    Hadamard,
    Input,
    Mul,
    Number,
    Sub,
)
from matlang.fragments import affine_coefficients
from matlang.functions import polynomial_degree
from matlang.linear import is_linear_node
from matlang.rewrite import BINARY, LOOPLESS, RewriteContext, Rule
from matlang.shapes import MATRIX

# --------------------------------------------------------------------------- pointwise functions


def _exact_at(node: Apply, point: tuple[int, ...]) -> sp.Expr | None:
    """f at a point (one value per non-literal argument), exactly, when it is finite and real."""
    consts = node.constants
    formula = node.function.specialize(consts)
    syms = [s for i, s in enumerate(node.function.symbols) if i not in consts]
    try:
        v = sp.sympify(formula.subs(dict(zip(syms, point))))
    except (TypeError, ValueError, ZeroDivisionError):  # pragma: no cover - sympy edge cases
        return None
    return v if v.is_finite and v.is_real else None


def _value_at(node: Apply, point: tuple[int, ...]) -> Fraction | None:
    """f at a point (one value per non-literal argument), when it is a finite rational."""
    v = _exact_at(node, point)
    if v is not None and v.is_Rational:
        return Fraction(int(v.p), int(v.q))
    return None


def _constant_at(node: Apply, point: tuple[int, ...]) -> tuple[Fraction | None, Expr] | None:
    """f at a point as a constant of the language, when it is finite and real: (its value,
    the number) when rational, else (None, f(point)) — the call on literals, e.g. exp(1)."""
    v = _exact_at(node, point)
    if v is None:
        return None
    if v.is_Rational:
        r = Fraction(int(v.p), int(v.q))
        return r, number(r)
    values = iter(point)
    args = tuple(a if isinstance(a, Number) else Number(Fraction(next(values))) for a in node.args)
    return None, Apply(node.function, args)


def _difference(a: tuple[Fraction | None, Expr], b: tuple[Fraction | None, Expr]) -> Expr:
    """a − b for two constants of :func:`_constant_at` (a number when both are rational)."""
    if a[0] is not None and b[0] is not None:
        return number(a[0] - b[0])
    return Sub(a[1], b[1])


def _pointwise_numbers(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Apply) and all(isinstance(a, Number) for a in e.args):
        v = _value_at(e, tuple(a.value for a in e.args))  # type: ignore[attr-defined]
        return None if v is None else number(v)
    return None


def _pointwise_affine(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Apply) or e.shape.is_scalar and not e.variable_args:
        return None
    if all(isinstance(a, Number) for a in e.args):
        return None
    ab = affine_coefficients(e)
    if ab is None:
        return None
    coeffs, b = ab
    out: Expr = Mul(number(b), ones(e.shape)) if not e.shape.is_scalar else number(b)
    for a, x in zip(coeffs, e.variable_args):
        out = Add(out, Mul(number(a), x))
    return out


def _pointwise_adjacency(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Apply) or not e.variable_args:
        return None
    if not all(is_adjacency(a) for a in e.variable_args):
        return None
    k = len(e.variable_args)
    f0, f1 = _constant_at(e, (0,) * k), _constant_at(e, (1,) * k)
    if f0 is None or f1 is None:
        return None
    # Aᵢⱼ ∈ {0, 1}, Aᵢᵢ = 0: f(A) = f(0) 𝟏𝟏ᵀ + (f(1) − f(0)) A; f(0), f(1) may be irrational
    # constants (exp(1)), which stay calls on literals
    return Add(Mul(f0[1], ones(MATRIX)), Mul(_difference(f1, f0), Input("A", MATRIX)))


def _pointwise_diagonal(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Apply) or not e.variable_args or not e.shape.is_matrix:
        return None
    if not all(isinstance(a, Diag) for a in e.variable_args):
        return None
    f0 = _value_at(e, (0,) * len(e.variable_args))
    if f0 is None:
        return None
    inner = Apply(
        e.function,
        tuple(a if isinstance(a, Number) else column(a.operand) for a in e.args),  # type: ignore
    )
    # off the diagonal every argument is 0: f(diag v) = diag(f(v)) + f(0) (𝟏𝟏ᵀ − I)
    if f0 == 0:
        return Diag(inner)
    return Add(Diag(inner), Mul(number(f0), Sub(ones(MATRIX), identity())))


def _pointwise_ones(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Apply) or not e.variable_args or e.shape.is_scalar:
        return None
    if not all(a == ones(e.shape) for a in e.variable_args):
        return None
    f1 = _constant_at(e, (1,) * len(e.variable_args))
    return None if f1 is None else Mul(f1[1], ones(e.shape))


_HADAMARD_DEGREE = 6  # the largest total degree written out as Hadamard powers


def _pointwise_polynomial(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Apply) or not e.shape.is_matrix or not e.variable_args:
        return None
    consts = e.constants
    formula = e.function.specialize(consts)
    syms = [s for i, s in enumerate(e.function.symbols) if i not in consts]
    degree = polynomial_degree(formula, syms)
    if degree is None or degree < 2 or degree > _HADAMARD_DEGREE:
        return None  # affine functions have their own rule
    # f(M₁, …) = Σ c_α ⊙ᵢ Mᵢ^⊙αᵢ entrywise (M^⊙0 = 𝟏𝟏ᵀ): a polynomial of matrices is a sum of
    # Hadamard products, the spelling the ⊙ rules (bilinear forms, diagonals) work on
    out: Expr | None = None
    for monomial, c in sp.Poly(sp.expand(formula), *syms).terms():
        term: Expr | None = None
        for x, k in zip(e.variable_args, monomial):
            for _ in range(k):
                term = x if term is None else Hadamard(term, x)
        body = ones(MATRIX) if term is None else term
        coef = Fraction(int(c.p), int(c.q))
        piece = body if coef == 1 else Mul(number(coef), body)
        out = piece if out is None else Add(out, piece)
    return out


#: Pointwise functions (facts from sympy).
POINTWISE_RULES: tuple[Rule, ...] = (
    Rule("pointwise_numbers", "f(numbers) = its rational value", _pointwise_numbers),
    Rule("pointwise_affine", "f(X) = a X + b 𝟏  for affine f(x) = a x + b", _pointwise_affine),
    Rule(
        "pointwise_adjacency",
        "f(A) = f(0) 𝟏𝟏ᵀ + (f(1) − f(0)) A",
        _pointwise_adjacency,
        (BINARY, LOOPLESS),
    ),
    Rule("pointwise_diagonal", "f(diag v) = diag(f(v)) + f(0) (𝟏𝟏ᵀ − I)", _pointwise_diagonal),
    Rule("pointwise_ones", "f(𝟏) = f(1) 𝟏", _pointwise_ones),
    Rule(
        "pointwise_polynomial",
        "f(M, N) = Σ c_ab M^⊙a ⊙ N^⊙b  for polynomial f (M^⊙0 = 𝟏𝟏ᵀ; total degree ≤ 6)",
        _pointwise_polynomial,
    ),
)


# --------------------------------------------------------------------------- linear combinations


def _linear_canonical(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not is_linear_node(e):
        return None
    return ctx.linear(e)


#: Scalar arithmetic and linear combinations, canonical by sympy.
LINEAR_RULES: tuple[Rule, ...] = (
    Rule(
        "linear_canonical",
        "sums of scalar multiples collected and expanded by sympy (X − X = 0, 2(3M) = 6M, ...)",
        _linear_canonical,
    ),
)


__all__ = ["POINTWISE_RULES", "LINEAR_RULES"]
