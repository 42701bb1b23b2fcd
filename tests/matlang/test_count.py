"""matlang.count: exact subgraph counts per graph, node and edge, against brute force."""

from __future__ import annotations

import json

import numpy as np
import pytest

import matlang
import matlang.patterns
from matlang.errors import GraphError, MatlangError
from matlang.spasm import PatternError

nx = pytest.importorskip("networkx")
from networkx.algorithms.isomorphism import GraphMatcher  # noqa: E402


def brute(p, g):
    """(copies, per node dict, per edge dict keyed by frozenset) by monomorphism enumeration."""
    copies: set[frozenset] = set()
    for m in GraphMatcher(g, p).subgraph_monomorphisms_iter():
        inv = {b: a for a, b in m.items()}
        copies.add(frozenset(frozenset((inv[a], inv[b])) for a, b in p.edges()))
    per_node = {v: 0 for v in g}
    per_edge: dict[frozenset, int] = {}
    for c in copies:
        for v in {x for e in c for x in e}:
            per_node[v] += 1
        for e in c:
            per_edge[e] = per_edge.get(e, 0) + 1
    return len(copies), per_node, per_edge


def brute_induced(p, g):
    from networkx.algorithms.isomorphism import GraphMatcher as GM

    sets = {frozenset(m) for m in GM(g, p).subgraph_isomorphisms_iter()}
    per_node = {v: 0 for v in g}
    per_edge: dict[frozenset, int] = {}
    for s in sets:
        for v in s:
            per_node[v] += 1
        for e in g.subgraph(s).edges():
            per_edge[frozenset(e)] = per_edge.get(frozenset(e), 0) + 1
    return len(sets), per_node, per_edge


def connected_patterns(lo, hi):
    from networkx.generators.atlas import graph_atlas_g

    return [
        sorted(g.edges())
        for g in graph_atlas_g()
        if lo <= g.number_of_nodes() <= hi and g.number_of_edges() and nx.is_connected(g)
    ]


def pattern_graph(edges):
    p = nx.Graph()
    p.add_edges_from(edges)
    return p


GRAPH = nx.gnp_random_graph(11, 0.45, seed=7)
SPARSE = nx.gnp_random_graph(16, 0.25, seed=3)


def edge_order(g):
    ei = np.array(sorted([(u, v) for u, v in g.edges()] + [(v, u) for u, v in g.edges()])).T
    return ei


def both(edges, g, per, induced=False):
    """The counts by the spasm and by listing, checked equal."""
    from matlang.runtime.subgraph_counts import count_arrays, read_count_pattern, read_graphs, split

    p, _ = read_count_pattern(edges)
    gs = read_graphs(g)
    out = []
    for how in ("spasm", "list"):
        if how == "spasm" and induced and per == "edge":
            continue
        out.append(split(count_arrays(p, gs, per, induced, how), gs, per))
        gs.host.clear()
    assert all(o == out[0] for o in out)
    return out[0]


@pytest.mark.parametrize("edges", connected_patterns(3, 5), ids=str)
def test_every_pattern_of_3_to_5_nodes(edges):
    p = pattern_graph(edges)
    for g in (GRAPH, SPARSE):
        total, per_node, per_edge = brute(p, g)
        assert both(edges, g, "graph") == [total]
        assert both(edges, g, "node") == [per_node[v] for v in g]
        ei = edge_order(g)
        want = [per_edge.get(frozenset((int(u), int(v))), 0) for u, v in ei.T]
        assert both(edges, g, "edge") == want


@pytest.mark.parametrize("edges", connected_patterns(6, 6), ids=str)
def test_every_pattern_of_6_nodes(edges):
    p = pattern_graph(edges)
    g = nx.gnp_random_graph(10, 0.5, seed=11)
    total, per_node, _ = brute(p, g)
    assert both(edges, g, "graph") == [total]
    assert both(edges, g, "node") == [per_node[v] for v in g]


@pytest.mark.parametrize("name", ["rook4x4", "shrikhande", "petersen"])
@pytest.mark.parametrize(
    "pattern", ["C3", "C4", "C5", "C6", "K4", "diamond", "house", "bowtie", "P4", "star3"]
)
def test_named_graphs(name, pattern):
    from matlang.graphs import named
    from matlang.patterns import read_pattern

    g = nx.from_numpy_array(named(name).adjacency)
    q, _ = read_pattern(pattern)
    total, per_node, _ = brute(pattern_graph(sorted(q.edges)), g)
    assert matlang.count(pattern, name) == [total]
    assert matlang.count(pattern, name, per="node") == [per_node[v] for v in g]


