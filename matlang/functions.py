"""Pointwise functions as sympy formulas: built-ins, user definitions, facts, numeric callables.

A :class:`Function` is a named sympy formula in its parameters. sympy answers what the compiler
asks (does f(0) vanish? is f a polynomial, of what degree?) and :func:`numeric` turns a formula
into a callable over numpy arrays, torch tensors, or exact Python numbers.

sympy is imported on first need (it takes most of a second): a built-in keeps the text of its
formula and parses it when a formula is first asked for, and the parser needs only names and
arities, so parsing or evaluating a sentence without pointwise functions never loads sympy.
"""

from __future__ import annotations

import ast as pyast
import math
import operator
import re
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from matlang.errors import FunctionError, Span

if TYPE_CHECKING:
    import sympy as sp


@dataclass(frozen=True)
class Function:
    """A pointwise function ``name(params) = formula``.

    ``expression`` is the sympy formula, or for a built-in the text of it (sympy syntax), which
    :attr:`formula` parses on first use."""

    name: str
    params: tuple[str, ...]
    expression: sp.Expr | str = field(repr=False)
    builtin: bool = False
    source: str | None = None  # the user's text of the formula, for printing

    @property
    def arity(self) -> int:
        return len(self.params)

    @cached_property
    def formula(self) -> sp.Expr:
        """The sympy formula in :attr:`symbols`."""
        if isinstance(self.expression, str):
            return _builtin_formula(self.expression, self.params)
        return self.expression

    @cached_property
    def symbols(self) -> tuple[sp.Symbol, ...]:
        import sympy as sp

        return tuple(sp.Symbol(p) for p in self.params)

    def specialize(self, constants: dict[int, Fraction]) -> sp.Expr:
        """The formula with the parameters at the given positions fixed to constants."""
        import sympy as sp

        subs = {
            self.symbols[i]: sp.Rational(v.numerator, v.denominator) for i, v in constants.items()
        }
        return sp.expand_func(self.formula.subs(subs)) if subs else self.formula

    def formula_text(self) -> str:
        if self.source is not None:
            return self.source
        import sympy as sp

        return sp.sstr(self.formula)

    def definition_text(self) -> str:
        return f"let {self.name}({', '.join(self.params)}) = {self.formula_text()}"

    def __repr__(self) -> str:
        return f"Function({self.definition_text()!r})"


# --------------------------------------------------------------------------- facts


def vanishes_at_zero(formula: sp.Expr, symbols: Sequence[sp.Symbol]) -> bool:
    """f(0, ..., 0) == 0, decided by sympy (limits where the formula is singular at 0)."""
    import sympy as sp

    at0 = formula.subs({s: 0 for s in symbols})
    if at0.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return False
    return bool(sp.simplify(at0) == 0)


def polynomial_degree(formula: sp.Expr, symbols: Sequence[sp.Symbol]) -> int | None:
    """Total degree when the formula is a polynomial with rational coefficients, else None."""
    import sympy as sp

    # binomial(x, 2) with a literal k is the polynomial x(x - 1)/2: expand_func writes it out
    expanded = sp.expand(sp.expand_func(formula) if formula.has(sp.binomial) else formula)
    if not symbols:
        return 0 if expanded.is_Rational else None
    if not expanded.is_polynomial(*symbols):
        return None
    poly = sp.Poly(expanded, *symbols)
    if not all(c.is_Rational for c in poly.coeffs()):
        return None
    return int(poly.total_degree())


def exact_degree(formula: sp.Expr, symbols: Sequence[sp.Symbol]) -> int | None:
    """A bound on the growth of exact values through the formula (None when it is not exactly
    computable): the total degree of a polynomial with rational coefficients, and for formulas
    with ``Mod`` (by a constant), the degree with each ``Mod(...)`` counted as a parameter (its
    value is below the modulus) and at least that of the polynomial inside."""
    import sympy as sp

    if not formula.has(sp.Mod):
        return polynomial_degree(formula, symbols)

    def bound(e: sp.Expr) -> int | None:
        if not e.free_symbols:
            return 0 if e.is_Rational else None
        if e.is_Symbol:
            return 1
        if isinstance(e, sp.Mod):
            inner = bound(e.args[0])
            return None if inner is None or not e.args[1].is_Rational else max(inner, 1)
        if isinstance(e, sp.binomial):  # a literal k: a polynomial of degree k in its argument
            inner, k = bound(e.args[0]), e.args[1]
            return None if inner is None or not (k.is_Integer and k >= 0) else inner * int(k)
        parts = [bound(a) for a in e.args]
        if any(b is None for b in parts):
            return None
        if e.is_Add:
            return max(b for b in parts if b is not None)
        if e.is_Mul:
            return sum(b for b in parts if b is not None)
        if e.is_Pow and e.args[1].is_Integer and int(e.args[1]) >= 0:
            return (parts[0] or 0) * int(e.args[1])
        return None

    return bound(formula)


