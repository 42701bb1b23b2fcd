"""Graphs: the paper's six graphs as printed in its appendix, graph6 in and out, built-in
families, and the checks on adjacency matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from matlang.errors import GraphError
from matlang.graphs import (
    PAPER_GRAPH6,
    PAPER_PAIRS,
    as_graph,
    as_graphs,
    from_adjacency,
    from_graph6,
    named,
    named_graph_names,
    read_graph6,
    to_graph6,
)

# Adjacency matrices typed from the paper's appendix (node numbering as printed there).
PAPER_MATRICES = {
    "decalin": [
        "0110001000",
        "1000010001",
        "1001000000",
        "0010100000",
        "0001010000",
        "0100100000",
        "1000000100",
        "0000001010",
        "0000000101",
        "0100000010",
    ],
    "bicyclopentyl": [
        "0110010000",
        "1000001001",
        "1001000000",
        "0010100000",
        "0001010000",
        "1000100000",
        "0100000100",
        "0000001010",
        "0000000101",
        "0100000010",
    ],
    "cospectral_G": [
        "0101010100",
        "1011100000",
        "0100101001",
        "1100010100",
        "0110001001",
        "1001000011",
        "0010100110",
        "1001001010",
        "0000011101",
        "0010110010",
    ],
    "cospectral_H": [
        "0101001100",
        "1011100000",
        "0100110001",
        "1100010100",
        "0110001001",
        "0011000110",
        "1000100011",
        "1001010010",
        "0000011101",
        "0010101010",
    ],
    "rook4x4": [
        "0111100010001000",
        "1011010001000100",
        "1101001000100010",
        "1110000100010001",
        "1000011110001000",
        "0100101101000100",
        "0010110100100010",
        "0001111000010001",
        "1000100001111000",
        "0100010010110100",
        "0010001011010010",
        "0001000111100001",
        "1000100010000111",
        "0100010001001011",
        "0010001000101101",
        "0001000100011110",
    ],
    "shrikhande": [
        "0101110000001001",
        "1010011000001100",
        "0101001100000110",
        "1010100100000011",
        "1001010111000000",
        "1100101001100000",
        "0110010100110000",
        "0011101010010000",
        "0000100101011100",
        "0000110010100110",
        "0000011001010011",
        "0000001110101001",
        "1100000010010101",
        "0110000011001010",
        "0011000001100101",
        "1001000000111010",
    ],
}
#: The paper's pairs as shipped in the repository's data folder.
SHARED_PAIRS = Path(__file__).resolve().parents[2] / "data" / "paper_pairs" / "paper_pairs.g6"


@pytest.mark.parametrize("name", sorted(PAPER_MATRICES))
def test_paper_graphs_match_the_appendix(name: str) -> None:
    printed = np.array([[int(c) for c in row] for row in PAPER_MATRICES[name]])
    g = named(name)
    assert g.name == name
    assert np.array_equal(g.adjacency, printed)
    assert to_graph6(g) == PAPER_GRAPH6[name]


def test_paper_pairs() -> None:
    assert PAPER_PAIRS == {
        "1-wl": ("decalin", "bicyclopentyl"),
        "l2": ("cospectral_G", "cospectral_H"),
        "3-wl": ("rook4x4", "shrikhande"),
    }
    for a, b in PAPER_PAIRS.values():
        ga, gb = named(a), named(b)
        assert ga.num_nodes == gb.num_nodes and ga.num_edges == gb.num_edges
        assert not np.array_equal(ga.adjacency, gb.adjacency)
        # same degree sequence (each pair is 1-WL equivalent)
        assert sorted(ga.adjacency.sum(1)) == sorted(gb.adjacency.sum(1))


@pytest.mark.data
def test_shared_data_file_holds_the_same_graphs() -> None:
    graphs = read_graph6(SHARED_PAIRS, names=list(PAPER_GRAPH6))
    assert [g.name for g in graphs] == list(PAPER_GRAPH6)
    for g in graphs:
        assert np.array_equal(g.adjacency, named(g.name or "").adjacency)


def test_graph6_round_trip_and_sizes() -> None:
    rng = np.random.default_rng(6)
    for n in [0, 1, 2, 5, 62, 63, 64, 130]:
        upper = np.triu(rng.random((n, n)) < 0.3, 1).astype(np.int64)
        g = from_adjacency(upper + upper.T)
        s = to_graph6(g)
        assert s.isascii() and all(63 <= ord(c) <= 126 for c in s)
        assert (s[0] == "~") == (n >= 63)
        back = from_graph6(s)
        assert np.array_equal(back.adjacency, g.adjacency)
        assert from_graph6(">>graph6<<" + s + "\n").num_nodes == n
        assert from_graph6(s.encode("ascii")).num_nodes == n
    assert to_graph6(named("K4")) == "C~"  # McKay's format: K4 is "C~"
    assert to_graph6(named("path3")) == "Bg"


def test_read_graph6_files(tmp_path: Path) -> None:
    f = tmp_path / "g.g6"
    f.write_text("C~\n\nBg\n")
    graphs = read_graph6(f)
    assert [g.name for g in graphs] == ["g.g6:1", "g.g6:3"]
    assert [g.num_edges for g in graphs] == [6, 2]
    assert [g.name for g in read_graph6(f, names=["k4", "p3"])] == ["k4", "p3"]
    bad = tmp_path / "bad.g6"
    bad.write_text("C~\nC\n")
    with pytest.raises(GraphError, match=r"graph bad.g6:2: graph6 string for 4 nodes needs 1"):
        read_graph6(bad)
    with pytest.raises(GraphError, match="no such graph6 file"):
        read_graph6(tmp_path / "missing.g6")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "graph '': not a graph6 string: character ' ' is outside '?'..'~'"),
        ("C~ ", None),  # surrounding blanks are stripped
        ("I?", "graph 'I?': graph6 string for 10 nodes needs 8 data characters, has 1"),
        ("C~~", "graph 'C~~': graph6 string for 4 nodes needs 1 data characters, has 2"),
        ("C\x7f", "graph 'C\\x7f': not a graph6 string: character '\\x7f' is outside '?'..'~'"),
        ("~?", "graph '~?': truncated graph6 size field"),
    ],
)
def test_graph6_errors(text: str, message: str | None) -> None:
    if message is None:
        assert from_graph6(text).num_nodes == 4
        return
    with pytest.raises(GraphError) as info:
        from_graph6(text)
    assert str(info.value) == message


def test_families() -> None:
    assert [named(f"cycle{n}").num_edges for n in (3, 4, 9)] == [3, 4, 9]
    assert np.array_equal(named("C6").adjacency, named("cycle6").adjacency)
    assert named("C6").name == "C6"
    assert named("path1").num_edges == 0 and named("P5").num_edges == 4
    assert named("K1").num_nodes == 1 and named("complete7").num_edges == 21
    star = named("star3")
    assert star.num_nodes == 4 and sorted(star.adjacency.sum(1)) == [1, 1, 1, 3]
    assert named("empty4").num_edges == 0
    pet = named("petersen")
    assert (pet.adjacency.sum(1) == 3).all() and pet.num_edges == 15
    for name in named_graph_names():
        if not name.endswith("N"):
            assert named(name).num_nodes > 0
    for bad in ("cycle2", "path0", "K0", "K100001"):
        with pytest.raises(GraphError, match="out of range"):
            named(bad)


def test_graph_properties() -> None:
    g = as_graph(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]), name="p3")
    assert g.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert g.edge_weight.tolist() == [1, 1, 1, 1]
    assert g.is_binary and g.num_edges == 2 and g.label() == "p3"
    assert repr(g) == "Graph('p3', n=3, edges=2)"
    assert g.with_name(None).label() == "Bg"
    w = as_graph(np.array([[0, 0.5], [0.5, 0]]), allow_weights=True)
    assert not w.is_binary and w.label() == "<graph n=2>"
    loops = as_graph(np.array([[1, 1], [1, 0]]), allow_self_loops=True)
    assert loops.num_edges == 2  # the loop counts once
    with pytest.raises(GraphError, match="features have 2 rows but the graph has 3 nodes"):
        from_adjacency(np.zeros((3, 3), dtype=int), x=np.ones((2, 1)))


def test_as_graphs() -> None:
    assert len(as_graphs("K4")) == 1
    assert len(as_graphs(np.zeros((3, 3), dtype=int))) == 1
    assert [g.num_nodes for g in as_graphs(["K4", "C5", np.zeros((2, 2), dtype=int)])] == [4, 5, 2]
    assert as_graph("C~").num_edges == 6  # a graph6 string that is not a name
    # an all-letter graph6 string is decoded when its length fits the node count its first
    # character gives; a word that does not fit is reported as an unknown name
    g = as_graph("EwCW")
    assert (g.num_nodes, g.num_edges) == (6, 6)
    assert np.array_equal(g.adjacency, from_graph6("EwCW").adjacency)
    with pytest.raises(GraphError, match="no built-in graph named 'petersn'"):
        as_graph("petersn")
    assert as_graph("K4", name="mine").name == "mine"


def test_a_graph_built_directly_is_read_only_so_its_cached_values_stay_true() -> None:
    """``Graph(array)`` (not through ``as_graph``): its adjacency is a read-only view, as
    ``as_graph``'s copy is — a write would leave the graph's cached edges, fingerprint and a
    compiled module's per-graph constants stale while ``evaluate`` saw the new matrix."""
    import matlang
    from matlang.graphs import Graph

    tri = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=float)
    g = Graph(tri.copy())
    assert matlang.compile("tr(A^3)/6")([g]).tolist() == [1.0]
    with pytest.raises(ValueError, match="read-only"):
        g.adjacency[0, 1] = 0.0
    assert matlang.evaluate("tr(A^3)/6", g) == 1
    fixed = Graph(np.array(tri, copy=True)).adjacency  # read-only already: kept as it is
    assert Graph(fixed).adjacency is fixed
