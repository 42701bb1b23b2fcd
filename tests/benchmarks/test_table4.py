"""Table 4's code path (ZINC-12K, MNIST-75) on a synthetic stand-in in PyG's format."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from benchmarks.paper import table4  # noqa: E402
from matlang.errors import DataError  # noqa: E402


def _item(g: nx.Graph, x: np.ndarray, y: float, *, directed: bool = False) -> SimpleNamespace:
    """One graph as PyG holds it: ``x``, ``edge_index`` (both directions unless ``directed``),
    ``y``."""
    edges = list(g.edges())
    pairs = edges if directed else edges + [(b, a) for a, b in edges]
    ei = torch.tensor(np.array(pairs, dtype=np.int64).T.reshape(2, -1))
    return SimpleNamespace(x=torch.tensor(x), edge_index=ei, y=torch.tensor([y]))


def _zinc(n_graphs: int, seed: int) -> list[SimpleNamespace]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_graphs):
        g = nx.gnm_random_graph(int(rng.integers(5, 9)), 7, seed=seed * 100 + k)
        atoms = rng.integers(0, table4.ZINC_ATOM_TYPES, size=(g.number_of_nodes(), 1))
        out.append(_item(g, atoms, float(rng.normal())))
    return out


def _mnist(n_graphs: int, seed: int) -> list[SimpleNamespace]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_graphs):
        g = nx.random_geometric_graph(12, 0.45, seed=seed * 100 + k)
        intensity = rng.uniform(0, 2, size=(12, 1)).astype(np.float32)
        out.append(_item(g, intensity, float(k % 10), directed=True))
    return out


def test_graphs_match_networkx_and_the_features_are_the_authors() -> None:
    items = _zinc(4, 0)
    graphs, y, _ = table4.to_graphs(items, "zinc")
    for item, g in zip(items, graphs, strict=True):
        ref = nx.Graph()
        ref.add_nodes_from(range(item.x.shape[0]))
        ref.add_edges_from(item.edge_index.T.tolist())
        np.testing.assert_array_equal(
            g.adjacency, nx.to_numpy_array(ref, nodelist=range(g.num_nodes))
        )
        np.testing.assert_array_equal(np.asarray(g.x).argmax(1), item.x[:, 0].numpy())
        assert np.asarray(g.x).sum() == g.num_nodes  # one-hot
    assert y.shape == (4, 1) and float(y[2]) == pytest.approx(float(items[2].y))
    # MNIST: directed k-NN edges symmetrised; [intensity, degree] over the training maxima
    train = _mnist(3, 1)
    graphs, y, scale = table4.to_graphs(train, "mnist75")
    und = [nx.Graph(nx.DiGraph(it.edge_index.T.tolist())) for it in train]
    raw = np.concatenate(
        [
            np.stack([it.x[:, 0].numpy(), [u.degree(i) if i in u else 0 for i in range(12)]], 1)
            for it, u in zip(train, und, strict=True)
        ]
    )
    np.testing.assert_allclose(scale, raw.max(0))
    np.testing.assert_allclose(np.concatenate([np.asarray(g.x) for g in graphs]), raw / raw.max(0))
    assert y.dtype == torch.int64
    test_graphs, _, _ = table4.to_graphs(_mnist(2, 2), "mnist75", scale=scale)
    assert np.asarray(test_graphs[0].x)[:, 1].max() <= 12 / scale[1]


def test_bad_input_is_a_data_error() -> None:
    bad = SimpleNamespace(
        x=torch.zeros(3, 1), edge_index=torch.tensor([[0, 5], [1, 0]]), y=torch.zeros(1)
    )
    with pytest.raises(DataError, match="zinc graph 0: edge_index names a node outside 0..2"):
        table4.to_graphs([bad], "zinc")
    atom = SimpleNamespace(
        x=torch.full((2, 1), 99), edge_index=torch.tensor([[0], [1]]), y=torch.zeros(1)
    )
    with pytest.raises(DataError, match="atom types"):
        table4.to_graphs([atom], "zinc")


def test_without_pyg_the_loader_says_what_to_install() -> None:
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        with pytest.raises(DataError, match="install torch_geometric"):
            table4.pyg_splits("zinc", "/nonexistent")
    else:
        pytest.skip("torch_geometric installed: the loader would download")


@pytest.mark.parametrize(("dataset", "make"), [("zinc", _zinc), ("mnist75", _mnist)])
@pytest.mark.parametrize("model", ["gnnml3", "gin"])
def test_one_epoch_on_the_stand_in(tmp_path: Path, dataset: str, make: object, model: str) -> None:
    import argparse

    splits = {s: make(n, seed) for s, n, seed in (("train", 12, 0), ("val", 4, 1), ("test", 4, 2))}  # type: ignore[operator]
    p = argparse.ArgumentParser()
    table4.add_arguments(p, dataset)
    args = p.parse_args(
        ["--model", model, "--epochs", "1", "--out", str(tmp_path), "--json", "--no-progress"]
    )
    args.bench = dataset
    assert table4.bench(args, splits=splits) == 0
    rec = json.loads((tmp_path / f"{dataset}-{model}.json").read_text())
    metric = "test_mae" if dataset == "zinc" else "test_accuracy"
    assert rec["data"]["sizes"] == {"train": 12, "val": 4, "test": 4}
    assert rec["config"]["epochs_max"] == 1 and rec["config"]["batch_size"] == 64
    (run,) = rec["runs"]
    assert np.isfinite(run[metric])
    if dataset == "mnist75":
        assert 0.0 <= run[metric] <= 1.0
    if model == "gnnml3":
        want = "adjacency" if dataset == "zinc" else "normalized_laplacian"
        assert rec["model_info"]["config"]["support"]["basis"] == want
        assert 27_000 <= rec["model_info"]["parameters"] <= 34_000


@pytest.mark.parametrize("dataset", ["zinc", "mnist75"])
def test_matlang_bench_runs_table4(
    tmp_path: Path, dataset: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``matlang bench zinc|mnist75`` reaches :func:`table4.bench` (the download replaced by
    the stand-in) and writes the same file as ``python -m benchmarks.paper.table4``."""
    from matlang.cli import main

    make = _zinc if dataset == "zinc" else _mnist
    splits = {s: make(n, seed) for s, n, seed in (("train", 8, 0), ("val", 4, 1), ("test", 4, 2))}
    roots = []

    def fake_splits(name: str, root: str) -> dict[str, list[SimpleNamespace]]:
        roots.append((name, root))
        return splits

    monkeypatch.setattr(table4, "pyg_splits", fake_splits)
    argv = ["--model", "GIN", "--epochs", "1", "--root", str(tmp_path / "pyg"), "--json"]
    assert main(["bench", dataset, *argv, "--out", str(tmp_path / "cli")]) == 0
    assert roots == [(dataset, str(tmp_path / "pyg"))]
    rec = json.loads((tmp_path / "cli" / f"{dataset}-gin.json").read_text())
    assert rec["bench"] == dataset and rec["data"]["sizes"] == {"train": 8, "val": 4, "test": 4}
    assert rec["config"]["epochs_max"] == 1
    assert table4.main([dataset, *argv, "--out", str(tmp_path / "module")]) == 0
    same = json.loads((tmp_path / "module" / f"{dataset}-gin.json").read_text())
    metric = "test_mae" if dataset == "zinc" else "test_accuracy"
    assert same["runs"][0][metric] == rec["runs"][0][metric]  # one seed, the same training
    capsys.readouterr()
    for run in (lambda a: main(["bench", *a]), table4.main):
        with pytest.raises(SystemExit) as e:
            run([dataset, "--help"])
        assert e.value.code == 0
        assert "--root" in capsys.readouterr().out
