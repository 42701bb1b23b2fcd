"""Every rewrite rule preserves values: both sides evaluated by the exact dense evaluator.

Each rule has an instance generator (the rule's left-hand side with random sub-expressions of
the right shapes); hypothesis draws instances and a random simple graph, and every example is
also checked on the edge cases: one node, no edges, isolated nodes, a star.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import matlang
from matlang.ast import (
    Add,
    Apply,
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
from matlang.errors import MatlangError
from matlang.evaluator import evaluate_graph
from matlang.fragments import fragment
from matlang.functions import BUILTINS, define
from matlang.graphs import Graph, from_adjacency, named
from matlang.rewrite import Normalization, apply_rule, normalize
from matlang.rules import RULES, RULES_BY_NAME
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR, Shape

A = Input("A", MATRIX)
ONE = Ones()
ONE_T = Transpose(Ones())
I = Diag(Ones())
J = Mul(Ones(), Transpose(Ones()))


def _once(name: str, e: Expr) -> Expr | None:
    """One application of the named rule at the root of ``e``."""
    return apply_rule(RULES_BY_NAME[name], e, RULES)


def _normal(e: Expr) -> Normalization:
    return normalize(e, RULES)


SQUARE = BUILTINS["square"]
RELU = BUILTINS["relu"]
CHOOSE2 = define("c2", ["x"], "x*(x-1)/2")
AFFINE = define("aff", ["x"], "2*x + 1")
AFFINE2 = define("lin", ["x", "y"], "x - 3*y + 2")
PRODUCT = define("prod", ["x", "y"], "x*y + y")
FUNCTIONS = (SQUARE, RELU, CHOOSE2, AFFINE)

EDGE_GRAPHS: tuple[Graph, ...] = (
    named("K1"),
    named("empty5"),
    from_adjacency(
        np.array(
            [[0, 1, 0, 0, 0], [1, 0, 1, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]
        ),
        name="path3+2 isolated",
    ),
    named("star4"),
)

EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# --------------------------------------------------------------------------- graphs


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    n = draw(st.integers(2, 7))
    bits = draw(st.lists(st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    a = np.zeros((n, n), dtype=np.int64)
    a[np.triu_indices(n, 1)] = bits
    return from_adjacency(a + a.T)


# --------------------------------------------------------------------------- expressions


@cache
def _leaf(shape: Shape) -> st.SearchStrategy[Expr]:
    if shape == MATRIX:
        return st.sampled_from([A, A, I, J])
    if shape == COLUMN:
        return st.sampled_from([ONE, Mul(A, ONE)])
    if shape == ROW:
        return st.sampled_from([ONE_T, Mul(ONE_T, A)])
    return st.sampled_from([Number(Fraction(k)) for k in (0, 1, 2, 3)] + [Mul(Mul(ONE_T, A), ONE)])


@cache
def exprs(shape: Shape, depth: int = 2, hadamard: bool = True) -> st.SearchStrategy[Expr]:
    """Random expressions of a shape; ``hadamard=False`` keeps matrix ⊙ (and f of matrices)
    out, so the result is at most L2."""
    if depth <= 0:
        return _leaf(shape)
    sub = lambda s: exprs(s, depth - 1, hadamard)  # noqa: E731
    options: list[st.SearchStrategy[Expr]] = [_leaf(shape)]
    same = sub(shape)
    options += [
        st.builds(Add, same, same),
        st.builds(Sub, same, same),
        st.builds(Neg, same),
        st.builds(Mul, sub(SCALAR), same) if shape != SCALAR else st.builds(Mul, same, same),
    ]
    if shape == MATRIX:
        options += [
            st.builds(Mul, same, same),
            st.builds(Transpose, same),
            st.builds(Diag, sub(COLUMN)),
            st.builds(Power, same, st.integers(0, 3)),
            st.builds(Mul, sub(COLUMN), sub(ROW)),
            st.builds(Div, same, st.sampled_from([Number(Fraction(2)), Number(Fraction(1, 4))])),
            st.builds(lambda x: Apply(AFFINE, (x,)), same),
        ]
        if hadamard:
            options += [
                st.builds(Hadamard, same, same),
                st.builds(lambda f, x: Apply(f, (x,)), st.sampled_from(FUNCTIONS), same),
                st.builds(lambda x, y: Apply(PRODUCT, (x, y)), same, same),
            ]
    elif shape == COLUMN:
        options += [
            st.builds(Mul, sub(MATRIX), same),
            st.builds(Hadamard, same, same),
            st.builds(Transpose, sub(ROW)),
            st.builds(lambda f, x: Apply(f, (x,)), st.sampled_from(FUNCTIONS), same),
        ]
    elif shape == ROW:
        options += [
            st.builds(Mul, same, sub(MATRIX)),
            st.builds(Transpose, sub(COLUMN)),
            st.builds(Hadamard, same, same),
        ]
    else:
        options += [
            st.builds(Mul, sub(ROW), sub(COLUMN)),
            st.builds(Trace, sub(MATRIX)),
            st.builds(Power, same, st.integers(0, 2)),
            st.builds(lambda f, x: Apply(f, (x,)), st.sampled_from((SQUARE, AFFINE)), same),
        ]
    return st.one_of(options)


SHAPES = st.sampled_from([SCALAR, COLUMN, ROW, MATRIX])


def any_expr(depth: int = 2) -> st.SearchStrategy[Expr]:
    return SHAPES.flatmap(lambda s: exprs(s, depth))


def _col(d: int = 1) -> st.SearchStrategy[Expr]:
    return exprs(COLUMN, d)


def _mat(d: int = 1, hadamard: bool = True) -> st.SearchStrategy[Expr]:
    return exprs(MATRIX, d, hadamard)


@st.composite
def known_diagonal(draw: st.DrawFn) -> Expr:
    """Matrices whose diagonal the rewrites know: A, diag(v), D A D' A D'', c r, ..."""
    v, w = draw(_col()), draw(_col())
    options = [
        A,
        Diag(v),
        Mul(Mul(Diag(v), A), Diag(w)),
        Mul(Mul(Mul(Diag(v), A), Diag(w)), A),
        Power(A, 2),
        Mul(Mul(A, Diag(v)), A),
        Mul(v, Transpose(w)),
        Mul(Mul(draw(_mat()), v), Mul(Transpose(w), draw(_mat()))),
        Apply(CHOOSE2, (Diag(v),)),
        Add(A, Diag(w)),
        Mul(Number(Fraction(3)), Power(A, 2)),
        Neg(Diag(v)),
        Hadamard(Diag(v), Power(A, 2)),
    ]
    return draw(st.sampled_from(options))


