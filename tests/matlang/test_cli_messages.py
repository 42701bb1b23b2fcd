"""What the command line tells a user: "did you mean" for a mistyped
command, function or graph; errors as JSON under ``--json``; graph6 strings where classify
prints them; a file of sentences that goes on past a bad line."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import matlang
from matlang.cli import main
from matlang.graphs import from_graph6


def test_command_typos_get_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["clasify", "tr(A^3)"])
    assert done.value.code == 2
    assert "invalid choice: 'clasify'" in (err := capsys.readouterr().err)
    assert "did you mean 'classify'?" in err
    with pytest.raises(SystemExit):
        main(["wl", "--test", "3wl", "--dataset", "sr25"])  # a choice of an option too
    assert "did you mean '3-wl'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["xyzzy"])  # nothing close: no suggestion
    assert "did you mean" not in capsys.readouterr().err


def test_trace_suggests_tr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "trace(A^3)/6", "--graph", "K4"]) == 1
    err = capsys.readouterr().err
    assert "unknown function 'trace'" in err and "did you mean 'tr'?" in err
    assert main(["eval", "tr(A^3)/6", "--graph", "K4", "--json"]) == 0  # and tr( is right
    assert json.loads(capsys.readouterr().out)["values"] == [4]


def test_classify_json_errors_are_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", "--json", "1ᵀ (A ⊙"]) == 1
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["kind"] == "syntax error" and error["at"] == "1:7"
    assert error["text"].startswith("1:7: syntax error")
    assert main(["classify", "--json", "trace(A)"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error == {
        "kind": "name error",
        "message": "unknown function 'trace'",
        "at": "1:1",
        "hint": "did you mean 'tr'?",
        "text": error["text"],
    }
    assert main(["classify", "tr(A", "--no-witness"]) == 1  # without --json: text on stderr
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("1:4: syntax error")


def test_graph_takes_the_graph6_classify_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """classify's witness for triangles is a graph6 string; ``--graph`` takes it back, and the
    values agree with classify's and with networkx's triangle count."""
    assert main(["classify", "tr(A^3)/6", "--json"]) == 0
    witness = json.loads(capsys.readouterr().out)["witness"]
    g, h = witness["pair"]
    assert main(["eval", "tr(A^3)/6", "--graph", g, "--graph", h, "--json"]) == 0
    values = json.loads(capsys.readouterr().out)["values"]
    assert values == witness["values"]
    for name, value in zip((g, h), values):
        try:
            graph = matlang.graphs.named(name)
        except matlang.MatlangError:
            graph = from_graph6(name)
        triangles = sum(nx.triangles(nx.from_numpy_array(np.asarray(graph.adjacency))).values())
        assert value == triangles // 3


def test_unknown_graph_names_get_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "tr(A^3)", "--graph", "petersn"]) == 1
    err = capsys.readouterr().err
    assert "no built-in graph named 'petersn' (did you mean 'petersen'?); known:" in err
    assert main(["eval", "tr(A^3)", "--graph", "cospectral_g"]) == 1
    assert "did you mean 'cospectral_G'?" in capsys.readouterr().err
    assert main(["eval", "tr(A^3)", "--graph", "cycle2"]) == 1  # a family: its own message
    assert "size 2 out of range" in capsys.readouterr().err


def test_sentences_file_goes_on_past_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.mat"
    path.write_text(
        "tri: tr(A^3)/6\n"
        "bad: trace(A^2)\n"
        "let f(x) = x*x;\n"
        "sq: 𝟏ᵀ f(A𝟏)\n"
        "oops: A +* A\n"
        "walks: 𝟏ᵀ A² 𝟏\n",
        encoding="utf-8",
    )
    assert main(["eval", "--sentences", str(path), "--graph", "petersen", "--json"]) == 1
    captured = capsys.readouterr()
    got = json.loads(captured.out)
    want = {
        name: matlang.evaluate(text, "petersen")
        for name, text in [("tri", "tr(A^3)/6"), ("sq", "𝟏ᵀ (A𝟏 ⊙ A𝟏)"), ("walks", "𝟏ᵀ A² 𝟏")]
    }
    assert want == {"tri": 0, "sq": 90, "walks": 90}
    assert _values_by_name(got) == want
    err = captured.err
    assert f"{path}:2:6: name error: unknown function 'trace'" in err
    assert f"{path}:5:10: syntax error" in err
    assert err.index(f"{path}:2:6") < err.index(f"{path}:5:10")  # in the file's order
    assert err.count("line left out, going on") == 2
    # a definition that fails takes the sentences that use it along, each reported
    path.write_text("let f(x) = x*;\nuse: 𝟏ᵀ f(A𝟏)\nok: tr(A^2)\n", encoding="utf-8")
    assert main(["classify", "--sentences", str(path), "--no-witness", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["sentence"] == "tr(A²)"
    assert f"{path}:1:" in captured.err and f"{path}:2:" in captured.err
    path.write_text("oops: A +* A\n", encoding="utf-8")  # nothing left: an error, as before
    assert main(["eval", "--sentences", str(path), "--graph", "K4"]) == 1
    assert "no sentence to work on" in capsys.readouterr().err


def _values_by_name(printed: object) -> dict[str, object]:
    """eval --json of several sentences: their values on the one graph, by name."""
    rows = printed if isinstance(printed, list) else printed["sentences"]  # type: ignore[index]
    return {row["name"]: row["values"][0] for row in rows}


def test_a_sentence_starting_with_a_minus_is_told_how_to_get_in(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``matlang eval "-tr(A)"``: argparse reads it as an option; the error says so and how to
    write it (brackets, or last after '--'), both of which then work; a mistyped option gets
    no such hint."""
    with pytest.raises(SystemExit) as done:
        main(["eval", "-tr(A^2)", "--graph", "K4"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "arguments: -tr(A^2); a sentence starting with '-' reads as an option" in err
    assert "'(-tr(A^2))', or last, after '--'" in err
    assert main(["eval", "(-tr(A^2))", "--graph", "K4"]) == 0
    assert capsys.readouterr().out == "  K4: -12\n"
    assert main(["eval", "--graph", "K4", "--", "-tr(A^2)"]) == 0
    assert capsys.readouterr().out == "  K4: -12\n"
    with pytest.raises(SystemExit):
        main(["eval", "tr(A)", "--graph", "K4", "--bogus"])
    assert "reads as an option" not in capsys.readouterr().err


def test_edge_list_and_sentence_file_errors_name_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """numpy's message counted rows from 0 and columns from 1 ('row 1, column 2' for line 2);
    a sentence file whose every sentence was bad ended on 'the text is empty'."""
    edges = tmp_path / "bad.txt"
    edges.write_text("# a comment\n0 1\n1 x\n", encoding="utf-8")
    assert main(["eval", "tr(A)", "--edges", str(edges)]) == 1
    assert "line 3: 'x' is not a node id (a line holds two whole numbers, u v)" in (
        capsys.readouterr().err
    )
    edges.write_text("0 1\n1 0 2\n", encoding="utf-8")
    assert main(["eval", "tr(A)", "--edges", str(edges)]) == 1
    assert "line 2 holds 3 numbers, not an edge u v" in capsys.readouterr().err
    bad = tmp_path / "s.txt"
    bad.write_text("tr(A\nA ++\n", encoding="utf-8")
    assert main(["eval", "--sentences", str(bad), "--graph", "K4"]) == 1
    err = capsys.readouterr().err
    assert err.count("line left out, going on") == 2
    assert err.rstrip().endswith(
        f"no sentence to work on (every sentence of {bad} was left out, above)"
    )


def test_a_sentence_file_with_a_byte_order_mark_reads_as_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Windows editors start UTF-8 files with a BOM: line 1 failed on an invisible '\\ufeff'."""
    path = tmp_path / "bom.txt"
    path.write_bytes("tri: tr(A^3)/6\r\nedges: ones' A ones / 2\r\n".encode("utf-8-sig"))
    assert main(["eval", "--sentences", str(path), "--graph", "K4", "--json"]) == 0
    assert _values_by_name(json.loads(capsys.readouterr().out)) == {"tri": 4, "edges": 6}
