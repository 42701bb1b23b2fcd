"""WL tests: paper pairs, brute-force isomorphism, a naive reference, datasets and the CLI."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from matlang.cli import main
from matlang.errors import GraphError, MatlangError
from matlang.graphs import PAPER_GRAPH6, PAPER_PAIRS, Graph, from_adjacency, named
from matlang.runtime import datasets, wl
from matlang.runtime.generators import erdos_renyi, random_regular

# --------------------------------------------------------------------------- helpers


def all_graphs(n: int) -> list[Graph]:
    """Every labelled simple graph on n nodes."""
    iu = np.triu_indices(n, 1)
    m = len(iu[0])
    bits = (np.arange(2**m)[:, None] >> np.arange(m)) & 1
    adj = np.zeros((2**m, n, n), dtype=np.int64)
    adj[:, iu[0], iu[1]] = bits
    adj = adj + adj.transpose(0, 2, 1)
    return [Graph(a) for a in adj]


def canonical_forms(graphs: Sequence[Graph]) -> list[bytes]:
    """Brute-force canonical form: the smallest adjacency over all node orders."""
    n = graphs[0].num_nodes
    adj = np.stack([g.adjacency for g in graphs])
    best = None
    for p in itertools.permutations(range(n)):
        q = np.asarray(p)
        flat = adj[:, q][:, :, q].reshape(len(graphs), -1)
        # Lexicographic minimum row-wise via packed integers (n*n <= 36 bits).
        code = flat @ (1 << np.arange(n * n, dtype=np.int64))
        best = code if best is None else np.minimum(best, code)
    assert best is not None
    return [int(c).to_bytes(8, "little") for c in best]


def permuted(g: Graph, rng: np.random.Generator) -> Graph:
    p = rng.permutation(g.num_nodes)
    x = None if g.x is None else g.x[p]
    return Graph(g.adjacency[np.ix_(p, p)], None, x)


def naive_classes(
    graphs: Sequence[Graph], test: str, colors: Sequence[Sequence[int]] | None = None
) -> list[list[int]]:
    """Textbook 1-WL / 2-FWL with Python tuples and one shared dictionary (the oracle)."""
    cols = colors or [[0] * g.num_nodes for g in graphs]
    state: list[dict[Any, Any]]
    if test == "1-wl":
        state = [
            {v: (c[v],) for v in range(g.num_nodes)} for g, c in zip(graphs, cols, strict=True)
        ]

        def step(g: Graph, s: dict) -> dict:
            a = g.adjacency
            return {
                v: (s[v], tuple(sorted(s[u] for u in range(g.num_nodes) if a[v, u]))) for v in s
            }
    else:
        state = [
            {
                (i, j): (i == j, int(g.adjacency[i, j]), c[i], c[j])
                for i in range(g.num_nodes)
                for j in range(g.num_nodes)
            }
            for g, c in zip(graphs, cols, strict=True)
        ]

        def step(g: Graph, s: dict) -> dict:
            n = g.num_nodes
            return {
                (i, j): (s[i, j], tuple(sorted((s[i, w], s[w, j]) for w in range(n))))
                for (i, j) in s
            }

    def relabel(states: list[dict]) -> list[dict]:
        table: dict = {}
        return [{k: table.setdefault(v, len(table)) for k, v in s.items()} for s in states]

    state = relabel(state)
    count = len({v for s in state for v in s.values()})
    while True:
        state = relabel([step(g, s) for g, s in zip(graphs, state, strict=True)])
        new = len({v for s in state for v in s.values()})
        if new == count:
            break
        count = new
    groups: dict = {}
    for i, s in enumerate(state):
        groups.setdefault(tuple(sorted(s.values())), []).append(i)
    return sorted(groups.values(), key=min)


needs_data = pytest.mark.skipif(
    not datasets.data_available(), reason="data folder not found (set MATLANG_DATA)"
)

# --------------------------------------------------------------------------- paper pairs

# (pair key in PAPER_PAIRS, test, equivalent?) — the paper's appendix examples.
PAPER_TABLE = [
    ("1-wl", "1-wl", True),  # decalin / bicyclopentyl
    ("1-wl", "3-wl", False),
    ("l2", "1-wl", True),  # cospectral 4-regular G / H
    ("l2", "3-wl", False),
    ("3-wl", "1-wl", True),  # rook 4x4 / Shrikhande: srg(16,6,2,2)
    ("3-wl", "3-wl", True),
]


@pytest.mark.parametrize("pair,test,expected", PAPER_TABLE)
def test_paper_pairs(pair: str, test: str, expected: bool) -> None:
    g, h = (named(n) for n in PAPER_PAIRS[pair])
    assert wl.equivalent(g, h, test) is expected
    assert wl.equivalent(h, g, test) is expected


@pytest.mark.parametrize("name", list(PAPER_GRAPH6))
@pytest.mark.parametrize("test", ["1-wl", "3-wl"])
def test_graph_equivalent_to_its_permutations(name: str, test: str) -> None:
    g = named(name)
    rng = np.random.default_rng(0)
    assert wl.equivalent(g, permuted(g, rng), test)


def test_test_names() -> None:
    assert wl.normalize_test("2-FWL") == "3-wl"
    assert wl.normalize_test("wl") == "1-wl"
    with pytest.raises(MatlangError, match="unknown WL test"):
        wl.equivalent(named("C5"), named("C5"), "4-wl")


# --------------------------------------------------------------------------- brute force


def test_all_graphs_on_5_nodes_match_isomorphism() -> None:
    graphs = all_graphs(5)
    iso: dict[bytes, list[int]] = {}
    for i, key in enumerate(canonical_forms(graphs)):
        iso.setdefault(key, []).append(i)
    iso_classes = sorted(iso.values(), key=min)
    assert len(iso_classes) == 34  # OEIS A000088
    for test in ("1-wl", "3-wl"):
        found = wl.classes(graphs, test)
        # Isomorphic => equivalent: every class is a union of isomorphism classes.
        where = {i: k for k, c in enumerate(found) for i in c}
        assert all(len({where[i] for i in c}) == 1 for c in iso_classes)
    assert wl.classes(graphs, "3-wl") == iso_classes


def test_all_graphs_on_6_nodes_counts() -> None:
    graphs = all_graphs(6)
    assert len(wl.classes(graphs, "1-wl")) == 152
    # 3-WL identifies every graph on 6 nodes: 156 isomorphism classes (OEIS A000088).
    assert len(wl.classes(graphs, "3-wl")) == 156


@pytest.mark.parametrize("seed", range(5))
def test_random_tiny_graphs_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    graphs = [erdos_renyi(6, float(rng.uniform(0.2, 0.8)), seed=rng) for _ in range(12)]
    graphs += [permuted(g, rng) for g in graphs[:6]]
    forms = canonical_forms(graphs)
    for test in ("1-wl", "3-wl"):
        for i, j in itertools.combinations(range(len(graphs)), 2):
            if forms[i] == forms[j]:
                assert wl.equivalent(graphs[i], graphs[j], test)
    # On 6 nodes 3-WL is exact.
    for i, j in itertools.combinations(range(len(graphs)), 2):
        assert wl.equivalent(graphs[i], graphs[j], "3-wl") == (forms[i] == forms[j])


# --------------------------------------------------------------------------- naive oracle


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("test", ["1-wl", "3-wl"])
def test_classes_match_naive_reference(seed: int, test: str) -> None:
    rng = np.random.default_rng(100 + seed)
    graphs = []
    for _ in range(10):
        n = int(rng.integers(4, 8))
        graphs.append(erdos_renyi(n, float(rng.uniform(0.2, 0.7)), seed=rng))
    # Regular graphs make 1-WL classes with several members, so 2-FWL has work to do.
    graphs += [random_regular(8, 3, seed=rng) for _ in range(4)]
    graphs += [permuted(g, rng) for g in graphs[::3]]
    assert wl.classes(graphs, test) == naive_classes(graphs, test)


@pytest.mark.parametrize("test", ["1-wl", "3-wl"])
def test_node_colors_match_naive_reference(test: str) -> None:
    rng = np.random.default_rng(7)
    graphs = [random_regular(8, 3, seed=rng) for _ in range(6)]
    cols = [rng.integers(0, 2, size=8).tolist() for _ in graphs]
    graphs += [graphs[0], graphs[0]]
    cols += [cols[0], cols[0][::-1]]
    assert wl.classes(graphs, test, cols) == naive_classes(graphs, test, cols)


def test_initial_colors_break_symmetry() -> None:
    p3 = named("P3")
    end = from_adjacency(p3.adjacency, x=np.array([[1], [0], [0]]))
    mid = from_adjacency(p3.adjacency, x=np.array([[0], [1], [0]]))
    for test in ("1-wl", "3-wl"):
        assert wl.equivalent(end, mid, test)
        assert not wl.equivalent(end, mid, test, colors="x")
        assert not wl.equivalent(p3, p3, test, colors=[[0, 0, 1], [0, 1, 0]])


def test_bad_colors_are_graph_errors() -> None:
    g = named("C4")
    with pytest.raises(GraphError, match="no node features"):
        wl.equivalent(g, g, colors="x")
    with pytest.raises(GraphError, match="3 rows but the graph has 4 nodes"):
        wl.classes([g], colors=[[0, 0, 0]])


def test_different_sizes_are_distinguished() -> None:
    assert not wl.equivalent(named("C5"), named("C6"), "1-wl")
    assert not wl.equivalent(named("C5"), named("C6"), "3-wl")
    # 1-WL cannot tell C6 from two triangles; 3-WL can (it counts triangles).
    two_triangles = from_adjacency(np.kron(np.eye(2, dtype=np.int64), named("K3").adjacency))
    assert wl.equivalent(named("C6"), two_triangles, "1-wl")
    assert not wl.equivalent(named("C6"), two_triangles, "3-wl")
    assert wl.classes([named("C5"), named("C6"), two_triangles], "1-wl") == [[0], [1, 2]]


def test_directed_and_weighted_graphs() -> None:
    cyc = np.roll(np.eye(3, dtype=np.int64), 1, axis=1)
    c3 = from_adjacency(cyc, allow_directed=True)
    c3_reversed = from_adjacency(cyc.T, allow_directed=True)
    assert wl.classes([c3, c3_reversed, named("K3")], "3-wl") == [[0, 1], [2]]
    with pytest.raises(GraphError, match="undirected"):
        wl.equivalent(c3, c3_reversed, "1-wl")
    path = named("P3").adjacency
    heavy_end = from_adjacency(
        path * np.array([[1, 2, 1], [2, 1, 1], [1, 1, 1]]), allow_weights=True
    )
    heavy_other = from_adjacency(
        path * np.array([[1, 1, 1], [1, 1, 2], [1, 2, 1]]), allow_weights=True
    )
    for test in ("1-wl", "3-wl"):
        assert wl.equivalent(heavy_end, heavy_other, test)
        assert not wl.equivalent(heavy_end, named("P3"), test)


def test_refine_helpers_share_one_dictionary() -> None:
    g, h = named("decalin"), named("bicyclopentyl")
    cg, ch = wl.refine_1wl([g, h])
    assert sorted(cg.tolist()) == sorted(ch.tolist())
    pg, ph = wl.refine_2fwl([g, h])
    assert pg.shape == (10, 10)
    assert sorted(pg.ravel().tolist()) != sorted(ph.ravel().tolist())
    assert wl.count_equivalent_pairs([[0], [1, 2, 3], [4, 5]]) == 4


def test_2fwl_on_100_node_pair_is_fast() -> None:
    g = random_regular(100, 3, seed=1)
    h = random_regular(100, 3, seed=2)
    assert wl.equivalent(g, h, "1-wl")
    assert not wl.equivalent(g, h, "3-wl")
    assert wl.equivalent(g, permuted(g, np.random.default_rng(0)), "3-wl")


# --------------------------------------------------------------------------- datasets


@needs_data
def test_graph8c() -> None:
    graphs = datasets.load_graph8c()
    one = wl.classes(graphs, "1-wl")
    assert wl.count_equivalent_pairs(one) == 312
    three = wl.classes(graphs, "3-wl")
    assert wl.count_equivalent_pairs(three) == 0


@needs_data
def test_sr25() -> None:
    graphs = datasets.load_sr25()
    assert wl.count_equivalent_pairs(wl.classes(graphs, "3-wl")) == 105


@needs_data
def test_exp() -> None:
    data = datasets.load_exp()
    assert wl.pair_equivalence(data.graphs, data.pairs, "1-wl").all()
    assert wl.pair_equivalence(data.graphs, data.pairs, "1-wl", colors="x").all()
    # All 600 pairs with 2-FWL take about 5 s.
    assert not wl.pair_equivalence(data.graphs, data.pairs, "3-wl").any()


@needs_data
def test_exp_features_3wl_subset() -> None:
    data = datasets.load_exp()
    assert not wl.pair_equivalence(data.graphs, data.pairs[:50], "3-wl", colors="x").any()


# --------------------------------------------------------------------------- CLI


@pytest.fixture()
def paper_file(tmp_path: Path) -> Path:
    path = tmp_path / "paper.g6"
    path.write_text("\n".join(PAPER_GRAPH6.values()) + "\n")
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["wl", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_pairs(paper_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "--test", "3-wl", "--pairs", str(paper_file))
    assert out["pairs"] == 3
    assert out["distinguished"] == 2
    assert [p["distinguished"] for p in out["per_pair"]] == [True, True, False]
    assert out["per_pair"][2] == {
        "pair": 2,
        "graphs": ["paper:4", "paper:5"],
        "distinguished": False,
    }
    out = run_json(capsys, "--test", "1-wl", "--pairs", str(paper_file))
    assert out["distinguished"] == 0


def test_cli_all_pairs(paper_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "--test", "1-wl", "--all-pairs", str(paper_file))
    assert out["graphs"] == 6
    # decalin ~ bicyclopentyl; the two 4-regular graphs; the two srg(16,6,2,2).
    assert out["classes"] == [[0, 1], [2, 3], [4, 5]]
    assert out["equivalent_pairs"] == 3
    out = run_json(capsys, "--test", "2-fwl", "--all-pairs", str(paper_file))
    assert out == {"test": "3-wl", "graphs": 6, "equivalent_pairs": 1, "classes": [[4, 5]]}


def test_cli_readable_summary(paper_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wl", "--test", "3-wl", "--pairs", str(paper_file)]) == 0
    text = capsys.readouterr().out
    assert "3 pairs" in text and "2 distinguished" in text and "paper:4 ~ paper:5" in text


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = tmp_path / "odd.g6"
    odd.write_text("IpDK?C@OG\nIpEI?C@OG\nImYPScFJG\n")
    assert main(["wl", "--pairs", str(odd)]) == 1
    assert "odd.g6: 3 graphs" in capsys.readouterr().err
    assert main(["wl", "--pairs", str(tmp_path / "missing.g6")]) == 1
    assert "no such graph6 file" in capsys.readouterr().err
    bad = tmp_path / "bad.g6"
    bad.write_text("IpDK?C@OG\nIp!K?C@OG\n")
    assert main(["wl", "--all-pairs", str(bad)]) == 1
    assert "bad.g6: line 2" in capsys.readouterr().err
    assert main(["wl", "--pairs", str(odd), "--features"]) == 1


@needs_data
def test_cli_datasets(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "--test", "1-wl", "--dataset", "graph8c")
    assert (out["graphs"], out["equivalent_pairs"]) == (11117, 312)
    out = run_json(capsys, "--test", "3-wl", "--dataset", "sr25")
    assert (out["graphs"], out["equivalent_pairs"]) == (15, 105)
    out = run_json(capsys, "--test", "1-wl", "--dataset", "exp", "--features")
    assert (out["pairs"], out["distinguished"]) == (600, 0)
    out = run_json(capsys, "--test", "3-wl", "--dataset", "paper_pairs")
    assert out["per_pair"][0]["graphs"] == ["decalin", "bicyclopentyl"]
    assert out["distinguished"] == 2
