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

from collections.abc import Callable
from fractions import Fraction

import sympy as sp

from matlang.algebra import (
    Chain,
    build_chain,
    column,
    diagonal_of,
    flatten,
    identity,
    is_adjacency,
    is_identity,
    is_outer_ones,
    is_zero,
    number,
    ones,
    split_outer,
    transpose,
    zero,
)
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
from matlang.fragments import affine_coefficients, fragment
from matlang.linear import is_linear_node
from matlang.rewrite import RewriteContext, Rule
from matlang.shapes import COLUMN, MATRIX, ROW

#: What a rule may assume about A (``Rule.assumes``).
SYMMETRIC, BINARY, LOOPLESS = "symmetric", "0/1", "no self-loops"


# --------------------------------------------------------------------------- transposes


def _transpose_involution(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Transpose) and isinstance(e.operand, Transpose):
        return e.operand.operand
    return None


def _transpose_adjacency(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Transpose) and is_adjacency(e.operand):
        return e.operand
    return None


def _transpose_diag(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Transpose) and isinstance(e.operand, Diag):
        return e.operand
    return None


def _transpose_scalar(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Transpose) and e.shape.is_scalar:
        return e.operand
    return None


def _transpose_push(e: Expr, ctx: RewriteContext) -> Expr | None:
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


#: Transposes move to the leaves, where they vanish on A and diag(v).
TRANSPOSE_RULES: tuple[Rule, ...] = (
    Rule("transpose_involution", "(Mᵀ)ᵀ = M", _transpose_involution),
    Rule("transpose_adjacency", "Aᵀ = A", _transpose_adjacency, (SYMMETRIC,)),
    Rule("transpose_diag", "diag(v)ᵀ = diag(v)", _transpose_diag),
    Rule("transpose_scalar", "sᵀ = s", _transpose_scalar),
    Rule(
        "transpose_push",
        "(M N)ᵀ = Nᵀ Mᵀ, (M ± N)ᵀ = Mᵀ ± Nᵀ, (M ⊙ N)ᵀ = Mᵀ ⊙ Nᵀ, (Mᵏ)ᵀ = (Mᵀ)ᵏ, f(M)ᵀ = f(Mᵀ)",
        _transpose_push,
    ),
)


# --------------------------------------------------------------------------- diag and powers


def _diag_row(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Diag) and e.operand.shape == ROW:
        return Diag(Transpose(e.operand))
    return None


def _diag_zero(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Diag) and is_zero(e.operand):
        return zero(MATRIX)
    return None


def _power_trivial(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Power):
        if e.exponent == 1:
            return e.base
        if e.exponent == 0:
            return Number(Fraction(1)) if e.shape.is_scalar else identity()
    return None


def _power_diag(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Power) and isinstance(e.base, Diag) and e.exponent >= 2:
        v = column(e.base.operand)
        return Diag(Mul(Power(e.base, e.exponent - 1), v))
    return None


#: Diag and powers.
DIAG_POWER_RULES: tuple[Rule, ...] = (
    Rule("diag_row", "diag(r) = diag(rᵀ)", _diag_row),
    Rule("diag_zero", "diag(0) = 0", _diag_zero),
    Rule("power_trivial", "M¹ = M, M⁰ = I", _power_trivial),
    Rule("power_diag", "diag(v)ᵏ = diag(diag(v)ᵏ⁻¹ v)", _power_diag),
)


# --------------------------------------------------------------------------- products


