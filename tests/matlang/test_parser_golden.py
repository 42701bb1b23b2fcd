"""Golden table of valid sentences: input text -> canonical text -> shape, and the printer's
round trips (``parse(to_text(e)) == e``) in Unicode and ASCII, LaTeX, and precedence."""

from __future__ import annotations

from fractions import Fraction

import pytest

from matlang import ast as A
from matlang import parse, parse_program, to_latex, to_text
from matlang.functions import BUILTINS
from matlang.printer import program_to_text
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR
from tests.fixtures import VALID

P = pytest.param



def test_table_is_large_enough() -> None:
    assert len(VALID) >= 60


@pytest.mark.parametrize(("text", "canonical", "shape"), VALID)
def test_canonical_text_and_shape(text: str, canonical: str, shape: str) -> None:
    e = parse(text)
    assert to_text(e) == canonical
    assert str(e.shape) == shape
    # the canonical text is a fixed point and means the same AST
    again = parse(canonical)
    assert again == e
    assert to_text(again) == canonical
    # and so is the ASCII spelling
    ascii_text = to_text(e, ascii=True)
    assert ascii_text.isascii()
    assert parse(ascii_text) == e
    assert to_text(parse(ascii_text)) == canonical
    assert to_text(parse(ascii_text), ascii=True) == ascii_text


ASCII = [
    ("𝟏ᵀ A 𝟏", "ones' A ones"),
    ("A²ᵀ", "A^2'"),
    ("(A²)³", "A^2^3"),
    ("A ⊙ A²", "A .* A^2"),
    ("tr(A³) / 6", "tr(A^3) / 6"),
    ("input h; -h", "input h; -h"),
    ("let f(x) = x^2; f(A 𝟏)", "let f(x) = x^2; f(A ones)"),
    ("A¹²", "A^12"),
]


@pytest.mark.parametrize(("text", "expected"), ASCII)
def test_ascii_text(text: str, expected: str) -> None:
    assert to_text(parse(text), ascii=True) == expected


LATEX = [
    ("𝟏ᵀ A 𝟏", r"{\mathbf{1}}^{\top} \, A \, \mathbf{1}"),
    ("tr(A³) / 6", r"\frac{\operatorname{tr}\left({A}^{3}\right)}{6}"),
    ("A ⊙ A²", r"A \odot {A}^{2}"),
    (
        "diag(exp(-A² 𝟏))",
        r"\operatorname{diag}\left(\exp\left(-{A}^{2} \, \mathbf{1}\right)\right)",
    ),
    ("𝟏ᵀ binom(A 𝟏, 3)", r"{\mathbf{1}}^{\top} \, \binom{A \, \mathbf{1}}{3}"),
    ("-(A + A)", r"-\left(A + A\right)"),
    ("0.5 A", r"0.5 \, A"),
    ("relu(A)", r"\operatorname{relu}\left(A\right)"),
    ("A - (A - A)", r"A - \left(A - A\right)"),
]


@pytest.mark.parametrize(("text", "expected"), LATEX)
def test_latex(text: str, expected: str) -> None:
    e = parse(text)
    assert to_latex(e) == expected
    assert e._repr_latex_() == f"${expected}$"


# Pairs that must parse to the same AST: precedence and associativity made explicit.
SAME = [
    ("A + A A", "A + (A A)"),
    ("-A A", "-(A A)"),
    ("A ⊙ A A", "A ⊙ (A A)"),
    ("A'²", "(A')²"),
    ("A^2^3", "(A^2)^3"),
    ("A A A", "(A A) A"),
    ("A - A - A", "(A - A) - A"),
    ("A / 2 / 3", "(A / 2) / 3"),
    ("A ⊙ A ⊙ A", "(A ⊙ A) ⊙ A"),
    ("𝟏ᵀ A 𝟏 / 2", "(𝟏ᵀ A 𝟏) / 2"),
    ("A * A ⊙ A", "(A * A) ⊙ A"),
    ("-A + A", "(-A) + A"),
    ("tr(A)(A)", "tr(A) A"),
    ("A^T", "A'"),
    ("A^(3)", "A³"),
]


@pytest.mark.parametrize(("left", "right"), SAME)
def test_same_ast(left: str, right: str) -> None:
    assert parse(left) == parse(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("(A A) A", "A (A A)"),
        ("(A ⊙ A) A", "A ⊙ (A A)"),
        ("-A²", "(-A)²"),
        ("A - (A - A)", "A - A - A"),
    ],
)
def test_different_ast(left: str, right: str) -> None:
    assert parse(left) != parse(right)