#: Every integer of magnitude below this is a float64; past it, ``Mod`` of a float is noise.
FLOAT_EXACT = 2**53

#: ... and every integer of magnitude below this a float32.
FLOAT32_EXACT = 2**24


def mod_refusal(
    what: str, top: float, graph: str, advice: str, dtype: str = "float64", bits: int = 53
) -> str:
    """The one refusal of a ``Mod`` whose float argument reaches ``top`` past the integers
    ``dtype`` holds exactly (``2^bits``), for the dense evaluator and the compiled stages."""
    return (
        f"{what} reads {top:.4g} on graph {graph}: its Mod would take a float past 2^{bits}, "
        f"where {dtype} holds no exact remainder; {advice}"
    )


def mod_argument_bound(
    formula: sp.Expr, symbols: Sequence[sp.Symbol]
) -> Callable[[float], float] | None:
    """``bound(m)``: an upper bound on the magnitude of every ``Mod``'s first argument in
    ``formula`` when each symbol is at most ``m`` in magnitude (``None`` for a formula without
    ``Mod``; ``inf`` where an argument is not a polynomial): ``Σ |c| · m^deg`` over its
    terms, a nested ``Mod(·, q)`` counted as a variable of magnitude below ``|q|``. Where it
    reaches :data:`FLOAT_EXACT`,
    ``Mod`` computed on float64 values is not the exact remainder (``Mod(9**17, 7)`` is 4; on
    the float64 nearest ``9**17``, 3). sympy works once, here; ``bound`` is arithmetic."""
    import sympy as sp

    if not formula.has(sp.Mod):
        return None
    # per Mod, its argument's terms: |c|, degree in the symbols, the nested moduli's part
    groups: list[list[tuple[float, int, float]]] = []
    for mod in formula.atoms(sp.Mod):
        inner = mod.args[0]
        nested = {m: (sp.Dummy(), m.args[1]) for m in inner.atoms(sp.Mod)}
        if any(not q.is_Rational for _, q in nested.values()):
            return lambda m: math.inf
        inner = inner.xreplace({m: d for m, (d, _) in nested.items()})
        moduli = [abs(float(q)) for _, q in nested.values()]
        try:
            poly = sp.Poly(sp.expand(inner), *symbols, *(d for d, _ in nested.values()))
        except sp.PolynomialError:
            return lambda m: math.inf
        if not all(c.is_Rational for c in poly.coeffs()):
            return lambda m: math.inf
        k = len(symbols)
        groups.append(
            [
                (
                    abs(float(c)),
                    sum(monomial[:k]),
                    math.prod(q**e for q, e in zip(moduli, monomial[k:], strict=True)),
                )
                for monomial, c in poly.terms()
            ]
        )

    def bound(m: float) -> float:
        try:
            return max((sum(c * m**d * q for c, d, q in g) for g in groups if g), default=0.0)
        except OverflowError:
            return math.inf

    return bound


# --------------------------------------------------------------------------- built-ins

_BINOM_K = "binom(x, k) needs k to be a literal integer k >= 0, as in binom(deg, 3)"
_MOD_M = "Mod(x, m) needs a constant non-zero modulus m, as in Mod(x^2 + 3*x, 101)"

#: The built-in functions: parameters and the formula's text (sympy syntax, parsed on first use).
_BUILTINS: dict[str, tuple[tuple[str, ...], str]] = {
    "exp": (("x",), "exp(x)"),
    "log": (("x",), "log(x)"),
    "log1p": (("x",), "log(1 + x)"),
    "relu": (("x",), "Max(0, x)"),
    "sigmoid": (("x",), "1 / (1 + exp(-x))"),
    "tanh": (("x",), "tanh(x)"),
    "sqrt": (("x",), "sqrt(x)"),
    "abs": (("x",), "Abs(x)"),
    "square": (("x",), "x**2"),
    "cube": (("x",), "x**3"),
    "sin": (("x",), "sin(x)"),
    "cos": (("x",), "cos(x)"),
    "sign": (("x",), "sign(x)"),
    "softplus": (("x",), "log(1 + exp(x))"),
    "inv": (("x",), "1 / x"),
    "invsqrt": (("x",), "x**Rational(-1, 2)"),
    "binom": (("x", "k"), "binomial(x, k)"),
    "pow": (("x", "k"), "x**k"),
    "max": (("x", "y"), "Max(x, y)"),
    "min": (("x", "y"), "Min(x, y)"),
}

