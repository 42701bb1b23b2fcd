"""Limits as a feature: past a bound of :mod:`matlang.limits`, every entry
point stops at once with a project error naming the bound — never a hang, a RecursionError, an
OverflowError or Python's 4300-digit refusal. Each case also checks it answers in well under a
second of work (the bound is there to make that so)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import torch

import matlang
from matlang import limits
from matlang.compiler.api import compile
from matlang.errors import CompileError, EvaluationError, MatlangSyntaxError, PowerError
from matlang.evaluator import evaluate
from matlang.graphs import named
from matlang.parser import parse

P = pytest.param

CASES = [
    P(lambda: parse("1e99999999"), MatlangSyntaxError,
      "the number 1e99999999 is beyond 10^±300 (the limit MAX_LITERAL_EXPONENT", id="literal"),
    P(lambda: parse("1" + "0" * 5000), MatlangSyntaxError, "MAX_LITERAL_EXPONENT",
      id="literal-written-out"),
    P(lambda: parse("0." + "0" * 400 + "1"), MatlangSyntaxError, "MAX_LITERAL_EXPONENT",
      id="literal-small"),
    P(lambda: compile("1e400"), MatlangSyntaxError, "MAX_LITERAL_EXPONENT", id="literal-1e400"),
    P(lambda: parse("1." + "1" * 100), MatlangSyntaxError,
      "101 significant digits, beyond the limit MAX_LITERAL_DIGITS = 100", id="literal-digits"),
    P(lambda: compile("onesᵀ A^1000000 ones"), PowerError,
      "the power ^1000000 is beyond the limit MAX_EXPONENT = 10 000", id="power"),
    P(lambda: matlang.classify("tr((ones onesᵀ)^999999999999999999999)", witness=False),
      PowerError, "the power ^999999… (21 digits) is beyond the limit MAX_EXPONENT", id="classify"),
    P(lambda: parse("A^" + "9" * 5000), PowerError, "(5000 digits)", id="power-digits"),
    P(lambda: parse("A" + "²" * 30), PowerError, "MAX_EXPONENT", id="superscript-power"),
    P(lambda: parse("tr(A) + " * 20000 + "1"), MatlangSyntaxError,
      "160001 characters, beyond the limit MAX_SENTENCE_CHARS = 100 000", id="sentence-size"),
    P(lambda: parse("-" * 1000 + "tr(A)"), MatlangSyntaxError,
      "brackets alone are not), beyond the limit MAX_NESTING = 200", id="nesting"),
    # a long flat sum is as deep as it has terms: the message says what counts as a level
    P(lambda: parse(" + ".join(["tr(A^3)"] * 198)), MatlangSyntaxError,
      "nests 203 levels deep (each operand of a chain of +, - or products is a level",
      id="nesting-flat-sum"),
    P(lambda: evaluate("tr(A^10000)", "petersen"), EvaluationError,
      "about 4771 digits on graph petersen, beyond the limit MAX_DIGITS = 4 000", id="digits"),
    P(lambda: compile("tr(A^329)"), CompileError,
      "more than 256 operations with its powers multiplied out, beyond the limit "
      "MAX_COMPILED_SIZE = 256", id="compiled-size"),
    P(lambda: compile("let B = A A; let C = B B; let D = C C; let F = D D; let G = F F; "
                      "let H = G G; let K = H H; let M = K K; let N = M M; tr(N)"),
      CompileError, "MAX_COMPILED_SIZE", id="let-doubling"),
    P(lambda: compile("exp(1000)"), CompileError,
      "exp(1000) = 1.97007E+434 does not fit in float64", id="constant-overflow"),
    P(lambda: compile("1e300 tr(A)"), CompileError,
      "c0 = 1e+300 (at 1:1) is beyond the largest torch.float32", id="literal-float32"),
]  # fmt: skip


@pytest.mark.parametrize(("run", "kind", "message"), CASES)
def test_limits_stop_with_a_named_project_error(
    run: Callable[[], Any], kind: type[Exception], message: str
) -> None:
    start = time.process_time()
    with pytest.raises(kind) as info:
        run()
    assert message in str(info.value)
    assert time.process_time() - start < 1.0


def test_values_at_the_limits_are_right() -> None:
    # tr(A^k) of K3 is 2^k + 2(-1)^k: exact up to MAX_DIGITS, and compiled up to its limit
    assert evaluate("tr(A^8000)", "K3") == 2**8000 + 2
    assert evaluate(f"tr(A^{limits.MAX_EXPONENT})", "empty3") == 0
    model = compile("tr(A^254)", dtype=torch.float64)
    assert model(named("K3")).item() == pytest.approx(2.0**254, rel=1e-12)
    assert compile("1e300 tr(A)", dtype=torch.float64)(named("K3")).tolist() == [0.0]


def test_a_power_compiles_by_halves() -> None:
    # tr(A^k) split at every point cost O(k³): 2.6 s at k = 64, a RecursionError at 329
    start = time.process_time()
    model = compile("tr(A^120) + onesᵀ (A ⊙ A^120) ones", dtype=torch.float64)
    assert time.process_time() - start < 2.0
    g = named("petersen")  # 3-regular: tr(A^120) = Σ λ^120, A^120 𝟏 = 3^120 𝟏
    want = evaluate("tr(A^120) + onesᵀ (A ⊙ A^120) ones", g)
    assert model(g).item() == pytest.approx(float(want), rel=1e-12)


def test_witness_search_stops_in_time() -> None:
    notes: list[str] = []
    from matlang.parser import parse as parse_expr
    from matlang.witness import WitnessLibrary

    found = WitnessLibrary.default().search(parse_expr("tr(A^3)"), 2, seconds=0.0, notes=notes)
    assert found is None
    assert notes == [
        "witness search stopped after 0 s (the limit WITNESS_SECONDS = 20 (matlang.limits))"
    ]