@st.composite
def outer(draw: st.DrawFn) -> Expr:
    """A matrix whose product chain passes through a column: X c r Y."""
    c, r = draw(_col()), draw(exprs(ROW, 1))
    x = draw(st.sampled_from([None, A, draw(_mat())]))
    left = c if x is None else Mul(x, c)
    return Mul(left, r)


def _zero(shape: Shape) -> Expr:
    from matlang.algebra import zero

    return zero(shape)


def _apply(f: Any, *args: Expr) -> Expr:
    return Apply(f, tuple(args))


# One instance generator per rule: each draws a node the rule rewrites at its root.
INSTANCES: dict[str, Callable[[st.DrawFn], Expr]] = {
    "transpose_involution": lambda d: Transpose(Transpose(d(any_expr()))),
    "transpose_adjacency": lambda d: Transpose(A),
    "transpose_diag": lambda d: Transpose(Diag(d(_col()))),
    "transpose_scalar": lambda d: Transpose(d(exprs(SCALAR))),
    "transpose_push": lambda d: Transpose(
        d(
            st.one_of(
                st.builds(Mul, _mat(), _mat()),
                st.builds(Mul, exprs(SCALAR, 1), _mat()),
                st.builds(Mul, _mat(), _col()),
                st.builds(Add, _col(), _col()),
                st.builds(Sub, _mat(), _mat()),
                st.builds(Neg, exprs(ROW, 1)),
                st.builds(Div, _mat(), st.just(Number(Fraction(2)))),
                st.builds(Hadamard, _mat(), _mat()),
                st.builds(Power, _mat(), st.integers(0, 3)),
                st.builds(lambda x: Apply(SQUARE, (x,)), _mat()),
                st.builds(lambda x, y: Apply(PRODUCT, (x, y)), exprs(ROW, 1), exprs(ROW, 1)),
            )
        )
    ),
    "diag_row": lambda d: Diag(d(exprs(ROW, 2))),
    "diag_zero": lambda d: Diag(Mul(Number(Fraction(0)), d(_col()))),
    "power_trivial": lambda d: Power(
        d(st.one_of(_mat(), exprs(SCALAR, 1))), d(st.sampled_from([0, 1]))
    ),
    "power_diag": lambda d: Power(Diag(d(_col())), d(st.integers(2, 4))),
    "product_zero": lambda d: Mul(d(_mat()), Mul(_zero(MATRIX), d(_col()))),
    "identity_product": lambda d: d(
        st.one_of(
            st.builds(lambda m: Mul(I, m), _mat()),
            st.builds(lambda m: Mul(m, I), _mat()),
            st.builds(lambda v: Mul(I, v), _col()),
            st.builds(lambda r: Mul(r, I), exprs(ROW, 1)),
            st.builds(lambda m: Mul(Mul(m, I), Power(A, 2)), _mat()),
        )
    ),
    "diag_ones": lambda d: d(
        st.one_of(
            st.builds(lambda v: Mul(Diag(v), ONE), _col(2)),
            st.builds(lambda m, v: Mul(m, Mul(Diag(v), ONE)), _mat(), _col()),
        )
    ),
    "ones_diag": lambda d: Mul(ONE_T, Diag(d(_col(2)))),
    "diag_diag": lambda d: Mul(Diag(d(_col())), Diag(d(_col()))),
    "product_canonical": lambda d: d(
        st.one_of(
            st.builds(lambda x, y, z: Mul(x, Mul(y, z)), _mat(), _mat(), _mat()),
            st.builds(lambda x, s, y: Mul(Mul(s, x), y), _mat(), exprs(SCALAR, 1), _mat()),
            st.builds(lambda x, y: Mul(x, Mul(x, y)), _mat(), _col()),
            st.builds(lambda r, x, c: Mul(r, Mul(x, c)), exprs(ROW, 1), _mat(), _col()),
        )
    ),
    "hadamard_scalars": lambda d: Hadamard(d(exprs(SCALAR)), d(exprs(SCALAR))),
    "hadamard_vectors": lambda d: d(
        st.one_of(
            st.builds(Hadamard, _col(2), _col(2)), st.builds(Hadamard, exprs(ROW), exprs(ROW))
        )
    ),
    "hadamard_zero": lambda d: Hadamard(d(_mat()), _zero(MATRIX)),
    "hadamard_scalar_factor": lambda d: Hadamard(
        d(
            st.one_of(
                st.builds(Mul, exprs(SCALAR, 1), _mat()),
                st.builds(Neg, _mat()),
                st.builds(Div, _mat(), st.just(Number(Fraction(3)))),
            )
        ),
        d(_mat()),
    ),
    "hadamard_idempotent": lambda d: Hadamard(A, A),
    "hadamard_identity_diagonal": lambda d: d(
        st.builds(lambda v: Hadamard(Diag(v), I), _col())
        | st.builds(lambda v: Hadamard(I, Diag(v)), _col())
    ),
    "hadamard_ones_matrix": lambda d: d(
        st.builds(lambda m: Hadamard(m, J), _mat()) | st.builds(lambda m: Hadamard(J, m), _mat())
    ),
    "hadamard_diagonal": lambda d: d(
        st.builds(lambda m, v: Hadamard(m, Diag(v)), known_diagonal(), _col())
        | st.builds(lambda m, v: Hadamard(Diag(v), m), known_diagonal(), _col())
    ),
    "hadamard_rank_one": lambda d: d(
        st.builds(Hadamard, _mat(), outer()) | st.builds(Hadamard, outer(), _mat())
    ),
    "hadamard_canonical": lambda d: d(
        st.tuples(_mat(), _mat(), _mat()).map(lambda t: Hadamard(Hadamard(t[2], t[1]), t[0]))
    ),
    "hadamard_distribute": lambda d: d(
        st.builds(
            lambda x, y, z, add: Hadamard(Add(x, y) if add else Sub(x, y), z),
            _mat(1, False),
            _mat(1, False),
            outer(),
            st.booleans(),
        )
    ),
    "trace_scalar": lambda d: Trace(d(exprs(SCALAR))),
    "trace_transpose": lambda d: Trace(Transpose(d(_mat(2)))),
    "trace_linear": lambda d: Trace(
        d(
            st.one_of(
                st.builds(Add, _mat(), _mat()),
                st.builds(Sub, _mat(), _mat()),
                st.builds(Neg, _mat()),
                st.builds(Div, _mat(), st.just(Number(Fraction(5)))),
                st.builds(Mul, exprs(SCALAR, 1), _mat()),
            )
        )
    ),
    "trace_diag": lambda d: Trace(Diag(d(_col(2)))),
    "trace_hadamard_identity": lambda d: d(
        st.builds(lambda m: Trace(Hadamard(m, I)), _mat())
        | st.builds(lambda m: Trace(Hadamard(I, m)), _mat())
    ),
    "trace_adjacency": lambda d: Trace(A),
    "trace_adjacency_square": lambda d: Trace(Power(A, 2)),
    "trace_known_diagonal": lambda d: Trace(d(known_diagonal())),
    "trace_cyclic_outer": lambda d: Trace(d(outer())),
    "trace_expand": lambda d: d(
        st.builds(
            lambda v, w, add: Trace(Mul(Add(A, Diag(v)) if add else Sub(Diag(w), A), A)),
            _col(),
            _col(),
            st.booleans(),
        )
        | st.builds(lambda v: Trace(Power(Sub(Diag(v), A), 2)), _col())
    ),
    "bilinear_hadamard": lambda d: Mul(
        Mul(d(exprs(ROW, 1)), Hadamard(d(_mat(1, False)), d(_mat(1, False)))), d(_col())
    ),
    "bilinear_distribute": lambda d: Mul(
        Mul(
            d(exprs(ROW, 1)),
            Add(Hadamard(d(_mat(1, False)), d(_mat(1, False))), d(_mat(1, False))),
        ),
        d(_col()),
    ),
    "pointwise_numbers": lambda d: _apply(
        d(st.sampled_from((SQUARE, CHOOSE2, AFFINE, RELU))), Number(Fraction(d(st.integers(0, 5))))
    ),
    "pointwise_affine": lambda d: d(
        st.builds(lambda x: _apply(AFFINE, x), any_expr(1))
        | st.builds(lambda x, y: _apply(AFFINE2, x, y), _mat(), _mat())
        | st.builds(lambda x, y: _apply(AFFINE2, x, y), _col(), _col())
    ),
    "pointwise_adjacency": lambda d: d(
        st.sampled_from(
            [_apply(f, A) for f in (SQUARE, RELU, CHOOSE2, BUILTINS["sigmoid"], BUILTINS["exp"])]
            + [_apply(PRODUCT, A, A), _apply(BUILTINS["binom"], A, Number(Fraction(2)))]
        )
    ),
    "pointwise_diagonal": lambda d: d(
        st.builds(
            lambda f, v: _apply(f, Diag(v)), st.sampled_from((SQUARE, CHOOSE2, AFFINE)), _col()
        )
        | st.builds(lambda v, w: _apply(PRODUCT, Diag(v), Diag(w)), _col(), _col())
    ),
    "pointwise_ones": lambda d: _apply(
        d(st.sampled_from((SQUARE, CHOOSE2, AFFINE, RELU))),
        d(st.sampled_from([ONE, ONE_T, J])),
    ),
    "pointwise_polynomial": lambda d: d(
        st.builds(
            lambda f, x: _apply(f, x), st.sampled_from((SQUARE, CHOOSE2, BUILTINS["cube"])), _mat()
        )
        | st.builds(lambda x, y: _apply(PRODUCT, x, y), _mat(), _mat())
        | st.builds(lambda x: _apply(BUILTINS["binom"], x, Number(Fraction(3))), _mat())
    ),
    "linear_canonical": lambda d: d(
        st.one_of(
            st.builds(Add, exprs(SCALAR, 2), exprs(SCALAR, 2)),
            st.builds(lambda x: Sub(x, x), any_expr(2)),
            st.builds(lambda s, x, y: Mul(s, Add(x, y)), exprs(SCALAR, 1), _mat(), _mat()),
            st.builds(lambda x: Add(Mul(Number(Fraction(2)), x), Neg(x)), any_expr(2)),
            st.builds(lambda x: Div(Add(x, x), Number(Fraction(4))), _col(2)),
            st.builds(lambda s: Power(Add(s, Number(Fraction(1))), 2), exprs(SCALAR, 1)),
        )
    ),
}


