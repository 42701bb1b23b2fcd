"""Linear combinations, canonical by sympy: sums of scalar multiples of MATLANG expressions are
read into sympy (scalars as polynomials over opaque scalar atoms, matrices and vectors as linear
combinations of non-scalar atoms), collected and expanded there, and written back as an AST."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

import sympy as sp

from matlang.algebra import is_zero, number, zero
from matlang.ast import Add, Div, Expr, Hadamard, Mul, Neg, Number, Power, Sub, Transpose


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


def is_linear_node(e: Expr) -> bool:
    if isinstance(e, (Add, Sub, Neg)):
        return True
    if isinstance(e, Div):
        return True
    if isinstance(e, Mul):
        return e.is_scalar_product or (e.left.shape.is_scalar and e.right.shape.is_scalar)
    if e.shape.is_scalar and isinstance(e, (Power, Hadamard, Transpose)):
        return True
    return False


__all__ = ["is_linear_node", "linear_form"]
