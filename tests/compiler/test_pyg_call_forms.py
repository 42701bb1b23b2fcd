"""Issue 33: compiled modules and sentence layers take PyG's call forms — ``(x, edge_index)``,
``(x, edge_index, batch)``, a torch sparse or ``SparseTensor``-like ``adj_t``, ``edge_weight`` —
and give what the exact dense evaluator gives on the same (weighted) graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Batch as PygBatch
from torch_geometric.data import Data
from torch_geometric.nn import Sequential
from torch_geometric.utils import from_networkx

import matlang
from matlang.errors import GraphError
from matlang.graphs import from_adjacency

GRAPHS = [nx.cycle_graph(5), nx.complete_graph(4), nx.path_graph(3)]


def _pyg(graphs, seed=0):
    gen = torch.Generator().manual_seed(seed)
    datas = []
    for g in graphs:
        d = from_networkx(g)
        d.x = torch.randn(g.number_of_nodes(), 2, generator=gen, dtype=torch.float64)
        datas.append(d)
    return PygBatch.from_data_list(datas)


def _dense_node_values(text, graphs, xs, weights=None):
    """The exact evaluator, graph by graph, channel by channel."""
    outs, start = [], 0
    for k, g in enumerate(graphs):
        n = g.number_of_nodes()
        a = nx.to_numpy_array(g, nodelist=range(n))
        if weights is not None:  # evaluate's weighted graph: A holds the weights
            a = from_adjacency(weights[k], allow_weights=True)
        cols = [
            np.asarray(matlang.evaluate(text, a, inputs={"h": xs[start : start + n, c]}))
            for c in range(xs.shape[1])
        ]
        outs.append(np.stack([c.reshape(n) for c in cols], 1))
        start += n
    return np.concatenate(outs)


def test_compiled_module_takes_x_edge_index_and_batch():
    text = "input h; (A ⊙ A²) h"
    pb = _pyg(GRAPHS)
    m = matlang.compile(text, dtype=torch.float64)
    want = _dense_node_values(text, GRAPHS, pb.x.numpy())
    np.testing.assert_allclose(m(pb.x, pb.edge_index, pb.batch).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(m(pb).numpy(), want, atol=1e-12)
    one = _pyg(GRAPHS[:1])
    np.testing.assert_allclose(
        m(one.x, one.edge_index).numpy(), want[: GRAPHS[0].number_of_nodes()], atol=1e-12
    )


def test_compiled_module_inside_pyg_sequential():
    pb = _pyg(GRAPHS)
    model = Sequential(
        "x, edge_index, batch",
        [
            (matlang.compile("input h; A h", dtype=torch.float64), "x, edge_index, batch -> x"),
            (torch.nn.Identity(), "x -> x"),
        ],
    )
    want = _dense_node_values("input h; A h", GRAPHS, pb.x.numpy())
    np.testing.assert_allclose(model(pb.x, pb.edge_index, pb.batch).numpy(), want, atol=1e-12)


def test_compiled_module_graph_sentence_counts_graphs_from_batch():
    pb = _pyg(GRAPHS)
    m = matlang.compile("tr(A³)", dtype=torch.float64)
    want = [np.trace(np.linalg.matrix_power(nx.to_numpy_array(g), 3)) for g in GRAPHS]
    np.testing.assert_allclose(m(pb.x, pb.edge_index, pb.batch).numpy(), want)


def test_torch_sparse_adjacency_is_read_as_adj_t():
    pb = _pyg(GRAPHS)
    n = pb.num_nodes
    adj_t = torch.sparse_coo_tensor(
        pb.edge_index.flip(0), torch.ones(pb.edge_index.shape[1]), (n, n)
    )
    m = matlang.compile("input h; (A ⊙ A²) h", dtype=torch.float64)
    want = m(pb.x, pb.edge_index, pb.batch)
    torch.testing.assert_close(m(pb.x, adj_t, pb.batch), want)
    torch.testing.assert_close(m(pb.x, adj_t.to_sparse_csr(), pb.batch), want)


class _FakeSparseTensor:
    """The part of ``torch_sparse.SparseTensor`` PyG convs read (not installed here)."""

    def __init__(self, row, col, value, n):
        self.row, self.col, self.value, self.n = row, col, value, n

    def coo(self):
        return self.row, self.col, self.value

    def sparse_sizes(self):
        return (self.n, self.n)


def test_sparse_tensor_adj_t_and_its_values_are_weights():
    g = nx.cycle_graph(4)
    d = from_networkx(g)
    # symmetric weights, a function of the unordered pair
    w = torch.tensor([1.0 + i + j for i, j in d.edge_index.t().tolist()], dtype=torch.float64)
    a = np.zeros((4, 4))
    for (i, j), v in zip(d.edge_index.t().tolist(), w.tolist()):
        a[i, j] = v
    x = torch.randn(4, 1, dtype=torch.float64)
    m = matlang.compile("input h; (A ⊙ A) h", dtype=torch.float64)
    want = _dense_node_values("input h; (A ⊙ A) h", [g], x.numpy(), weights=[a])[:, 0]
    np.testing.assert_allclose(m(x, d.edge_index, None, w).numpy(), want, atol=1e-12)
    adj_t = _FakeSparseTensor(d.edge_index[1], d.edge_index[0], w, 4)
    np.testing.assert_allclose(m(x, adj_t).numpy(), want, atol=1e-12)
    with pytest.raises(GraphError, match="given twice"):
        m(x, adj_t, None, w)


def test_bad_pyg_calls_are_named():
    pb = _pyg(GRAPHS)
    m = matlang.compile("input h; A h")
    with pytest.raises(GraphError, match="batch must be an integer vector"):
        m(pb.x, pb.edge_index, torch.ones(pb.num_nodes))
    with pytest.raises(GraphError, match="square"):
        m(pb.x, torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), [], (3, 4)))
    with pytest.raises(GraphError, match="x has"):
        n = pb.num_nodes + 1
        m(pb.x, torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), [], (n, n)))
    with pytest.raises(GraphError, match="go with"):
        m(Data(x=pb.x, edge_index=pb.edge_index), None, pb.batch)
