"""Semantic normalisation: a table of named rewrite rules applied to a fixed point.

Each rule is ``Rule(name, identity, fn, assumes)``: ``fn(node)`` returns the rewritten node or
None. :func:`normalize` rewrites bottom-up (children first), tries the rules at a node in table
order until none applies, and records which rules fired. Rules are chosen so that they can lower
the fragment (tr(A²) → 𝟏ᵀA𝟏 leaves L2; 𝟏ᵀ(M ⊙ N)𝟏 → tr(M Nᵀ) leaves L3) or bring a sentence into
the canonical shape the lowering rules match (transposes pushed to the leaves, products
flattened and left-associated, linear combinations collected by sympy).

Soundness. Every rule preserves the value of a sentence on every **simple undirected graph**
(A symmetric, 0/1, empty diagonal) wherever the sentence is defined; rules that need one of these
facts list it in ``assumes``. A rule may make a sentence defined where it was not (0·(1/0) → 0).
Each rule is tested against the exact dense evaluator in ``tests/matlang``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction

import sympy as sp

from matlang.analyzer import affine_coefficients, fragment
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
from matlang.errors import Span
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR, Shape

SYMMETRIC, BINARY, LOOPLESS = "symmetric", "0/1", "no self-loops"


class RewriteError(RuntimeError):
    """The rules did not reach a fixed point: a bug of the rule table, never a user error."""


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


def is_number(e: Expr, value: int | None = None) -> bool:
    return isinstance(e, Number) and (value is None or e.value == value)


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
        if not inner.scalars and len(inner.factors) == 1:
            f, k = inner.factors[0]
            return Chain((), ((f, k * e.exponent),))
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


# --------------------------------------------------------------------------- sympy: linear forms


class _Linear:
    """Converts sums of scalar multiples into sympy and back: scalar parts become polynomials
    over opaque scalar atoms (tr(A³), 𝟏ᵀA𝟏, f(...), divisions by non-constants); non-scalar
    parts become linear combinations of non-scalar atoms with such polynomial coefficients."""

    def __init__(self) -> None:
        self.symbols: dict[Expr, sp.Symbol] = {}
        self.atoms: dict[sp.Symbol, Expr] = {}

    def atom(self, e: Expr) -> sp.Symbol:
        sym = self.symbols.get(e)
        if sym is None:
            from matlang.printer import to_text

            # Named by text so that sympy's ordering does not depend on where atoms appear.
            base = to_text(e, definitions=False, ascii=True)
            name, k = base, 1
            while sp.Symbol(name) in self.atoms:
                k += 1
                name = f"{base}#{k}"
            sym = sp.Symbol(name)
            self.symbols[e] = sym
            self.atoms[sym] = e
        return sym

    def scalar(self, e: Expr) -> sp.Expr:
        if isinstance(e, Number):
            return sp.Rational(e.value.numerator, e.value.denominator)
        if isinstance(e, Add):
            return self.scalar(e.left) + self.scalar(e.right)
        if isinstance(e, Sub):
            return self.scalar(e.left) - self.scalar(e.right)
        if isinstance(e, Neg):
            return -self.scalar(e.operand)
        if isinstance(e, (Mul, Hadamard)) and e.left.shape.is_scalar and e.right.shape.is_scalar:
            return self.scalar(e.left) * self.scalar(e.right)
        if isinstance(e, Transpose):
            return self.scalar(e.operand)
        if isinstance(e, Power):
            return self.scalar(e.base) ** e.exponent
        if isinstance(e, Div):
            d = self.scalar(e.right)
            if d.is_Rational and d != 0:
                return self.scalar(e.left) / d
        return self.atom(e)

    def terms(self, e: Expr) -> Iterator[tuple[sp.Expr, Expr]]:
        """(coefficient, atom) pairs of a non-scalar linear combination."""
        if isinstance(e, (Add, Sub)):
            yield from self.terms(e.left)
            sign = 1 if isinstance(e, Add) else -1
            for c, a in self.terms(e.right):
                yield sign * c, a
        elif isinstance(e, Neg):
            for c, a in self.terms(e.operand):
                yield -c, a
        elif isinstance(e, Mul) and e.is_scalar_product:
            s, x = (e.left, e.right) if e.left.shape.is_scalar else (e.right, e.left)
            k = self.scalar(s)
            for c, a in self.terms(x):
                yield k * c, a
        elif isinstance(e, Div) and (d := self.scalar(e.right)).is_Rational and d != 0:
            for c, a in self.terms(e.left):
                yield c / d, a
        else:
            yield sp.Integer(1), e

    # -- back to the AST -----------------------------------------------------------------
    def to_ast(self, x: sp.Expr) -> Expr:
        if x.is_Rational:
            return number(Fraction(int(x.p), int(x.q)))
        if x.is_Symbol:
            return self.atoms[x]
        if x.is_Add:
            out: Expr | None = None
            terms = x.as_ordered_terms()
            # positive terms first (a - b rather than -b + a), otherwise sympy's order
            terms = [t for t in terms if not t.could_extract_minus_sign()] + [
                t for t in terms if t.could_extract_minus_sign()
            ]
            for term in terms:
                neg = term.could_extract_minus_sign()
                t = self.to_ast(-term if neg else term)
                if out is None:
                    out = Neg(t) if neg else t
                else:
                    out = Sub(out, t) if neg else Add(out, t)
            assert out is not None
            return out
        if x.is_Mul:
            c, rest = x.as_coeff_Mul()
            prod: Expr | None = None
            for f in rest.as_ordered_factors():
                t = self.to_ast(f)
                prod = t if prod is None else Mul(prod, t)
            assert prod is not None
            return self.scaled(Fraction(int(c.p), int(c.q)), prod)
        if x.is_Pow and x.exp.is_Integer and int(x.exp) > 0:
            return Power(self.to_ast(x.base), int(x.exp))
        raise ValueError(f"no MATLANG form for {x}")

    @staticmethod
    def scaled(c: Fraction, x: Expr) -> Expr:
        """c·x written as x, -x, p x or p x / q."""
        if c < 0:
            return Neg(_Linear.scaled(-c, x))
        if c == 1:
            return x
        p, q = c.numerator, c.denominator
        top = x if p == 1 else Mul(Number(Fraction(p)), x)
        return top if q == 1 else Div(top, Number(Fraction(q)))

    def term(self, coef: sp.Expr, atom: Expr) -> tuple[bool, Expr]:
        """(negative?, |coef|·atom)."""
        neg = coef.could_extract_minus_sign()
        c = -coef if neg else coef
        if c.is_Rational:
            return neg, self.scaled(Fraction(int(c.p), int(c.q)), atom)
        return neg, Mul(self.to_ast(c), atom)


_EXPAND_LIMIT = 48  # terms; larger expansions keep their factored form


def _expand(x: sp.Expr) -> sp.Expr:
    y = sp.expand(x)
    return y if len(sp.Add.make_args(y)) <= _EXPAND_LIMIT else x


def linear_form(e: Expr) -> Expr | None:
    """The canonical linear combination of ``e`` (None when sympy finds no MATLANG form)."""
    lin = _Linear()
    try:
        if e.shape.is_scalar:
            return lin.to_ast(_expand(lin.scalar(e)))
        groups: dict[Expr, sp.Expr] = {}
        for c, a in lin.terms(e):
            groups[a] = groups.get(a, sp.Integer(0)) + c
        from matlang.printer import to_text

        items = [(_expand(c), a) for a, c in groups.items()]
        items = [(c, a) for c, a in items if c != 0 and not is_zero(a)]
        items.sort(
            key=lambda ca: (
                bool(ca[0].could_extract_minus_sign()),
                to_text(ca[1], definitions=False, ascii=True),
            )
        )
        out: Expr | None = None
        for c, a in items:
            neg, t = lin.term(c, a)
            if out is None:
                out = Neg(t) if neg else t
            else:
                out = Sub(out, t) if neg else Add(out, t)
        return out if out is not None else zero(e.shape)
    except ValueError:
        return None


def _is_linear_node(e: Expr) -> bool:
    if isinstance(e, (Add, Sub, Neg)):
        return True
    if isinstance(e, Div):
        return True
    if isinstance(e, Mul):
        return e.is_scalar_product or (e.left.shape.is_scalar and e.right.shape.is_scalar)
    if e.shape.is_scalar and isinstance(e, (Power, Hadamard, Transpose)):
        return True
    return False


# --------------------------------------------------------------------------- function values


def _value_at(node: Apply, point: tuple[int, ...]) -> Fraction | None:
    """f at a point (one value per non-literal argument), when it is a finite rational."""
    consts = node.constants
    formula = node.function.specialize(consts)
    syms = [s for i, s in enumerate(node.function.symbols) if i not in consts]
    try:
        v = sp.sympify(formula.subs(dict(zip(syms, point))))
    except (TypeError, ValueError, ZeroDivisionError):  # pragma: no cover - sympy edge cases
        return None
    if v.is_Rational:
        return Fraction(int(v.p), int(v.q))
    return None


# --------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Rule:
    """A named rewrite: ``fn(node, ctx)`` returns the rewritten node or None."""

    name: str
    identity: str
    fn: Callable[[Expr, _Context], Expr | None]
    assumes: tuple[str, ...] = ()


def _transpose_involution(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Transpose) and isinstance(e.operand, Transpose):
        return e.operand.operand
    return None


def _transpose_adjacency(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Transpose) and is_adjacency(e.operand):
        return e.operand
    return None


def _transpose_diag(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Transpose) and isinstance(e.operand, Diag):
        return e.operand
    return None


def _transpose_scalar(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Transpose) and e.shape.is_scalar:
        return e.operand
    return None


def _transpose_push(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Transpose):
        return None
    x = e.operand
    if isinstance(x, Mul):
        if x.is_scalar_product:
            s, m = (x.left, x.right) if x.left.shape.is_scalar else (x.right, x.left)
            return Mul(s, transpose(m))
        return Mul(transpose(x.right), transpose(x.left))
    if isinstance(x, Add):
        return Add(transpose(x.left), transpose(x.right))
    if isinstance(x, Sub):
        return Sub(transpose(x.left), transpose(x.right))
    if isinstance(x, Neg):
        return Neg(transpose(x.operand))
    if isinstance(x, Div):
        return Div(transpose(x.left), x.right)
    if isinstance(x, Hadamard):
        return Hadamard(transpose(x.left), transpose(x.right))
    if isinstance(x, Power):
        return Power(transpose(x.base), x.exponent)
    if isinstance(x, Apply):
        return Apply(
            x.function, tuple(a if isinstance(a, Number) else transpose(a) for a in x.args)
        )
    return None


def _diag_row(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Diag) and e.operand.shape == ROW:
        return Diag(Transpose(e.operand))
    return None


def _diag_zero(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Diag) and is_zero(e.operand):
        return zero(MATRIX)
    return None


def _power_trivial(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Power):
        if e.exponent == 1:
            return e.base
        if e.exponent == 0:
            return Number(Fraction(1)) if e.shape.is_scalar else identity()
    return None


def _power_diag(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Power) and isinstance(e.base, Diag) and e.exponent >= 2:
        v = column(e.base.operand)
        return Diag(Mul(Power(e.base, e.exponent - 1), v))
    return None


def _chain_pairs(
    pair: Callable[[Expr, Expr], Expr | list[Expr] | None],
) -> Callable[[Expr, _Context], Expr | None]:
    """A rule that rewrites two neighbouring factors (exponent 1) of a product chain."""

    def rule(e: Expr, ctx: _Context) -> Expr | None:
        if not isinstance(e, (Mul, Power)) or e.shape.is_scalar and not isinstance(e, Mul):
            return None
        if isinstance(e, Mul) and e.left.shape.is_scalar and e.right.shape.is_scalar:
            return None
        chain = flatten(e)
        fs = list(chain.factors)
        for i in range(len(fs) - 1):
            (a, ka), (b, kb) = fs[i], fs[i + 1]
            if ka != 1 or kb != 1:
                continue
            out = pair(a, b)
            if out is not None:
                new = [(x, 1) for x in (out if isinstance(out, list) else [out])]
                return build_chain(chain.scalars, fs[:i] + new + fs[i + 2 :])
        return None

    return rule


def _identity_product(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, (Mul, Power)) or e.shape.is_scalar and not isinstance(e, Mul):
        return None
    chain = flatten(e)
    kept = [(f, k) for f, k in chain.factors if not is_identity(f)]
    if len(kept) == len(chain.factors) or not chain.factors:
        return None
    return build_chain(chain.scalars, kept or [(identity(), 1)])


def _pair_diag_ones(a: Expr, b: Expr) -> Expr | None:
    if isinstance(a, Diag) and isinstance(b, Ones):
        return column(a.operand)
    return None


def _pair_ones_diag(a: Expr, b: Expr) -> Expr | None:
    if a == Transpose(Ones()) and isinstance(b, Diag):
        return transpose(column(b.operand))
    return None


def _pair_diag_diag(a: Expr, b: Expr) -> Expr | None:
    if isinstance(a, Diag) and isinstance(b, Diag):
        return Diag(Mul(a, column(b.operand)))
    return None


def _product_zero(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, (Mul, Power)) and is_zero(e) and e != zero(e.shape):
        return zero(e.shape)
    return None


def _product_canonical(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Mul) and e.left.shape.is_scalar and e.right.shape.is_scalar:
        return None
    if isinstance(e, Power) and (e.shape.is_scalar or e.exponent < 1):
        return None
    if not isinstance(e, (Mul, Power)):
        return None
    chain = flatten(e)
    if len(chain.scalars) > 1:  # one coefficient: the linear form folds the product
        coef = chain.scalars[0]
        for s in chain.scalars[1:]:
            coef = Mul(coef, s)
        return build_chain((coef,), list(chain.factors))
    return build_chain(chain.scalars, list(chain.factors))


def _hadamard_scalars(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Hadamard) and e.shape.is_scalar:
        return Mul(e.left, e.right)
    return None


def _hadamard_vectors(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Hadamard) and e.shape == COLUMN:
        return Mul(Diag(e.left), e.right)
    if isinstance(e, Hadamard) and e.shape == ROW:
        return Transpose(Mul(Diag(Transpose(e.left)), Transpose(e.right)))
    return None


def _hadamard_zero(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Hadamard) and (is_zero(e.left) or is_zero(e.right)):
        return zero(e.shape)
    return None


def _scalar_part(e: Expr) -> tuple[Expr | None, Expr]:
    """(s, X) with e = s·X (s None when e has no scalar factor); −X gives s = −1."""
    if isinstance(e, Mul) and e.is_scalar_product:
        return (e.left, e.right) if e.left.shape.is_scalar else (e.right, e.left)
    if isinstance(e, Neg):
        return Neg(Number(Fraction(1))), e.operand
    if isinstance(e, Div):
        return Div(Number(Fraction(1)), e.right), e.left
    return None, e


def _hadamard_scalar_factor(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Hadamard) or e.shape.is_scalar:
        return None
    s, x = _scalar_part(e.left)
    t, y = _scalar_part(e.right)
    if s is None and t is None:
        return None
    coef = s if t is None else t if s is None else Mul(s, t)
    assert coef is not None
    return Mul(coef, Hadamard(x, y))


def _hadamard_idempotent(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Hadamard) and is_adjacency(e.left) and is_adjacency(e.right):
        return e.left
    return None


def _hadamard_identity_diagonal(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Hadamard):
        for m, other in ((e.left, e.right), (e.right, e.left)):
            if is_identity(other) and isinstance(m, Diag):
                return m
    return None


def _hadamard_ones_matrix(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Hadamard) and e.shape.is_matrix:
        if is_outer_ones(e.right):
            return e.left
        if is_outer_ones(e.left):
            return e.right
    return None


def _hadamard_diagonal(e: Expr, ctx: _Context) -> Expr | None:
    if not (isinstance(e, Hadamard) and e.shape.is_matrix):
        return None
    for d, m in ((e.left, e.right), (e.right, e.left)):
        if isinstance(d, Diag):
            dm = diagonal_of(m)
            if dm is not None:
                return Diag(Mul(Diag(column(d.operand)), dm))
    return None


def _hadamard_rank_one(e: Expr, ctx: _Context) -> Expr | None:
    if not (isinstance(e, Hadamard) and e.shape.is_matrix):
        return None
    for m, outer in ((e.left, e.right), (e.right, e.left)):
        split = split_outer(outer)
        if split is not None:
            c, r = split
            return Mul(Mul(Diag(c), m), Diag(Transpose(r)))
    return None


def _hadamard_operands(e: Expr) -> list[Expr]:
    if isinstance(e, Hadamard) and e.shape.is_matrix:
        return _hadamard_operands(e.left) + _hadamard_operands(e.right)
    return [e]


def _hadamard_canonical(e: Expr, ctx: _Context) -> Expr | None:
    if not (isinstance(e, Hadamard) and e.shape.is_matrix):
        return None
    from matlang.printer import to_text

    ops = sorted(_hadamard_operands(e), key=lambda x: to_text(x, definitions=False, ascii=True))
    out = ops[0]
    for x in ops[1:]:
        out = Hadamard(out, x)
    return out


def _is_sum(e: Expr) -> bool:
    return isinstance(e, (Add, Sub))


def _hadamard_distribute(e: Expr, ctx: _Context) -> Expr | None:
    if not (isinstance(e, Hadamard) and e.shape.is_matrix):
        return None
    if isinstance(e.left, (Add, Sub)):
        total, z = e.left, e.right
        cand = type(total)(Hadamard(total.left, z), Hadamard(total.right, z))
    elif isinstance(e.right, (Add, Sub)):
        z, total = e.left, e.right
        cand = type(total)(Hadamard(z, total.left), Hadamard(z, total.right))
    else:
        return None
    return ctx.if_better(e, cand)


def _trace_scalar(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Trace) and e.operand.shape.is_scalar:
        return e.operand
    return None


def _trace_transpose(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Trace) and isinstance(e.operand, Transpose):
        return Trace(e.operand.operand)
    return None


def _trace_linear(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Trace):
        return None
    x = e.operand
    if isinstance(x, Add):
        return Add(Trace(x.left), Trace(x.right))
    if isinstance(x, Sub):
        return Sub(Trace(x.left), Trace(x.right))
    if isinstance(x, Neg):
        return Neg(Trace(x.operand))
    if isinstance(x, Div):
        return Div(Trace(x.left), x.right)
    if isinstance(x, Mul) and x.is_scalar_product:
        s, m = (x.left, x.right) if x.left.shape.is_scalar else (x.right, x.left)
        return Mul(s, Trace(m))
    return None


def _trace_diag(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Trace) and isinstance(e.operand, Diag):
        return Mul(Transpose(Ones()), column(e.operand.operand))
    return None


def _trace_adjacency(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Trace) and is_adjacency(e.operand):
        return Number(Fraction(0))
    return None


def _trace_adjacency_square(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Trace) and e.operand == Power(Input("A", MATRIX), 2):
        return Mul(Mul(Transpose(Ones()), Input("A", MATRIX)), Ones())
    return None


def _trace_known_diagonal(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Trace):
        d = diagonal_of(e.operand)
        if d is not None:
            return Mul(Transpose(Ones()), d)
    return None


def _trace_cyclic_outer(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Trace) or not isinstance(e.operand, Mul):
        return None
    split = split_outer(e.operand)
    if split is None:
        return None
    c, r = split  # tr(c r) = r c
    return Mul(r, c)


def _expand_once(e: Expr) -> Expr | None:
    """Distribute a product over its first sum factor (a power of a sum counts:
    (M ± N)ᵏ = (M ± N)(M ± N)ᵏ⁻¹); None when no factor is a sum."""
    chain = flatten(e)
    fs = list(chain.factors)
    for i, (f, k) in enumerate(fs):
        if not _is_sum(f) or not f.shape.is_square:
            continue
        assert isinstance(f, (Add, Sub))
        rest = [(f, k - 1)] if k > 1 else []
        a = build_chain(chain.scalars, fs[:i] + [(f.left, 1)] + rest + fs[i + 1 :])
        b = build_chain(chain.scalars, fs[:i] + [(f.right, 1)] + rest + fs[i + 1 :])
        return Add(a, b) if isinstance(f, Add) else Sub(a, b)
    return None


def _trace_expand(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Trace) or not isinstance(e.operand, (Mul, Power)):
        return None
    if e.operand.shape.is_scalar:
        return None
    expanded = _expand_once(e.operand)
    return None if expanded is None else ctx.if_better(e, Trace(expanded))


def _bilinear_parts(e: Expr) -> tuple[Chain, int] | None:
    """A scalar chain u (M ⊙ N) w: the chain and the index of the matrix ⊙ factor."""
    if not (isinstance(e, Mul) and e.shape.is_scalar) or e.left.shape.is_scalar:
        return None
    chain = flatten(e)
    for i, (f, k) in enumerate(chain.factors):
        if k == 1 and isinstance(f, Hadamard) and f.shape.is_matrix:
            return chain, i
    return None


def _bilinear_hadamard(e: Expr, ctx: _Context) -> Expr | None:
    parts = _bilinear_parts(e)
    if parts is None:
        return None
    chain, i = parts
    h = chain.factors[i][0]
    assert isinstance(h, Hadamard)
    if fragment(h.left) == 3 or fragment(h.right) == 3:
        return None  # tr(...) would not leave L3
    left = build_chain((), list(chain.factors[:i]))  # a row: uᵀ
    right = build_chain((), list(chain.factors[i + 1 :]))  # a column: w
    # uᵀ (M ⊙ N) w = Σᵢⱼ uᵢ Mᵢⱼ Nᵢⱼ wⱼ = tr(diag(u) M diag(w) Nᵀ)
    t = Trace(Mul(Mul(Mul(Diag(Transpose(left)), h.left), Diag(right)), Transpose(h.right)))
    return build_chain(chain.scalars, [(t, 1)]) if chain.scalars else t


def _bilinear_distribute(e: Expr, ctx: _Context) -> Expr | None:
    if not (isinstance(e, Mul) and e.shape.is_scalar) or e.left.shape.is_scalar:
        return None
    chain = flatten(e)
    for i, (f, k) in enumerate(chain.factors):
        if k != 1 or not _is_sum(f) or not f.shape.is_matrix:
            continue
        assert isinstance(f, (Add, Sub))
        fs = list(chain.factors)
        a = build_chain(chain.scalars, fs[:i] + [(f.left, 1)] + fs[i + 1 :])
        b = build_chain(chain.scalars, fs[:i] + [(f.right, 1)] + fs[i + 1 :])
        return ctx.if_better(e, Add(a, b) if isinstance(f, Add) else Sub(a, b))
    return None


def _pointwise_numbers(e: Expr, ctx: _Context) -> Expr | None:
    if isinstance(e, Apply) and all(isinstance(a, Number) for a in e.args):
        v = _value_at(e, tuple(a.value for a in e.args))  # type: ignore[attr-defined]
        return None if v is None else number(v)
    return None


def _pointwise_affine(e: Expr, ctx: _Context) -> Expr | None:
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


def _pointwise_adjacency(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Apply) or not e.variable_args:
        return None
    if not all(is_adjacency(a) for a in e.variable_args):
        return None
    k = len(e.variable_args)
    f0, f1 = _value_at(e, (0,) * k), _value_at(e, (1,) * k)
    if f0 is None or f1 is None:
        return None
    # Aᵢⱼ ∈ {0, 1}, Aᵢᵢ = 0: f(A) = f(0) 𝟏𝟏ᵀ + (f(1) − f(0)) A
    return Add(Mul(number(f0), ones(MATRIX)), Mul(number(f1 - f0), Input("A", MATRIX)))


def _pointwise_diagonal(e: Expr, ctx: _Context) -> Expr | None:
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


def _pointwise_ones(e: Expr, ctx: _Context) -> Expr | None:
    if not isinstance(e, Apply) or not e.variable_args or e.shape.is_scalar:
        return None
    if not all(a == ones(e.shape) for a in e.variable_args):
        return None
    f1 = _value_at(e, (1,) * len(e.variable_args))
    return None if f1 is None else Mul(number(f1), ones(e.shape))


def _linear_canonical(e: Expr, ctx: _Context) -> Expr | None:
    if not _is_linear_node(e):
        return None
    return ctx.linear(e)


#: The rule table, tried in this order at every node. Identities in paper notation; u, v, w
#: are columns, r a row, s a scalar, M, N matrices, c r an outer product, dg(M) = (M ⊙ I)𝟏.
RULES: tuple[Rule, ...] = (
    # transposes move to the leaves, where they vanish on A and diag(v)
    Rule("transpose_involution", "(Mᵀ)ᵀ = M", _transpose_involution),
    Rule("transpose_adjacency", "Aᵀ = A", _transpose_adjacency, (SYMMETRIC,)),
    Rule("transpose_diag", "diag(v)ᵀ = diag(v)", _transpose_diag),
    Rule("transpose_scalar", "sᵀ = s", _transpose_scalar),
    Rule(
        "transpose_push",
        "(M N)ᵀ = Nᵀ Mᵀ, (M ± N)ᵀ = Mᵀ ± Nᵀ, (M ⊙ N)ᵀ = Mᵀ ⊙ Nᵀ, (Mᵏ)ᵀ = (Mᵀ)ᵏ, f(M)ᵀ = f(Mᵀ)",
        _transpose_push,
    ),
    # diag and powers
    Rule("diag_row", "diag(r) = diag(rᵀ)", _diag_row),
    Rule("diag_zero", "diag(0) = 0", _diag_zero),
    Rule("power_trivial", "M¹ = M, M⁰ = I", _power_trivial),
    Rule("power_diag", "diag(v)ᵏ = diag(diag(v)ᵏ⁻¹ v)", _power_diag),
    # products, on the flattened chain
    Rule("product_zero", "0 M = 0, M 0 = 0", _product_zero),
    Rule("identity_product", "I M = M = M I", _identity_product),
    Rule("diag_ones", "diag(v) 𝟏 = v", _chain_pairs(_pair_diag_ones)),
    Rule("ones_diag", "𝟏ᵀ diag(v) = vᵀ", _chain_pairs(_pair_ones_diag)),
    Rule("diag_diag", "diag(v) diag(w) = diag(diag(v) w)", _chain_pairs(_pair_diag_diag)),
    Rule(
        "product_canonical",
        "(M N) P = M (N P); s M = M s; M M = M²  (scalars first, left-associated)",
        _product_canonical,
    ),
    # entrywise products
    Rule("hadamard_scalars", "s ⊙ t = s t", _hadamard_scalars),
    Rule("hadamard_vectors", "v ⊙ w = diag(v) w", _hadamard_vectors),
    Rule("hadamard_zero", "0 ⊙ M = 0", _hadamard_zero),
    Rule("hadamard_scalar_factor", "(s M) ⊙ N = s (M ⊙ N)", _hadamard_scalar_factor),
    Rule("hadamard_idempotent", "A ⊙ A = A", _hadamard_idempotent, (BINARY,)),
    Rule("hadamard_identity_diagonal", "diag(v) ⊙ I = diag(v)", _hadamard_identity_diagonal),
    Rule("hadamard_ones_matrix", "M ⊙ 𝟏𝟏ᵀ = M", _hadamard_ones_matrix),
    Rule(
        "hadamard_diagonal",
        "M ⊙ diag(v) = diag(diag(v) dg(M))  when dg(M) is known without ⊙",
        _hadamard_diagonal,
        (SYMMETRIC, BINARY, LOOPLESS),
    ),
    Rule("hadamard_rank_one", "M ⊙ (c r) = diag(c) M diag(rᵀ)", _hadamard_rank_one),
    Rule(
        "hadamard_canonical",
        "M ⊙ N = N ⊙ M, (M ⊙ N) ⊙ P = M ⊙ (N ⊙ P)  (operands sorted, left-associated)",
        _hadamard_canonical,
    ),
    Rule(
        "hadamard_distribute",
        "(M ± N) ⊙ P = M ⊙ P ± N ⊙ P  (kept only when it lowers the level or shrinks)",
        _hadamard_distribute,
    ),
    # traces
    Rule("trace_scalar", "tr(s) = s", _trace_scalar),
    Rule("trace_transpose", "tr(Mᵀ) = tr(M)", _trace_transpose),
    Rule("trace_linear", "tr(M ± N) = tr(M) ± tr(N), tr(s M) = s tr(M)", _trace_linear),
    Rule("trace_diag", "tr(diag(v)) = 𝟏ᵀ v", _trace_diag),
    Rule("trace_adjacency", "tr(A) = 0", _trace_adjacency, (LOOPLESS,)),
    Rule(
        "trace_adjacency_square",
        "tr(A²) = 𝟏ᵀ A 𝟏",
        _trace_adjacency_square,
        (SYMMETRIC, BINARY, LOOPLESS),
    ),
    Rule(
        "trace_known_diagonal",
        "tr(M) = 𝟏ᵀ dg(M); dg(D₁ A D₂ A D₃) = d₁ ⊙ d₃ ⊙ A d₂, dg(D₁ A D₂) = 0",
        _trace_known_diagonal,
        (SYMMETRIC, BINARY, LOOPLESS),
    ),
    Rule("trace_cyclic_outer", "tr(X c r Y) = r Y X c", _trace_cyclic_outer),
    Rule(
        "trace_expand",
        "tr(P (M ± N) Q) = tr(P M Q) ± tr(P N Q)  (kept only when it lowers the level or shrinks)",
        _trace_expand,
    ),
    # sums of entrywise products are traces
    Rule(
        "bilinear_hadamard",
        "uᵀ (M ⊙ N) w = tr(diag(u) M diag(w) Nᵀ); 𝟏ᵀ (M ⊙ N) 𝟏 = tr(M Nᵀ)",
        _bilinear_hadamard,
    ),
    Rule(
        "bilinear_distribute",
        "uᵀ (M ± N) w = uᵀ M w ± uᵀ N w  (kept only when it lowers the level or shrinks)",
        _bilinear_distribute,
    ),
    # pointwise functions (facts from sympy)
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
    # scalar arithmetic and linear combinations, canonical by sympy
    Rule(
        "linear_canonical",
        "sums of scalar multiples collected and expanded by sympy (X − X = 0, 2(3M) = 6M, ...)",
        _linear_canonical,
    ),
)

RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}


# --------------------------------------------------------------------------- the engine


_MAX_STEPS = 200  # rule applications at one node before the table is declared cyclic


def _stamp(e: Expr, span: Span | None) -> Expr:
    """Give nodes a rule created (span None) the span of the node they replace."""
    if span is None or e.span is not None:
        return e
    out = e.map_children(lambda c: _stamp(c, span))
    return replace(out, span=span)


@dataclass
class _Context:
    fired: list[str] = field(default_factory=list)
    memo: dict[tuple[Expr, Span | None], Expr] = field(default_factory=dict)
    linear_memo: dict[Expr, Expr | None] = field(default_factory=dict)
    depth: int = 0

    def norm(self, e: Expr) -> Expr:
        key = (e, e.span)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        out = self._at(e.map_children(self.norm))
        self.memo[key] = out
        self.memo[(out, out.span)] = out
        return out

    def _at(self, e: Expr) -> Expr:
        for _ in range(_MAX_STEPS):
            for rule in RULES:
                out = rule.fn(e, self)
                if out is not None and out != e:
                    self.fired.append(rule.name)
                    e = _stamp(out, e.span).map_children(self.norm)
                    break
            else:
                return e
        from matlang.printer import to_text

        raise RewriteError(f"the rewrite rules cycle on {to_text(e)}")

    def linear(self, e: Expr) -> Expr | None:
        if e not in self.linear_memo:
            self.linear_memo[e] = linear_form(e)
        return self.linear_memo[e]

    def if_better(self, e: Expr, candidate: Expr) -> Expr | None:
        """``candidate`` normalised, when that lowers the level of ``e`` or shrinks it."""
        if self.depth > 8:
            return None
        sub = _Context(memo=self.memo, linear_memo=self.linear_memo, depth=self.depth + 1)
        out = sub.norm(_stamp(candidate, e.span))
        le, lo = fragment(e), fragment(out)
        if lo < le or (lo == le and out.size < e.size):
            self.fired.extend(sub.fired)
            return out
        return None


def apply_rule(rule: Rule | str, e: Expr) -> Expr | None:
    """One application of one rule at the root of ``e`` (None when it does not apply)."""
    r = RULES_BY_NAME[rule] if isinstance(rule, str) else rule
    out = r.fn(e, _Context())
    return None if out is None or out == e else _stamp(out, e.span)


@dataclass(frozen=True)
class Normalization:
    """A normal form and the rules that produced it, as (name, identity) in first-use order."""

    expr: Expr
    rules: tuple[tuple[str, str], ...]


def normalize(e: Expr) -> Normalization:
    """Rewrite ``e`` with :data:`RULES` to a fixed point (assumes simple undirected graphs)."""
    ctx = _Context()
    out = ctx.norm(e)
    for _ in range(4):  # the engine reaches a fixed point in one pass; this only checks it
        again = _Context()
        nxt = again.norm(out)
        if nxt == out:
            break
        ctx.fired.extend(again.fired)
        out = nxt
    else:
        from matlang.printer import to_text

        raise RewriteError(f"normalisation of {to_text(e)} did not settle")
    seen: dict[str, None] = dict.fromkeys(ctx.fired)
    return Normalization(out, tuple((n, RULES_BY_NAME[n].identity) for n in seen))


__all__ = [
    "RULES",
    "RULES_BY_NAME",
    "Chain",
    "Normalization",
    "RewriteError",
    "Rule",
    "apply_rule",
    "build_chain",
    "diagonal_of",
    "flatten",
    "linear_form",
    "normalize",
    "number",
    "ones",
    "split_outer",
    "zero",
]