def _chain_pairs(
    pair: Callable[[Expr, Expr], Expr | list[Expr] | None],
) -> Callable[[Expr, RewriteContext], Expr | None]:
    """A rule that rewrites two neighbouring factors (exponent 1) of a product chain."""

    def rule(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _identity_product(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _product_zero(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, (Mul, Power)) and is_zero(e) and e != zero(e.shape):
        return zero(e.shape)
    return None


def _product_canonical(e: Expr, ctx: RewriteContext) -> Expr | None:
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


#: Products, on the flattened chain.
PRODUCT_RULES: tuple[Rule, ...] = (
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
)


# --------------------------------------------------------------------------- entrywise products


def _hadamard_scalars(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Hadamard) and e.shape.is_scalar:
        return Mul(e.left, e.right)
    return None


def _hadamard_vectors(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Hadamard) and e.shape == COLUMN:
        return Mul(Diag(e.left), e.right)
    if isinstance(e, Hadamard) and e.shape == ROW:
        return Transpose(Mul(Diag(Transpose(e.left)), Transpose(e.right)))
    return None


def _hadamard_zero(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _hadamard_scalar_factor(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Hadamard) or e.shape.is_scalar:
        return None
    s, x = _scalar_part(e.left)
    t, y = _scalar_part(e.right)
    if s is None and t is None:
        return None
    coef = s if t is None else t if s is None else Mul(s, t)
    assert coef is not None
    return Mul(coef, Hadamard(x, y))


def _hadamard_idempotent(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Hadamard) and is_adjacency(e.left) and is_adjacency(e.right):
        return e.left
    return None


def _hadamard_identity_diagonal(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Hadamard):
        for m, other in ((e.left, e.right), (e.right, e.left)):
            if is_identity(other) and isinstance(m, Diag):
                return m
    return None


def _hadamard_ones_matrix(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Hadamard) and e.shape.is_matrix:
        if is_outer_ones(e.right):
            return e.left
        if is_outer_ones(e.left):
            return e.right
    return None


def _hadamard_diagonal(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not (isinstance(e, Hadamard) and e.shape.is_matrix):
        return None
    for d, m in ((e.left, e.right), (e.right, e.left)):
        if isinstance(d, Diag):
            dm = diagonal_of(m)
            if dm is not None:
                return Diag(Mul(Diag(column(d.operand)), dm))
    return None


def _hadamard_rank_one(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _hadamard_canonical(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _hadamard_distribute(e: Expr, ctx: RewriteContext) -> Expr | None:
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


#: Entrywise products.
HADAMARD_RULES: tuple[Rule, ...] = (
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
)


# --------------------------------------------------------------------------- traces


def _trace_scalar(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace) and e.operand.shape.is_scalar:
        return e.operand
    return None


def _trace_transpose(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace) and isinstance(e.operand, Transpose):
        return Trace(e.operand.operand)
    return None


def _trace_linear(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _trace_diag(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace) and isinstance(e.operand, Diag):
        return Mul(Transpose(Ones()), column(e.operand.operand))
    return None


def _trace_adjacency(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace) and is_adjacency(e.operand):
        return Number(Fraction(0))
    return None


def _trace_adjacency_square(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace) and e.operand == Power(Input("A", MATRIX), 2):
        return Mul(Mul(Transpose(Ones()), Input("A", MATRIX)), Ones())
    return None


def _trace_known_diagonal(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace):
        d = diagonal_of(e.operand)
        if d is not None:
            return Mul(Transpose(Ones()), d)
    return None


def _trace_cyclic_outer(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _trace_expand(e: Expr, ctx: RewriteContext) -> Expr | None:
    if not isinstance(e, Trace) or not isinstance(e.operand, (Mul, Power)):
        return None
    if e.operand.shape.is_scalar:
        return None
    expanded = _expand_once(e.operand)
    return None if expanded is None else ctx.if_better(e, Trace(expanded))


#: Traces.
TRACE_RULES: tuple[Rule, ...] = (
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
)


# --------------------------------------------------------------------------- bilinear forms


def _bilinear_parts(e: Expr) -> tuple[Chain, int] | None:
    """A scalar chain u (M ⊙ N) w: the chain and the index of the matrix ⊙ factor."""
    if not (isinstance(e, Mul) and e.shape.is_scalar) or e.left.shape.is_scalar:
        return None
    chain = flatten(e)
    for i, (f, k) in enumerate(chain.factors):
        if k == 1 and isinstance(f, Hadamard) and f.shape.is_matrix:
            return chain, i
    return None


def _bilinear_hadamard(e: Expr, ctx: RewriteContext) -> Expr | None:
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


def _bilinear_distribute(e: Expr, ctx: RewriteContext) -> Expr | None:
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


#: Sums of entrywise products are traces.
BILINEAR_RULES: tuple[Rule, ...] = (
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
)


# --------------------------------------------------------------------------- pointwise functions


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
    f0, f1 = _value_at(e, (0,) * k), _value_at(e, (1,) * k)
    if f0 is None or f1 is None:
        return None
    # Aᵢⱼ ∈ {0, 1}, Aᵢᵢ = 0: f(A) = f(0) 𝟏𝟏ᵀ + (f(1) − f(0)) A
    return Add(Mul(number(f0), ones(MATRIX)), Mul(number(f1 - f0), Input("A", MATRIX)))


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
    f1 = _value_at(e, (1,) * len(e.variable_args))
    return None if f1 is None else Mul(number(f1), ones(e.shape))


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
