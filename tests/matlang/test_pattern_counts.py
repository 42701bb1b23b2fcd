"""matlang.transforms.PatternCounts: exact counts as features, per node, edge and graph."""

from __future__ import annotations

import numpy as np
import pytest

import matlang

torch = pytest.importorskip("torch")
nx = pytest.importorskip("networkx")


def datas(k=3, n=9, p=0.5):
    from torch_geometric.data import Data

    out = []
    for s in range(k):
        g = nx.gnp_random_graph(n, p, seed=s)
        ei = np.array([(u, v) for u, v in g.edges()] + [(v, u) for u, v in g.edges()]).T
        out.append(Data(x=torch.ones(n, 2), edge_index=torch.tensor(ei), num_nodes=n))
    return out


def test_per_node_appends_to_x():
    pytest.importorskip("torch_geometric")
    from matlang.transforms import PatternCounts

    ds = datas()
    t = PatternCounts(["C3", "C4", "K4"])
    assert t.feature_names == ["C3", "C4", "K4"]
    out = t(ds[0])
    assert out.x.shape == (9, 5) and ds[0].x.shape == (9, 2)  # copied, not changed in place
    for j, name in enumerate(["C3", "C4", "K4"]):
        assert out.x[:, 2 + j].tolist() == matlang.count(name, ds[0], per="node")


def test_batch_list_and_single_agree():
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Batch

    from matlang.transforms import PatternCounts

    ds = datas()
    t = PatternCounts(["C5", "house"])
    one = [t(d).x for d in ds]
    many = [d.x for d in t(ds)]
    batched = t(Batch.from_data_list(ds)).x
    assert all(torch.equal(a, b) for a, b in zip(one, many))
    assert torch.equal(torch.cat(one), batched)


def test_per_edge_and_graph():
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Batch

    from matlang.transforms import PatternCounts

    ds = datas()
    te = PatternCounts(["C3", "C4"], per="edge")
    out = te(ds[1])
    assert out.edge_attr.shape == (ds[1].edge_index.shape[1], 2)
    assert out.edge_attr[:, 0].tolist() == matlang.count("C3", ds[1], per="edge")
    tg = PatternCounts(["C3", "C5"], per="graph")
    rows = [tg(d).pattern_counts for d in ds]
    assert rows[0].shape == (1, 2)
    assert torch.equal(tg(Batch.from_data_list(ds)).pattern_counts, torch.cat(rows))
    assert [r[0, 1].item() for r in rows] == matlang.count("C5", ds)


def test_hom_basis_combines_to_the_counts():
    pytest.importorskip("torch_geometric")
    from fractions import Fraction

    from matlang.patterns import read_pattern
    from matlang.runtime.subgraph_counts import terms
    from matlang.transforms import PatternCounts

    d = datas(1, 10, 0.5)[0]
    th = PatternCounts(["C5"], basis="hom", log1p=False)
    ts = terms(read_pattern("C5")[0], "node")
    assert len(th.feature_names) == len(ts)
    assert all(n.startswith("C5: hom(") and "root" in n for n in th.feature_names)
    cols = th(d).x[:, 2:].double().numpy()
    combo = sum(float(Fraction(t.coefficient)) * cols[:, i] for i, t in enumerate(ts))
    assert np.allclose(combo, matlang.count("C5", d, per="node"))
    # a graph-level basis: hom counts of the unrooted spasm
    tg = PatternCounts(["C4"], per="graph", basis="hom")
    assert len(tg.feature_names) == len(terms(read_pattern("C4")[0], "graph"))


def test_graph_and_runtime_batch():
    from matlang.graphs import named
    from matlang.runtime.batch import Batch
    from matlang.transforms import PatternCounts

    t = PatternCounts(["C5"], log1p=True)
    g = t(named("petersen"))
    assert np.allclose(g.x[:, 0], np.log1p(6))
    b = Batch.from_graphs([named("petersen"), named("K4")])
    out = t(b)
    assert out.x.shape == (14, 1)
    assert np.allclose(out.x[:10, 0].numpy(), np.log1p(6))


def test_refusals():
    from matlang.errors import MatlangError
    from matlang.graphs import named
    from matlang.transforms import PatternCounts

    with pytest.raises(MatlangError, match="per must be"):
        PatternCounts(["C3"], per="pair")
    with pytest.raises(MatlangError, match="basis"):
        PatternCounts(["C3"], basis="walk")
    with pytest.raises(MatlangError, match="at most 8 nodes"):
        PatternCounts(["C9"])
    with pytest.raises(MatlangError, match="only x"):
        PatternCounts(["C3"], per="graph")(named("petersen"))
