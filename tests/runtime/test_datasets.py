"""Dataset loaders: locating the data folder, validation errors, and the README's counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from matlang.errors import DataError
from matlang.graphs import PAPER_GRAPH6, Graph, from_graph6
from matlang.runtime import datasets


def features(g: Graph) -> np.ndarray:
    assert g.x is not None, f"{g.name} has no features"
    return g.x


needs_data = pytest.mark.skipif(
    not datasets.data_available(), reason="data folder not found (set MATLANG_DATA)"
)

# --------------------------------------------------------------------------- data root


def test_env_var_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path))
    assert datasets.data_root() == tmp_path


def test_env_var_not_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="MATLANG_DATA"):
        datasets.data_root()
    assert not datasets.data_available()


def test_no_folder_names_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MATLANG_DATA", raising=False)
    monkeypatch.setattr(datasets, "_candidates", lambda: [tmp_path / "a", tmp_path / "b"])
    with pytest.raises(DataError, match="set MATLANG_DATA"):
        datasets.data_root()


def test_default_is_the_shipped_data_wherever_the_cwd_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without MATLANG_DATA the datasets come with matlang: the repository's data/ (this checkout
    is an editable install) whatever the working folder, and a data folder beside the cwd is not
    read any more."""
    monkeypatch.delenv("MATLANG_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    root = Path(__file__).resolve().parents[2] / "data"
    assert datasets.data_root() == root
    assert (root / "README.md").is_file() and datasets.data_available("brec")
    assert len(datasets.load_tu("mutag").graphs) == 188


def test_missing_file_and_unknown_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path))
    with pytest.raises(DataError, match="missing dataset file .*graph8c.g6"):
        datasets.load_graph8c()
    with pytest.raises(DataError, match="no dataset 'nope'; known: graph8c"):
        datasets.load("nope")
    with pytest.raises(DataError, match="no TU dataset"):
        datasets.load_tu("imdb")


# --------------------------------------------------------------------------- malformed files


def test_bad_graph6_line_names_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path))
    (tmp_path / "sr25").mkdir()
    (tmp_path / "sr25" / "sr251256.g6").write_text("IpDK?C@OG\nIpDK?C@\n")
    with pytest.raises(DataError, match=r"sr251256.g6: line 2: .*needs 8 data characters"):
        datasets.load_sr25()


def test_graph6_fast_path_matches_checked_parser(tmp_path: Path) -> None:
    path = tmp_path / "paper.g6"
    path.write_text(">>graph6<<" + "\n".join(PAPER_GRAPH6.values()) + "\n\n")
    graphs = datasets.load_graph6(path)
    assert [g.name for g in graphs] == [f"paper:{i}" for i in range(6)]
    for g, s in zip(graphs, PAPER_GRAPH6.values(), strict=True):
        assert np.array_equal(g.adjacency, from_graph6(s).adjacency)
        assert not g.adjacency.flags.writeable


def write_exp(root: Path, edge_index: np.ndarray, **override: np.ndarray) -> None:
    """A two-graph EXP-shaped file: triangles on 3 nodes unless ``edge_index`` says otherwise."""
    arrays: dict[str, Any] = {
        "num_nodes": np.array([3, 3]),
        "node_ptr": np.array([0, 3, 6]),
        "x": np.ones((6, 1), dtype=np.int64),
        "edge_index": edge_index,
        "edge_ptr": np.array([0, 6, edge_index.shape[1]]),
        "y": np.array([1, 0]),
        "pairs": np.array([[0, 1]]),
        "pair_id": np.array([0, 0]),
        "train_idx": np.array([0]),
        "val_idx": np.array([1]),
        "test_idx": np.array([1]),
    }
    arrays.update(override)
    (root / "exp").mkdir(exist_ok=True)
    np.savez(root / "exp" / "exp.npz", **arrays)


TRIANGLE = np.array([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])