def test_ast_structure() -> None:
    a = A.Input("A", MATRIX)
    ones = A.Ones()
    assert parse("I") == A.Diag(ones)
    assert parse("deg") == A.Mul(a, ones)
    assert parse("L") == A.Sub(A.Diag(A.Mul(a, ones)), a)
    e = parse("tr(A^3) / 6")
    assert e == A.Div(A.Trace(A.Power(a, 3)), A.Number(Fraction(6)))
    assert isinstance(e, A.Div) and e.right.value == 6  # type: ignore[attr-defined]
    two_a = parse("2 A")
    assert isinstance(two_a, A.Mul) and two_a.is_scalar_product
    assert not parse("A A").is_scalar_product  # type: ignore[attr-defined]
    assert parse("0.1 A") == A.Mul(A.Number(Fraction(1, 10)), a)
    binom = parse("binom(deg, 3)")
    assert isinstance(binom, A.Apply) and binom.function is BUILTINS["binom"]
    assert binom.constants == {1: Fraction(3)}
    assert binom.variable_args == (A.Mul(a, ones),)
    h = parse("input h; h")
    assert h == A.Input("h", COLUMN)
    assert parse("ones'").shape == ROW and parse("tr(A)").shape == SCALAR


def test_spans_point_into_the_text() -> None:
    text = "tr(A)\n  𝟏ᵀ (A ⊙ A²) 𝟏"
    program = parse_program(text)
    e = program[1].expr
    assert e.span is not None and (e.span.line, e.span.col) == (2, 3)
    had = next(n for n in e.walk() if isinstance(n, A.Hadamard))
    assert had.span is not None
    assert text[had.span.start : had.span.end] == "A ⊙ A²"
    assert (had.span.line, had.span.col) == (2, 7)


# Programs: several sentences per text (';' and newlines), named sentences, definitions.
PROGRAMS = [
    P(
        "tr(A); tr(A²)\nones'A ones",
        [
            (None, "tr(A)", "scalar 1×1"),
            (None, "tr(A²)", "scalar 1×1"),
            (None, "𝟏ᵀ A 𝟏", "scalar 1×1"),
        ],
        id="semicolons-and-newlines",
    ),
    P(
        "# counting\ntriangles: tr(A^3) / 6   # Harary\n\nstars: 𝟏ᵀ binom(deg, 3);\n",
        [("triangles", "tr(A³) / 6", "scalar 1×1"), ("stars", "𝟏ᵀ binom(A 𝟏, 3)", "scalar 1×1")],
        id="named-with-comments-and-blank-lines",
    ),
    P(
        "walks: A² 𝟏\ntotal: 𝟏ᵀ walks",
        [("walks", "A² 𝟏", "column n×1"), ("total", "𝟏ᵀ (A² 𝟏)", "scalar 1×1")],
        id="named-sentence-reused",
    ),
    P(
        "input h, w\nlet f(x) = relu(x - 1)\nlet M = A + I\nf(M h); 𝟏ᵀ (w ⊙ h); M",
        [
            (None, "f((A + diag(𝟏)) h)", "column n×1"),
            (None, "𝟏ᵀ (w ⊙ h)", "scalar 1×1"),
            (None, "A + diag(𝟏)", "matrix n×n"),
        ],
        id="definitions-then-sentences",
    ),
    P(";;\n; A ;;\n", [(None, "A", "matrix n×n")], id="empty-statements"),
    P("# nothing here\n", [], id="only-a-comment"),
    P("", [], id="empty-text"),
]


@pytest.mark.parametrize(("text", "expected"), PROGRAMS)
def test_programs(text: str, expected: list[tuple[str | None, str, str]]) -> None:
    program = parse_program(text)
    got = [(s.name, to_text(s.expr, definitions=False), str(s.shape)) for s in program.sentences]
    assert got == expected
    # the program prints back to a text that parses to the same program
    printed = program_to_text(program)
    assert parse_program(printed) == program
    assert program_to_text(parse_program(printed)) == printed
    assert parse_program(program_to_text(program, ascii=True)) == program


def test_program_lookup_by_name_and_declarations() -> None:
    program = parse_program("input h\nlet f(x) = 2*x\nt: tr(A)\nv: f(A h)")
    assert program["t"].expr == parse("tr(A)")
    assert program[1].name == "v"
    assert program.inputs == ("h",)
    assert [f.name for f in program.functions] == ["f"]
    assert len(program) == 2
    with pytest.raises(KeyError):
        program["missing"]
