"""Rewrite rules on products: transposes pushed to the leaves (where they vanish on A and
diag(v)), diag and powers, and product chains (flattened, identities and 𝟏 absorbed,
left-associated)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from matlang.algebra import (
    build_chain,
    column,
    flatten,
    identity,
    is_adjacency,
    is_identity,
    is_zero,
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
    Mul,
    Neg,
    Number,
    Ones,
    Power,
    Sub,
    Transpose,
)
from matlang.errors import MatlangError
from matlang.limits import MAX_DIAG_POWER, named
from matlang.rewrite import SYMMETRIC, RewriteContext, Rule
from matlang.shapes import MATRIX, ROW

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
        if e.exponent > MAX_DIAG_POWER:
            from matlang.printer import to_text

            raise MatlangError(
                f"{to_text(e)}: the rewrites unroll a power of a diag into that many nested "
                f"products, past {named('MAX_DIAG_POWER')}"
            )
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
        # the coefficient in its own normal form: the scalar rules may group it otherwise
        # (2 (exp(1) exp(2)), not (2 exp(1)) exp(2)), and a left-associated fold they undo
        # again would make the two tables cycle
        return build_chain((ctx.norm(coef),), list(chain.factors))
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


__all__ = ["TRANSPOSE_RULES", "DIAG_POWER_RULES", "PRODUCT_RULES"]