BUILTINS: dict[str, Function] = {
    name: Function(name, params, text, builtin=True) for name, (params, text) in _BUILTINS.items()
}

#: Why a built-in cannot be computed when none of its arguments is a literal (the rest can):
#: what :func:`unsupported_call` answers without sympy (``tests/matlang/test_functions.py``
#: checks it against sympy's answer).
_NEEDS_LITERALS: dict[str, str] = {"binom": _BINOM_K}


@cache
def _builtin_formula(text: str, params: tuple[str, ...]) -> sp.Expr:
    import sympy as sp

    return sp.sympify(text, locals={p: sp.Symbol(p) for p in params})


#: Names that are operators of the language and cannot be redefined as functions.
RESERVED = frozenset({"tr", "diag", "let", "input", "ones", "A", "I", "deg", "L"})


#: Names a formula may call: the built-ins by their matlang names, and sympy's spellings.
_FORMULA_CALL_NAMES = frozenset({*_BUILTINS, "Abs", "Max", "Min", "binomial", "Mod"})
_FORMULA_CONSTANT_NAMES = frozenset({"E", "pi"})


@cache
def _lowerable() -> tuple[type, ...]:
    """sympy node types :func:`numeric` can compute (anything else is refused when a function
    is defined, so evaluation never meets a formula it cannot compute)."""
    import sympy as sp

    return (
        sp.Symbol,
        sp.Add,
        sp.Mul,
        sp.Pow,
        sp.exp,
        sp.log,
        sp.tanh,
        sp.sin,
        sp.cos,
        sp.Abs,
        sp.sign,
        sp.Max,
        sp.Min,
        sp.binomial,
        sp.Mod,
    )


@cache
def _formula_namespace() -> tuple[dict[str, Any], dict[str, Any]]:
    """(locals, globals) for sympy's parser: the functions and constants a formula may use, and
    what sympy's generated code may reach while it parses a validated formula (nothing else)."""
    import sympy as sp

    calls: dict[str, Any] = {
        **{name: sp.Lambda(f.symbols, f.formula) for name, f in BUILTINS.items()},
        "Abs": sp.Abs,
        "Max": sp.Max,
        "Min": sp.Min,
        "binomial": sp.binomial,
        "Mod": sp.Mod,
    }
    local = {**calls, "E": sp.E, "pi": sp.pi}
    parse_globals: dict[str, Any] = {
        "__builtins__": {},
        "Integer": sp.Integer,
        "Float": sp.Float,
        "Rational": sp.Rational,
        "Symbol": sp.Symbol,
    }
    return local, parse_globals


_MAX_CONSTANT_EXPONENT = 100
_FORMULA_HINT = (
    "a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions "
    "(exp, log, sqrt, binom, relu, ...)"
)


def unsupported(formula: sp.Expr, *, call_site: bool = True) -> str | None:
    """Why :func:`numeric` cannot compute ``formula`` (None when it can).

    ``binomial(x, k)`` is only computable for a literal integer ``k >= 0``; with
    ``call_site=False`` (a definition, before its parameters are known) that is not checked yet.
    """
    import sympy as sp

    walk = sp.preorder_traversal(formula)
    for node in walk:
        if not node.free_symbols:  # a constant is lowered by its value (nan when undefined)
            if not call_site and not math.isfinite(constant_value(node)):
                return "it is undefined (a division by zero, an infinite or a complex constant)"
            walk.skip()
            continue
        if isinstance(node, sp.binomial):
            k = node.args[1]
            if call_site and not (k.is_Integer and int(k) >= 0):
                return _BINOM_K
            if k.is_Number and abs(k) > _MAX_CONSTANT_EXPONENT:
                # binom(x, k) expands to a polynomial of degree k
                return f"binom(x, k) needs k <= {_MAX_CONSTANT_EXPONENT}"
            continue
        if isinstance(node, sp.Mod):
            m = node.args[1]
            if not (m.is_Rational and m != 0):
                return _MOD_M
            continue
        if node.is_Pow and node.args[1].is_Number and abs(node.args[1]) > _MAX_CONSTANT_EXPONENT:
            return f"an exponent must be at most {_MAX_CONSTANT_EXPONENT} (got {node.args[1]})"
        if not isinstance(node, _lowerable()):
            return f"matlang cannot compute {type(node).__name__}"
    return None


