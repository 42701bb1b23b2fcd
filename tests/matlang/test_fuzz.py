"""10⁴ random and mutated strings: the front end raises only MatlangError subclasses (never a
lark, sympy, Python or numpy exception), every error renders with a valid location, every
string that does parse prints to a canonical text that parses back to the same program, and
(for the mutated sentences) evaluates exactly or raises an EvaluationError, and the sparse exact
evaluator gives the same value (one sentence in four; every one in long mode).

Long mode: ``MATLANG_FUZZ_SCALE=10 python -m pytest tests/matlang/test_fuzz.py``
runs 10× the examples (10⁵ inputs), puts every input under a watchdog (an input that takes
more than ``HANG_SECONDS`` of CPU time fails as a hang), also compiles every mutated sentence that
parses and runs it on the path P3 (only project errors allowed; graph-level values equal the
exact evaluator's), and writes the counts to ``MATLANG_FUZZ_REPORT`` (a JSON file) if set.
"""

from __future__ import annotations

import json
import math
import os
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matlang import parse_program
from matlang.ast import Program
from matlang.errors import EvaluationError, MatlangError, SourceError
from matlang.evaluator import evaluate_graph
from matlang.graphs import named
from matlang.printer import program_to_text

PATH3 = named("path3")
SCALE = float(os.environ.get("MATLANG_FUZZ_SCALE", "1"))
LONG = SCALE > 1
HANG_SECONDS = 10.0
#: what the long mode saw: inputs, parsed, refused (by error class), evaluated, compiled...
STATS: Counter[str] = Counter()


class Hang(BaseException):
    """An input ran past HANG_SECONDS (a BaseException, so no ``except Exception`` hides it)."""


@contextmanager
def watchdog(text: str) -> Iterator[None]:
    """Fail ``text`` as a hang past HANG_SECONDS of CPU time (a CPU timer, so a loaded machine
    does not make a slow input look hung; the hangs this guards against are CPU-bound)."""
    if not LONG:
        yield
        return
    fired: list[bool] = []

    def fire(*_: object) -> None:
        fired.append(True)
        raise Hang(f"{text!r} ran past {HANG_SECONDS} s of CPU time")

    old = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, HANG_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
        if fired:
            STATS["hangs"] += 1
    if fired:  # the Hang was raised inside a callback that swallowed it (hypothesis's gc hook)
        raise Hang(f"{text!r} ran past {HANG_SECONDS} s of CPU time")


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    path = os.environ.get("MATLANG_FUZZ_REPORT")
    if LONG and path:
        with open(path, "w") as f:
            json.dump({"scale": SCALE, "hang_seconds": HANG_SECONDS, **STATS}, f, indent=1)


def _examples(n: int) -> int:
    return int(n * SCALE)

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
    STATS["inputs"] += 1
    try:
        with watchdog(text):
            _check(text, evaluate=evaluate)
    except Hang:
        raise
    except MatlangError:
        raise
    except BaseException as err:  # a foreign exception: counted, then the test fails on it
        STATS["foreign"] += 1
        STATS[f"foreign {type(err).__name__}"] += 1
        raise


def _check(text: str, *, evaluate: bool) -> None:
    try:
        program = parse_program(text)
    except MatlangError as err:  # the only exceptions allowed
        STATS[f"refused {type(err).__name__}"] += 1
        rendered = str(err)
        assert rendered
        if isinstance(err, SourceError) and err.span is not None:
            lines = text.split("\n")
            assert 1 <= err.span.line <= max(1, len(lines))
            assert 1 <= err.span.col <= len(lines[err.span.line - 1]) + 1
            assert rendered.startswith(f"{err.span.line}:{err.span.col}: ")
        return
    STATS["parsed"] += 1
    assert isinstance(program, Program)
    # (the ASCII spelling is checked on random ASTs in test_roundtrip)
    assert parse_program(program_to_text(program)) == program
    if not evaluate:
        return
    # the exact evaluator gives a value or an EvaluationError
    exact = []
    for sentence in program:
        try:
            exact.append(evaluate_graph(sentence.expr, PATH3, inputs=INPUTS))
            STATS["evaluated"] += 1
        except EvaluationError:
            exact.append(None)
            STATS["evaluation refused"] += 1
    _sparse(program, exact)
    if LONG:
        _compiled(program, exact)


