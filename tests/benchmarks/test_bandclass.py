"""Table 3's planar-graph classification (``matlang bench bandclass``): the generated graphs
follow the authors' procedure, the cache gives back what was generated, and the bench writes a
result file the report's Classify column reads."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from benchmarks.paper import bandclass
from benchmarks.paper.bandclass import (
    class_frequency,
    load_bandclass,
    make_bandclass,
    stripes,
    voronoi_cells,
)
from matlang.errors import DataError


def test_graphs_are_planar_connected_and_come_in_pairs_of_classes() -> None:
    items = make_bandclass(6, seed=3)
    assert [int(it.y[0]) for it in items] == [1, 0, 1, 0, 1, 0]
    for it in items:
        assert it.x.shape == (200, 1) and np.all(np.abs(it.x) <= 1.0)
        u, v = it.edge_index
        assert not np.any(u == v)
        assert set(zip(u.tolist(), v.tolist())) == set(zip(v.tolist(), u.tolist()))  # symmetric
        g = nx.Graph(list(zip(u.tolist(), v.tolist())))
        assert g.number_of_nodes() == 200 and nx.is_connected(g) and nx.check_planarity(g)[0]
        f = it.frequency
        if it.y[0] == 1:
            assert 2 <= f <= 2.5 or 4 <= f <= 4.5
        else:
            assert 1 <= f < 1.9 or 2.6 < f < 3.9 or 4.6 < f <= 5
    again = make_bandclass(6, seed=3)  # a seed is a draw
    assert all(np.array_equal(a.edge_index, b.edge_index) for a, b in zip(items, again))
    other = make_bandclass(6, seed=4)
    assert not np.array_equal(items[0].edge_index, other[0].edge_index)
    with pytest.raises(DataError, match="even number"):
        make_bandclass(5)


def test_class_frequencies_cover_their_bands() -> None:
    rng = np.random.default_rng(0)
    ones = np.array([class_frequency(1, rng) for _ in range(4000)])
    zeros = np.array([class_frequency(0, rng) for _ in range(4000)])
    assert 0.45 < np.mean(ones < 3) < 0.55  # the two bands of class 1 at even odds
    assert ones.min() >= 2 and ones.max() <= 4.5 and not np.any((ones > 2.5) & (ones < 4))
    inside = ((zeros >= 1.9) & (zeros <= 2.6)) | ((zeros >= 3.9) & (zeros <= 4.6))
    assert zeros.min() >= 1 and zeros.max() <= 5 and not inside.any()


def test_stripes_are_the_sinusoid_and_cells_the_nearest_seed() -> None:
    # no rotation, no shift: the window's columns are those of the 200-wide sinusoid's middle
    window = stripes(3.0, 0.0, 0)
    x = np.arange(50, 150)
    np.testing.assert_allclose(window[7], np.sin(x / 200 * 4 * 3.0 * np.pi), atol=1e-9)
    rng = np.random.default_rng(1)
    seeds = np.stack([rng.integers(0, 30, 40), rng.integers(0, 30, 40)], 1)
    cells = voronoi_cells(30, seeds)
    rows, cols = np.mgrid[0:30, 0:30]
    d2 = (rows[..., None] - seeds[:, 0]) ** 2 + (cols[..., None] - seeds[:, 1]) ** 2
    mine = np.take_along_axis(d2, cells[..., None], -1)[..., 0]
    assert np.array_equal(mine, d2.min(-1))  # every pixel in a nearest seed's cell


def test_the_cache_gives_back_what_was_generated(tmp_path: Path) -> None:
    made = load_bandclass(4, seed=2, cache=tmp_path)
    (path,) = tmp_path.glob("bandclass-4x200-seed2-*.npz")
    read = load_bandclass(4, seed=2, cache=tmp_path)
    for a, b in zip(made, read, strict=True):
        assert np.array_equal(a.x, b.x) and np.array_equal(a.edge_index, b.edge_index)
        assert a.y.tolist() == b.y.tolist() and a.frequency == b.frequency
    path.write_bytes(b"not a numpy file")  # broken: generated again, not an error
    again = load_bandclass(4, seed=2, cache=tmp_path)
    assert np.array_equal(again[3].edge_index, made[3].edge_index)
    splits = bandclass.bandclass_splits(10, seed=2, cache=None)
    assert [len(splits[s]) for s in ("train", "val", "test")] == [6, 2, 2]


def test_bench_bandclass_writes_a_file_the_report_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.paper.report import load_results, table3
    from matlang.cli import main

    monkeypatch.setattr(bandclass, "CACHE", tmp_path / "cache")
    out = tmp_path / "out"
    code = main(
        ["bench", "bandclass", "--model", "mlp", "--graphs", "20", "--epochs", "2",
         "--out", str(out), "--json", "--no-progress"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    path = out / "bandclass-mlp.graphs20.json"  # not the protocol's 5,000 graphs: a variant
    data = json.loads(path.read_text())
    assert data["data"]["sizes"] == {"train": 12, "val": 4, "test": 4}
    assert data["config"]["data"] == {"graphs": 20, "data_seed": 0}
    acc = data["median_test_accuracy"]
    assert acc == summary["median_test_accuracy"] and 4 * acc == round(4 * acc)
    assert list((tmp_path / "cache").glob("bandclass-20x200-seed0-*.npz"))
    # under the protocol's name, the report's Classify column reads it
    results = tmp_path / "results"
    results.mkdir()
    (results / "bandclass-mlp.json").write_text(path.read_text())
    md, used = table3(load_results(results))
    row = next(ln for ln in md.splitlines() if ln.startswith("| MLP |"))
    assert row.split(" | ")[-1].startswith(f"{100 * acc:.1f}%") and row.endswith("/ 50.0% |")
    assert [r.path.name for r in used] == ["bandclass-mlp.json"]
