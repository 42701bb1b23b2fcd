"""``matlang compile``: the plan and cost model (--explain), values of the compiled module on
graphs with masks, layers and predicted cost, JSON, dense mode, and errors without traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matlang.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["compile", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["compile", "--help"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("usage: matlang compile")


def test_json_values_masks_layers_and_cost(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "𝟏ᵀ (A ⊙ A²)² 𝟏", "--graph", "decalin", "--graph", "K4",
                         "--json")
    assert code == 0 and err == ""
    report = json.loads(out)
    assert report["values"] == [0, 144]  # decalin has no triangle; K4: 4 · 9 per node
    assert report["mask"] == [{"register": "m1", "support": "E", "entries": [22, 12]}]
    assert report["layers"] == 3
    assert report["graphs"] == ["decalin", "K4"]
    assert len(report["predicted_bytes"]) == 2 and all(b > 0 for b in report["predicted_bytes"])
    # FLOPs 2E²/n + 5E + n: K4 has E = 12, n = 4
    assert report["predicted_flops"][1] == 2 * 144 // 4 + 5 * 12 + 4


def test_explain_prints_the_plan_before_running(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tr(A³) / 6", "--explain", "--graph", "K4", "--json")
    assert code == 0
    plan_at = out.index("steps:")
    cost_at = out.index("cost model")
    values_at = out.index('{"values": [4]')
    assert plan_at < cost_at < values_at
    assert "sampled(" in out and "parameters: c0 = 6" in out


def test_without_graphs_it_explains(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tr(A⁴)")
    assert code == 0
    assert "compose(m0, m0)" in out and "mask m1 = E∘E" in out and "FLOPs ≈" in out


def test_node_level_and_several_sentences(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "s.mat"
    f.write_text("degree: A 𝟏\ntri: (A ⊙ A²) 𝟏 / 2\n", encoding="utf-8")
    code, out, _ = run(capsys, "--sentences", str(f), "--graph", "K3", "--graph", "P3",
                       "--json")
    assert code == 0
    assert json.loads(out)["values"] == [[[2, 1], [2, 1], [2, 1]], [[1, 0], [2, 0], [1, 0]]]


def test_matrix_sentence_prints_its_entries(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "A ⊙ A²", "--graph", "P3", "--json")
    assert code == 0
    assert json.loads(out)["values"] == [[[0, 1, 0], [1, 0, 0], [1, 2, 0], [2, 1, 0]]]


def test_human_readable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tr(A³)", "--graph6", "Bw", "--backend", "torch")
    assert code == 0
    assert "Bw: 6  (predicted" in out and "mask m0 = E: entries [6]" in out


def test_full_mask_is_an_error_unless_dense(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "exp(A) 𝟏", "--graph", "K3")
    assert code == 1 and out == ""
    assert "1:1: compile error: exp(A) is multiplied with a vector" in err
    assert "^^^^^^" in err and "Traceback" not in err
    code, out, _ = run(capsys, "𝟏ᵀ exp(A) 𝟏", "--graph", "K3", "--dense", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["values"][0] == pytest.approx(3 * (2 * 2.718281828459045 + 1))
    assert report["mask"][0]["support"] == "J" and report["mask"][0]["entries"] == [9]


def test_float32(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tr(A³) / 6", "--graph", "K4", "--dtype", "float32", "--json")
    assert code == 0 and json.loads(out)["values"] == [4]


def test_backend_choices_match_runtime() -> None:
    import argparse

    from matlang.cli import compile as cli_compile
    from matlang.runtime.sparse import BACKENDS

    sub = argparse.ArgumentParser().add_subparsers()
    cli_compile.register(sub)
    action = next(a for a in sub.choices["compile"]._actions if a.dest == "backend")
    assert tuple(action.choices) == BACKENDS


def test_several_sentences_are_named_above_their_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compile --sentences FILE``: each graph prints a list of values; the sentences' names
    say what each entry is (they were not printed), in the text and in ``--json``."""
    f = tmp_path / "s.txt"
    f.write_text("tri: tr(A^3)/6\nedges: 𝟏ᵀ A 𝟏 / 2\n𝟏ᵀ A² 𝟏\n")
    code, out, _ = run(capsys, "--sentences", str(f), "--graph", "K4", "--graph", "petersen")
    assert code == 0
    assert out.startswith("  sentences: tri, edges, #2\n  K4: [4, 6, 36]  (predicted ")
    assert "\n  petersen: [0, 15, 90]  (predicted " in out
    code, out, _ = run(capsys, "--sentences", str(f), "--graph", "K4", "--json")
    assert json.loads(out)["sentences"] == ["tri", "edges", "#2"]
    code, out, _ = run(capsys, "tr(A^3)/6", "--graph", "K4")  # one sentence: no line for it
    assert out.startswith("  K4: 4  (predicted ")
