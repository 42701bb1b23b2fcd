"""SentenceFeatures: exact counts against networkx and numpy, PyG Data/DataLoader, the
project's Graph and Batch, the cache and its key, and the errors."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from matlang.errors import GraphError, MatlangError
from matlang.graphs import from_adjacency, named
from matlang.runtime.batch import Batch
from matlang.runtime.preprocess import PreprocessCache
from matlang.transforms import SentenceFeatures

GRAPHS = ["K4", "petersen", "decalin", "rook4x4", "shrikhande"]


def _walks(a: np.ndarray, k: int) -> np.ndarray:
    return np.diag(np.linalg.matrix_power(a.astype(np.int64), k))


def test_triangles_closed_walks_and_graph_counts_are_exact() -> None:
    t = SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2", "(A⁴ ⊙ I) 𝟏", "(A⁵ ⊙ I) 𝟏", "tr(A³) / 6"])
    for name in GRAPHS:
        g = named(name)
        node, glob = t.values(g)
        tri = nx.triangles(nx.from_numpy_array(g.adjacency))
        np.testing.assert_array_equal(node[:, 0], [tri[v] for v in range(g.num_nodes)])
        np.testing.assert_array_equal(node[:, 1], _walks(g.adjacency, 4))
        np.testing.assert_array_equal(node[:, 2], _walks(g.adjacency, 5))
        assert glob[0] == sum(tri.values()) / 3


def test_pyg_data_gets_columns_and_a_graph_attribute_without_change_in_place() -> None:
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.loader import DataLoader

    t = SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2", "tr(A³) / 6"])
    data = []
    for name in GRAPHS:
        g = named(name)
        x = torch.ones(g.num_nodes, 2)
        data.append(
            pyg.data.Data(x=x, edge_index=torch.as_tensor(g.edge_index), num_nodes=g.num_nodes)
        )
    out = [t(d) for d in data]
    for d, o, name in zip(data, out, GRAPHS):
        assert d.x.shape[1] == 2 and not hasattr(d, "graph_features")  # the input is kept
        assert o.x.shape == (d.num_nodes, 3)
        tri = nx.triangles(nx.from_numpy_array(named(name).adjacency))
        assert o.x[:, 2].tolist() == [tri[v] for v in range(d.num_nodes)]
    batch = next(iter(DataLoader(out, batch_size=len(out))))
    assert batch.graph_features.shape == (len(GRAPHS), 1)
    assert batch.graph_features[:, 0].tolist() == [4, 0, 0, 32, 32]
    named_attr = SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2"], node_attr="triangles")(data[0])
    assert named_attr.x.shape == (4, 2) and named_attr.triangles.tolist() == [[3.0]] * 4


def test_graph_and_batch_of_the_project() -> None:
    t = SentenceFeatures(["A 𝟏", "(A³ ⊙ I) 𝟏 / 2"])
    g = from_adjacency(named("K4").adjacency, x=np.arange(4.0).reshape(4, 1))
    out = t(g)
    np.testing.assert_array_equal(out.x, [[0, 3, 3], [1, 3, 3], [2, 3, 3], [3, 3, 3]])
    b = t(Batch.from_graphs([named("K4"), named("cycle5")]))
    assert b.x is not None and b.x[:, 1].tolist() == [3.0] * 4 + [0.0] * 5
    assert [g.x.shape for g in t([named("K4"), named("star3")])] == [(4, 2), (4, 2)]


def test_values_are_cached_under_graph_and_sentences() -> None:
    cache = PreprocessCache()
    t = SentenceFeatures(["(A³ ⊙ I) 𝟏"], cache=cache)
    for _ in range(3):
        t(named("petersen"))
    assert (cache.misses, cache.hits) == (1, 2)
    # another sentence on the same graph and the same cache cannot read that entry
    other = SentenceFeatures(["(A⁴ ⊙ I) 𝟏"], cache=cache)
    assert other.values(named("petersen"))[0][0, 0] == _walks(named("petersen").adjacency, 4)[0]
    assert cache.misses == 2 and len(cache) == 2


@pytest.mark.parametrize(
    ("sentences", "message"),
    [(["A ⊙ A²"], "is a matrix"), (["input h; A h"], "reads a free input")],
)
def test_sentences_it_cannot_add_are_named(sentences: list[str], message: str) -> None:
    with pytest.raises(MatlangError, match=message):
        SentenceFeatures(sentences)


def test_graph_values_need_an_attribute() -> None:
    with pytest.raises(GraphError, match="graph-level"):
        SentenceFeatures(["tr(A³)"])(named("K4"))


def test_log1p_adds_the_logarithm_of_the_exact_values_and_shares_their_cache() -> None:
    pyg = pytest.importorskip("torch_geometric")
    cache = PreprocessCache()
    sentences = ["(A⁵ ⊙ I) 𝟏", "A 𝟏 - 4 ones", "tr(A³) / 6"]
    raw, logged = (SentenceFeatures(sentences, cache=cache, log1p=f) for f in (False, True))
    g = named("petersen")  # 3-regular: A 𝟏 - 4 ones is -1 everywhere
    data = pyg.data.Data(edge_index=torch.as_tensor(g.edge_index), num_nodes=g.num_nodes)
    out = logged(data)
    walks = _walks(g.adjacency, 5)
    np.testing.assert_allclose(out.x[:, 0].numpy(), np.log1p(walks), rtol=1e-6)
    assert out.x[:, 1].tolist() == pytest.approx([-np.log(2)] * 10)  # sign(v) log(1 + |v|)
    assert out.graph_features.tolist() == [[0.0]]  # no triangles: log(1 + 0)
    np.testing.assert_array_equal(logged.values(g)[0][:, 0], walks)  # values stay exact
    assert raw(data).x[:, 0].tolist() == walks.tolist()
    assert cache.misses == 1  # one computation for both transforms
    assert "log1p=True" in repr(logged) and "log1p" not in repr(raw)
