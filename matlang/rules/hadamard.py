"""Rewrite rules on entrywise products (⊙): scalars and vectors leave ⊙, A ⊙ A = A, ⊙ with
diagonal, rank-one and all-ones matrices, canonical operand order, distribution over sums."""

from __future__ import annotations

from fractions import Fraction

from matlang.algebra import (
    column,
    diagonal_of,
    is_adjacency,
    is_identity,
    is_outer_ones,
    is_zero,
    split_outer,
    zero,
)
from matlang.ast import (
    Add,
    Diag,
    Div,
    Expr,
    Hadamard,
    Mul,
    Neg,
    Number,
    Sub,
    Transpose,
)
from matlang.rewrite import BINARY, LOOPLESS, SYMMETRIC, RewriteContext, Rule
from matlang.shapes import COLUMN, ROW

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


__all__ = ["HADAMARD_RULES"]
