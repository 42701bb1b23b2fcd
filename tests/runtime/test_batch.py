"""Batches: block-diagonal stacking of graphs, PyG-like objects taken as they are, and the
checks of Batch.validate with the message each bad batch gets."""

from __future__ import annotations

from types import SimpleNamespace as Data
from typing import Any

import numpy as np
import pytest
import torch

from matlang.errors import GraphError
from matlang.evaluator import evaluate
from matlang.graphs import from_adjacency, named
from matlang.runtime.batch import Batch, as_batch


def test_from_graphs_stacks_block_diagonally() -> None:
    b = as_batch(["K4", "C5", "empty2"])
    assert (b.num_graphs, b.num_nodes, b.num_edges) == (3, 11, 22)
    assert b.ptr.tolist() == [0, 4, 9, 11]
    assert b.batch.tolist() == [0] * 4 + [1] * 5 + [2] * 2
    assert b.nodes_per_graph.tolist() == [4, 5, 2]
    assert b.names == ("K4", "C5", "empty2") and b.graph_label(1) == "C5"
    assert b.x is None and b.edge_weight is None
    # every edge stays inside its graph, and both directions are stored
    assert (b.batch[b.edge_index[0]] == b.batch[b.edge_index[1]]).all()
    assert b.validate() is b
    back = b.to_graphs()
    assert [g.name for g in back] == ["K4", "C5", "empty2"]
    for g, name in zip(back, ["K4", "C5", "empty2"]):
        assert np.array_equal(g.adjacency, named(name).adjacency)
    assert as_batch([]).num_graphs == 0


def test_features_of_one_dtype_and_of_mixed_dtypes_stack_as_torch_would() -> None:
    """One dtype: one numpy concatenation; mixed: torch.cat's promotion (int64 + float32 is
    float32 in torch, float64 in numpy); (n, 2, 3) features flattened to 6 columns."""
    path = named("path3").adjacency
    ints = from_adjacency(path, x=np.arange(3, dtype=np.int64))
    floats = from_adjacency(named("K2").adjacency, x=np.array([0.5, 1.5], dtype=np.float32))
    mixed = Batch.from_graphs([ints, floats]).x
    assert mixed is not None and mixed.dtype == torch.float32
    assert mixed[:, 0].tolist() == [0.0, 1.0, 2.0, 0.5, 1.5]
    same = Batch.from_graphs([ints, ints]).x
    assert same is not None and same.dtype == torch.int64 and same.shape == (6, 1)
    cube = np.arange(18.0).reshape(3, 2, 3)
    x = Batch.from_graphs([from_adjacency(path, x=cube)] * 2, dtype=torch.float32).x
    assert x is not None and x.shape == (6, 6) and x[4].tolist() == list(range(6, 12))


