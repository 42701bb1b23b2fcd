"""Pointwise functions: built-ins, user formulas read by sympy, the facts the compiler asks
(f(0) = 0? polynomial? degree), and lowering to numpy, torch and exact Python numbers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch

from matlang import evaluate, parse
from matlang.errors import FunctionError
from matlang.functions import (
    BUILTINS,
    RESERVED,
    define,
    numeric,
    polynomial_degree,
    unsupported,
    unsupported_call,
    vanishes_at_zero,
)

# name -> (f at 0.5, vanishes at 0, polynomial degree)
BUILTIN_FACTS = {
    "exp": (math.exp(0.5), False, None),
    "log": (math.log(0.5), False, None),
    "log1p": (math.log1p(0.5), True, None),
    "relu": (0.5, True, None),
    "sigmoid": (1 / (1 + math.exp(-0.5)), False, None),
    "tanh": (math.tanh(0.5), True, None),
    "sqrt": (math.sqrt(0.5), True, None),
    "abs": (0.5, True, None),
    "square": (0.25, True, 2),
    "cube": (0.125, True, 3),
    "sin": (math.sin(0.5), True, None),
    "cos": (math.cos(0.5), False, None),
    "sign": (1.0, True, None),
    "softplus": (math.log1p(math.exp(0.5)), False, None),
    "inv": (2.0, False, None),
    "invsqrt": (2**0.5, False, None),
}


def test_every_builtin_is_listed() -> None:
    assert set(BUILTINS) == set(BUILTIN_FACTS) | {"binom", "pow", "max", "min"}
    assert all(f.builtin for f in BUILTINS.values())
    assert not set(BUILTINS) & RESERVED


_x, _k, _y = sp.symbols("x k y")


@pytest.mark.parametrize(
    ("name", "formula"),
    [
        ("exp", sp.exp(_x)),
        ("log", sp.log(_x)),
        ("log1p", sp.log(1 + _x)),
        ("relu", sp.Max(0, _x)),
        ("sigmoid", 1 / (1 + sp.exp(-_x))),
        ("tanh", sp.tanh(_x)),
        ("sqrt", sp.sqrt(_x)),
        ("abs", sp.Abs(_x)),
        ("square", _x**2),
        ("cube", _x**3),
        ("sin", sp.sin(_x)),
        ("cos", sp.cos(_x)),
        ("sign", sp.sign(_x)),
        ("softplus", sp.log(1 + sp.exp(_x))),
        ("inv", 1 / _x),
        ("invsqrt", _x ** sp.Rational(-1, 2)),
        ("binom", sp.binomial(_x, _k)),
        ("pow", _x**_k),
        ("max", sp.Max(_x, _y)),
        ("min", sp.Min(_x, _y)),
    ],
)
def test_builtin_text_reads_as_its_formula(name: str, formula: sp.Expr) -> None:
    """A built-in keeps its formula as text (sympy loads on first use): the text reads as the
    formula built with sympy, and the parser's sympy-free answer to "can it be computed with no
    literal argument?" is sympy's."""
    fn = BUILTINS[name]
    assert fn.formula == formula
    assert unsupported_call(fn, {}) == unsupported(fn.formula)