def test_known_values():
    # Petersen: 12 5-cycles, 10 6-cycles, no triangles or 4-cycles; rook / Shrikhande: the
    # 2-FWL-equivalent pair that K4 tells apart (rook's graph has 8 K4s, Shrikhande none)
    assert matlang.count("C5", "petersen") == [12]
    assert matlang.count("C6", "petersen") == [10]
    assert matlang.count("K4", ["rook4x4", "shrikhande"]) == [8, 0]
    assert matlang.count("C8", "K5") == [0]
    assert matlang.count("C5", "K5") == [12]
    assert matlang.count("C8", "K8") == [2520]  # 7!/2
    assert matlang.count("K5", "K6") == [6]
    assert matlang.count("K4", "K6", per="node") == [10] * 6


@pytest.mark.parametrize("pattern", ["C7", "C8", "K4", "K5", "0-1 1-2 2-3 3-0 0-4 1-4 2-4 3-4"])
def test_larger_patterns(pattern):
    from matlang.patterns import read_pattern

    q, _ = read_pattern(pattern)
    g = nx.gnp_random_graph(10, 0.6, seed=5)
    total, per_node, _ = brute(pattern_graph(sorted(q.edges)), g)
    assert both(pattern, g, "graph") == [total]
    assert both(pattern, g, "node") == [per_node[v] for v in g]


@pytest.mark.parametrize("edges", connected_patterns(3, 4), ids=str)
def test_induced(edges):
    p = pattern_graph(edges)
    total, per_node, per_edge = brute_induced(p, GRAPH)
    assert both(edges, GRAPH, "graph", True) == [total]
    assert both(edges, GRAPH, "node", True) == [per_node[v] for v in GRAPH]
    ei = edge_order(GRAPH)
    want = [per_edge.get(frozenset((int(u), int(v))), 0) for u, v in ei.T]
    assert both(edges, GRAPH, "edge", True) == want


def test_several_graphs_and_forms():
    import scipy.sparse as sp

    gs = [nx.gnp_random_graph(9, 0.5, seed=s) for s in range(4)]
    want = [brute(pattern_graph([(0, 1), (1, 2), (2, 3), (3, 0)]), g)[0] for g in gs]
    assert matlang.count("C4", gs) == want
    assert matlang.count("C4", [nx.to_scipy_sparse_array(g) for g in gs]) == want
    assert matlang.count("C4", [nx.to_numpy_array(g, dtype=np.int64) for g in gs]) == want
    per_node = matlang.count("C4", gs, per="node")
    assert [sum(x) for x in per_node] == [4 * w for w in want]
    assert matlang.count("C4", sp.csr_matrix(nx.to_numpy_array(gs[0]))) == want[:1]


def test_pyg_batch_and_edge_order():
    torch = pytest.importorskip("torch")
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Batch, Data

    gs = [nx.gnp_random_graph(9, 0.5, seed=s) for s in range(3)]
    datas = []
    for g in gs:
        ei = np.array([(u, v) for u, v in g.edges()] + [(v, u) for u, v in g.edges()]).T
        datas.append(Data(edge_index=torch.tensor(ei), num_nodes=9))
    batch = Batch.from_data_list(datas)
    want = [brute(pattern_graph([(0, 1), (1, 2), (2, 0)]), g) for g in gs]
    assert matlang.count("triangle", batch) == [w[0] for w in want]
    per_edge = matlang.count("triangle", batch, per="edge")
    for d, (_, _, pe), got in zip(datas, want, per_edge):
        keys = [frozenset((int(u), int(v))) for u, v in d.edge_index.t().tolist()]
        assert got == [pe.get(k, 0) for k in keys]
    assert matlang.count("triangle", datas[0], per="edge") == per_edge[0]
    del pyg


