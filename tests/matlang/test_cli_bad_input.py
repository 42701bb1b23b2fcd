"""Bad input on the command line: inputs that gave a foreign traceback now give the right answer
or a project error (exit 1, one message)."""

from __future__ import annotations

import math

import pytest

import matlang
from matlang.cli import main
from matlang.rewrite import normalize
from matlang.rules import RULES


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "text",
    [
        "2 exp(1) exp(2) (onesᵀ A ones onesᵀ) ones",
        "3 exp(1) exp(2) (onesᵀ A ones onesᵀ) A ones",
        "(2 exp(1)) exp(2) onesᵀ A ones",
        "2 (exp(1) exp(2)) (onesᵀ A² ones onesᵀ) ones",
    ],
)
def test_scalar_coefficients_do_not_cycle(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "classify", "--no-witness", text)
    assert code == 0, err
    e = matlang.parse(text)
    normal = normalize(e, RULES).expr
    for g in ("petersen", "K4", "path5"):
        want = matlang.evaluate(e, g, exact=False)
        assert matlang.evaluate(normal, g, exact=False) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    "argv",
    [
        ("compile", "exp(1e30)", "--graph", "K4"),
        ("eval", "exp(1e30)", "--graph", "K4", "--sparse"),
    ],
)
def test_huge_constant_is_a_project_error(
    argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert "Traceback" not in err
    assert "exp(1000000000000000000000000000000) = 4.02793e+434294481903" in err
    assert "does not fit in float64" in err


def test_bank_limit_must_not_be_negative(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "bank", "--fragment", "L1", "--max-size", "3", "--pairs", "exp", "--limit", "-1"
    )
    assert code == 1 and "--limit must be at least 0, got -1" in err


@pytest.mark.parametrize("graph_set", ["sr25", "graph8c"])
def test_bank_limit_on_an_all_pairs_set_is_refused_not_ignored(
    graph_set: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--limit`` cuts a pair set; on sr25 / graph8c (all pairs) it was silently ignored."""
    code, out, err = run(
        capsys, "bank", "--fragment", "L1", "--max-size", "3", "--pairs", graph_set, "--limit", "3"
    )
    assert code == 1 and out == ""
    assert f"--limit takes the first N pairs of a pair set; {graph_set} is compared all" in err


def test_eval_sparse_on_a_full_matrix_points_at_it_and_names_eval_s_own_way_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``eval --sparse`` on ``exp(A)`` (full support): the error shows the sentence with a caret
    under ``exp(A)`` and a hint eval can follow (drop --sparse), not compile's --dense, which
    eval does not take; dropping it gives the dense evaluator's value."""
    code, out, err = run(capsys, "eval", "--sparse", "𝟏ᵀ exp(A) 𝟏", "--graph", "K4")
    assert code == 1 and out == ""
    assert "1:4: compile error: exp(A) is multiplied with a vector" in err
    assert "  𝟏ᵀ exp(A) 𝟏\n     ^^^^^^\n" in err
    assert "hint: drop --sparse" in err and "--dense" not in err
    code, out, err = run(capsys, "eval", "--float", "𝟏ᵀ exp(A) 𝟏", "--graph", "K4")
    # exp entrywise on K4: e on the 12 edges, exp(0) = 1 on the 4 diagonal entries
    assert code == 0 and abs(float(out.split(":")[-1]) - (12 * math.e + 4)) < 1e-9


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (("eval", "tr(A)", "--graph", "K4", "--bogus"), "matlang eval"),
        (("bench", "merge", "a.json", "b.json", "--bogus"), "matlang bench merge"),
        (("--bogus",), "matlang"),
    ],
)
def test_an_unknown_option_is_named_by_the_command_it_was_given_to(
    argv: tuple[str, ...], prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``matlang eval … --bogus`` printed the top-level usage ('matlang [-h] [--version]
    COMMAND ...'): the subcommand's own usage and name now come with the error."""
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(f"usage: {prog} [")
    assert f"\n{prog}: error: unrecognized arguments: --bogus" in err
