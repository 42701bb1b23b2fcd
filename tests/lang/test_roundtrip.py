"""Random well-shaped ASTs round-trip through the printer: ``parse(to_text(e)) == e`` in
Unicode and ASCII, and printing is a fixed point. The strategy is reused by test_dense."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from matlang import ast as A
from matlang import parse, parse_program, to_latex, to_text
from matlang.functions import BUILTINS, Function, define
from matlang.printer import program_to_text
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR, Shape

USER_F = define("f", ["x"], "x*(x-1)/2")
USER_G = define("g", ["x", "y"], "x*y + 1")
#: Built-ins with a polynomial formula (their values stay exact integers/rationals).
POLY_UNARY = ["square", "cube"]
ANY_UNARY = [
    "exp", "log", "log1p", "relu", "sigmoid", "tanh", "sqrt", "abs", "square", "cube", "sin",
    "cos", "sign", "softplus", "inv", "invsqrt",
]  # fmt: skip

#: Literal numbers: finite decimals (the only numbers the text can spell).
numbers = st.builds(
    lambda k, d: A.Number(Fraction(k, d)),
    st.integers(0, 300),
    st.sampled_from([1, 1, 1, 2, 4, 5, 10, 100]),
)
small_powers = st.integers(0, 4)


def _leaf(draw: st.DrawFn, shape: Shape, inputs: bool) -> A.Expr:
    a, ones = A.Input("A", MATRIX), A.Ones()
    if shape == MATRIX:
        return draw(st.sampled_from([a, A.Diag(ones)]))
    if shape == COLUMN:
        options = [ones, A.Mul(a, ones)] + ([A.Input("h", COLUMN)] if inputs else [])
        return draw(st.sampled_from(options))
    if shape == ROW:
        return A.Transpose(ones)
    return draw(numbers)


@st.composite
def exprs(
    draw: st.DrawFn,
    shape: Shape = SCALAR,
    depth: int = 4,
    *,
    polynomial: bool = False,
    inputs: bool = True,
    divisions: bool = True,
) -> A.Expr:
    """A random expression of ``shape``. ``polynomial`` keeps to +, -, ·, ⊙, powers, diag, tr,
    division by nonzero literals and polynomial functions (its value is exact)."""
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        return _leaf(draw, shape, inputs)

    def sub(s: Shape) -> A.Expr:
        return draw(exprs(s, depth - 1, polynomial=polynomial, inputs=inputs, divisions=divisions))

    kinds = ["add", "sub", "neg", "hadamard", "scale", "binom", "user_f", "user_g", "apply"]
    kinds += ["max"] if not polynomial else []
    kinds += ["div"] if divisions else []
    kinds += ["transpose"]
    kinds += {
        MATRIX: ["matmul", "matmul", "outer", "power", "power", "diag"],
        COLUMN: ["mv", "mv"],
        ROW: ["vm"],
        SCALAR: ["inner", "trace", "trace", "power"],
    }[shape]
    kind = draw(st.sampled_from(kinds))
    if kind == "add":
        return A.Add(sub(shape), sub(shape))
    if kind == "sub":
        return A.Sub(sub(shape), sub(shape))
    if kind == "neg":
        return A.Neg(sub(shape))
    if kind == "hadamard":
        return A.Hadamard(sub(shape), sub(shape))
    if kind == "scale":
        pair = (sub(SCALAR), sub(shape))
        return A.Mul(*pair) if draw(st.booleans()) else A.Mul(pair[1], pair[0])
    if kind == "div":
        den = draw(numbers.filter(lambda n: n.value != 0)) if polynomial else sub(SCALAR)
        return A.Div(sub(shape), den)
    if kind == "binom":
        return A.Apply(BUILTINS["binom"], (sub(shape), A.Number(Fraction(draw(small_powers)))))
    if kind == "user_f":
        return A.Apply(USER_F, (sub(shape),))
    if kind == "user_g":
        second = draw(numbers) if draw(st.booleans()) else sub(shape)
        return A.Apply(USER_G, (sub(shape), second))
    if kind == "apply":
        name = draw(st.sampled_from(POLY_UNARY if polynomial else ANY_UNARY))
        return A.Apply(BUILTINS[name], (sub(shape),))
    if kind == "max":
        return A.Apply(
            BUILTINS["max"], (sub(shape), draw(numbers) if shape.is_scalar else sub(shape))
        )
    if kind == "transpose":
        inner = sub(shape.transpose())
        # a transposed number literal is refused by the parser (``1ᵀ`` means 𝟏ᵀ in the paper)
        return inner if isinstance(inner, A.Number) else A.Transpose(inner)
    if kind == "matmul":
        return A.Mul(sub(MATRIX), sub(MATRIX))
    if kind == "outer":
        return A.Mul(sub(COLUMN), sub(ROW))
    if kind == "power":
        return A.Power(sub(shape), draw(small_powers))
    if kind == "diag":
        return A.Diag(sub(draw(st.sampled_from([COLUMN, ROW]))))
    if kind == "mv":
        return A.Mul(sub(MATRIX), sub(COLUMN))
    if kind == "vm":
        return A.Mul(sub(ROW), sub(MATRIX))
    if kind == "inner":
        return A.Mul(sub(ROW), sub(COLUMN))
    assert kind == "trace"
    return A.Trace(sub(MATRIX))


shapes = st.sampled_from([SCALAR, COLUMN, ROW, MATRIX])
any_exprs = shapes.flatmap(lambda s: exprs(s))


@settings(max_examples=400, deadline=None)
@given(any_exprs)
def test_unicode_round_trip(e: A.Expr) -> None:
    text = to_text(e)
    back = parse(text)
    assert back == e
    assert back.shape == e.shape
    assert to_text(back) == text
    assert isinstance(to_latex(e), str)


@settings(max_examples=300, deadline=None)
@given(any_exprs)
def test_ascii_round_trip(e: A.Expr) -> None:
    text = to_text(e, ascii=True)
    assert text.isascii()
    back = parse(text)
    assert back == e
    assert to_text(back, ascii=True) == text
    assert to_text(back) == to_text(e)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), any_exprs), min_size=1, max_size=4))
def test_program_round_trip(items: list[tuple[bool, A.Expr]]) -> None:
    sentences = tuple(
        A.Sentence(e, f"s{i}" if named else None) for i, (named, e) in enumerate(items)
    )
    program = A.Program(sentences, (USER_F, USER_G), ("h",))
    for ascii_text in (False, True):
        text = program_to_text(program, ascii=ascii_text)
        assert parse_program(text) == program


def test_strategy_reaches_every_node_type() -> None:
    """The strategy is not silently narrow: a fixed sample contains every AST node type."""
    seen: set[str] = set()
    funcs: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(any_exprs)
    def collect(e: A.Expr) -> None:
        for node in e.walk():
            seen.add(type(node).__name__)
            if isinstance(node, A.Apply):
                funcs.add(node.function.name)

    collect()
    assert seen >= {
        "Input", "Ones", "Number", "Mul", "Hadamard", "Add", "Sub", "Neg", "Div", "Transpose",
        "Power", "Diag", "Trace", "Apply",
    }  # fmt: skip
    assert {"f", "g", "binom"} <= funcs
    assert isinstance(USER_F, Function)
