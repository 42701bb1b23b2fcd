"""Witnesses print in canonical form: products re-associated, equal factors as powers."""

from __future__ import annotations

import pytest

from matlang import bank
from matlang.evaluator import evaluate
from matlang.graphs import from_adjacency, named
from matlang.parser import parse
from matlang.printer import to_text
from matlang.witness_text import canonical


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("tr(A (A A))", "tr(A³)"),
        ("tr(A^2 A)", "tr(A³)"),
        ("𝟏ᵀ ((A A ⊙ A A) 𝟏)", "𝟏ᵀ (A² ⊙ A²) 𝟏"),
        ("tr(A (A (A A)) ⊙ A)", "tr(A⁴ ⊙ A)"),
        ("𝟏ᵀ A 𝟏", "𝟏ᵀ A 𝟏"),
    ],
)
def test_canonical_text_same_value(text, want):
    e = parse(text)
    c = canonical(e)
    assert to_text(c) == want
    for g in ("petersen", "K4", "decalin"):
        assert evaluate(e, g) == evaluate(c, g)


def test_bank_witness_record_is_canonical():
    import numpy as np

    c6 = named("cycle6")
    a = np.zeros((6, 6), dtype=np.int64)
    for i, j in ((0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)):
        a[i, j] = a[j, i] = 1
    s = bank.search_pair(c6.adjacency, from_adjacency(a).adjacency, "L2", 8)
    rec = bank.witness_record(s)
    assert rec is not None and rec["witness"] == "tr(A³)"
