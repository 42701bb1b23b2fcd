"""One rule for what a batch is: a PyG-like batch is read by its
own ``ptr`` — empty graphs anywhere, the last ones included — and gives, for ``evaluate``,
compiled modules and every reference model, the values of its graphs one by one.

PyG-like objects are ``SimpleNamespace``s with the fields PyG's ``Batch.from_data_list`` sets
(PyG stays optional); one test checks PyG's own ``Batch`` when it is installed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import matlang
from matlang.compiler.api import compile as compile_sentence
from matlang.errors import GraphError
from matlang.evaluator import evaluate
from matlang.graphs import Graph, complete, empty, from_adjacency, named
from matlang.runtime.batch import as_batch
from matlang.runtime.models import build_model, model_names

SENTENCES = ["tr(A^3)/6", "onesᵀ ones", "onesᵀ (A ⊙ A²) ones", "onesᵀ A ones + 1"]


def pyg_batch(graphs: list[Graph], *, with_batch: bool = True) -> SimpleNamespace:
    """The fields PyG's ``Batch.from_data_list`` gives (``x`` when every graph has one)."""
    sizes = [g.num_nodes for g in graphs]
    ptr = torch.zeros(len(graphs) + 1, dtype=torch.int64)
    ptr[1:] = torch.cumsum(torch.tensor(sizes, dtype=torch.int64), 0)
    parts = [torch.from_numpy(g.edge_index) + int(o) for g, o in zip(graphs, ptr[:-1])]
    fields: dict[str, Any] = {
        "edge_index": torch.cat(parts, 1) if parts else torch.zeros(2, 0, dtype=torch.int64),
        "ptr": ptr,
        "num_nodes": int(ptr[-1]),
        "num_graphs": len(graphs),
    }
    if with_batch:
        fields["batch"] = torch.repeat_interleave(torch.arange(len(graphs)), torch.tensor(sizes))
    if graphs and all(g.x is not None for g in graphs):
        fields["x"] = torch.cat([torch.as_tensor(g.x, dtype=torch.float32) for g in graphs])
    return SimpleNamespace(**fields)


def small_graph(seed: int, n: int) -> Graph:
    """A random simple graph on ``n`` nodes (0 allowed) with one feature per node."""
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < 0.5, 1).astype(np.int64)
    return from_adjacency(a + a.T, x=rng.random((n, 1)))


graph_lists = st.lists(
    st.tuples(st.integers(0, 2**16), st.integers(0, 6)), min_size=1, max_size=5
).map(lambda specs: [small_graph(s, n) for s, n in specs])


@settings(max_examples=40)
@given(graph_lists)
def test_evaluate_and_compiled_batch_equal_graphs_one_by_one(graphs: list[Graph]) -> None:
    data = pyg_batch(graphs)
    for s in SENTENCES:
        one_by_one = [evaluate(s, g) for g in graphs]
        assert evaluate(s, data) == one_by_one
        got = compile_sentence(s)(data)
        assert got.shape == (len(graphs),)
        assert torch.allclose(got.double(), torch.tensor(one_by_one, dtype=torch.float64))


@pytest.mark.parametrize("name", model_names())
def test_reference_models_batch_equal_graphs_one_by_one(name: str) -> None:
    # empty graphs first, in the middle and last
    graphs = [small_graph(k, 0 if k in (0, 3, 5, 6) else 3 + k % 3) for k in range(7)]
    torch.manual_seed(0)
    model = build_model(name, 1, 2).eval()
    with torch.no_grad():
        whole = model(pyg_batch(graphs))
        alone = torch.cat([model(pyg_batch([g])) for g in graphs])
    assert whole.shape == (7, 2)
    assert torch.allclose(whole, alone, atol=1e-5)


def test_trailing_empty_graphs_keep_their_rows() -> None:
    k2, e0 = complete(2), empty(0)
    data = pyg_batch([k2, e0])
    assert compile_sentence("onesᵀ ones")(data).tolist() == [2.0, 0.0]
    assert evaluate("onesᵀ ones", data) == [2, 0]
    # one PyG Data with no nodes is one graph (no batch vector, no ptr)
    alone = SimpleNamespace(edge_index=torch.zeros(2, 0, dtype=torch.int64), num_nodes=0)
    assert compile_sentence("onesᵀ ones")(alone).tolist() == [0.0]
    assert evaluate("onesᵀ ones", alone) == 0
    # without ptr, num_graphs still says the last graph is empty
    no_ptr = SimpleNamespace(edge_index=data.edge_index, batch=data.batch, num_nodes=2,
                             num_graphs=2)  # fmt: skip
    assert as_batch(no_ptr).ptr.tolist() == [0, 2, 2]
    assert build_model("gin", 1, 1)(pyg_batch([k2, e0, k2, e0])).shape == (4, 1)


