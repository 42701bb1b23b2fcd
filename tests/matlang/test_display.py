"""Notebook displays: what a classification, a pattern, a compiled plan and a graph show, and
that each stays under 50 KB."""

from __future__ import annotations

import re

import pytest

import matlang
from matlang.display import LIMIT
from matlang.graphs import named


def _size(html: str) -> int:
    return len(html.encode())


def test_classification_shows_level_reasons_and_the_witness_drawn():
    a = matlang.classify("1/2 * 𝟏ᵀ (A³ ⊙ diag(A𝟏 - 2𝟏)) 𝟏")
    html = a._repr_html_()
    assert _size(html) <= LIMIT
    assert "<td>L2 (as written L3; lowered by the rewrites)</td>" in html
    assert "beyond 1-WL (witness)" in html and "tr(A³ diag(A 𝟏 - 2 𝟏)) / 2" in html
    assert html.count("<svg") == 1 and 'id="nodes-0"' in html and 'id="nodes-1"' in html
    g, h = a.witness.pair
    assert f"{g}: 0" in html and f"{h}: 6" in html


def test_classification_without_witness_is_a_table_only():
    html = matlang.classify("tr(A^3)", witness=False)._repr_html_()
    assert "<svg" not in html and "<td>L2</td>" in html and _size(html) < 2000


@pytest.mark.parametrize("name", ["K4", "C4"])
def test_pattern_display_under_the_limit(name):
    p = matlang.pattern(name)
    html = p._repr_html_()
    assert _size(html) <= LIMIT
    assert p.wl in html and "<svg" in html
    w = p.witness
    assert f"{w['pair'][0]}: {w['values'][0]}" in html


def test_compiled_module_shows_the_plan_as_a_table():
    model = matlang.compile("𝟏ᵀ (A ⊙ A²)² 𝟏")
    html = model._repr_html_()
    assert _size(html) <= LIMIT
    rows = re.findall(r"<tr><td><code>(\w+)</code>", html)
    assert rows[: len(model.plan.steps)] == [
        model.plan.name(k) for k in range(len(model.plan.steps))
    ]
    assert "A ⊙ A² on E" in html and "out[0]" in html and "FLOPs" in html


def test_graph_svg_and_html():
    g = named("petersen")
    svg = g._repr_svg_()
    assert svg.startswith("<?xml") and len(svg) <= LIMIT
    html = g._repr_html_()
    assert "10 nodes, 15 edges" in html and "<svg" in html and _size(html) <= LIMIT
    big = matlang.graphs.cycle(500)
    assert big._repr_svg_() is None
    assert "<svg" not in big._repr_html_()
