"""Issue 32 item 3: which writes to a batch's tensors the per-batch memo sees (documented in
``Batch.cached``): writes that bump torch's version counter are seen; writes through ``.data``
or a numpy view are not, until ``torch.autograd.graph.increment_version`` (as torch documents
``.data``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import matlang
from matlang.graphs import from_adjacency, named
from matlang.nn import SentenceConv
from matlang.runtime.batch import Batch

SENTENCE = "tr(A^3)/6 + onesᵀ (A ⊙ A²) ones"
# a triangle and an isolated node -> the star K_{1,3}: six edge entries either way
TRIANGLE_AND_NODE = from_adjacency(
    np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]])
)
STAR = torch.tensor([[0, 0, 0, 1, 2, 3], [1, 2, 3, 0, 0, 0]])


def _write_indexing(ei: torch.Tensor) -> None:
    ei[:, :6] = STAR


def _write_copy(ei: torch.Tensor) -> None:
    ei[:, :6].copy_(STAR)


def _write_data(ei: torch.Tensor) -> None:
    ei.data[:, :6] = STAR


def _write_numpy(ei: torch.Tensor) -> None:
    ei.numpy()[:, :6] = STAR.numpy()


SEEN = [_write_indexing, _write_copy]
UNSEEN = [_write_data, _write_numpy]


def _batch() -> Batch:
    return Batch.from_graphs([TRIANGLE_AND_NODE, named("K3")])


def _conv_node_values(conv: SentenceConv, b: Batch) -> list[float]:
    return conv(torch.ones(b.num_nodes, 1), b.edge_index, b.batch)[:, 0].tolist()


@pytest.mark.parametrize("write", SEEN + UNSEEN, ids=lambda f: f.__name__)
def test_which_writes_are_seen(write: Callable[[torch.Tensor], None]) -> None:
    b = _batch()
    m = matlang.compile(SENTENCE, dtype=torch.float64)
    conv = SentenceConv(1, 1, ["(A³ ⊙ I) 𝟏"], init="identity", bias=False)
    assert m(b).tolist() == [7.0, 7.0]
    assert _conv_node_values(conv, b) == [2.0, 2.0, 2.0, 0.0, 2.0, 2.0, 2.0]
    version = b.edge_index._version
    write(b.edge_index)
    # the graph now is a star: no triangle, no edge on a triangle
    want = [matlang.evaluate(SENTENCE, g) for g in b.to_graphs()]
    assert want == [0, 7]
    seen = b.edge_index._version != version
    assert seen == (write in SEEN)
    if seen:
        assert m(b).tolist() == [0.0, 7.0]
        assert _conv_node_values(conv, b) == [0.0] * 4 + [2.0] * 3
        return
    assert m(b).tolist() == [7.0, 7.0]  # documented: not seen, as torch's .data
    torch.autograd.graph.increment_version(b.edge_index)
    assert m(b).tolist() == [0.0, 7.0]
    assert _conv_node_values(conv, b) == [0.0] * 4 + [2.0] * 3