# --------------------------------------------------------------------------- comparing values


def _value(e: Expr, g: Graph) -> Any:
    """The exact value, or None where the sentence is undefined on g."""
    try:
        return evaluate_graph(e, g)
    except MatlangError:
        return None


def _same(a: Any, b: Any) -> bool:
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        return False
    if (
        x.dtype == np.float64
        or y.dtype == np.float64
        or isinstance(a, float)
        or isinstance(b, float)
    ):
        return bool(np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=1e-9, atol=1e-9))
    return all(
        Fraction(p) == Fraction(q) for p, q in zip(x.reshape(-1).tolist(), y.reshape(-1).tolist())
    )


def assert_same_values(before: Expr, after: Expr, graphs_: list[Graph]) -> None:
    assert before.shape == after.shape
    for g in graphs_:
        a = _value(before, g)
        if a is None:
            continue  # a rewrite may define a sentence where it was not (0·(1/0) → 0)
        b = _value(after, g)
        assert b is not None, f"{matlang.to_text(after)} fails on {g.label()}"
        assert _same(a, b), (
            f"{matlang.to_text(before)} = {a} but {matlang.to_text(after)} = {b} on {g.label()}"
        )


# --------------------------------------------------------------------------- tests


def test_every_rule_has_an_instance_generator() -> None:
    assert set(INSTANCES) == set(RULES_BY_NAME)
    assert len(RULES) == len(RULES_BY_NAME)


