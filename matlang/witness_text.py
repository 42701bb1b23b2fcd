"""A witness sentence in canonical form for printing: products re-associated and equal
neighbouring factors written as powers (``tr(A (A A))`` → ``tr(A³)``, ``A A ⊙ A A`` →
``A² ⊙ A²``). The value is unchanged (matrix products are associative); only the text is."""

from __future__ import annotations

from matlang import ast


def _factors(e: ast.Expr) -> list[ast.Expr]:
    """The factors of a chain of matrix products, left to right (scalar products kept)."""
    if isinstance(e, ast.Mul) and not e.is_scalar_product:
        return _factors(e.left) + _factors(e.right)
    if isinstance(e, ast.Power) and e.exponent >= 1:
        return [canonical(e.base)] * e.exponent
    return [canonical(e)]


def canonical(e: ast.Expr) -> ast.Expr:
    """``e`` with every matrix-product chain flattened and runs of equal factors as powers."""
    if (
        isinstance(e, ast.Mul)
        and not e.is_scalar_product
        or (isinstance(e, ast.Power) and e.exponent >= 2)
    ):
        parts: list[ast.Expr] = []
        run: list[ast.Expr] = []
        for f in [*_factors(e), None]:
            if f is not None and run and f == run[0]:
                run.append(f)
                continue
            if run:
                parts.append(run[0] if len(run) == 1 else ast.Power(run[0], len(run)))
            run = [] if f is None else [f]
        out = parts[0]
        for p in parts[1:]:
            out = ast.Mul(out, p)
        return out
    return e.map_children(canonical)


__all__ = ["canonical"]
