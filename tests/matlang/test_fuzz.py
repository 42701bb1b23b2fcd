"""10⁴ random and mutated strings: the front end raises only MatlangError subclasses (never a
lark, sympy, Python or numpy exception), every error renders with a valid location, every
string that does parse prints to a canonical text that parses back to the same program, and
(for the mutated sentences) evaluates exactly or raises an EvaluationError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matlang import parse_program
from matlang.ast import Program
from matlang.errors import EvaluationError, MatlangError, SourceError
from matlang.evaluator import evaluate_graph
from matlang.graphs import named
from matlang.printer import program_to_text

PATH3 = named("path3")

# Valid sentences to mutate: every construct of the grammar appears in at least one.
SEEDS = [
    "tr(A^3)/6",
    "ones' A ones",
    "𝟏ᵀ binom(A𝟏, 3)",
    "(tr(A⁴) + tr(A²) - 2 𝟏ᵀA²𝟏) / 8",
    "1/2 * ones'(A^3 .* diag(deg - 2 ones)) ones",
    "let f(x) = x*(x-1)*(x-2)/6; ones' f(deg)",
    "input h, w; A h ⊙ w",
    "t: tr(A³)/6\nc: ones'A ones # comment",
    "let B = A ∘ A²; tr(B'^2)",
    "-A + 2 A @ A · L - I × 3",
    "𝟏ᵀ A diag(exp(-A² 𝟏)) A 𝟏",
    "max(A, 0.5) - min(A, 1e3) / .25",
    "A^T^2 Aᵀ A' A¹² A^(3)",
    "𝟏ᵀ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)",
    "let g(x, y) = x^2 + y; g(A, A); 𝟙ᵀ relu(L 𝟏)",
]
# Characters and fragments a person could type into a sentence.
CHARS = "()+-−*@·×⊙∘.'ᵀ^²³¹⁰⁴/,;:#=\n \t𝟏𝟙1023ATIfhx_"
PIECES = list(CHARS) + [
    "let ",
    "input ",
    "tr(",
    "diag(",
    "exp(",
    "ones",
    "binom(",
    "^T",
    ".*",
    "let f(x) = ",
    "0.5",
    "deg",
    "L",
    "1e9",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A valid sentence after 1–4 deletions, insertions of grammar characters, or swaps."""
    s = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "swap", "duplicate"]))
        i = draw(st.integers(0, len(s)))
        if op == "delete" and s:
            j = min(len(s), i + draw(st.integers(1, 3)))
            s = s[:i] + s[j:]
        elif op == "insert":
            s = s[:i] + draw(st.sampled_from(PIECES)) + s[i:]
        elif op == "swap" and len(s) > 1:
            i, j = min(i, len(s) - 1), draw(st.integers(0, len(s) - 1))
            chars = list(s)
            chars[i], chars[j] = chars[j], chars[i]
            s = "".join(chars)
        elif op == "duplicate" and s:
            j = draw(st.integers(i, len(s)))
            s = s[:j] + s[i:j] + s[j:]
    return s


#: Random strings: character soup over the grammar's alphabet, and sequences of fragments.
soup = st.text(alphabet=CHARS, max_size=30)
fragments = st.lists(st.sampled_from(PIECES + SEEDS[:3]), max_size=12).map("".join)
unicode_noise = st.text(max_size=12)


def check(text: str, *, evaluate: bool = False) -> None:
    try:
        program = parse_program(text)
    except MatlangError as err:  # the only exceptions allowed
        rendered = str(err)
        assert rendered
        if isinstance(err, SourceError) and err.span is not None:
            lines = text.split("\n")
            assert 1 <= err.span.line <= max(1, len(lines))
            assert 1 <= err.span.col <= len(lines[err.span.line - 1]) + 1
            assert rendered.startswith(f"{err.span.line}:{err.span.col}: ")
        return
    assert isinstance(program, Program)
    # (the ASCII spelling is checked on random ASTs in test_roundtrip)
    assert parse_program(program_to_text(program)) == program
    if evaluate:  # and the exact evaluator gives a value or an EvaluationError
        for sentence in program:
            try:
                evaluate_graph(sentence.expr, PATH3, inputs={"h": [1, 2, 3], "w": [0, 1, 0]})
            except EvaluationError:
                pass


FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@settings(FUZZ, max_examples=4000)
@given(mutated())
def test_mutated_sentences(text: str) -> None:
    check(text, evaluate=True)


@settings(FUZZ, max_examples=3000)
@given(soup)
def test_character_soup(text: str) -> None:
    check(text)


@settings(FUZZ, max_examples=2500)
@given(fragments)
def test_fragment_sequences(text: str) -> None:
    check(text)


@settings(FUZZ, max_examples=500)
@given(unicode_noise)
def test_arbitrary_unicode(text: str) -> None:
    check(text)


def test_seeds_are_valid() -> None:
    """The mutation seeds themselves parse (else the fuzz would only test error paths)."""
    for s in SEEDS:
        assert len(parse_program(s)) >= 1
