"""Random well-shaped ASTs round-trip through the printer: ``parse(to_text(e)) == e`` in
Unicode and ASCII, and printing is a fixed point (the strategy is in tests/fixtures.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matlang import ast as A
from matlang import parse, parse_program, to_latex, to_text
from matlang.functions import Function
from matlang.printer import program_to_text
from tests.fixtures import USER_F, USER_G, any_exprs


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


def test_latex_defines_the_user_functions_it_uses_as_text_does() -> None:
    """``to_latex`` of a sentence with a ``let`` function starts with its definition (the text
    did, the LaTeX left it out); ``definitions=False`` gives the sentence alone."""
    e = parse_program("let f(x) = x*x; 𝟏ᵀ f(A 𝟏)").sentences[0].expr
    body = r"{\mathbf{1}}^{\top} \, \operatorname{f}\left(A \, \mathbf{1}\right)"
    assert to_latex(e) == r"\operatorname{f}\left(x\right) = x^{2},\quad " + body
    assert to_latex(e, definitions=False) == body
    assert to_text(e).startswith("let f(x) = x*x;")
    assert to_latex(parse("𝟏ᵀ relu(A 𝟏)")).startswith(r"{\mathbf{1}}^{\top}")  # a built-in


def test_latex_of_names_with_underscores_is_valid_latex() -> None:
    """Input and function names may hold ``_``, which is a subscript in LaTeX: ``a_b_c`` was a
    double subscript (matplotlib's mathtext refused it) and ``node_feat`` read as node with
    subscript f. Names are text now, and every output parses in mathtext."""
    from matplotlib.mathtext import MathTextParser

    cases = {
        "input a_b_c; 𝟏ᵀ a_b_c": r"{\mathbf{1}}^{\top} \, \mathit{a\_b\_c}",
        "let my_f_g(x) = x*x; 𝟏ᵀ my_f_g(A 𝟏)": r"\operatorname{my\_f\_g}\left(x\right) = x^{2},"
        r"\quad {\mathbf{1}}^{\top} \, \operatorname{my\_f\_g}\left(A \, \mathbf{1}\right)",
        "input h; 𝟏ᵀ A h": r"{\mathbf{1}}^{\top} \, A \, h",
    }
    parser = MathTextParser("path")
    for text, want in cases.items():
        got = to_latex(parse_program(text).sentences[0].expr)
        assert got == want, text
        parser.parse(f"${got}$")  # raises on invalid LaTeX
    with pytest.raises(ValueError, match="Double subscript"):
        parser.parse("$a_b_c$")  # the check can fail
