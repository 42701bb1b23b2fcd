"""matlang.draw: the SVG holds one circle per node, the titles the evaluator's values."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

import matlang
from matlang.cli import main
from matlang.drawing import draw, node_share
from matlang.evaluator import format_value
from matlang.graphs import named

SVG = "{http://www.w3.org/2000/svg}"


def _nodes(svg: str, i: int) -> int:
    """How many node markers the scatter of panel ``i`` holds."""
    root = ET.fromstring(svg)
    group = next(g for g in root.iter(f"{SVG}g") if g.get("id") == f"nodes-{i}")
    return sum(1 for _ in group.iter(f"{SVG}use"))


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_witness_pair_svg_has_every_node_and_the_evaluators_values():
    a = matlang.classify("1/2 * 𝟏ᵀ (A³ ⊙ diag(A𝟏 - 2𝟏)) 𝟏")
    svg = draw(a)
    g, h = a.witness.graphs
    assert _nodes(svg, 0) == g.num_nodes and _nodes(svg, 1) == h.num_nodes
    texts = _texts(svg)
    for label, graph in zip(a.witness.pair, a.witness.graphs):
        value = format_value(matlang.evaluate(a.expr, graph))
        assert f"{label}: {value}" in texts
    assert any("beyond 1-WL" in t for t in texts)
    assert len(svg) < 60_000


def test_node_share_sums_to_the_graph_value():
    for text in (
        "tr(A^3) / 6",
        "𝟏ᵀ A 𝟏 / 2",
        "1/2 * 𝟏ᵀ (A³ ⊙ diag(A𝟏 - 2𝟏)) 𝟏",
        "tr(A^4) - 𝟏ᵀ A² 𝟏",
    ):
        e = matlang.parse(text)
        share = node_share(e)
        assert share is not None and share.shape == matlang.parse("A 𝟏").shape
        for g in ("petersen", "K4", "cospectral_G"):
            assert sum(matlang.evaluate(share, g)) == matlang.evaluate(e, g)
    assert node_share(matlang.parse("let f(x) = x*x; f(𝟏ᵀ A 𝟏)")) is None


def test_node_labels_are_the_node_sentences_values():
    svg = draw("K4", "tr(A^3) / 6", nodes="(A³ ⊙ I) 𝟏 / 2")
    assert _nodes(svg, 0) == 4
    texts = _texts(svg)
    assert texts.count("3") >= 4  # each node of K4 lies on 3 triangles
    assert "K4: 4" in texts


def test_pattern_certificate_pair_is_rook_and_shrikhande_with_copies_per_node():
    svg = draw(matlang.pattern("K4"))
    assert _nodes(svg, 0) == 16 and _nodes(svg, 1) == 16
    texts = _texts(svg)
    assert "rook4x4: 8" in texts and "shrikhande: 0" in texts
    assert texts.count("2") >= 16  # each rook node lies on 2 K4s (its row and column)


def test_png_and_file(tmp_path):
    png = draw(["cycle6", "EwCW"], "tr(A^3)", file=tmp_path / "pair.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "pair.png").read_bytes() == png
    with pytest.raises(matlang.MatlangError, match="svg or .png"):
        draw("K4", file=tmp_path / "x.pdf")


def test_no_witness_is_an_error_with_a_way_out():
    with pytest.raises(matlang.MatlangError, match="no witness pair"):
        draw(matlang.classify("tr(A^3)", witness=False))


@pytest.mark.parametrize(
    "argv",
    [
        ["classify", "tr(A^3)/6"],
        ["pattern", "K4"],
        ["pattern", "triangle", "--json"],
        ["wl", "--test", "3-wl", "--dataset", "paper_pairs"],
    ],
)
def test_draw_option(argv, tmp_path, capsys):
    out = tmp_path / "w.svg"
    assert main([*argv, "--draw", str(out)]) == 0
    svg = out.read_text()
    assert _nodes(svg, 0) > 0 and _nodes(svg, 1) > 0
    assert f"drew {out}" in capsys.readouterr().err


def test_wl_draw_colours_by_stable_colours(tmp_path):
    out = tmp_path / "wl.svg"
    assert main(["wl", "--test", "1-wl", "--dataset", "paper_pairs", "--draw", str(out)]) == 0
    texts = _texts(out.read_text())
    assert any("1-wl: the same stable colours" in t for t in texts)
    g = named("decalin")
    assert sum(1 for t in texts if re.fullmatch(r"\d+", t)) >= 2 * g.num_nodes


def test_bank_draw_uses_the_witness_sentence(tmp_path):
    pairs = tmp_path / "p.g6"
    pairs.write_text("G`iRIo\nGV`@YW\n")
    out = tmp_path / "b.svg"
    assert (
        main(
            [
                "bank",
                "--fragment",
                "L2",
                "--max-size",
                "6",
                "--pairs",
                str(pairs),
                "--no-progress",
                "--draw",
                str(out),
            ]
        )
        == 0
    )
    texts = _texts(out.read_text())
    assert "tr(A³)" in texts  # the witness sentence, in canonical form


def test_huge_exact_values_are_drawn_short():
    svg = draw("K4", "tr(A^200)")  # 96 digits: no float colour, a short label
    v = matlang.evaluate("tr(A^200)", "K4")
    digits = str(v)
    assert f"K4: {digits[0]}.{digits[1:4]}e{len(digits) - 1}" in _texts(svg)
    assert _nodes(svg, 0) == 4
