"""Rewrite rules on traces and bilinear forms: tr of scalars, sums, diagonals, A and A², of a
known diagonal and of outer products; uᵀ (M ⊙ N) w = tr(diag(u) M diag(w) Nᵀ)."""

from __future__ import annotations

from fractions import Fraction

from matlang.algebra import (
    Chain,
    build_chain,
    column,
    diagonal_of,
    flatten,
    is_adjacency,
    is_identity,
    is_sum,
    split_outer,
)
from matlang.ast import (
    Add,
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
from matlang.fragments import fragment
from matlang.rewrite import BINARY, LOOPLESS, SYMMETRIC, RewriteContext, Rule
from matlang.shapes import MATRIX

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


def _trace_hadamard_identity(e: Expr, ctx: RewriteContext) -> Expr | None:
    if isinstance(e, Trace) and isinstance(e.operand, Hadamard) and e.operand.shape.is_matrix:
        h = e.operand
        for m, other in ((h.left, h.right), (h.right, h.left)):
            if is_identity(other):  # tr(M ⊙ I) = Σᵢ Mᵢᵢ = tr(M)
                return Trace(m)
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
        if not is_sum(f) or not f.shape.is_square:
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
    Rule("trace_hadamard_identity", "tr(M ⊙ I) = tr(M)", _trace_hadamard_identity),
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
        if k != 1 or not is_sum(f) or not f.shape.is_matrix:
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


__all__ = ["TRACE_RULES", "BILINEAR_RULES"]
