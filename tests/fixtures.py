"""Data shared by the test modules (no test module imports another): graphs of mixed sizes with
isolated nodes, the sparse backends, small counting datasets, the front end's golden table of
valid sentences, and a hypothesis strategy for random well-shaped expressions."""

from __future__ import annotations

import importlib.util
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from hypothesis import strategies as st

from matlang import ast as A
from matlang.functions import BUILTINS, define
from matlang.graphs import Graph, from_adjacency, named
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR, Shape

if TYPE_CHECKING:
    from matlang.runtime.datasets import CountingData

P = pytest.param

# --------------------------------------------------------------------------- graphs and backends

PAPER = ["decalin", "bicyclopentyl", "cospectral_G", "cospectral_H", "rook4x4", "shrikhande"]


def backends() -> list[Any]:
    """Both sparse backends as test parameters; torch_sparse is skipped where not installed."""
    from matlang.runtime import sparse

    return [
        P(b, marks=pytest.mark.skipif(
            b not in sparse.available_backends(), reason="torch_sparse/torch_scatter not importable"
        ))
        for b in sparse.BACKENDS
    ]


def with_isolated(g: Graph, extra: int) -> Graph:
    """``g`` plus ``extra`` isolated nodes (scattered, not only at the end)."""
    n = g.num_nodes + extra
    order = np.random.default_rng(n).permutation(n)
    a = np.zeros((n, n), dtype=np.int64)
    a[: g.num_nodes, : g.num_nodes] = np.asarray(g.adjacency)
    a = a[np.ix_(order, order)]
    return from_adjacency(a, name=f"{g.label()}+{extra}")


def graph_set() -> list[Graph]:
    """The paper's graphs and random graphs with isolated nodes, of mixed sizes."""
    gs = [named(n) for n in PAPER]
    from matlang.runtime.generators import erdos_renyi

    gs += [with_isolated(erdos_renyi(n, p, seed=s), k) for n, p, s, k in
           [(5, 0.6, 1, 2), (9, 0.35, 2, 3), (3, 1.0, 3, 1), (12, 0.25, 4, 0)]]
    gs += [from_adjacency(np.zeros((1, 1), dtype=np.int64), name="K1"), named("petersen")]
    return gs


GRAPHS = graph_set()


def counting_data(
    n_graphs: int = 36,
    labels: dict[str, np.ndarray] | None = None,
    *,
    nodes: int = 9,
    p: float = 0.35,
) -> CountingData:
    """A small counting dataset (``runtime.datasets.CountingData``): ``n_graphs`` Erdős–Rényi
    graphs on ``nodes`` nodes, split in thirds (train, validation, test), with ``labels``."""
    from matlang.runtime.datasets import CountingData
    from matlang.runtime.generators import erdos_renyi

    graphs = [erdos_renyi(nodes, p, seed=k, name=f"er{k}") for k in range(n_graphs)]
    idx = np.arange(n_graphs)
    third = n_graphs // 3
    return CountingData(graphs, idx[:third], idx[third : 2 * third], idx[2 * third :], labels or {})


# --------------------------------------------------------------------------- the golden table

