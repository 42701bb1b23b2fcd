"""The example files: the sentence file parses, names every sentence the issue asks for, and
the script prints the paper's values."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from matlang import parse_program, to_text
from tests.fixtures import load_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_script() -> ModuleType:
    return load_example("evaluate_paper_sentences")


def test_sentence_file_parses() -> None:
    program = parse_program((EXAMPLES / "paper_sentences.mat").read_text(encoding="utf-8"))
    names = [s.name for s in program]
    assert names == [
        "three_stars",
        "triangles",
        "four_cycles",
        "tailed_triangles",
        "custom",
        "closed_walks_2",
        "closed_walks_3",
        "closed_walks_4",
        "closed_walks_5",
        "l3_sentence",
        "normalised_laplacian_sum",
    ]
    assert to_text(program["custom"].expr) == "𝟏ᵀ A diag(exp(-A² 𝟏)) A 𝟏"
    assert all(str(s.shape) == "scalar 1×1" for s in program)


def test_script_prints_the_paper_values(capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script()
    assert script.main(["decalin", "bicyclopentyl", "cospectral_G", "cospectral_H",
                        "rook4x4", "shrikhande"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert rows["closed_walks_5"][:2] == ["0", "20"]
    assert rows["l3_sentence"] == ["0", "0", "6032", "5872", "331776", "331776"]
    assert [rows[f"closed_walks_{k}"][2:4] for k in (2, 3, 4, 5)] == [
        ["40", "40"], ["48", "48"], ["360", "360"], ["920", "920"]
    ]  # fmt: skip
    assert "ChebNet C2 on decalin: lambda_max = 2, 1'C2 1 = -9.9327" in out
    assert "ChebNet C2 on bicyclopentyl: lambda_max = 1.8418, 1'C2 1 = -9.9269" in out


def test_learn_a_pattern_count_fits_c5_where_1wl_supports_cannot(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # C5 is beyond 1-WL (L2): on the masked matrices of its rooted sentence the polynomial
    # layers' least-squares readout is exact to rounding; on I, A it is not
    out = load_example("learn_a_pattern_count").main(
        ["--pattern", "C5", "--graphs", "240", "--hidden", "32"]
    )
    assert out["pattern's supports"] < 1e-8
    assert out["I, A"] > 1e-3
    assert "C5: fragment L2" in capsys.readouterr().out
