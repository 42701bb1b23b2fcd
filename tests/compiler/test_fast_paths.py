"""The compiled module's shortcuts give the dense evaluator's values: the 0/1 adjacency as a
value-less operator, the row-blocked sampled product (many blocks forced; the mask read through
one table, a table refilled per chunk of rows, and by binary search), edges that arrive unsorted
or repeated; and what a batch
remembers (its validation) is forgotten when one of its tensors changes in place."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from matlang import parse
from matlang.compiler.api import compile
from matlang.errors import GraphError
from matlang.evaluator import evaluate_graph
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from tests.fixtures import GRAPHS, backends

SENTENCES = [
    "𝟏ᵀ A diag(exp(−A²𝟏)) A 𝟏",  # L1: propagations with the unit operator only
    "(A ⊙ A²)² 𝟏",  # 1 ⊙ A² on E, then propagations with values
    "tr(A³)",
    "tr(A⁴)",  # sampled product on the 2-hop mask
    "𝟏ᵀ (Aᵀ ⊙ A) A 𝟏",  # transposed unit operator
]


def dense_values(text: str, graphs: list[Any]) -> np.ndarray:
    expr = parse(text)
    vals = [np.asarray(evaluate_graph(expr, g), dtype=np.float64).reshape(-1) for g in graphs]
    return np.concatenate(vals)


#: How the blocked sampled product reads its product at the mask: one table, a table refilled
#: per chunk of rows (here a row or two per chunk), or a binary search.
MASK_READS = {
    "table": {},
    "chunks": {"MASK_SLOTS_MIN": 1, "MASK_TERMS_PER_CHUNK": 1},
    "search": {"MASK_SLOTS_MIN": 0, "MASK_SLOTS_PER_ENTRY": 0},
}


@pytest.mark.parametrize("read", list(MASK_READS))
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("text", SENTENCES)
def test_shortcuts_equal_the_dense_evaluator(
    text: str, backend: str, read: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a block of at most 8 product terms: the blocked sampled product runs many blocks, and a
    # block's rows span several chunks of the table (or a chunk several blocks)
    monkeypatch.setattr(sparse, "SAMPLED_BLOCK_TERMS", 8)
    monkeypatch.setattr(sparse, "SAMPLED_BLOCK_TERMS_PER_ENTRY", 0)
    for name, value in MASK_READS[read].items():
        monkeypatch.setattr(sparse, name, value)
    model = compile(text, dtype=torch.float64, backend=backend)
    got = model(Batch.from_graphs(GRAPHS)).detach().numpy().reshape(-1)
    np.testing.assert_allclose(got, dense_values(text, GRAPHS), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("backend", backends())
def test_unsorted_repeated_edges_add_up(backend: str) -> None:
    """Edges in reverse order, one stored twice (validate=False: A's entry is 2 there)."""
    b = Batch.from_graphs([GRAPHS[0]])
    ei = b.edge_index.flip(1)
    ei = torch.cat([ei, ei[:, :1], ei[:, :1].flip(0)], 1)  # (u, v) and (v, u) once more
    shuffled = Batch(ei, b.batch, b.ptr)
    a = np.asarray(GRAPHS[0].adjacency, dtype=np.float64)
    u, v = int(ei[0, 0]), int(ei[1, 0])
    a[u, v] += 1
    a[v, u] += 1
    model = compile("(A ⊙ A²)² 𝟏", dtype=torch.float64, backend=backend, validate=False)
    expected = (a * (a @ a)) @ ((a * (a @ a)) @ np.ones(len(a)))
    np.testing.assert_allclose(model(shuffled).numpy(), expected, rtol=1e-12)
    l1 = compile("𝟏ᵀ A diag(exp(−A²𝟏)) A 𝟏", dtype=torch.float64, backend=backend, validate=False)
    d = a.sum(1)
    np.testing.assert_allclose(l1(shuffled).item(), d @ (np.exp(-(a @ d)) * d), rtol=1e-12)


def test_a_batch_changed_in_place_is_validated_again() -> None:
    model = compile("𝟏ᵀ A 𝟏")
    b = Batch.from_graphs(GRAPHS[:2])
    assert model(b).tolist() == [2.0 * g.num_edges for g in GRAPHS[:2]]
    assert model(b).tolist() == [2.0 * g.num_edges for g in GRAPHS[:2]]  # remembered
    b.edge_index[1, 0] = b.edge_index[0, 0]  # a self-loop, written into the same tensor
    with pytest.raises(GraphError, match="self-loop"):
        model(b)
    b.edge_index[1, 0] = b.num_nodes + 3
    # out of range: an error even without validation (a kernel would read past its arrays)
    with pytest.raises(GraphError, match=f"refers to node {b.num_nodes + 3}"):
        compile("𝟏ᵀ A 𝟏", validate=False)(b)


def test_validation_is_remembered_per_index_tensors() -> None:
    b = Batch.from_graphs(GRAPHS[:3])
    assert b.validate() is b
    assert any(k.startswith("valid") for k in b._memo)
    assert b.validate(allow_directed=True) is b  # the strict pass vouches for the lax one
    same = dataclasses.replace(b)  # a new object over the same tensors shares what was checked
    assert same._memo is b._memo
    copied = Batch(b.edge_index.clone(), b.batch, b.ptr)  # other tensors: nothing remembered
    assert copied._memo == {}
    other = Batch(b.edge_index, b.batch.clone(), b.ptr)
    assert other._memo == {}
    b.edge_index.add_(0)  # an in-place change: the fingerprint no longer matches
    assert not b._remembers("valid(False, False)", b.fingerprint())
    one_way = Batch(torch.tensor([[0], [1]]), torch.zeros(3, dtype=torch.int64),
                    torch.tensor([0, 3]))  # fmt: skip
    assert one_way.validate(allow_directed=True) is one_way
    with pytest.raises(GraphError, match="has no reverse edge"):
        one_way.validate()  # a lax pass does not vouch for the strict one
