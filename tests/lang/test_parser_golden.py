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

P = pytest.param

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
