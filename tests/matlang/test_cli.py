"""``matlang parse`` and ``matlang eval`` print what they should; errors exit 1 with the
project's message and no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matlang.cli import main
from matlang.graphs import PAPER_GRAPH6

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_parse(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "parse", "tr(A^3)/6")
    assert code == 0 and err == ""
    assert out == (
        "  text:  tr(A³) / 6\n"
        "  latex: \\frac{\\operatorname{tr}\\left({A}^{3}\\right)}{6}\n"
        "  shape: scalar 1×1\n"
    )
    code, out, _ = run(capsys, "parse", "--ascii", "𝟏ᵀ A²𝟏")
    assert out.splitlines()[0] == "  text:  ones' A^2 ones"


def test_parse_json_and_several_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "parse", "--json", "deg")
    assert json.loads(out) == {
        "name": "#0",
        "text": "A 𝟏",
        "latex": "A \\, \\mathbf{1}",
        "shape": "column n×1",
    }
    code, out, _ = run(capsys, "parse", "t: tr(A^3)/6; 𝟏ᵀ A 𝟏")
    assert out.splitlines() == [
        "t:",
        "  text:  tr(A³) / 6",
        "  latex: \\frac{\\operatorname{tr}\\left({A}^{3}\\right)}{6}",
        "  shape: scalar 1×1",
        "#1:",
        "  text:  𝟏ᵀ A 𝟏",
        "  latex: {\\mathbf{1}}^{\\top} \\, A \\, \\mathbf{1}",
        "  shape: scalar 1×1",
    ]


def test_eval_json_exact_integers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "eval", "tr(A^3)/6", "--graph", "K4", "--graph", "decalin",
                         "--json")  # fmt: skip
    assert (code, err) == (0, "")
    assert out == '{"values": [4, 0]}\n'
    code, out, _ = run(capsys, "eval", "tr(A^40)", "--graph", "K10", "--json")
    values = json.loads(out)["values"]
    assert values == [9**40 + 9] and type(values[0]) is int  # no float, no int64 overflow
    code, out, _ = run(capsys, "eval", "tr(A^3)/4", "--graph", "K3", "--graph", "K4", "--json")
    assert json.loads(out) == {"values": ["3/2", 6]}  # a non-integer rational as "p/q"
    code, out, _ = run(capsys, "eval", "A 𝟏", "--graph", "path3", "--json")
    assert json.loads(out) == {"values": [[1, 2, 1]]}
    code, out, _ = run(capsys, "eval", "A", "--graph", "K2", "--json")
    assert json.loads(out) == {"values": [[[0, 1], [1, 0]]]}


def test_eval_floats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", "tr(A^3)/6", "--graph", "K4", "--float", "--json")
    assert json.loads(out) == {"values": [4.0]} and '"values": [4.0]' in out
    code, out, _ = run(capsys, "eval", "𝟏ᵀ exp(A) 𝟏", "--graph", "K2", "--json")
    assert json.loads(out)["values"][0] == pytest.approx(2 + 2 * 2.718281828459045)


def test_eval_graph_sources(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "pair.g6"
    f.write_text(PAPER_GRAPH6["decalin"] + "\n" + PAPER_GRAPH6["bicyclopentyl"] + "\n")
    code, out, _ = run(capsys, "eval", "tr(A⁵)", "--graph6", PAPER_GRAPH6["decalin"], "--file",
                       str(f), "--json")  # fmt: skip
    assert json.loads(out) == {"values": [0, 0, 20]}
    code, out, _ = run(capsys, "eval", "tr(A⁵)", "--graph", "decalin", "--file", str(f))
    assert out.splitlines() == ["  decalin: 0", "  pair.g6:1: 0", "  pair.g6:2: 20"]


def test_eval_sentence_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "eval", "--sentences", str(EXAMPLES / "paper_sentences.mat"),
                       "--graph", "cospectral_G", "--graph", "cospectral_H", "--json")  # fmt: skip
    result = json.loads(out)
    assert result["graphs"] == ["cospectral_G", "cospectral_H"]
    by_name = {s["name"]: s["values"] for s in result["sentences"]}
    assert by_name["l3_sentence"] == [6032, 5872]
    assert by_name["closed_walks_5"] == [920, 920]
    assert by_name["triangles"] == [8, 8]
    text = tmp_path / "two.mat"
    text.write_text("t: tr(A^3)/6\nv: A 𝟏\n")
    code, out, _ = run(capsys, "eval", "--sentences", str(text), "--graph", "K3")
    assert out.splitlines() == ["t:", "  K3: 1", "v:", "  K3: [2, 2, 2]"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "A +", "--graph", "K4"],
         "1:3: syntax error: unexpected end of input, expected an operand\n  A +\n    ^\n"
         "  hint: an operator needs an operand on its right\n"),
        (["eval", "tr(A)", "--graph", "nope"],
         "no built-in graph named 'nope'; known: decalin, bicyclopentyl, cospectral_G, "
         "cospectral_H, rook4x4, shrikhande, petersen, cycleN, pathN, completeN, starN, emptyN, "
         "CN, PN, KN\n"),
        (["eval", "tr(A)"], "no graphs: give --graph NAME, --graph6 G6 or --file FILE.g6\n"),
        (["eval", "--graph", "K4"], "give a sentence or --sentences FILE\n"),
        (["eval", "let B = A", "--graph", "K4"],
         "no sentence to work on (only definitions were given)\n"),
        (["eval", "", "--graph", "K4"], "no sentence to work on (the text is empty)\n"),
        (["parse", "  # a comment"], "no sentence to work on (the text is empty)\n"),
        (["eval", "log(A)", "--graph", "K2"],
         "log(0.0) is -inf at entry (0, 0) on graph K2 (pass nonfinite='keep' to keep inf/nan)\n"),
        (["eval", "tr(A)", "--graph6", "I?"],
         "graph I?: graph6 string for 10 nodes needs 8 data characters, has 1\n"),
        (["parse", "--sentences", "/no/such/file.mat"],
         "no such sentence file: /no/such/file.mat\n"),
    ],
)  # fmt: skip
def test_errors_exit_1_with_the_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err == message


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 2 and "parse" in out and "eval" in out


def test_a_sentence_file_names_its_sentences_even_when_one_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``eval --sentences FILE`` with a bad line: the others go on under their names (with one
    left, its name was dropped: '  K4: 4' alone), and the exit code says a line was left out."""
    f = tmp_path / "s.txt"
    f.write_text("tri: tr(A^3)/6\nbad: tr(A^3\n")
    code, out, err = run(capsys, "eval", "--sentences", str(f), "--graph", "K4")
    assert code == 1 and out == "tri:\n  K4: 4\n"
    assert f"{f}:2: line left out, going on" in err
