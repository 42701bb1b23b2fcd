"""Pointwise functions as sympy formulas: built-ins, user definitions, facts, and lowering.

A :class:`Function` is a named sympy formula in its parameters. sympy answers what the compiler
asks (does f(0) vanish? is f a polynomial, of what degree?) and :func:`lower` turns a formula
into a callable over numpy arrays, torch tensors, or exact Python numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np
import sympy as sp
from sympy.parsing.sympy_parser import (
    convert_xor,
    parse_expr,
    standard_transformations,
)

from matlang.errors import FunctionError, Span


@dataclass(frozen=True)
class Function:
    """A pointwise function ``name(params) = formula``."""

    name: str
    params: tuple[str, ...]
    formula: sp.Expr
    builtin: bool = False
    source: str | None = None  # the user's text of the formula, for printing

    @property
    def arity(self) -> int:
        return len(self.params)

    @cached_property
    def symbols(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(p) for p in self.params)

    def specialize(self, constants: dict[int, Fraction]) -> sp.Expr:
        """The formula with the parameters at the given positions fixed to constants."""
        subs = {
            self.symbols[i]: sp.Rational(v.numerator, v.denominator) for i, v in constants.items()
        }
        return sp.expand_func(self.formula.subs(subs)) if subs else self.formula

    def formula_text(self) -> str:
        return self.source if self.source is not None else sp.sstr(self.formula)

    def definition_text(self) -> str:
        return f"let {self.name}({', '.join(self.params)}) = {self.formula_text()}"

    def __repr__(self) -> str:
        return f"Function({self.definition_text()!r})"


# --------------------------------------------------------------------------- facts


def vanishes_at_zero(formula: sp.Expr, symbols: Sequence[sp.Symbol]) -> bool:
    """f(0, ..., 0) == 0, decided by sympy (limits where the formula is singular at 0)."""
    at0 = formula.subs({s: 0 for s in symbols})
    if at0.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return False
    return bool(sp.simplify(at0) == 0)


def polynomial_degree(formula: sp.Expr, symbols: Sequence[sp.Symbol]) -> int | None:
    """Total degree when the formula is a polynomial with rational coefficients, else None."""
    expanded = sp.expand(formula)
    if not symbols:
        return 0 if expanded.is_Rational else None
    if not expanded.is_polynomial(*symbols):
        return None
    poly = sp.Poly(expanded, *symbols)
    if not all(c.is_Rational for c in poly.coeffs()):
        return None
    return int(poly.total_degree())


# --------------------------------------------------------------------------- built-ins

_x, _k, _y = sp.symbols("x k y")

_BUILTINS: dict[str, tuple[tuple[str, ...], sp.Expr]] = {
    "exp": (("x",), sp.exp(_x)),
    "log": (("x",), sp.log(_x)),
    "log1p": (("x",), sp.log(1 + _x)),
    "relu": (("x",), sp.Max(0, _x)),
    "sigmoid": (("x",), 1 / (1 + sp.exp(-_x))),
    "tanh": (("x",), sp.tanh(_x)),
    "sqrt": (("x",), sp.sqrt(_x)),
    "abs": (("x",), sp.Abs(_x)),
    "square": (("x",), _x**2),
    "cube": (("x",), _x**3),
    "sin": (("x",), sp.sin(_x)),
    "cos": (("x",), sp.cos(_x)),
    "sign": (("x",), sp.sign(_x)),
    "softplus": (("x",), sp.log(1 + sp.exp(_x))),
    "inv": (("x",), 1 / _x),
    "invsqrt": (("x",), _x ** sp.Rational(-1, 2)),
    "binom": (("x", "k"), sp.binomial(_x, _k)),
    "pow": (("x", "k"), _x**_k),
    "max": (("x", "y"), sp.Max(_x, _y)),
    "min": (("x", "y"), sp.Min(_x, _y)),
}

BUILTINS: dict[str, Function] = {
    name: Function(name, params, formula, builtin=True)
    for name, (params, formula) in _BUILTINS.items()
}

#: Names that are operators of the language and cannot be redefined as functions.
RESERVED = frozenset({"tr", "diag", "let", "input", "ones", "A", "I", "deg", "L"})


def define(
    name: str,
    params: Sequence[str],
    text: str,
    *,
    span: Span | None = None,
    source_text: str | None = None,
) -> Function:
    """A user function ``name(params) = text``; the formula is parsed by sympy."""
    if name in RESERVED:
        raise FunctionError(
            f"'{name}' is a built-in operator and cannot be redefined", span, source_text
        )
    if len(set(params)) != len(params):
        raise FunctionError(f"function '{name}' repeats a parameter name", span, source_text)
    syms = {p: sp.Symbol(p) for p in params}
    body = text.strip()
    if not body:
        raise FunctionError(f"function '{name}' has an empty formula", span, source_text)
    local: dict[str, Any] = {
        "binom": sp.binomial,
        "relu": lambda e: sp.Max(0, e),
        "sigmoid": lambda e: 1 / (1 + sp.exp(-e)),
        "square": lambda e: e**2,
        "E": sp.E,
        **syms,
    }
    try:
        formula = parse_expr(
            body,
            local_dict=local,
            transformations=(*standard_transformations, convert_xor),
            evaluate=True,
        )
    except Exception as e:  # sympy raises many kinds here: all mean "not a formula"
        raise FunctionError(
            f"cannot read the formula of '{name}': {body!r} ({type(e).__name__})", span, source_text
        ) from None
    if not isinstance(formula, sp.Expr):
        raise FunctionError(
            f"the formula of '{name}' is not an expression: {body!r}", span, source_text
        )
    from sympy.core.function import AppliedUndef

    undefined = sorted({type(a).__name__ for a in formula.atoms(AppliedUndef)})
    if undefined:
        raise FunctionError(
            f"the formula of '{name}' calls unknown function(s) {', '.join(undefined)}",
            span,
            source_text,
            hint="a formula may use its parameters, numbers and sympy functions (exp, log, ...)",
        )
    free = sorted(str(s) for s in formula.free_symbols if str(s) not in syms)
    if free:
        raise FunctionError(
            f"the formula of '{name}' uses {', '.join(repr(f) for f in free)}, which "
            f"{'is' if len(free) == 1 else 'are'} not among its parameters ({', '.join(params)})",
            span,
            source_text,
            hint=f"declare it as a parameter: let {name}({', '.join([*params, *free])}) = ...",
        )
    return Function(name, tuple(params), formula, builtin=False, source=body)


# --------------------------------------------------------------------------- lowering


def _falling(x: Any, k: int) -> Any:
    out = 1
    for i in range(k):
        out = out * (x - i)
    return out


class _Lowering:
    """Walk a sympy formula into calls of one array library (numpy, torch or exact)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        if backend == "torch":
            import torch

            self.lib: Any = torch
        else:
            self.lib = np

    def const(self, value: sp.Expr) -> Any:
        if self.backend == "exact" and value.is_Rational:
            r = Fraction(int(value.p), int(value.q))
            return r.numerator if r.denominator == 1 else r
        return float(value)

    def __call__(self, e: sp.Expr, env: dict[sp.Symbol, Any]) -> Any:
        lib = self.lib
        if e.is_Symbol:
            return env[e]
        if e.is_Number or e in (sp.E, sp.pi):
            return self.const(e)
        args = [self(a, env) for a in e.args]
        if e.is_Add:
            out = args[0]
            for a in args[1:]:
                out = out + a
            return out
        if e.is_Mul:
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if e.is_Pow:
            base, expo = args
            if e.args[1].is_Integer and int(e.args[1]) >= 0:
                return base ** int(e.args[1])
            if self.backend == "exact":
                raise TypeError("non-polynomial power in exact mode")
            return base**expo
        if isinstance(e, sp.binomial):
            k = e.args[1]
            if not (k.is_Integer and int(k) >= 0):
                raise TypeError("binom(x, k) needs a non-negative integer k")
            return _falling(args[0], int(k)) * self.const(sp.Rational(1, math.factorial(int(k))))
        if self.backend == "exact":
            raise TypeError(f"{type(e).__name__} is not exact")
        table: dict[type, Callable[..., Any]] = {
            sp.exp: lib.exp,
            sp.log: lib.log,
            sp.tanh: lib.tanh,
            sp.sin: lib.sin,
            sp.cos: lib.cos,
            sp.Abs: lib.abs,
            sp.sign: lib.sign,
        }
        for cls, fn in table.items():
            if isinstance(e, cls):
                return fn(args[0])
        if isinstance(e, (sp.Max, sp.Min)):
            pick = lib.maximum if isinstance(e, sp.Max) else lib.minimum
            out = args[0]
            for a in args[1:]:
                out = pick(*self._align(out, a))
            return out
        raise TypeError(f"no lowering for {type(e).__name__}")

    def _align(self, a: Any, b: Any) -> tuple[Any, Any]:
        if self.backend != "torch":
            return a, b
        torch = self.lib
        if not isinstance(a, torch.Tensor):
            a = torch.as_tensor(a, dtype=b.dtype, device=b.device)
        if not isinstance(b, torch.Tensor):
            b = torch.as_tensor(b, dtype=a.dtype, device=a.device)
        return a, b


def lower(formula: sp.Expr, symbols: Sequence[sp.Symbol], backend: str) -> Callable[..., Any]:
    """A callable ``f(*arrays)`` computing ``formula`` with ``backend`` in
    {"numpy", "torch", "exact"}; exact works on Python ints/Fractions (object arrays)."""
    walker = _Lowering(backend)
    syms = tuple(symbols)

    def f(*arrays: Any) -> Any:
        out = walker(formula, dict(zip(syms, arrays)))
        if backend == "torch" and not _is_tensor(out) and arrays:
            import torch

            ref = next(a for a in arrays if _is_tensor(a))
            out = torch.full_like(ref, float(out))
        elif (
            backend != "torch" and np.isscalar(out) and arrays and isinstance(arrays[0], np.ndarray)
        ):
            out = np.full(arrays[0].shape, out, dtype=object if backend == "exact" else float)
        return out

    return f


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch")