def test_features_and_weights_survive() -> None:
    g1 = from_adjacency(named("path3").adjacency, x=np.array([[1.0], [2.0], [3.0]]))
    g2 = from_adjacency(named("K2").adjacency, x=np.array([[4.0], [5.0]]))
    b = Batch.from_graphs([g1, g2], dtype=torch.float32)
    assert b.x is not None and b.x.dtype == torch.float32
    assert b.x[:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert [evaluate("input h; 𝟏ᵀ A h", g) for g in b.to_graphs()] == [8.0, 9.0]
    w = from_adjacency(np.array([[0, 2.5], [2.5, 0]]), allow_weights=True)
    bw = Batch.from_graphs([w, named("K2")])
    assert bw.edge_weight is not None and bw.edge_weight.tolist() == [2.5, 2.5, 1.0, 1.0]
    assert [g.adjacency.tolist() for g in bw.validate().to_graphs()] == [
        [[0, 2.5], [2.5, 0]],
        [[0, 1], [1, 0]],
    ]


def test_pyg_like_objects_are_taken_as_they_are() -> None:
    data = Data(
        edge_index=torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]]),
        batch=torch.tensor([0, 0, 0, 1, 1]),
        num_nodes=5,
        x=torch.arange(5.0).reshape(5, 1),
    )
    b = as_batch(data)
    assert b.num_graphs == 2 and b.ptr.tolist() == [0, 3, 5]
    assert [g.num_edges for g in b.to_graphs()] == [2, 1]
    # one Data without a batch vector is one graph; numpy edge_index works too
    single = as_batch(Data(edge_index=np.array([[0, 1], [1, 0]]), num_nodes=3))
    assert single.num_graphs == 1 and single.num_nodes == 3
    # an empty graph in the middle of a batch keeps its slot
    gap = as_batch(Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=4,
                        batch=torch.tensor([0, 0, 2, 2])))  # fmt: skip
    assert gap.ptr.tolist() == [0, 2, 2, 4] and gap.nodes_per_graph.tolist() == [2, 0, 2]


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("out of range", {"edge_index": [[0, 9], [9, 0]], "num_nodes": 3},
     "graph batch: edge_index refers to node 9 but the batch has 3 nodes"),
    ("negative", {"edge_index": [[0, -1], [-1, 0]], "num_nodes": 3},
     "graph batch: edge_index refers to node -1 but the batch has 3 nodes"),
    ("across graphs", {"edge_index": [[0, 3], [3, 0]], "num_nodes": 4, "batch": [0, 0, 1, 1]},
     "graph batch: edge (0, 3) joins graph #0 to graph #1"),
    ("self-loop", {"edge_index": [[1], [1]], "num_nodes": 3}, "graph #0: self-loop at node 1"),
    ("self-loop in 2nd graph", {"edge_index": [[3], [3]], "num_nodes": 4, "batch": [0, 0, 1, 1]},
     "graph #1: self-loop at node 1"),
    ("duplicate", {"edge_index": [[0, 1, 0], [1, 0, 1]], "num_nodes": 3},
     "graph #0: edge (0, 1) is stored twice"),
    ("one direction", {"edge_index": [[0], [1]], "num_nodes": 3},
     "graph #0: edge (0, 1) has no reverse edge (1, 0): store both directions of each "
     "undirected edge"),
    ("asymmetric weight", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 3,
                           "edge_weight": [1.0, 2.0]},
     "graph #0: edge (0, 1) has no reverse edge (1, 0) of the same weight: store both "
     "directions of each undirected edge"),
    ("unsorted batch", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 3, "batch": [1, 0, 0]},
     "graph batch: batch vector must be sorted (nodes grouped by graph)"),
    ("batch length", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 3, "batch": [0, 0]},
     "graph batch: batch vector has 2 entries but there are 3 nodes"),
    ("float ids", {"edge_index": [[0.0, 1.0], [1.0, 0.0]], "num_nodes": 3},
     "graph batch: edge_index must hold integers, got torch.float32"),
    ("flat", {"edge_index": [0, 1], "num_nodes": 3},
     "graph batch: edge_index must have shape (2, E), got (2,)"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "message"), [(f, m) for _, f, m in BAD],
                         ids=[i for i, _, _ in BAD])  # fmt: skip
def test_bad_batches(fields: dict[str, Any], message: str) -> None:
    data = Data(**{k: torch.tensor(v) if isinstance(v, list) else v for k, v in fields.items()})
    with pytest.raises(GraphError) as info:
        as_batch(data)
    assert str(info.value) == message
    # validate=False takes it without checks (the caller vouches for it), except what no
    # batch can be built from: non-integer ids, an edge_index not (2, E), a bad batch vector
    if not any(w in message for w in ("integers", "batch vector", "(2, E)")):
        assert isinstance(as_batch(data, validate=False), Batch)


def test_validate_options() -> None:
    loop = as_batch(Data(edge_index=torch.tensor([[1], [1]]), num_nodes=3), validate=False)
    assert loop.validate(allow_self_loops=True) is loop
    one_way = as_batch(Data(edge_index=torch.tensor([[0], [1]]), num_nodes=3), validate=False)
    assert one_way.validate(allow_directed=True) is one_way


def test_to_device_keeps_everything() -> None:
    b = as_batch(["K4", "C5"])
    c = b.to("cpu")
    assert torch.equal(c.edge_index, b.edge_index) and c.names == b.names
    assert c is b  # nothing to move: the batch itself, as Tensor.to
    d = b.to("meta")  # a real move: a new batch, every tensor on the device
    assert d is not b and d.edge_index.device.type == "meta" and d.ptr.device.type == "meta"


