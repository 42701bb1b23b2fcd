"""Structural identities of MATLANG expressions: the one home of the algebra that the rewrite
rules (:mod:`matlang.rules`) and the lowering (:mod:`compiler.lower`, the targets) share.

* builders (rational constants, the all-ones value of a shape, zeros, the identity) and
  predicates (A, I, structural zeros, 𝟏𝟏ᵀ);
* product chains: a product flattened into its scalar coefficients and its ordered factors, and
  back (left-associated, equal neighbours merged into powers); the split of a product that
  passes through a column into an outer product;
* the diagonal of a matrix expression, written without ⊙ on matrices when it is known.

Identities that hold on every matrix are marked as such; those that need A to be the adjacency
of a **simple undirected graph** (symmetric, 0/1, empty diagonal) say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from matlang.ast import (
    Add,
    Apply,
    Diag,
    Div,
    Expr,
    Hadamard,
    Input,
    Mul,
    Neg,
    Number,
    Ones,
    Power,
    Sub,
    Trace,
    Transpose,
)
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR, Shape

# --------------------------------------------------------------------------- builders


def number(v: Fraction | int) -> Expr:
    """A rational constant: a literal, a negated literal, or p / q when p/q is not a finite
    decimal (so that the printed text reads back exactly)."""
    v = Fraction(v)
    if v < 0:
        return Neg(number(-v))
    d = v.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:
        return Number(v)
    return Div(Number(Fraction(v.numerator)), Number(Fraction(v.denominator)))


def ones(shape: Shape) -> Expr:
    """The all-ones value of a shape: 1, 𝟏, 𝟏ᵀ or 𝟏𝟏ᵀ."""
    if shape == SCALAR:
        return Number(Fraction(1))
    if shape == COLUMN:
        return Ones()
    if shape == ROW:
        return Transpose(Ones())
    return Mul(Ones(), Transpose(Ones()))


def zero(shape: Shape) -> Expr:
    """The canonical zero of a shape: 0, 0 𝟏, 0 𝟏ᵀ or 0 (𝟏 𝟏ᵀ)."""
    if shape == SCALAR:
        return Number(Fraction(0))
    return Mul(Number(Fraction(0)), ones(shape))


def identity() -> Expr:
    return Diag(Ones())


def transpose(e: Expr) -> Expr:
    return e if e.shape.is_scalar else Transpose(e)


def column(e: Expr) -> Expr:
    """``e`` as a column vector (a row is transposed)."""
    return Transpose(e) if e.shape == ROW else e


# --------------------------------------------------------------------------- predicates


def is_adjacency(e: Expr) -> bool:
    return isinstance(e, Input) and e.shape == MATRIX


def is_identity(e: Expr) -> bool:
    return isinstance(e, Diag) and isinstance(e.operand, Ones)


def is_zero(e: Expr) -> bool:
    """Structurally zero (0, 0·X, X·0, diag(0), tr(0), 0 ⊙ X, sums of zeros, ...)."""
    if isinstance(e, Number):
        return e.value == 0
    if isinstance(e, (Mul, Hadamard)):
        return is_zero(e.left) or is_zero(e.right)
    if isinstance(e, (Add, Sub)):
        return is_zero(e.left) and is_zero(e.right)
    if isinstance(e, (Neg, Transpose, Diag, Trace)):
        return is_zero(e.operand)
    if isinstance(e, Div):
        return is_zero(e.left)
    if isinstance(e, Power):
        return e.exponent > 0 and is_zero(e.base)
    return False


def is_sum(e: Expr) -> bool:
    """M + N or M − N."""
    return isinstance(e, (Add, Sub))


def is_outer_ones(e: Expr) -> bool:
    """𝟏𝟏ᵀ."""
    return e == ones(MATRIX)


# --------------------------------------------------------------------------- product chains


@dataclass(frozen=True)
class Chain:
    """A product flattened: scalar factors (which commute) and the other factors in order,
    each with its exponent (A³ is ``(A, 3)``)."""

    scalars: tuple[Expr, ...]
    factors: tuple[tuple[Expr, int], ...]

    def expanded(self) -> list[Expr]:
        """The non-scalar factors with powers written out (A³ → A, A, A)."""
        return [f for f, k in self.factors for _ in range(k)]


def flatten(e: Expr) -> Chain:
    """The chain of a product. A scalar product contributes its scalar side as one factor; a
    matrix product of 1×1 values is still a matrix product (associativity holds)."""
    if isinstance(e, Mul):
        if e.is_scalar_product:
            s, x = (e.left, e.right) if e.left.shape.is_scalar else (e.right, e.left)
            inner = flatten(x)  # the scalar side stays one unit: the linear form owns it
            return Chain((s, *inner.scalars), inner.factors)
        left, right = flatten(e.left), flatten(e.right)
        return Chain(left.scalars + right.scalars, left.factors + right.factors)
    if e.shape.is_scalar:
        return Chain((e,), ())
    if isinstance(e, Neg):  # -X = (-1) X
        inner = flatten(e.operand)
        return Chain((Neg(Number(Fraction(1))), *inner.scalars), inner.factors)
    if isinstance(e, Div):  # X / s = (1/s) X
        inner = flatten(e.left)
        return Chain((Div(Number(Fraction(1)), e.right), *inner.scalars), inner.factors)
    if isinstance(e, Power) and e.exponent >= 1:
        inner = flatten(e.base)
        scalars = inner.scalars * e.exponent  # (s M)ᵏ = sᵏ Mᵏ: scalars commute
        if len(inner.factors) == 1:
            f, k = inner.factors[0]
            return Chain(scalars, ((f, k * e.exponent),))
        if scalars:
            return Chain(scalars, ((build_chain((), list(inner.factors)), e.exponent),))
        return Chain((), ((e.base, e.exponent),))
    return Chain((), ((e, 1),))


def build_chain(scalars: tuple[Expr, ...] | list[Expr], factors: list[tuple[Expr, int]]) -> Expr:
    """A chain as a left-associated product: scalar coefficient first, equal neighbours merged
    into powers (A A → A²)."""
    merged: list[tuple[Expr, int]] = []
    for f, k in factors:
        if merged and merged[-1][0] == f and f.shape.is_square:
            merged[-1] = (f, merged[-1][1] + k)
        else:
            merged.append((f, k))
    body: Expr | None = None
    for f, k in merged:
        term = f if k == 1 else Power(f, k)
        body = term if body is None else Mul(body, term)
    coef: Expr | None = None
    for s in scalars:
        coef = s if coef is None else Mul(coef, s)
    if body is None:
        return coef if coef is not None else Number(Fraction(1))
    return body if coef is None else Mul(coef, body)


def split_outer(e: Expr) -> tuple[Expr, Expr] | None:
    """``(c, r)`` with ``e = c r`` (a column times a row) when e's chain passes through a column
    (X c r Y = (X c)(r Y)); the scalar coefficient goes to ``c``."""
    if not (isinstance(e, Mul) and e.shape.is_matrix) or e.is_scalar_product:
        return None
    chain = flatten(e)
    # Factors are never 1×1 (scalars are split off), so the prefix ending at factor i is a
    # column exactly when factor i has one column.
    for i, (f, _) in enumerate(chain.factors[:-1]):
        if f.shape.cols == "1":
            left = build_chain(chain.scalars, list(chain.factors[: i + 1]))
            right = build_chain((), list(chain.factors[i + 1 :]))
            return left, right
    return None


# --------------------------------------------------------------------------- diagonals


def diagonal_of(m: Expr) -> Expr | None:
    """The column vector of m's diagonal entries, written without ⊙ on matrices, when it is
    known: dg(diag v) = v, dg(A) = 0 (no self-loops), dg(c r) = c ⊙ rᵀ,
    dg(D₁ A D₂ A D₃) = d₁ ⊙ d₃ ⊙ A d₂ (symmetric 0/1 A), dg(f(M)) = f(dg M), linear in m."""
    if isinstance(m, Diag):
        return column(m.operand)
    if is_adjacency(m):
        return zero(COLUMN)
    if isinstance(m, Transpose):
        return diagonal_of(m.operand)
    if isinstance(m, Neg):
        d = diagonal_of(m.operand)
        return None if d is None else Neg(d)
    if isinstance(m, (Add, Sub)):
        a, b = diagonal_of(m.left), diagonal_of(m.right)
        if a is None or b is None:
            return None
        return Add(a, b) if isinstance(m, Add) else Sub(a, b)
    if isinstance(m, Div):
        d = diagonal_of(m.left)
        return None if d is None else Div(d, m.right)
    if isinstance(m, Hadamard):
        a, b = diagonal_of(m.left), diagonal_of(m.right)
        return None if a is None or b is None else Mul(Diag(a), b)
    if isinstance(m, Apply):
        args: list[Expr] = []
        for a in m.args:
            if isinstance(a, Number):
                args.append(a)
                continue
            d = diagonal_of(a)
            if d is None:
                return None
            args.append(d)
        return Apply(m.function, tuple(args))
    if isinstance(m, Power) and m.exponent == 0:
        return Ones()
    if isinstance(m, (Mul, Power)):
        if isinstance(m, Mul) and m.is_scalar_product:
            s, x = (m.left, m.right) if m.left.shape.is_scalar else (m.right, m.left)
            d = diagonal_of(x)
            return None if d is None else Mul(s, d)
        outer = split_outer(m)
        if outer is not None:
            c, r = outer
            return Mul(Diag(c), Transpose(r))
        return _diagonal_of_walks(flatten(m))
    return None


def _diagonal_of_walks(chain: Chain) -> Expr | None:
    """Diagonal of a product of A's and diagonal matrices with at most two A's."""
    blocks: list[list[Expr]] = [[]]  # diagonal vectors between consecutive A's
    for f in chain.expanded():
        if is_adjacency(f):
            blocks.append([])
        elif isinstance(f, Diag):
            blocks[-1].append(column(f.operand))
        else:
            return None
    coef = list(chain.scalars)

    def prod(vs: list[Expr]) -> Expr:
        if not vs:
            return Ones()
        out = vs[-1]
        for v in reversed(vs[:-1]):
            out = Mul(Diag(v), out)
        return out

    if len(blocks) == 1:  # only diagonal factors: their product
        out = prod(blocks[0])
    elif len(blocks) == 2:  # one A: (D₁ A D₂)ᵢᵢ = d₁ᵢ Aᵢᵢ d₂ᵢ = 0
        return zero(COLUMN)
    elif len(blocks) == 3:  # (D₁ A D₂ A D₃)ᵢᵢ = d₁ᵢ d₃ᵢ Σⱼ Aᵢⱼ d₂ⱼ Aⱼᵢ = d₁ᵢ d₃ᵢ (A d₂)ᵢ
        out = Mul(Input("A", MATRIX), prod(blocks[1]))
        for v in blocks[0] + blocks[2]:
            out = Mul(Diag(v), out)
    else:
        return None
    for s in reversed(coef):
        out = Mul(s, out)
    return out


# --------------------------------------------------------------------------- the lowering's view


#: A scalar coefficient of a product, as the lowering applies it: ``("mul", s)``,
#: ``("div", s)`` or ``("neg", None)``.
Coeff = tuple[str, "Expr | None"]


def is_outer(e: Expr) -> bool:
    """``v wᵀ``: a column times a row (a rank-one matrix)."""
    return (
        isinstance(e, Mul)
        and e.left.shape.cols == "1"
        and e.left.shape.rows == "n"
        and (e.right.shape.rows == "1" and e.right.shape.cols == "n")
    )


def transposed(e: Expr) -> Expr:
    """The transpose of ``e``, simplified at the top: (Xᵀ)ᵀ = X, sᵀ = s, diag(v)ᵀ = diag(v),
    Aᵀ = A (A symmetric), (v wᵀ)ᵀ = w vᵀ."""
    if isinstance(e, Transpose):
        return e.operand
    if e.shape.is_scalar or isinstance(e, Diag):
        return e
    if is_adjacency(e):
        return e
    if is_outer(e):
        assert isinstance(e, Mul)
        return Mul(transposed(e.right), transposed(e.left), span=e.span)
    return Transpose(e, span=e.span)


def is_symmetric(e: Expr) -> bool:
    """A structural proof that ``eᵀ = e`` with A symmetric (False means "not known")."""
    if isinstance(e, Diag) or is_adjacency(e):
        return True
    if isinstance(e, (Hadamard, Add, Sub)):
        return is_symmetric(e.left) and is_symmetric(e.right)
    if isinstance(e, Neg):
        return is_symmetric(e.operand)
    if isinstance(e, Div):
        return is_symmetric(e.left)
    if isinstance(e, Power):
        return is_symmetric(e.base)
    if isinstance(e, Transpose):
        return is_symmetric(e.operand)
    if isinstance(e, Apply):
        return all(is_symmetric(a) for a in e.variable_args)
    if isinstance(e, Mul):
        if e.left.shape.is_scalar:
            return is_symmetric(e.right)
        if e.right.shape.is_scalar:
            return is_symmetric(e.left)
        if is_outer(e):
            return transposed(e.left) == e.right
        _, fs = product_factors(e)
        # a palindrome of mutually transposed factors: (F₁⋯Fₖ)ᵀ = Fₖᵀ⋯F₁ᵀ = F₁⋯Fₖ
        return all(
            f == transposed(g) or (f == g and is_symmetric(f)) for f, g in zip(fs, reversed(fs))
        )
    return False


def product_factors(e: Expr) -> tuple[list[Coeff], list[Expr]]:
    """A matrix as ``c · F₁ F₂ ⋯ Fₖ`` for the lowering: the scalar coefficients as written
    (each literal stays one coefficient) and a chain of factors that are not products, powers
    written out, transposes pushed onto the factors, outer products ``v wᵀ`` kept whole
    (``k = 0`` is the identity)."""
    if isinstance(e, Mul) and not is_outer(e):
        if e.left.shape.is_scalar:
            c, f = product_factors(e.right)
            return [("mul", e.left), *c], f
        if e.right.shape.is_scalar:
            c, f = product_factors(e.left)
            return [("mul", e.right), *c], f
        cl, fl = product_factors(e.left)
        cr, fr = product_factors(e.right)
        return cl + cr, fl + fr  # (c M)(d N) = c d (M N)
    if isinstance(e, Power):
        c, f = product_factors(e.base)
        return c * e.exponent, f * e.exponent  # (c M)ᵏ = cᵏ Mᵏ
    if isinstance(e, Neg):
        c, f = product_factors(e.operand)
        return [("neg", None), *c], f
    if isinstance(e, Div):
        c, f = product_factors(e.left)
        return [("div", e.right), *c], f
    if isinstance(e, Transpose):
        c, f = product_factors(e.operand)
        return c, [transposed(x) for x in reversed(f)]  # (F₁⋯Fₖ)ᵀ = Fₖᵀ⋯F₁ᵀ
    return [], [e]


__all__ = [
    "Chain",
    "Coeff",
    "build_chain",
    "column",
    "diagonal_of",
    "flatten",
    "identity",
    "is_adjacency",
    "is_identity",
    "is_outer",
    "is_outer_ones",
    "is_sum",
    "is_symmetric",
    "is_zero",
    "number",
    "product_factors",
    "ones",
    "split_outer",
    "transpose",
    "transposed",
    "zero",
]
