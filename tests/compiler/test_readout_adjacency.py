"""SentenceReadout takes the adjacency forms SentenceConv takes (a torch sparse matrix, its
values the weights) and gives the values it gives for (edge_index, edge_weight)."""

from __future__ import annotations

import pytest
import torch

import matlang
from matlang.graphs import as_graph
from matlang.nn import SentenceConv, SentenceReadout

SENTENCES = ["tr(A^3) / 6", "𝟏ᵀ A 𝟏", "𝟏ᵀ (A ⊙ A²) 𝟏"]
# a triangle 0-1-2 with a tail 2-3
EDGES = torch.tensor([[0, 1, 1, 2, 0, 2, 2, 3], [1, 0, 2, 1, 2, 0, 3, 2]])


def _sparse(values: torch.Tensor, layout: torch.layout) -> torch.Tensor:
    a = torch.sparse_coo_tensor(EDGES, values, (4, 4)).coalesce()
    return a if layout == torch.sparse_coo else a.to_sparse_csr()


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr])
def test_readout_takes_a_sparse_adjacency(layout: torch.layout) -> None:
    x = torch.zeros(4, 1, dtype=torch.float64)
    readout = SentenceReadout(SENTENCES)
    by_index = readout(x, EDGES)
    by_matrix = readout(x, _sparse(torch.ones(8, dtype=torch.float64), layout))
    assert torch.equal(by_index, by_matrix)
    assert by_index[0].tolist() == [1.0, 8.0, 6.0]  # one triangle, 8 = 2 × 4 edges, A ⊙ A²


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr])
def test_readout_reads_the_sparse_values_as_weights(layout: torch.layout) -> None:
    w = torch.tensor([0.5, 0.5, 2.0, 2.0, 1.5, 1.5, 3.0, 3.0], dtype=torch.float64)
    x = torch.zeros(4, 1, dtype=torch.float64)
    readout = SentenceReadout(SENTENCES)
    by_weight = readout(x, EDGES, edge_weight=w)
    by_matrix = readout(x, _sparse(w, layout))
    assert torch.allclose(by_weight, by_matrix, rtol=1e-15)
    dense = torch.zeros(4, 4, dtype=torch.float64)
    dense[EDGES[0], EDGES[1]] = w
    g = as_graph(dense.numpy(), allow_weights=True)
    want = [float(matlang.evaluate(s, g)) for s in SENTENCES]
    assert by_matrix[0].tolist() == pytest.approx(want, rel=1e-12)
    with pytest.raises(matlang.errors.GraphError, match="given twice"):
        readout(x, _sparse(w, layout), edge_weight=w)


def test_conv_and_readout_read_one_sparse_adjacency_alike() -> None:
    """The same sparse adjacency through SentenceConv (its A x) and SentenceReadout (𝟏ᵀ A 𝟏)."""
    torch.manual_seed(0)
    adj = _sparse(torch.ones(8), torch.sparse_coo)
    conv = SentenceConv(1, 1, ["A"], bias=False)
    x = torch.ones(4, 1)
    ones_a = conv(x, adj).sum() / next(p for p in conv.parameters()).reshape(-1)[0]
    total = SentenceReadout(["𝟏ᵀ A 𝟏"])(x, adj)
    assert float(total[0, 0]) == pytest.approx(8.0)
    assert float(ones_a) == pytest.approx(8.0, rel=1e-5)