@pytest.mark.parametrize("name", [r.name for r in RULES])
@EXAMPLES
@given(data=st.data(), graph=graphs())
def test_rule_is_sound(name: str, data: st.DataObject, graph: Graph) -> None:
    e = INSTANCES[name](data.draw)
    out = _once(name, e)
    assume(out is not None)
    assert out is not None
    assert_same_values(e, out, [graph, *EDGE_GRAPHS])


@pytest.mark.parametrize("name", [r.name for r in RULES])
def test_rule_fires_on_its_instances(name: str) -> None:
    """The instance generators really exercise their rule (most draws fire). Derandomised: a
    rate is checked, and hadamard_canonical fires on ~65% of draws: 30 random runs of 25 fired
    12 to 21 times against the threshold of 12, and one run of the suite fell below it."""
    fired = []

    @settings(
        max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        fired.append(_once(name, INSTANCES[name](data.draw)) is not None)

    run()
    assert sum(fired) >= len(fired) // 2, f"{name} fired on {sum(fired)} of {len(fired)} draws"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=any_expr(3), graph=graphs())
def test_normal_form_is_sound_and_no_higher(e: Expr, graph: Graph) -> None:
    n = _normal(e)
    assert fragment(n.expr) <= fragment(e)
    assert_same_values(e, n.expr, [graph, *EDGE_GRAPHS])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=any_expr(3), graph=graphs())