def _sparse(program: Program, exact: list[object]) -> None:
    """The sparse exact evaluator (GraphBLAS) on P3, for sentences without inputs (every one in
    long mode, one in four otherwise): a value equal to the dense evaluator's — exact where it is
    exact, a float (never a Fraction) within 1e-12 where it is a float — or a project error."""
    from matlang.compiler.exact import evaluate_sparse

    if program.inputs:
        return
    STATS["sparse candidates"] += 1
    if not LONG and STATS["sparse candidates"] % 4:
        return
    for sentence, want in zip(program, exact):
        try:
            got = evaluate_sparse(sentence.expr, PATH3)
        except MatlangError as err:
            STATS[f"sparse refused {type(err).__name__}"] += 1
            continue
        STATS["sparse evaluated"] += 1
        if want is None:  # the dense evaluator refused: a value here is not compared
            continue
        assert_same_value(got, want)
        STATS["sparse equal exact"] += 1


def _flat_values(v: object) -> list[object]:
    import numpy as np

    if hasattr(v, "toarray"):  # a scipy sparse matrix
        v = v.toarray()
    if isinstance(v, np.ndarray):
        return [x.item() if isinstance(x, np.generic) else x for x in v.reshape(-1).tolist()]
    return [v]


def assert_same_value(got: object, want: object) -> None:
    """``got`` (sparse evaluator) equals ``want`` (dense): exact kinds exactly, floats close."""
    from fractions import Fraction

    g_flat, w_flat = _flat_values(got), _flat_values(want)
    assert len(g_flat) == len(w_flat), (got, want)
    for g, w in zip(g_flat, w_flat):
        if isinstance(w, (int, Fraction)):
            assert isinstance(g, (int, Fraction)) and g == w, (got, want)
        else:
            assert isinstance(g, float), (got, want)
            assert math.isclose(g, float(w), rel_tol=1e-12, abs_tol=1e-300) or (
                math.isnan(g) and math.isnan(float(w))
            ), (got, want)


INPUTS = {"h": [1, 2, 3], "w": [0, 1, 0]}


def _compiled(program: Program, exact: list[object]) -> None:
    """Compile and run on P3: a value, or a project error; one graph-level sentence whose
    exact value is finite must come out equal (float64, relative 1e-9)."""
    import torch

    from matlang.compiler.api import compile

    try:
        module = compile(program, dtype=torch.float64)
        inputs = {k: torch.tensor(v, dtype=torch.float64) for k, v in INPUTS.items()
                  if k in program.inputs}
        out = module([PATH3], inputs=inputs) if inputs else module([PATH3])
    except MatlangError as err:
        STATS[f"compile refused {type(err).__name__}"] += 1
        return
    STATS["compiled"] += 1
    if len(program) == 1 and program.sentences[0].expr.shape.is_scalar and exact[0] is not None:
        want = float(exact[0])  # type: ignore[arg-type]
        if math.isfinite(want):
            got = float(out.detach().reshape(-1)[0])
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9), (got, want)
            STATS["compiled equal exact"] += 1


FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@settings(FUZZ, max_examples=_examples(4000))
@given(mutated())
def test_mutated_sentences(text: str) -> None:
    check(text, evaluate=True)


@settings(FUZZ, max_examples=_examples(3000))
@given(soup)
def test_character_soup(text: str) -> None:
    check(text)


@settings(FUZZ, max_examples=_examples(2500))
@given(fragments)
def test_fragment_sequences(text: str) -> None:
    check(text)


@settings(FUZZ, max_examples=_examples(500))
@given(unicode_noise)
def test_arbitrary_unicode(text: str) -> None:
    check(text)


def test_seeds_are_valid() -> None:
    """The mutation seeds themselves parse (else the fuzz would only test error paths)."""
    for s in SEEDS:
        assert len(parse_program(s)) >= 1