def _random_simple(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
    a = np.triu(rng.random((n, n)) < p, 1).astype(np.int64)
    return a + a.T


@pytest.mark.parametrize("seed", range(6))
def test_one_pass_validation_agrees_with_the_slow_path(seed: int) -> None:
    """The one-pass verdict (host counting sort, device sort) equals the sort-based slow path
    and numpy's own ``A == Aᵀ`` on random graphs, symmetric or made directed by one edge,
    weighted or not; a failing batch still raises the slow path's message."""
    from matlang.runtime.validate import symmetric_by_sort, symmetric_sorted

    rng = np.random.default_rng(seed)
    for directed in (False, True):
        for weighted in (False, True):
            a = _random_simple(rng, 30, 0.2).astype(np.float64)
            if weighted:
                w = np.triu(rng.integers(1, 4, a.shape), 1)
                a = a * (w + w.T)
            if directed:
                i, j = np.argwhere(np.triu(a, 1))[0]
                if weighted:
                    a[i, j] += 1.0  # the reverse edge has another weight
                else:
                    a[i, j] = 0.0  # the reverse edge is missing
            rows, cols = np.nonzero(a)
            ei = torch.from_numpy(np.stack([rows, cols]).astype(np.int64))
            w_t = torch.from_numpy(a[rows, cols]) if weighted else None
            symmetric = bool(np.array_equal(a, a.T))
            assert symmetric is not directed
            n = a.shape[0]
            key = ei[0] * n + ei[1]
            assert symmetric_by_sort(key, ei[0], ei[1], w_t, n) is symmetric
            host_w = None if w_t is None else w_t.numpy()
            assert symmetric_sorted(ei.numpy(), host_w, n) is symmetric
            b = Batch(ei, torch.zeros(n, dtype=torch.int64), torch.tensor([0, n]), None, w_t)
            if symmetric:
                assert b.validate().known_symmetric()
                assert b.is_coalesced()
            else:
                with pytest.raises(GraphError, match="no reverse edge"):
                    b.validate()
                assert not b.known_symmetric()
                b.validate(allow_directed=True)


def test_one_pass_validation_leaves_bad_batches_to_the_named_errors() -> None:
    """Unsorted, repeated, out-of-range and cross-graph edges: the one pass says no, and the
    slow path names the edge."""
    k4 = torch.tensor([[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3], [1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2]])
    b = Batch(k4.flip(1), torch.zeros(4, dtype=torch.int64), torch.tensor([0, 4]))
    assert b.validate() is b and not b.is_coalesced()  # unsorted but symmetric: valid
    twice = torch.cat([k4, k4[:, :1], k4[:, 3:4]], 1)
    with pytest.raises(GraphError, match="stored twice"):
        Batch(twice, torch.zeros(4, dtype=torch.int64), torch.tensor([0, 4])).validate()
    with pytest.raises(GraphError, match="refers to node 4"):
        Batch(k4 + (k4 == 3), torch.zeros(4, dtype=torch.int64), torch.tensor([0, 4])).validate()
    cross = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(GraphError, match="joins graph"):
        Batch(cross, torch.tensor([0, 1]), torch.tensor([0, 1, 2])).validate()
    loop = torch.tensor([[0, 0, 1], [0, 1, 0]])
    with pytest.raises(GraphError, match="self-loop"):
        Batch(loop, torch.zeros(2, dtype=torch.int64), torch.tensor([0, 2])).validate()
    assert Batch(loop, torch.zeros(2, dtype=torch.int64), torch.tensor([0, 2])).validate(
        allow_self_loops=True
    )


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 18])
def test_chunked_scan_sees_every_edge_across_chunk_boundaries(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's validation scans the edges in chunks (no E-long key array): an unsorted pair,
    a repeat, a self-loop or an edge between graphs is found wherever it falls, also straddling
    two chunks, and a valid batch still passes."""
    import matlang.runtime.validate as rv

    monkeypatch.setattr(rv, "SCAN_CHUNK", chunk)
    k4 = torch.tensor([[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3], [1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2]])
    z = torch.zeros(4, dtype=torch.int64)
    ptr = torch.tensor([0, 4])
    assert Batch(k4, z, ptr).validate().is_coalesced()
    for at in range(k4.shape[1] - 1):  # two neighbours swapped: still symmetric, not sorted
        swapped = k4.clone()
        swapped[:, [at, at + 1]] = swapped[:, [at + 1, at]]
        b = Batch(swapped, z, ptr)
        assert b.validate() is b and not b.is_coalesced()
        repeated = torch.cat([k4[:, : at + 1], k4[:, at : at + 1], k4[:, at + 1 :]], 1)
        with pytest.raises(GraphError, match="stored twice"):
            Batch(repeated, z, ptr).validate()
    coalesced, loops, crossing = rv.scan_edges(
        np.array([0, 1, 1, 2]), np.array([1, 0, 1, 0]), 3, np.array([0, 0, 1])
    )
    assert (coalesced, loops, crossing) == (True, True, True)
    two = torch.tensor([[0, 1, 2, 3, 3, 4], [1, 0, 3, 2, 4, 3]])
    with pytest.raises(GraphError, match="joins graph"):
        Batch(two, torch.tensor([0, 0, 1, 1, 2]), torch.tensor([0, 2, 4, 5])).validate()