def test_normal_form_is_a_fixed_point_and_reads_back(e: Expr, graph: Graph) -> None:
    n = _normal(e).expr
    assert _normal(n).expr == n
    again = matlang.parse(matlang.to_text(n))
    assert_same_values(n, again, [graph])
    assert _normal(again).expr == n


# --------------------------------------------------------------------------- specific cases


def _p(text: str) -> Expr:
    return matlang.parse(text)


@pytest.mark.parametrize(
    ("rule", "before", "after"),
    [
        ("hadamard_vectors", "(A 𝟏) ⊙ 𝟏", "diag(A 𝟏) 𝟏"),
        ("hadamard_idempotent", "A ⊙ A", "A"),
        ("trace_diag", "tr(diag(A 𝟏))", "𝟏ᵀ (A 𝟏)"),
        ("trace_adjacency", "tr(A)", "0"),
        ("trace_transpose", "tr((A²)ᵀ)", "tr(A²)"),
        ("diag_ones", "diag(A 𝟏) 𝟏", "A 𝟏"),
        ("bilinear_hadamard", "𝟏ᵀ (A ⊙ A²) 𝟏", "tr(diag((𝟏ᵀ)ᵀ) A diag(𝟏) (A²)ᵀ)"),
        ("hadamard_identity_diagonal", "diag(A 𝟏) ⊙ I", "diag(A 𝟏)"),
        ("trace_adjacency_square", "tr(A²)", "𝟏ᵀ A 𝟏"),
        ("transpose_adjacency", "Aᵀ", "A"),
        ("transpose_involution", "((A 𝟏)ᵀ)ᵀ", "A 𝟏"),
        ("diag_diag", "diag(A 𝟏) diag(A² 𝟏)", "diag(diag(A 𝟏) (A² 𝟏))"),
        ("hadamard_ones_matrix", "A² ⊙ 𝟏 𝟏ᵀ", "A²"),
        ("pointwise_adjacency", "square(A)", "0 (𝟏 𝟏ᵀ) + 1 A"),
    ],
)
def test_named_rules_of_the_issue(rule: str, before: str, after: str) -> None:
    out = _once(rule, _p(before))
    assert out is not None
    assert out == _p(after)