def test_block_diagonal_union_is_not_one_graph() -> None:
    # evaluate used to read the union as one graph (2 triangles)
    data = pyg_batch([complete(3), complete(2), complete(3)])
    assert evaluate("tr(A^3)/6", data) == [1, 0, 1]
    assert compile_sentence("tr(A^3)/6")(data).tolist() == [1.0, 0.0, 1.0]


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("edge across graphs", {"edge_index": [[0, 3], [3, 0]], "num_nodes": 5,
                            "batch": [0, 0, 0, 1, 1]},
     "graph batch: edge (0, 3) joins graph #0 to graph #1"),
    ("ptr against batch", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 5,
                           "batch": [0, 0, 0, 1, 1], "ptr": [0, 2, 5]},
     "graph batch: ptr [0, 2, 5] contradicts the batch vector: node 2 is in graph 0 by the "
     "batch vector but in graph 1 by ptr"),
    ("ptr against num_nodes", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 5, "ptr": [0, 2, 4]},
     "graph batch: ptr [0, 2, 4] is not a list of node offsets from 0 to the 5 nodes"),
    ("ptr against num_graphs", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 4,
                                "ptr": [0, 2, 4], "num_graphs": 3},
     "graph batch: ptr has 2 graphs but num_graphs is 3"),
    ("batch against num_graphs", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 3,
                                  "batch": [0, 0, 2], "num_graphs": 2},
     "graph batch: batch vector names graph 2 but num_graphs is 2"),
    ("weights too short", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 2,
                           "edge_weight": [1.0]},
     "graph batch: edge_weight must have one entry per edge (2), got shape (1,)"),
    ("NaN weight", {"edge_index": [[0, 1], [1, 0]], "num_nodes": 2,
                    "edge_weight": [float("nan"), 1.0]},
     "graph batch: edge_weight of edge 0 is nan (NaN and ±inf are not weights)"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "message"), [(f, m) for _, f, m in BAD],
                         ids=[i for i, _, _ in BAD])  # fmt: skip
def test_bad_batches_refused_by_every_entry_point(fields: dict[str, Any], message: str) -> None:
    data = SimpleNamespace(
        **{k: torch.tensor(v) if isinstance(v, list) else v for k, v in fields.items()}
    )
    for run in (
        lambda: evaluate("onesᵀ A ones", data),
        lambda: compile_sentence("onesᵀ A ones")(data),
        lambda: build_model("gin", 1, 1)(data),
    ):
        with pytest.raises(GraphError) as info:
            run()
        assert str(info.value) == message


def test_edge_weight_is_the_entries_of_a_everywhere() -> None:
    # a triangle whose edge (0, 1) has weight 2: tr(A³) = 6·2
    ei = torch.tensor([[0, 1, 1, 2, 0, 2], [1, 0, 2, 1, 2, 0]])
    data = SimpleNamespace(
        edge_index=ei, num_nodes=3, edge_weight=torch.tensor([2.0, 2, 1, 1, 1, 1])
    )
    a = np.array([[0, 2, 1], [2, 0, 1], [1, 1, 0]])
    assert (
        evaluate("tr(A^3)/6", data)
        == evaluate("tr(A^3)/6", from_adjacency(a, allow_weights=True))
        == 2
    )
    assert compile_sentence("tr(A^3)/6")(data).tolist() == [2.0]
    # edge_attr (edge features) is not part of A: ignored, with a warning, by both
    feats = SimpleNamespace(edge_index=ei, num_nodes=3, edge_attr=torch.ones(6, 4))
    with pytest.warns(UserWarning, match="edge_attr is ignored"):
        assert evaluate("tr(A^3)/6", feats) == 1
    with pytest.warns(UserWarning, match="edge_attr is ignored"):
        assert compile_sentence("tr(A^3)/6")(feats).tolist() == [1.0]


def test_directed_and_looped_graphs_refused_by_compiled_modules() -> None:
    # the exact evaluator reads a directed 3-cycle; compiled modules refuse it
    c3 = from_adjacency(np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]]), allow_directed=True)
    assert evaluate("tr(A^3)", c3) == 3
    with pytest.raises(GraphError, match=r"directed \(entry \(0, 1\) is 1 but \(1, 0\) is 0\)"):
        compile_sentence("tr(A^3)")(c3)
    loop = from_adjacency(np.array([[1, 1], [1, 0]]), allow_self_loops=True)
    assert evaluate("tr(A)", loop) == 1
    with pytest.raises(GraphError, match="self-loop at node 0"):
        compile_sentence("tr(A)")(loop)


def test_a_3d_array_is_several_graphs_for_every_entry_point() -> None:
    stack = np.stack([complete(3).adjacency, named("path3").adjacency])
    for arr in (stack, torch.from_numpy(stack)):
        assert evaluate("tr(A^3)/6", arr) == [1, 0]
        assert compile_sentence("tr(A^3)/6")(arr).tolist() == [1.0, 0.0]
    assert evaluate("tr(A^3)/6", complete(3).adjacency) == 1  # 2-D: one graph, one value


def test_pyg_batch_itself() -> None:
    pyg = pytest.importorskip("torch_geometric.data")
    k3 = pyg.Data(edge_index=torch.from_numpy(complete(3).edge_index), num_nodes=3)
    e0 = pyg.Data(edge_index=torch.zeros(2, 0, dtype=torch.int64), num_nodes=0)
    data = pyg.Batch.from_data_list([e0, k3, e0, k3, e0])
    assert evaluate("tr(A^3)/6", data) == [0, 1, 0, 1, 0]
    assert compile_sentence("tr(A^3)/6")(data).tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert matlang.evaluate("onesᵀ ones", k3) == 3