# (input, canonical text, shape). Every syntax form of grammars/matlang.lark appears here.
VALID = [
    # matrix product: *, @, ·, ×, juxtaposition
    P("A*A", "A A", "matrix n×n", id="star"),
    P("A @ A", "A A", "matrix n×n", id="at"),
    P("A · A", "A A", "matrix n×n", id="middle-dot"),
    P("A × A", "A A", "matrix n×n", id="times"),
    P("A A", "A A", "matrix n×n", id="juxtapose"),
    P("𝟏ᵀA𝟏", "𝟏ᵀ A 𝟏", "scalar 1×1", id="juxtapose-no-space"),
    P("2A", "2 A", "matrix n×n", id="number-juxtapose"),
    P("A 2", "A 2", "matrix n×n", id="matrix-times-number"),
    P("2 3", "2 3", "scalar 1×1", id="number-number"),
    P("A (A)", "A A", "matrix n×n", id="juxtapose-paren"),
    P("A A A", "A A A", "matrix n×n", id="juxtapose-left-assoc"),
    P("A (A A)", "A (A A)", "matrix n×n", id="juxtapose-right-group"),
    P("2 (3 A)", "2 (3 A)", "matrix n×n", id="scalar-scalar-matrix"),
    P("ones' ones", "𝟏ᵀ 𝟏", "scalar 1×1", id="inner-product"),
    P("ones ones'", "𝟏 𝟏ᵀ", "matrix n×n", id="outer-product"),
    P("1 𝟏", "1 𝟏", "column n×1", id="one-times-ones"),
    # Hadamard: .*, ⊙, ∘
    P("A .* A", "A ⊙ A", "matrix n×n", id="hadamard-ascii"),
    P("A ⊙ A", "A ⊙ A", "matrix n×n", id="hadamard-odot"),
    P("A ∘ A", "A ⊙ A", "matrix n×n", id="hadamard-circ"),
    P("A⊙A²", "A ⊙ A²", "matrix n×n", id="hadamard-power"),
    P("A ⊙ A A", "A ⊙ A A", "matrix n×n", id="juxtapose-binds-tighter-than-hadamard"),
    P("(A ⊙ A) A", "(A ⊙ A) A", "matrix n×n", id="hadamard-grouped"),
    P("A ⊙ -A", "A ⊙ (-A)", "matrix n×n", id="hadamard-signed"),
    # transpose: ', ^T, ᵀ
    P("A'", "Aᵀ", "matrix n×n", id="transpose-quote"),
    P("A^T", "Aᵀ", "matrix n×n", id="transpose-caret-T"),
    P("Aᵀ", "Aᵀ", "matrix n×n", id="transpose-superscript"),
    P("A''", "Aᵀᵀ", "matrix n×n", id="transpose-twice"),
    P("A^T ones", "Aᵀ 𝟏", "column n×1", id="transpose-then-product"),
    P("ones^T deg", "𝟏ᵀ (A 𝟏)", "scalar 1×1", id="transpose-vector-macro"),
    # powers: ^k, ², ³, multi-digit superscripts
    P("A^3", "A³", "matrix n×n", id="power-caret"),
    P("A ^ 3", "A³", "matrix n×n", id="power-caret-spaced"),
    P("A²", "A²", "matrix n×n", id="power-square"),
    P("A³", "A³", "matrix n×n", id="power-cube"),
    P("A¹⁰", "A¹⁰", "matrix n×n", id="power-multi-digit-superscript"),
    P("A^12", "A¹²", "matrix n×n", id="power-multi-digit-caret"),
    P("A⁰", "A⁰", "matrix n×n", id="power-zero"),
    P("A^0", "A⁰", "matrix n×n", id="power-zero-caret"),
    P("A¹", "A¹", "matrix n×n", id="power-one"),
    P("A^(4)", "A⁴", "matrix n×n", id="power-paren-exponent"),
    P("(A²)³", "(A²)³", "matrix n×n", id="power-of-power"),
    P("A^2^3", "(A²)³", "matrix n×n", id="power-chain"),
    P("Aᵀ²", "Aᵀ²", "matrix n×n", id="power-of-transpose"),
    P("A²ᵀ", "A²ᵀ", "matrix n×n", id="transpose-of-power"),
    P("(-A)²", "(-A)²", "matrix n×n", id="power-of-negation"),
    P("2³", "2³", "scalar 1×1", id="power-of-number"),
    P("tr(A)²", "tr(A)²", "scalar 1×1", id="power-of-scalar"),
    P("(ones' A ones)^2", "(𝟏ᵀ A 𝟏)²", "scalar 1×1", id="power-of-sentence"),
    # diag and tr
    P("diag(ones)", "diag(𝟏)", "matrix n×n", id="diag-ones"),
    P("diag(𝟙)", "diag(𝟏)", "matrix n×n", id="double-struck-one"),
    P("diag(onesᵀ)", "diag(𝟏ᵀ)", "matrix n×n", id="diag-of-row"),
    P("diag(A ones)", "diag(A 𝟏)", "matrix n×n", id="diag-degree"),
    P("tr(A)", "tr(A)", "scalar 1×1", id="trace"),
    P("tr(tr(A))", "tr(tr(A))", "scalar 1×1", id="trace-of-scalar"),
    P("tr(Aᵀ A)", "tr(Aᵀ A)", "scalar 1×1", id="trace-product"),
    P("tr(ones ones')", "tr(𝟏 𝟏ᵀ)", "scalar 1×1", id="trace-outer"),
    # +, -, unary minus
    P("A + A", "A + A", "matrix n×n", id="sum"),
    P("A - A", "A - A", "matrix n×n", id="difference"),
    P("A −A", "A - A", "matrix n×n", id="unicode-minus"),
    P("A + A - A", "A + A - A", "matrix n×n", id="sum-left-assoc"),
    P("A - (A - A)", "A - (A - A)", "matrix n×n", id="difference-right-group"),
    P("A + A A", "A + A A", "matrix n×n", id="product-binds-tighter-than-sum"),
    P("(A + A) A", "(A + A) A", "matrix n×n", id="sum-grouped-left"),
    P("A (A + A)", "A (A + A)", "matrix n×n", id="sum-grouped-right"),
    P("-A", "-A", "matrix n×n", id="negation"),
    P("- -A", "- -A", "matrix n×n", id="double-negation"),
    P("A - -A", "A - -A", "matrix n×n", id="minus-negation"),
    P("-A A", "-A A", "matrix n×n", id="negation-of-product"),
    P("(-A) A", "(-A) A", "matrix n×n", id="product-of-negation"),
    P("-(A + A)", "-(A + A)", "matrix n×n", id="negation-of-sum"),
    P("-tr(A)", "-tr(A)", "scalar 1×1", id="negation-of-scalar"),
    # division by a scalar; number literals
    P("A / 2", "A / 2", "matrix n×n", id="division"),
    P("A / 2 / 3", "A / 2 / 3", "matrix n×n", id="division-left-assoc"),
    P("A / (2 / 3)", "A / (2 / 3)", "matrix n×n", id="division-right-group"),
    P("A / tr(A)", "A / tr(A)", "matrix n×n", id="division-by-scalar-expression"),
    P("tr(A)/(2 3)", "tr(A) / (2 3)", "scalar 1×1", id="division-by-grouped-product"),
    P("A ⊙ A / 2", "A ⊙ A / 2", "matrix n×n", id="hadamard-then-division"),
    P("tr(A^3) / 6", "tr(A³) / 6", "scalar 1×1", id="triangles-times-six-over-six"),
    P("(1/6) tr(A³)", "(1 / 6) tr(A³)", "scalar 1×1", id="grouped-fraction-juxtaposed"),
    P("1/6 × tr(A³)", "(1 / 6) tr(A³)", "scalar 1×1", id="paper-fraction-times"),
    P("1/2 · 𝟏ᵀ A 𝟏", "(1 / 2) (𝟏ᵀ A 𝟏)", "scalar 1×1", id="fraction-dot-sentence"),
    P("0.5 A", "0.5 A", "matrix n×n", id="decimal"),
    P(".25 A", "0.25 A", "matrix n×n", id="decimal-leading-dot"),
    P("1.50 A", "1.5 A", "matrix n×n", id="decimal-trailing-zero"),
    P("1e2 A", "100 A", "matrix n×n", id="exponent-notation"),
    P("2.5e-1 A", "0.25 A", "matrix n×n", id="negative-exponent-notation"),
    # calls: built-ins, several arguments, number-literal broadcast
    P("𝟏ᵀ binom(A𝟏, 3)", "𝟏ᵀ binom(A 𝟏, 3)", "scalar 1×1", id="three-stars"),
    P("binom(deg, 3)", "binom(A 𝟏, 3)", "column n×1", id="binom-broadcast"),
    P("binom(5, 2)", "binom(5, 2)", "scalar 1×1", id="binom-of-numbers"),
    P("exp(-A² 𝟏)", "exp(-A² 𝟏)", "column n×1", id="exp-vector"),
    P("𝟏ᵀ A diag(exp(-A²𝟏)) A 𝟏", "𝟏ᵀ A diag(exp(-A² 𝟏)) A 𝟏", "scalar 1×1", id="custom-e_c"),
    P("relu(A - 2 I)", "relu(A - 2 diag(𝟏))", "matrix n×n", id="relu"),
    P("max(A, A²)", "max(A, A²)", "matrix n×n", id="max-two-matrices"),
    P("min(deg, 3)", "min(A 𝟏, 3)", "column n×1", id="min-broadcast"),
    P("pow(deg, 2)", "pow(A 𝟏, 2)", "column n×1", id="pow"),
    P("sqrt(A 𝟏)", "sqrt(A 𝟏)", "column n×1", id="sqrt"),
    P("sigmoid(tr(A))", "sigmoid(tr(A))", "scalar 1×1", id="function-of-scalar"),
    P("𝟏ᵀ square((A⊙A²)²𝟏)", "𝟏ᵀ square((A ⊙ A²)² 𝟏)", "scalar 1×1", id="square"),
    # macros
    P("I", "diag(𝟏)", "matrix n×n", id="macro-I"),
    P("deg", "A 𝟏", "column n×1", id="macro-deg"),
    P("L", "diag(A 𝟏) - A", "matrix n×n", id="macro-L"),
    P("L ones", "(diag(A 𝟏) - A) 𝟏", "column n×1", id="macro-L-times"),
    P("ones' L ones", "𝟏ᵀ (diag(A 𝟏) - A) 𝟏", "scalar 1×1", id="macro-L-quadratic-form"),
    P("I - A", "diag(𝟏) - A", "matrix n×n", id="macro-I-minus"),
    P("deg(2)", "A 𝟏 2", "column n×1", id="macro-against-paren-is-product"),
    # the paper's counting sentences
    P(
        "(tr(A⁴) + tr(A²) - 2 𝟏ᵀA²𝟏) / 8",
        "(tr(A⁴) + tr(A²) - 2 𝟏ᵀ A² 𝟏) / 8",
        "scalar 1×1",
        id="four-cycles",
    ),
    P(
        "1/2 * ones'(A^3 .* diag(deg - 2 ones)) ones",
        "(1 / 2) (𝟏ᵀ (A³ ⊙ diag(A 𝟏 - 2 𝟏)) 𝟏)",
        "scalar 1×1",
        id="tailed-triangles-ascii",
    ),
    P(
        "𝟏ᵀ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)",
        "𝟏ᵀ ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)",
        "scalar 1×1",
        id="appendix-L3-sentence",
    ),
    # comments, let bindings, user functions, inputs, named sentences
    P("tr(A^3) # triangles times six", "tr(A³)", "scalar 1×1", id="comment"),
    P("let B = A ⊙ A²; 𝟏ᵀ B² 𝟏", "𝟏ᵀ (A ⊙ A²)² 𝟏", "scalar 1×1", id="let-binding"),
    P("let d = A 𝟏\nd ⊙ d", "A 𝟏 ⊙ A 𝟏", "column n×1", id="let-binding-newline"),
    P("let letter = A; tr(letter)", "tr(A)", "scalar 1×1", id="name-starting-with-keyword"),
    P("let inputs = A; inputs", "A", "matrix n×n", id="name-extending-input-keyword"),
    P(
        "let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A𝟏)",
        "let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A 𝟏)",
        "scalar 1×1",
        id="user-function",
    ),
    P(
        "let f(x) = x*(x-1)/2  # pairs\n𝟏ᵀ f(A𝟏)",
        "let f(x) = x*(x-1)/2; 𝟏ᵀ f(A 𝟏)",
        "scalar 1×1",
        id="user-function-comment",
    ),
    P(
        "let g(x, y) = x*y + 1; g(A, A²)",
        "let g(x, y) = x*y + 1; g(A, A²)",
        "matrix n×n",
        id="user-function-two-args",
    ),
    P(
        "let f(x) = x^2; f(A 𝟏) + f(𝟏)",
        "let f(x) = x^2; f(A 𝟏) + f(𝟏)",
        "column n×1",
        id="user-function-twice",
    ),
    P("input h; A h", "input h; A h", "column n×1", id="input"),
    P("input h\nhᵀ A h", "input h; hᵀ A h", "scalar 1×1", id="input-newline"),
    P("input h, w; h ⊙ A w", "input h, w; h ⊙ A w", "column n×1", id="two-inputs"),
    P("triangles: tr(A^3) / 6", "tr(A³) / 6", "scalar 1×1", id="named-sentence"),
]