def test_assumption_rules_fail_without_their_assumption() -> None:
    """The rules that assume a simple graph really need it: on a weighted graph with a
    self-loop, A ⊙ A = A, tr(A) = 0 and tr(A²) = 1ᵀA1 are all false (so they are marked)."""
    g = from_adjacency(np.array([[1, 2], [2, 0]]), allow_weights=True, allow_self_loops=True)
    for rule, text in [
        ("hadamard_idempotent", "A ⊙ A"),
        ("trace_adjacency", "tr(A)"),
        ("trace_adjacency_square", "tr(A²)"),
    ]:
        e = _p(text)
        out = _once(rule, e)
        assert out is not None and RULES_BY_NAME[rule].assumes
        assert not _same(evaluate_graph(e, g), evaluate_graph(out, g))


def test_empty_graph_without_nodes() -> None:
    """n = 0: rules on sentences without pointwise functions keep their (empty) values."""
    g0 = from_adjacency(np.zeros((0, 0), dtype=np.int64))
    for text in ["tr(A²)", "tr(diag(A 𝟏))", "𝟏ᵀ (A ⊙ A²) 𝟏", "A ⊙ I", "tr(A)", "𝟏ᵀ L 𝟏"]:
        e = _p(text)
        assert_same_values(e, _normal(e).expr, [g0])


def test_rewrites_keep_source_spans() -> None:
    e = _p("𝟏ᵀ A 𝟏 + 𝟏ᵀ (A ⊙ A²) 𝟏")
    n = _normal(e).expr
    traces = [x for x in n.walk() if isinstance(x, Trace)]
    assert len(traces) == 1
    assert traces[0].span is not None and (traces[0].span.line, traces[0].span.col) == (1, 10)
