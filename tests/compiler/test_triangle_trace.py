"""``tr(A³)`` by the triangle count (LAGraph's formulation) in the graph-constant stage, checked
against the dense evaluator and networkx; the fusion is taken only where it is exact."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

import matlang
from matlang.compiler.constants import ConstantStage
from matlang.compiler.lower import lower
from matlang.graphs import from_adjacency
from matlang.parser import as_program
from matlang.runtime.batch import Batch
from matlang.runtime.graphblas import Kernels


def _graphs(seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for n, p in ((0, 0.0), (1, 0.0), (5, 0.0), (7, 0.6), (12, 0.4), (20, 0.3), (4, 1.0)):
        a = np.triu(rng.random((n, n)) < p, 1).astype(np.int64)
        out.append(from_adjacency(a + a.T, name=f"g{n}"))
    rng.shuffle(out)
    return out


def _fused(calls: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    real = Kernels.triangle_trace

    def spy(self: Kernels, s: object) -> np.ndarray:
        calls.append(1)
        return real(self, s)  # type: ignore[arg-type]

    monkeypatch.setattr(Kernels, "triangle_trace", spy)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("sentence", ["tr(A^3)/6", "tr(A^3)", "tr(A^3) + 2 tr(A^2)"])
def test_fused_trace_equals_the_dense_evaluator(
    seed: int, sentence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    _fused(calls, monkeypatch)
    graphs = _graphs(seed)
    batch = Batch.from_graphs(graphs)
    got = matlang.compile(sentence, cache=False)(batch).detach().numpy()
    want = np.array([float(matlang.evaluate(sentence, g)) for g in graphs])
    np.testing.assert_array_equal(got, want)
    assert calls, "the triangle count was not used"
    if sentence == "tr(A^3)/6":  # an independent count
        nx_counts = [
            sum(nx.triangles(nx.from_numpy_array(g.adjacency)).values()) / 3 for g in graphs
        ]
        np.testing.assert_array_equal(got, nx_counts)
    # each graph alone gives its own value (the count does not depend on the batch)
    for g, v in zip(graphs, got):
        alone = matlang.compile(sentence, cache=False)(Batch.from_graphs([g]))
        assert float(alone) == v


def test_exact_sparse_evaluation_keeps_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``matlang.evaluate(..., sparse=True)`` takes directed graphs too, so its stage does not
    know ``A = Aᵀ`` and keeps the masked product; the value is the dense evaluator's."""
    calls: list[int] = []
    _fused(calls, monkeypatch)
    rng = np.random.default_rng(3)
    a = np.triu(rng.random((60, 60)) < 0.2, 1).astype(np.int64)
    g = from_adjacency(a + a.T)
    assert matlang.evaluate("tr(A^3)", g, sparse=True) == matlang.evaluate("tr(A^3)", g)
    assert not calls


def test_not_fused_where_it_would_be_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weighted A (not 0/1), an unvalidated batch (symmetry unknown), and sentences whose
    inner A² or A ⊙ A² is read elsewhere keep the general path, and their values."""
    calls: list[int] = []
    _fused(calls, monkeypatch)
    rng = np.random.default_rng(0)
    a = np.triu(rng.random((15, 15)) < 0.5, 1) * rng.integers(1, 4, (15, 15))
    w = from_adjacency(a + a.T, allow_weights=True)
    got = matlang.compile("tr(A^3)", cache=False, weights="literals")(Batch.from_graphs([w]))
    assert float(got) == float(matlang.evaluate("tr(A^3)", w))
    assert not calls
    g = _graphs(1)
    b = Batch.from_graphs(g)
    nv = matlang.compile("tr(A^3)", cache=False, validate=False)(b)
    np.testing.assert_array_equal(nv.numpy(), [float(matlang.evaluate("tr(A^3)", x)) for x in g])
    assert not calls
    for s in ["tr(A^3) 𝟏 + (A ⊙ A²) 𝟏", "tr(A^3) 𝟏 + (A ⊙ A²)𝟏 + A² 𝟏"]:
        assert not ConstantStage(lower(as_program(s)))._triangles
    assert ConstantStage(lower(as_program("tr(A^3) 𝟏 + A 𝟏")))._triangles
    assert torch.is_tensor(nv)