@pytest.mark.parametrize("name", sorted(BUILTIN_FACTS))
def test_unary_builtin(name: str) -> None:
    value, vanishes, degree = BUILTIN_FACTS[name]
    fn = BUILTINS[name]
    assert fn.arity == 1
    assert vanishes_at_zero(fn.formula, fn.symbols) is vanishes
    assert polynomial_degree(fn.formula, fn.symbols) == degree
    xs = np.array([0.5, 1.5, 2.0])
    by_numpy = numeric(fn.formula, fn.symbols, "numpy")(xs)
    by_torch = numeric(fn.formula, fn.symbols, "torch")(torch.tensor(xs))
    assert by_numpy[0] == pytest.approx(value, rel=1e-12)
    assert torch.allclose(by_torch, torch.tensor(by_numpy))
    # the dense evaluator applies it entrywise (0.5 A 𝟏 on the path 0-1-2 is [0.5, 1, 0.5])
    got = evaluate(f"{name}(0.5 A 𝟏)", np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    assert got[0] == pytest.approx(value, rel=1e-12) and got[0] == got[2]


def test_two_argument_builtins() -> None:
    x, y = np.array([1.0, 5.0, -2.0]), np.array([3.0, 2.0, 0.0])
    for name, want in [("max", np.maximum(x, y)), ("min", np.minimum(x, y)), ("pow", x**y)]:
        fn = BUILTINS[name]
        assert numeric(fn.formula, fn.symbols, "numpy")(x, y).tolist() == want.tolist()
        t = numeric(fn.formula, fn.symbols, "torch")(torch.tensor(x), torch.tensor(y))
        assert t.tolist() == want.tolist()
    # a literal argument is fixed before lowering: binom(x, 3) is the cubic x(x-1)(x-2)/6
    binom3 = BUILTINS["binom"].specialize({1: Fraction(3)})
    x_ = sp.Symbol("x")
    assert sp.expand(binom3 - x_ * (x_ - 1) * (x_ - 2) / 6) == 0
    assert polynomial_degree(binom3, [x_]) == 3 and vanishes_at_zero(binom3, [x_])
    assert not vanishes_at_zero(BUILTINS["binom"].specialize({1: Fraction(0)}), [x_])
    assert polynomial_degree(BUILTINS["pow"].specialize({1: Fraction(2)}), [x_]) == 2
    relu_of_max = BUILTINS["max"].specialize({1: Fraction(0)})
    assert vanishes_at_zero(relu_of_max, [x_]) and polynomial_degree(relu_of_max, [x_]) is None


def test_exact_lowering() -> None:
    x = sp.Symbol("x")
    objs = np.array([[0], [3], [10**30]], dtype=object)
    cubic = numeric(sp.binomial(x, 3), [x], "exact")(objs)
    assert cubic.tolist() == [[0], [1], [(10**30) * (10**30 - 1) * (10**30 - 2) // 6]]
    assert all(isinstance(v, (int, Fraction)) for v in cubic.ravel())  # exact, never float
    quarter = numeric(x / 4, [x], "exact")(np.array([[2]], dtype=object))
    assert quarter[0, 0] == Fraction(1, 2)
    with pytest.raises(TypeError):
        numeric(sp.exp(x), [x], "exact")(objs)


USER = [
    # (definition, argument, expected value at it, vanishes at 0, degree)
    ("let f(x) = x*(x-1)*(x-2)/6", 5, 10, True, 3),
    ("let f(x) = x^2 + 1", 3, 10, False, 2),
    ("let f(x) = x**2 + 1", 3, 10, False, 2),
    ("let f(x) = 0.5*x", 3, Fraction(3, 2), True, 1),  # decimals are exact (rationalised)
    ("let f(x) = binom(x, 2) + relu(x) - max(x, 1)", 4, 6, False, None),
    ("let f(x) = exp(x) - 1", 0, 0.0, True, None),
    ("let f(x) = E^x", 1, math.e, False, None),
    ("let f(x) = sqrt(x^2)", -3, 3.0, True, None),
    ("let f(x) = x / pi", 1, 1 / math.pi, True, None),  # pi is not a rational coefficient
    ("let f(x) = 7", 1, 7, False, 0),
    ("let f(x) = sigmoid(x) - 1/2", 0, 0.0, True, None),
]


@pytest.mark.parametrize(("text", "arg", "value", "vanishes", "degree"), USER)
def test_user_function(
    text: str, arg: int, value: float | Fraction, vanishes: bool, degree: int | None
) -> None:
    e = parse(f"{text}; f(A 𝟏)")
    fn = e.function  # type: ignore[attr-defined]
    assert not fn.builtin and fn.definition_text() == text
    assert vanishes_at_zero(fn.formula, fn.symbols) is vanishes
    assert polynomial_degree(fn.formula, fn.symbols) == degree
    # evaluated at a node of degree ``arg``: the star K_{1,arg} centre
    graph = "empty1" if arg == 0 else f"star{abs(arg)}"
    if arg < 0:
        got = evaluate(f"{text}; f(-A 𝟏)", graph)[0]
    else:
        got = evaluate(f"{text}; f(A 𝟏)", graph)[0]
    assert got == pytest.approx(value, rel=1e-12)
    if degree is not None:
        assert isinstance(got, (np.integer, int, Fraction))  # exact: no float rounding


@pytest.mark.parametrize(("text", "arg", "value", "vanishes", "degree"), USER)
def test_user_function_lowered_to_torch_keeps_gradients(
    text: str, arg: int, value: float | Fraction, vanishes: bool, degree: int | None
) -> None:
    """The torch lowering (built once, called many times) gives sympy's value and derivative."""
    fn = parse(f"{text}; f(A 𝟏)").function  # type: ignore[attr-defined]
    f = numeric(fn.formula, fn.symbols, "torch")
    (x,) = fn.symbols
    df = sp.diff(fn.formula, x)
    for point in (float(arg), float(arg) + 0.25):  # called twice: nothing consumed by a call
        t = torch.tensor([point], dtype=torch.float64, requires_grad=True)
        out = f(t)
        want = float(fn.formula.subs(x, sp.nsimplify(point)))
        assert out.item() == pytest.approx(want, rel=1e-12)
        assert out.requires_grad is (x in fn.formula.free_symbols)  # f(x) = 7 has no gradient
        if out.requires_grad:
            out.sum().backward()
            assert t.grad is not None
            slope = float(df.subs(x, sp.nsimplify(point)))
            assert t.grad.item() == pytest.approx(slope, rel=1e-12, abs=1e-12)


def test_user_function_two_parameters() -> None:
    e = parse("let g(x, k) = binom(x, k) * k; 𝟏ᵀ g(A 𝟏, 2)")
    assert evaluate(e, "K4") == 4 * 3 * 2
    with pytest.raises(FunctionError, match="binom"):
        parse("let g(x, k) = binom(x, k); g(A 𝟏, A 𝟏)")


def test_define_errors_through_the_api() -> None:
    for name, params, text, match in [
        ("tr", ["x"], "x", "built-in operator"),
        ("exp", ["x"], "x", "built-in function"),
        ("f", ["x", "x"], "x", "repeats a parameter"),
        ("f", ["x"], "   ", "empty formula"),
        ("f", ["pi"], "pi", "has the name of a built-in"),
        ("f", ["x"], "x + y", "not among its parameters"),
        ("f", ["x"], "Piecewise((x, x > 0), (0, True))", "not a function matlang knows"),
        ("f", ["x"], "x % 2", "is not arithmetic"),
        ("f", ["x"], "relu(x, x)", "relu takes 1 argument, got 2"),
        ("f", ["x"], "binom(x)", "binom takes 2 arguments, got 1"),
        ("f", ["x"], "log(0) + x", "undefined"),
        # ^ binds tighter than + (as in sympy): the exponent here is the constant 1e92
        ("f", ["x", "y"], "x^1e92 + y", "a constant exponent must be at most 100"),
        ("f", ["x"], "x^9^9^9", "a constant exponent must be at most 100"),
    ]:
        with pytest.raises(FunctionError, match=match):
            define(name, params, text)


def test_unsupported() -> None:
    x, k = sp.symbols("x k")
    assert unsupported(x**2 + sp.exp(x)) is None
    assert "gamma" in (unsupported(sp.gamma(x)) or "")
    assert "binom" in (unsupported(sp.binomial(x, k)) or "")
    assert unsupported(sp.binomial(x, k), call_site=False) is None
    # an undefined constant refuses a definition; at a call site evaluation reports it (nan)
    assert unsupported(sp.zoo * x, call_site=False) is not None
    assert unsupported(sp.log(0) + x) is None
    binom = BUILTINS["binom"]
    assert unsupported_call(binom, {1: Fraction(3)}) is None
    assert unsupported_call(binom, {1: Fraction(5, 2)}) is not None
    assert unsupported_call(binom, {}) is not None


def test_mod_formulas_are_exact_in_every_backend() -> None:
    """``Mod(x, m)`` (a constant modulus): exact Python ints in the exact evaluator, np.mod and
    torch.remainder elsewhere, all with the sign of m as Python's %."""
    from matlang.functions import exact_degree

    fn = define("h", ["x"], "Mod(3*x^3 + x + 5, 7)")
    (x,) = fn.symbols
    assert polynomial_degree(fn.formula, [x]) is None and exact_degree(fn.formula, [x]) == 3
    xs = np.array([-4, -1, 0, 1, 2, 10, 2**40], dtype=object)
    want = [(3 * v**3 + v + 5) % 7 for v in xs]
    assert list(numeric(fn.formula, [x], "exact")(xs)) == want
    assert list(numeric(fn.formula, [x], "numpy")(xs[:-1].astype(float))) == want[:-1]
    got = numeric(fn.formula, [x], "torch")(torch.tensor(xs[:-1].astype(float)))
    assert got.tolist() == want[:-1]
    # the evaluator keeps such values exact (int64, not float64), past 2^53 too
    v = evaluate(parse("let h(x) = Mod(x^3, 1000003)\n𝟏ᵀ h(4194304 A) 𝟏"), 1 - np.eye(2))
    assert int(v) == 2 * pow(4194304, 3, 1000003) and not isinstance(v, float)
    assert exact_degree(define("q", ["x"], "Mod(exp(x), 3)").formula, [x]) is None


def test_mod_needs_a_constant_modulus() -> None:
    with pytest.raises(FunctionError, match="constant non-zero modulus"):
        define("h", ["x", "m"], "Mod(x, m)")
    with pytest.raises(FunctionError, match="constant non-zero modulus|cannot read"):
        define("h", ["x"], "Mod(x, 0)")


def test_mod_argument_bound_is_a_bound_on_every_remainders_argument() -> None:
    """``mod_argument_bound``: Σ|c|·m^deg over the argument's terms, a nested Mod by its
    modulus, ``inf`` for a non-polynomial argument, 0 without Mod — checked against the largest
    argument over integers in [-m, m]."""
    import sympy as sp

    from matlang.functions import mod_argument_bound

    x = sp.Symbol("x")
    assert mod_argument_bound(x * x, [x]) is None  # no Mod: nothing to bound
    assert mod_argument_bound(sp.Mod(x, 7), [x])(9.0**17) == 9.0**17
    assert mod_argument_bound(sp.Mod(sp.exp(x), 2), [x])(1.0) == float("inf")
    assert mod_argument_bound(sp.Mod(x, 7), [x])(1e200) == 1e200
    formula = sp.Mod(x * sp.Mod(x, 3) - 2 * x, 5) + sp.Mod(3 * x * x - x, 11)
    bound = mod_argument_bound(formula, [x])
    assert bound(10.0) == max(10 * 3 + 2 * 10, 3 * 100 + 10) == 310
    for m in (1, 4, 10):
        largest = max(max(abs(v * (v % 3) - 2 * v), abs(3 * v * v - v)) for v in range(-m, m + 1))
        assert largest <= bound(float(m))
    assert mod_argument_bound(sp.Mod(x**3, 7), [x])(1e200) == float("inf")  # overflow: inf


def test_binom_in_a_definition_is_an_exact_polynomial() -> None:
    """``let f(x) = binom(x, 2)`` gave floats ([0., 1., 0.] on a path) while ``binom(A𝟏, 2)``
    gave integers: ``binomial(x, k)`` with a literal k is the polynomial of degree k, exact on
    integers, alone or beside a ``Mod``; checked against math.comb."""
    import math

    import matlang

    cases = {
        "let f(x) = binom(x, 2); f(A𝟏)": [math.comb(d, 2) for d in (1, 2, 1)],
        "let f(x) = Mod(binom(x, 2), 5) + binom(x, 0); f(A𝟏)": [
            math.comb(d, 2) % 5 + 1 for d in (1, 2, 1)
        ],
    }
    for text, want in cases.items():
        got = matlang.evaluate(text, "path3")
        assert np.asarray(got).dtype.kind == "i" and np.asarray(got).tolist() == want, text
    assert matlang.evaluate("let f(x) = binom(x, 3); 𝟏ᵀ f(A²𝟏)", "K4") == 4 * math.comb(9, 3)
    big = matlang.evaluate("let f(x) = binom(x, 3); 𝟏ᵀ f(A^12 𝟏)", "K10")
    assert big == 10 * math.comb(9**12, 3)  # past 2⁶³: exact Python integers