# --------------------------------------------------------------------------- random expressions

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


class RandomSentence:
    """Random sentences of L1 (or L3 with ``l3``) of bounded depth, as text."""

    def __init__(self, seed: int, l3: bool = False) -> None:
        import random

        self.rng = random.Random(seed)
        self.l3 = l3

    def num(self) -> str:
        return str(self.rng.choice([1, 2, 3, "(1/2)"]))

    def matrix(self, d: int) -> str:
        r = self.rng
        if d <= 0:
            return r.choice(["A", "A", "I", "L", f"diag({self.vector(0)})"])
        m, v = self.matrix, self.vector
        forms = [
            lambda: f"({m(d - 1)} + {m(d - 1)})",
            lambda: f"({m(d - 1)} {m(d - 1)})",
            lambda: f"({m(d - 1)})'",
            lambda: f"({m(d - 1)})^{r.randrange(4)}",
            lambda: f"diag({v(d - 1)})",
            lambda: f"({self.num()} {m(d - 1)})",
            lambda: f"({m(d - 1)} - {m(d - 1)})",
            lambda: f"({v(d - 1)} {v(d - 1)}')",
        ]
        if self.l3:
            forms += [lambda: f"({m(d - 1)} .* {m(d - 1)})", lambda: f"relu({m(d - 1)})"]
        return r.choice(forms)()

    def vector(self, d: int) -> str:
        r = self.rng
        if d <= 0:
            return r.choice(["ones", "deg", "(A ones)"])
        m, v, s = self.matrix, self.vector, self.scalar
        forms = [
            lambda: f"({m(d - 1)} {v(d - 1)})",
            lambda: f"({v(d - 1)} .* {v(d - 1)})",
            lambda: f"({v(d - 1)} + {v(d - 1)})",
            lambda: f"({v(d - 1)}' {m(d - 1)})'",
            lambda: f"({s(d - 1)} {v(d - 1)})",
            lambda: f"({v(d - 1)} / {self.num()})",
            lambda: f"binom({v(d - 1)}, 2)",
        ]
        if self.l3:
            forms += [lambda: f"tanh({v(d - 1)} / 10)"]
        return r.choice(forms)()

    def scalar(self, d: int) -> str:
        r = self.rng
        if d <= 0:
            return r.choice(["ones' ones", "ones' A ones", self.num()])
        m, v, s = self.matrix, self.vector, self.scalar
        forms = [
            lambda: f"({v(d - 1)}' {v(d - 1)})",
            lambda: f"({s(d - 1)} * {s(d - 1)})",
            lambda: f"({s(d - 1)} - {s(d - 1)})",
            lambda: f"({s(d - 1)} / (1 + ones' ones))",
        ]
        if self.l3:
            forms += [lambda: f"tr({m(d - 1)})", lambda: f"tr({m(d - 1)} .* {m(d - 1)})"]
        return r.choice(forms)()

    def sentence(self) -> str:
        d = self.rng.randrange(1, 4)
        return self.scalar(d) if self.rng.random() < 0.6 else self.vector(d)


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` imported as a module (the examples are scripts, not a package)."""
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