def test_refusals():
    with pytest.raises(PatternError, match="at most 8 nodes"):
        matlang.count("C9", "petersen")
    with pytest.raises(PatternError, match="disconnected"):
        matlang.count("0-1 2-3", "petersen")
    with pytest.raises(PatternError, match="per must be"):
        matlang.count("C4", "petersen", per="pair")
    from matlang.runtime.subgraph_counts import count_arrays, read_graphs

    with pytest.raises(PatternError, match="per edge"):
        count_arrays(
            matlang.patterns.read_pattern("C4")[0], read_graphs("petersen"), "edge", True, "spasm"
        )
    with pytest.raises(PatternError, match="2\\^20"):
        count_arrays(
            matlang.patterns.read_pattern("C8")[0], read_graphs("petersen"), "graph", True, "spasm"
        )

    class Directed:
        edge_index = np.array([[0, 1], [1, 2]])
        num_nodes = 3

    with pytest.raises(GraphError, match="undirected"):
        matlang.count("P3", Directed())
    with pytest.raises(MatlangError, match="int64"):
        from matlang.runtime.homcount import Host, check_bound
        from matlang.spasm import SmallGraph

        check_bound(Host(3, np.array([0]), np.array([1])), SmallGraph.of(2, [(0, 1)]), 2.0**70)


def test_cli(tmp_path, capsys):
    from matlang.cli import main

    assert main(["count", "C5", "--graph", "petersen", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "pattern": "C5",
        "per": "graph",
        "induced": False,
        "graphs": ["petersen"],
        "counts": [12],
    }
    f = tmp_path / "g.txt"
    f.write_text("0 1\n1 2\n2 0\n2 3\n")
    assert main(["count", "triangle", "--edges", str(f), "--per", "edge", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == [[1, 1, 1, 0]]
    assert main(["count", "K4", "--graph", "rook4x4", "--graph6", "OlfJHsHBGK_\\oHWKeBK_\\"]) == 0
    assert "K4 in rook4x4: 8 copies" in capsys.readouterr().out
    assert main(["count", "C4", "--graph", "petersen", "--per", "node"]) == 0
    assert "0 0 0" in capsys.readouterr().out
    assert main(["count", "cycel5", "--graph", "petersen"]) == 1


@pytest.mark.parametrize(
    ("typo", "meant"), [("cycel5", "C5"), ("tringle", "triangle"), ("paht4", "P4")]
)
def test_mistyped_pattern_names_the_closest(typo, meant):
    with pytest.raises(PatternError, match=f"did you mean '{meant}'"):
        matlang.pattern(typo, witness=False)
    with pytest.raises(PatternError, match=f"did you mean '{meant}'"):
        matlang.count(typo, "petersen")


def test_wl_takes_built_in_names_and_says_one_pair(capsys):
    from matlang.cli import main

    assert main(["wl", "--graph", "rook4x4", "--graph", "shrikhande", "--test", "3-wl"]) == 0
    out = capsys.readouterr().out
    assert "on 1 pair of" in out and "1 equivalent" in out and "no node features" in out
    assert main(["wl", "--graph", "rook4x4", "--graph6", "OlfJHsHBGK_\\oHWKeBK_\\"]) == 0
    assert "1 pair" in capsys.readouterr().out
    assert main(["wl"]) == 1
    assert "no graphs" in capsys.readouterr().err
    assert main(["wl", "--graph", "K4", "--dataset", "sr25"]) == 1


def test_blocked_closing_and_planner_paths(monkeypatch):
    """With no room for fill (FILL_CAP tiny), cycles close at the root by row blocks
    (_close_theta) or are enumerated; every rooted count still equals the dense reference."""
    from matlang.patterns import read_pattern
    from matlang.runtime import homcount
    from matlang.spasm import rooted_hom_count

    g = nx.gnp_random_graph(13, 0.35, seed=1)
    a = nx.to_numpy_array(g, dtype=np.int64)
    r, c = np.nonzero(a)
    host = homcount.Host(13, r, c)
    used = []
    real = homcount._close_theta
    monkeypatch.setattr(homcount, "_close_theta", lambda *x: used.append(1) or real(*x))
    for cap in (homcount.FILL_CAP, 10):
        monkeypatch.setattr(homcount, "FILL_CAP", cap)
        for name in ["C4", "C5", "C6", "house", "0-1 1-2 2-3 3-0 1-4 4-3 0-5 5-3"]:
            q, _ = read_pattern(name)
            for root in range(q.n):
                host.clear()
                got = homcount.hom_rooted(host, q, [root]).tolist()
                assert got == rooted_hom_count(q, a, root), (name, root, cap)
    assert used