def test_exp_validation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path))
    write_exp(tmp_path, np.concatenate([TRIANGLE, TRIANGLE], 1))
    data = datasets.load_exp()
    assert [g.num_edges for g in data.graphs] == [3, 3]
    assert features(data.graphs[1]).shape == (3, 1)
    # Graph 1 misses the reverse of its edge (0, 1).
    write_exp(tmp_path, np.concatenate([TRIANGLE, TRIANGLE[:, 1:]], 1))
    with pytest.raises(DataError, match=r"exp.npz: graph 1: .*not symmetric"):
        datasets.load_exp()
    # Graph 1 refers to node 5 of 3.
    bad = TRIANGLE.copy()
    bad[0, 0] = 5
    write_exp(tmp_path, np.concatenate([TRIANGLE, bad], 1))
    with pytest.raises(DataError, match=r"exp.npz: graph 1: .*node 5"):
        datasets.load_exp()
    write_exp(tmp_path, np.concatenate([TRIANGLE, TRIANGLE], 1), node_ptr=np.array([0, 2, 6]))
    with pytest.raises(DataError, match="graph 0: node_ptr disagrees"):
        datasets.load_exp()
    write_exp(tmp_path, np.concatenate([TRIANGLE, TRIANGLE], 1), train_idx=np.array([7]))
    with pytest.raises(DataError, match="train_idx has entries outside 0..1"):
        datasets.load_exp()
    (tmp_path / "exp" / "exp.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="cannot read as .npz"):
        datasets.load_exp()
    np.savez(tmp_path / "exp" / "exp.npz", x=np.zeros((1, 1)))
    with pytest.raises(DataError, match="missing array 'num_nodes'"):
        datasets.load_exp()


# --------------------------------------------------------------------------- README counts


@needs_data
def test_graph8c_counts() -> None:
    graphs = datasets.load_graph8c()
    assert len(graphs) == 11117
    assert {g.num_nodes for g in graphs} == {8}
    edges = np.array([g.num_edges for g in graphs])
    assert (edges.min(), edges.max()) == (7, 28)
    assert edges.mean() == pytest.approx(14.412, abs=1e-3)


@needs_data
def test_sr25_counts() -> None:
    graphs = datasets.load_sr25()
    assert len(graphs) == 15
    for g in graphs:
        a = g.adjacency
        assert g.num_nodes == 25 and g.num_edges == 150
        assert set(a.sum(1).tolist()) == {12}
        # srg(25,12,5,6): adjacent pairs share 5 neighbours, non-adjacent ones 6.
        common = a @ a
        off = ~np.eye(25, dtype=bool)
        assert set(common[(a == 1) & off].tolist()) == {5}
        assert set(common[(a == 0) & off].tolist()) == {6}


@needs_data
def test_exp_counts() -> None:
    data = datasets.load_exp()
    assert len(data.graphs) == 1200
    nodes = np.array([g.num_nodes for g in data.graphs])
    edges = np.array([g.num_edges for g in data.graphs])
    assert (nodes.min(), nodes.max()) == (32, 64)
    assert nodes.mean() == pytest.approx(44.447, abs=1e-3)
    assert edges.mean() == pytest.approx(55.108, abs=1e-3)
    assert sum(g.num_nodes for g in data.graphs) == 53336
    assert np.array_equal(data.pairs, np.arange(1200).reshape(600, 2))
    assert np.array_equal(data.y, np.tile([1, 0], 600))
    assert np.array_equal(data.val_idx, np.arange(200))
    assert np.array_equal(data.test_idx, np.arange(200, 400))
    assert np.array_equal(data.train_idx, np.arange(400, 1200))
    assert np.array_equal(nodes[0::2], nodes[1::2]) and np.array_equal(edges[0::2], edges[1::2])
    assert all(features(g).shape == (g.num_nodes, 1) for g in data.graphs)


@needs_data
def test_randomgraph_counts() -> None:
    data = datasets.load_randomgraph()
    assert len(data.graphs) == 5000
    assert {g.num_nodes for g in data.graphs} == {10}
    edges = np.array([g.num_edges for g in data.graphs])
    assert (edges.min(), edges.max()) == (5, 24)
    assert edges.mean() == pytest.approx(13.497, abs=1e-3)
    sizes = (len(data.train_idx), len(data.val_idx), len(data.test_idx))
    assert sizes == (1500, 1000, 2500)
    together = np.concatenate([data.train_idx, data.val_idx, data.test_idx])
    assert np.array_equal(np.sort(together), np.arange(5000))
    assert set(data.labels) == set(datasets.RANDOMGRAPH_LABELS)
    # The README says the triangle label is exactly tr(A^3)/6.
    tri = np.array([np.trace(np.linalg.matrix_power(g.adjacency, 3)) / 6 for g in data.graphs])
    assert np.array_equal(tri, data.labels["count_triangle"])
    isolated = sum(bool((g.adjacency.sum(1) == 0).any()) for g in data.graphs)
    assert isolated == 1586


@needs_data
def test_twodgrid30_counts() -> None:
    data = datasets.load_twodgrid30()
    g = data.graph
    assert (g.num_nodes, g.num_edges) == (900, 1740)
    assert set(g.adjacency.sum(1).tolist()) == {2, 3, 4}
    assert g.adjacency[0, 1] == 1 and g.adjacency[0, 30] == 1  # node id 30*row + col
    assert len(data.x) == len(data.y) == 3
    assert all(x.shape == (900, 1) for x in data.x) and all(y.shape == (900, 3) for y in data.y)
    assert data.mask.sum() == 676
    inner = np.zeros((30, 30))
    inner[2:28, 2:28] = 1
    assert np.array_equal(data.mask.reshape(30, 30), inner)
    assert dict(data.split) == {"train": 0, "test": 1, "val": 2}
    assert np.array_equal(features(data.instance(1)), data.x[1])


# (name, graphs, mean nodes, mean edges, label counts, test-fold size, never tested)
TU_TABLE = [
    ("mutag", 188, 17.931, 19.793, [63, 125], 18, {0, 13, 37, 114, 161, 163, 169, 187}),
    ("proteins", 1113, 39.058, 72.816, [663, 450], 111, {25, 314, 454}),
    ("enzymes", 600, 32.633, 62.137, [100] * 6, 60, set()),
    ("ptc", 344, 25.558, 25.962, [192, 152], 34, {14, 171, 235, 267}),
]


@needs_data
@pytest.mark.parametrize("name,count,nodes,edges,labels,fold,untested", TU_TABLE)
def test_tu_counts(
    name: str,
    count: int,
    nodes: float,
    edges: float,
    labels: list[int],
    fold: int,
    untested: set[int],
) -> None:
    data = datasets.load_tu(name)
    assert len(data.graphs) == count
    assert np.mean([g.num_nodes for g in data.graphs]) == pytest.approx(nodes, abs=6e-4)
    assert np.mean([g.num_edges for g in data.graphs]) == pytest.approx(edges, abs=6e-4)
    assert np.bincount(data.y).tolist() == labels
    assert len(data.folds) == 10
    tested = np.concatenate([test for _, test in data.folds])
    assert all(len(test) == fold for _, test in data.folds)
    assert len(np.unique(tested)) == len(tested) == 10 * fold
    assert set(range(count)) - set(tested.tolist()) == untested
    assert all(g.num_edges > 0 for g in data.graphs)


@needs_data
def test_tu_feature_columns() -> None:
    assert features(datasets.load_tu("proteins").graphs[0]).shape[1] == 3
    assert features(datasets.load_tu("proteins", continuous=True).graphs[0]).shape[1] == 32
    assert features(datasets.load_tu("enzymes", continuous=True).graphs[0]).shape[1] == 21
    mutag = datasets.load_tu("mutag")
    assert features(mutag.graphs[0]).shape[1] == 7 and mutag.edge_attr is not None
    assert features(datasets.load_tu("ptc").graphs[0]).shape[1] == 19


@needs_data
def test_paper_pairs_file_matches_builtin() -> None:
    graphs = datasets.load_paper_pairs()
    assert [g.name for g in graphs] == list(PAPER_GRAPH6)
    for g, text in zip(graphs, PAPER_GRAPH6.values(), strict=True):
        assert np.array_equal(g.adjacency, from_graph6(text).adjacency)


@needs_data
def test_registry_loads_everything() -> None:
    assert set(datasets.DATASETS) >= {"graph8c", "sr25", "exp", "randomgraph", "twodgrid30"}
    assert set(datasets.DATASETS) >= {"mutag", "proteins", "enzymes", "ptc", "paper_pairs"}
    for name in datasets.DATASETS:
        assert datasets.data_available(name)
    assert len(datasets.load("sr25")) == 15
    assert datasets.load("tu/mutag").name == "mutag"
