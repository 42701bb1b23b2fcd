"""``matlang classify``: stable JSON (golden), human output, files of sentences, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from matlang.cli import main

TRACE_REASON = {
    "stage": "syntactic",
    "level": "L2",
    "operation": "tr",
    "at": "1:1",
    "why": "the trace is in L2 but not in L1",
}

GOLDEN_JSON: dict[str, dict[str, Any]] = {
    "tr(A²)": {
        "sentence": "tr(A²)",
        "syntactic_fragment": "L2",
        "fragment": "L1",
        "wl": "at most 1-WL",
        "normalized": "𝟏ᵀ A 𝟏",
        "reasons": [{**TRACE_REASON, "text": "tr(A²)"}],
        "rules": [{"rule": "trace_adjacency_square", "identity": "tr(A²) = 𝟏ᵀ A 𝟏"}],
        "witness": None,
    },
    "tr(A^5)": {
        "sentence": "tr(A⁵)",
        "syntactic_fragment": "L2",
        "fragment": "L2",
        "wl": "beyond 1-WL (witness), at most L2 (strictly weaker than 3-WL)",
        "normalized": "tr(A⁵)",
        "reasons": [{**TRACE_REASON, "text": "tr(A⁵)"}],
        "rules": [],
        "witness": {
            "level": "1-WL",
            "pair": ["decalin", "bicyclopentyl"],
            "values": [0, 20],
            "source": "paper: decalin and bicyclopentyl",
        },
    },
    "let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)": {
        "sentence": "let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)",
        "syntactic_fragment": "L3",
        "fragment": "L3",
        "wl": "beyond 1-WL and L2 (witness), at most 3-WL",
        "normalized": "let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)",
        "reasons": [
            {
                "stage": "syntactic",
                "level": "L3",
                "operation": "⊙",
                "at": "1:23",
                "text": "A ⊙ A²",
                "why": "an entrywise product of matrices is in L3 only",
            }
        ],
        "rules": [],
        "witness": {
            "level": "L2",
            "pair": ["cospectral_G", "cospectral_H"],
            "values": [6032, 5872],
            "source": "paper: cospectral 4-regular pair",
        },
    },
    "1/2 * 𝟏ᵀ(A³ ⊙ diag(A𝟏 - 2𝟏))𝟏": {
        "sentence": "(1 / 2) (𝟏ᵀ (A³ ⊙ diag(A 𝟏 - 2 𝟏)) 𝟏)",
        "syntactic_fragment": "L3",
        "fragment": "L2",
        "wl": "beyond 1-WL (witness), at most L2 (strictly weaker than 3-WL)",
        "normalized": "tr(A³ diag(A 𝟏 - 2 𝟏)) / 2",
        "reasons": [
            {
                "stage": "syntactic",
                "level": "L3",
                "operation": "⊙",
                "at": "1:10",
                "text": "A³ ⊙ diag(A 𝟏 - 2 𝟏)",
                "why": "an entrywise product of matrices is in L3 only",
            },
            {
                "stage": "normalized",
                "level": "L2",
                "operation": "tr",
                "at": "1:7",
                "text": "tr(A³ diag(A 𝟏 - 2 𝟏))",
                "why": "the trace is in L2 but not in L1",
            },
        ],
        "rules": [
            {
                "rule": "linear_canonical",
                "identity": "sums of scalar multiples collected and expanded by sympy "
                "(X − X = 0, 2(3M) = 6M, ...)",
            },
            {
                "rule": "bilinear_hadamard",
                "identity": "uᵀ (M ⊙ N) w = tr(diag(u) M diag(w) Nᵀ); 𝟏ᵀ (M ⊙ N) 𝟏 = tr(M Nᵀ)",
            },
            {"rule": "transpose_involution", "identity": "(Mᵀ)ᵀ = M"},
            {"rule": "identity_product", "identity": "I M = M = M I"},
            {"rule": "transpose_diag", "identity": "diag(v)ᵀ = diag(v)"},
        ],
        "witness": {
            "level": "1-WL",
            "pair": ["G`iRIo", "GV`@YW"],
            "values": [0, 6],
            "source": "random 3-regular graphs on 8 nodes",
        },
    },
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["classify", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("sentence", list(GOLDEN_JSON))
def test_json_is_stable(capsys: pytest.CaptureFixture[str], sentence: str) -> None:
    rc, out, _ = _run(capsys, sentence, "--json")
    assert rc == 0
    assert json.loads(out) == GOLDEN_JSON[sentence]


def test_no_witness(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "tr(A^5)", "--json", "--no-witness")
    got = json.loads(out)
    assert rc == 0 and got["witness"] is None
    assert got["wl"] == "at most L2 (strictly weaker than 3-WL)"


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "1/2 * 𝟏ᵀ(A³ ⊙ diag(A𝟏 - 2𝟏))𝟏")
    assert rc == 0
    lines = out.splitlines()
    assert "fragment:   L2 (as written L3; lowered by the rewrites)" in lines
    assert "normalized: tr(A³ diag(A 𝟏 - 2 𝟏)) / 2" in lines
    assert any(ln.startswith("witness:    1-WL-equivalent pair G`iRIo / GV`@YW") for ln in lines)
    assert (
        "  bilinear_hadamard: uᵀ (M ⊙ N) w = tr(diag(u) M diag(w) Nᵀ); 𝟏ᵀ (M ⊙ N) 𝟏 = tr(M Nᵀ)"
        in lines
    )
    assert lines[-1].startswith("assumes:    simple undirected graphs")


def test_sentence_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "counts.mat"
    f.write_text("triangles: tr(A^3) / 6\nstars: 𝟏ᵀ binom(A𝟏, 3)\n", encoding="utf-8")
    rc, out, _ = _run(capsys, "--sentences", str(f), "--json")
    rows = json.loads(out)
    assert rc == 0
    assert [(r["name"], r["fragment"]) for r in rows] == [("triangles", "L2"), ("stars", "L1")]
    assert rows[0]["witness"]["values"] == [0, 2]
    assert rows[0]["reasons"][0]["at"] == "1:12"
    rc, out, _ = _run(capsys, "--sentences", str(f))
    assert out.splitlines()[0] == "triangles:" and "stars:" in out.splitlines()


def test_user_error_is_located_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "tr(A ⊙ 𝟏)")
    assert rc == 1 and out == ""
    assert err.startswith("1:4: shape error")
    assert "^^^^^" in err and "Traceback" not in err


def test_help_documents_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["classify", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    for key in GOLDEN_JSON["tr(A^5)"]:
        assert key in text
    assert '"pair": [g, h]' in text and "--no-witness" in text