def constant_value(c: sp.Expr) -> float:
    """The float value of a constant formula: ±inf when infinite, nan when undefined (zoo, nan)
    or not real (sqrt(-1)), as numpy would compute it."""
    import sympy as sp

    if c in (sp.oo, -sp.oo):
        return float(c)
    try:
        v = complex(sp.N(c))
    except (TypeError, ValueError):
        return math.nan
    return v.real if v.imag == 0 else math.nan


def unsupported_call(fn: Function, constants: dict[int, Fraction]) -> str | None:
    """Why ``fn`` cannot be computed with the literal arguments ``constants`` (None if it can);
    checked before ``binomial`` with a literal k is expanded."""
    if fn.builtin and not constants:  # the parser's question, answered without sympy
        return _NEEDS_LITERALS.get(fn.name)
    import sympy as sp

    subs = {fn.symbols[i]: sp.Rational(v.numerator, v.denominator) for i, v in constants.items()}
    for node in fn.formula.atoms(sp.binomial):
        # sympy rewrites binomial(x, 5/2) into gammas on substitution: check k first
        k = node.args[1].subs(subs)
        if not (k.is_Integer and int(k) >= 0):
            return _BINOM_K
    return unsupported(fn.formula.subs(subs) if subs else fn.formula)


def _float_value(node: pyast.AST) -> float:
    """The value of a name-free arithmetic tree in floats (inf when it overflows or is bad)."""
    try:
        if isinstance(node, pyast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, pyast.UnaryOp):
            v = _float_value(node.operand)
            return -v if isinstance(node.op, pyast.USub) else v
        if isinstance(node, pyast.BinOp):
            a, b = _float_value(node.left), _float_value(node.right)
            op = node.op
            if isinstance(op, pyast.Add):
                return a + b
            if isinstance(op, pyast.Sub):
                return a - b
            if isinstance(op, pyast.Mult):
                return a * b
            if isinstance(op, pyast.Div):
                return a / b
            if isinstance(op, pyast.Pow):
                return math.pow(a, b)
    except (ArithmeticError, ValueError):
        pass
    return math.inf


def _validate_formula_text(
    name: str, params: Sequence[str], body: str
) -> tuple[str, str | None] | None:
    """Why the text of a formula is refused before sympy sees it, with a hint (None when it is
    fine).

    sympy's ``parse_expr`` evaluates Python code, so only arithmetic, numbers, the parameters
    and known function names get through: no attributes, strings, lambdas or imports.
    """
    try:
        with warnings.catch_warnings():  # "invalid decimal literal" and the like
            warnings.simplefilter("ignore")
            # sympy reads ``^`` as ``**`` (convert_xor); so must the check, for precedence
            tree = pyast.parse(body.replace("^", "**"), mode="eval")
    except SyntaxError:
        return "it is not an arithmetic formula", None
    names = set(params) | _FORMULA_CONSTANT_NAMES
    ops = (pyast.Add, pyast.Sub, pyast.Mult, pyast.Div, pyast.Pow)

    def constant(node: pyast.AST) -> bool:
        return not any(isinstance(n, pyast.Name) for n in pyast.walk(node))

    def visit(node: pyast.AST) -> tuple[str, str | None] | None:
        if isinstance(node, pyast.Expression):
            return visit(node.body)
        if isinstance(node, pyast.Constant):
            ok = isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
            return None if ok else (f"{node.value!r} is not a number", None)
        if isinstance(node, pyast.Name):
            if node.id in names:
                return None
            if node.id in _FORMULA_CALL_NAMES:
                return f"'{node.id}' is a function; call it with parentheses", None
            return (
                f"it uses '{node.id}', which is not among its parameters ({', '.join(params)})",
                f"declare it as a parameter: let {name}({', '.join([*params, node.id])}) = ...",
            )
        if isinstance(node, pyast.UnaryOp) and isinstance(node.op, (pyast.UAdd, pyast.USub)):
            return visit(node.operand)
        if isinstance(node, pyast.BinOp) and isinstance(node.op, ops):
            if isinstance(node.op, pyast.Pow) and constant(node.right):
                # ``9^9^9`` would make sympy compute a number with millions of digits
                if abs(_float_value(node.right)) > _MAX_CONSTANT_EXPONENT:
                    return f"a constant exponent must be at most {_MAX_CONSTANT_EXPONENT}", None
            return visit(node.left) or visit(node.right)
        if isinstance(node, pyast.Call):
            func = node.func
            if not isinstance(func, pyast.Name) or func.id not in _FORMULA_CALL_NAMES:
                what = func.id if isinstance(func, pyast.Name) else pyast.unparse(func)
                return f"it calls {what}, which is not a function matlang knows", None
            if node.keywords or any(isinstance(a, pyast.Starred) for a in node.args):
                return f"{func.id}(...) takes plain arguments only", None
            arity = len(_BUILTINS[func.id][0]) if func.id in _BUILTINS else None
            if arity is not None and len(node.args) != arity:
                plural = "s" if arity != 1 else ""
                return f"{func.id} takes {arity} argument{plural}, got {len(node.args)}", None
            for a in node.args:
                why = visit(a)
                if why:
                    return why
            return None
        return f"'{pyast.unparse(node)}' is not arithmetic", None

    return visit(tree)


def define(
    name: str,
    params: Sequence[str],
    text: str,
    *,
    span: Span | None = None,
    source_text: str | None = None,
    user_functions: Collection[str] = (),
) -> Function:
    """A user function ``name(params) = text``; the formula is parsed by sympy.
    ``user_functions`` names the functions defined so far (a formula cannot call them).

    The formula may use its parameters, numbers (kept exact: ``0.5`` is 1/2), ``+ - * / ^ **``,
    ``E``, ``pi`` and calls of the built-in functions (exp, log, binom, relu, ...).
    """
    if name in RESERVED:
        raise FunctionError(
            f"'{name}' is a built-in operator and cannot be redefined", span, source_text
        )
    if name in BUILTINS:
        raise FunctionError(
            f"'{name}' is a built-in function and cannot be redefined",
            span,
            source_text,
            hint=f"choose another name, e.g. let my_{name}({', '.join(params)}) = ...",
        )
    if len(set(params)) != len(params):
        raise FunctionError(f"function '{name}' repeats a parameter name", span, source_text)
    clash = [p for p in params if p in _FORMULA_CALL_NAMES or p in _FORMULA_CONSTANT_NAMES]
    if clash:
        raise FunctionError(
            f"the parameter '{clash[0]}' of '{name}' has the name of a built-in",
            span,
            source_text,
        )
    import sympy as sp
    from sympy.parsing.sympy_parser import (
        convert_xor,
        parse_expr,
        rationalize,
        standard_transformations,
    )

    syms = {p: sp.Symbol(p) for p in params}
    body = text.strip()
    if not body:
        raise FunctionError(f"function '{name}' has an empty formula", span, source_text)
    why = _validate_formula_text(name, params, body)
    if why is not None:
        message, hint = why
        called = re.match(r"it calls (\w+),", message)
        if called and called.group(1) in user_functions:
            message = f"it calls the user function {called.group(1)}"
            hint = "a formula may call built-in functions only; write the formula out in full"
        raise FunctionError(
            f"cannot read the formula of '{name}': {message}",
            span,
            source_text,
            hint=hint or _FORMULA_HINT,
        )
    names, parse_globals = _formula_namespace()
    local: dict[str, Any] = {**names, **syms}
    try:
        formula = parse_expr(
            body,
            local_dict=local,
            global_dict=parse_globals,
            transformations=(*standard_transformations, convert_xor, rationalize),
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
    problem = unsupported(formula, call_site=False)
    if problem is not None:
        raise FunctionError(f"the formula of '{name}' cannot be used: {problem}", span, source_text)
    return Function(name, tuple(params), formula, builtin=False, source=body)


# --------------------------------------------------------------------------- numeric callables

#: A lowered formula node: computes its value from the arguments of the call.
Node = Callable[[Sequence[Any]], Any]


def _falling(x: Any, k: int) -> Any:
    out = 1
    for i in range(k):
        out = out * (x - i)
    return out


def _fold(op: Callable[[Any, Any], Any], parts: list[Node]) -> Node:
    """``op(...op(op(p0, p1), p2)...)`` of the parts' values, left to right."""
    if len(parts) == 2:
        p, q = parts
        return lambda xs: op(p(xs), q(xs))

    def fold(xs: Sequence[Any]) -> Any:
        out = parts[0](xs)
        for part in parts[1:]:
            out = op(out, part(xs))
        return out

    return fold


def _failing(error: Exception) -> Node:
    """A node that raises ``error`` when evaluated (a formula is refused where it is used)."""

    def fail(xs: Sequence[Any]) -> Any:
        raise error

    return fail


class _Lowering:
    """Turn a sympy formula, once, into a tree of closures over one array library (numpy, torch
    or exact Python numbers): evaluating it walks no sympy."""

    def __init__(self, backend: str, symbols: Sequence[sp.Symbol]) -> None:
        self.backend = backend
        self.index = {s: i for i, s in enumerate(symbols)}
        if backend == "torch":
            import torch

            self.lib: Any = torch
        else:
            import numpy as np

            self.lib = np

    def const(self, value: sp.Expr) -> Any:
        if self.backend == "exact" and value.is_Rational:
            r = Fraction(int(value.p), int(value.q))
            return r.numerator if r.denominator == 1 else r
        return constant_value(value)

    def __call__(self, e: sp.Expr) -> Node:
        import sympy as sp

        lib = self.lib
        if e.is_Symbol:
            if e not in self.index:
                return _failing(KeyError(e))
            i = self.index[e]
            return lambda xs: xs[i]
        if not e.free_symbols:  # constants fold to their value: log(2), binomial(5, 2), zoo
            c = self.const(e)
            return lambda xs: c
        if isinstance(e, sp.binomial):
            k = e.args[1]
            if not (k.is_Integer and int(k) >= 0):
                return _failing(TypeError("binom(x, k) needs a non-negative integer k"))
            x, kk = self(e.args[0]), int(k)
            scale = self.const(sp.Rational(1, math.factorial(kk)))
            return lambda xs: _falling(x(xs), kk) * scale
        parts = [self(a) for a in e.args]
        if isinstance(e, sp.Mod):
            # x mod m with the sign of m, as Python's % (exact ints and Fractions), np.mod and
            # torch.remainder all define it
            x, m = parts
            if self.backend == "torch":
                return lambda xs: lib.remainder(x(xs), m(xs))
            if self.backend == "numpy":
                return lambda xs: lib.mod(x(xs), m(xs))
            return lambda xs: x(xs) % m(xs)
        if e.is_Add:
            return _fold(operator.add, parts)
        if e.is_Mul:
            return _fold(operator.mul, parts)
        if e.is_Pow:
            base, expo = parts
            if e.args[1].is_Integer and int(e.args[1]) >= 0:
                k = int(e.args[1])
                return lambda xs: base(xs) ** k
            if self.backend == "exact":
                return _failing(TypeError("non-polynomial power in exact mode"))
            return lambda xs: base(xs) ** expo(xs)
        if self.backend == "exact":
            return _failing(TypeError(f"{type(e).__name__} is not exact"))
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
                arg = parts[0]
                return lambda xs: fn(arg(xs))
        if isinstance(e, (sp.Max, sp.Min)):
            pick = lib.maximum if isinstance(e, sp.Max) else lib.minimum
            return _fold(lambda a, b: pick(*self._align(a, b)), parts)
        return _failing(TypeError(f"no lowering for {type(e).__name__}"))

    def _align(self, a: Any, b: Any) -> tuple[Any, Any]:
        if self.backend != "torch":
            return a, b
        torch = self.lib
        # a Python number as a 0-d tensor by a fill on the device: torch.as_tensor would copy
        # it from the host, a synchronising transfer on a GPU
        if not isinstance(a, torch.Tensor):
            a = torch.full((), a, dtype=b.dtype, device=b.device)
        if not isinstance(b, torch.Tensor):
            b = torch.full((), b, dtype=a.dtype, device=a.device)
        return a, b


def numeric(formula: sp.Expr, symbols: Sequence[sp.Symbol], backend: str) -> Callable[..., Any]:
    """A callable ``f(*arrays)`` computing ``formula`` with ``backend`` in
    {"numpy", "torch", "exact"}; exact works on Python ints/Fractions (object arrays).

    The formula is lowered once, here; a formula that cannot be computed with ``backend``
    raises ``TypeError`` when ``f`` is called."""
    import numpy as np

    node = _Lowering(backend, tuple(symbols))(formula)

    def f(*arrays: Any) -> Any:
        out = node(arrays)
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
