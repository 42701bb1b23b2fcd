"""The models that read exact pattern counts (issue 53's learned row): ``gin+counts`` (GIN on
the bench's node features and ``PatternCounts`` of C3–C6 and K4 per node) and ``gsn+counts``
(the same counts as GSN-style structural identifiers, concatenated to every GIN layer's input:
``GINConfig.identifiers``), in ``bench count`` and ``bench tu``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import matlang
from benchmarks.paper.count import count_test, node_features_text
from benchmarks.paper.model_variants import COUNT_MODELS, COUNT_PATTERNS
from benchmarks.paper.models import make_model, model_configuration, pattern_count_features
from benchmarks.paper.train import TrainConfig
from matlang.errors import GraphError, MatlangError
from matlang.graphs import Graph, from_adjacency, named
from matlang.runtime.batch import Batch
from matlang.runtime.models import build_model
from tests.fixtures import counting_data

ONE_EPOCH = TrainConfig(epochs=1, batch_size=8, progress=False)


def _graphs() -> list[Graph]:
    rng = np.random.default_rng(5)
    out = []
    for n in (7, 9, 6):
        a = np.triu((rng.random((n, n)) < 0.55).astype(np.int64), 1)
        out.append(from_adjacency(a + a.T, x=np.ones((n, 1))))
    return [*out, from_adjacency(named("petersen").adjacency, x=np.ones((10, 1)))]


def test_identifiers_are_concatenated_to_every_layer_input() -> None:
    """``identifiers=k``: layer ``l`` computes ``MLP((A + (1 + ε) I) [h, s])`` with ``s`` the
    input's last ``k`` columns; ``0`` is plain GIN (the same widths and parameters)."""
    torch.manual_seed(0)
    net = build_model("gin", 5, 2, config={"hidden": 8, "layers": 3, "identifiers": 2})
    assert [c.mlp[0].in_features for c in net.convs] == [7, 10, 10]
    plain = build_model("gin", 5, 2, config={"hidden": 8, "layers": 3})
    assert [c.mlp[0].in_features for c in plain.convs] == [5, 8, 8]
    g = _graphs()[0]
    x = torch.randn(g.num_nodes, 5, dtype=torch.float64)
    b = Batch.from_graphs([Graph(g.adjacency, "g", x.numpy())], dtype=torch.float64)
    net = net.double()
    a = torch.tensor(np.array(g.adjacency), dtype=torch.float64)
    s, h = x[:, 3:], x
    for conv in net.convs:
        z = torch.cat([h, s], 1)
        h = torch.relu(conv.mlp(a @ z + (1 + conv.eps) * z))
    expected = net.head(h.sum(0, keepdim=True))
    torch.testing.assert_close(net(b), expected)


def test_identifiers_refusals() -> None:
    with pytest.raises(MatlangError, match="identifiers must be at least 0"):
        build_model("gin", 3, 1, config={"identifiers": -1})
    net = build_model("gin", 2, 1, config={"identifiers": 3})
    g = _graphs()[0]
    b = Batch.from_graphs([Graph(g.adjacency, "g", np.ones((g.num_nodes, 2)))])
    with pytest.raises(GraphError, match="last 3 input columns"):
        net(b)


def test_count_models_are_gin_variants() -> None:
    assert set(COUNT_MODELS) == {"gin+counts", "gsn+counts"}
    assert model_configuration("gin+counts", "count") == model_configuration("gin", "count")
    cfg = model_configuration("gsn+counts", "classify")
    assert cfg.identifiers == len(COUNT_PATTERNS) == 5  # type: ignore[attr-defined]
    net = make_model("gsn+counts", 7, 1, protocol="count")
    assert [c.mlp[0].in_features for c in net.convs] == [12, 67, 67, 67]


@pytest.mark.parametrize("scale", ["max", "log1p"])
def test_pattern_count_features_are_exact_counts(scale: str) -> None:
    graphs = _graphs()
    out = pattern_count_features(graphs, scale=scale)
    counts = np.array(
        [matlang.count(p, graphs, per="node") for p in COUNT_PATTERNS], dtype=object
    )  # (patterns, graphs, nodes)
    per_graph = [
        np.stack([np.asarray(counts[k][i], dtype=np.float64) for k in range(5)], 1)
        for i in range(len(graphs))
    ]
    top = np.concatenate(per_graph).max(0)
    assert top[:4].min() > 0  # every cycle occurs somewhere
    for g, new, c in zip(graphs, out, per_graph, strict=True):
        x = np.asarray(new.x)
        assert x.shape == (g.num_nodes, 6) and (x[:, 0] == 1).all()
        want = np.log1p(c) if scale == "log1p" else c / np.where(top > 0, top, 1)
        np.testing.assert_allclose(x[:, 1:], want, rtol=1e-12)
    petersen = np.asarray(out[-1].x)[:, 1:]
    if scale == "log1p":  # every node of the Petersen graph lies on six 5- and six 6-cycles
        np.testing.assert_allclose(petersen, np.log1p([[0, 0, 6, 6, 0]] * 10))


@pytest.mark.parametrize("model", ["gin+counts", "gsn+counts"])
def test_count_models_train_in_bench_count(model: str) -> None:
    data = counting_data(12)
    res = count_test(data, "triangle", model, seeds=[0], train=ONE_EPOCH)
    assert np.isfinite(res.median_test_mse)
    first = res.model["config"]
    assert first["identifiers"] == (5 if model == "gsn+counts" else 0)
    assert "C3, C4, C5, C6, K4" in node_features_text(model)
    assert node_features_text("gin") == "[1, degree / max degree]"


def test_count_models_in_bench_tu_read_log1p_counts() -> None:
    from benchmarks.paper.tu import build, model_choices, node_features

    assert {"gin+counts", "gsn+counts"} <= set(model_choices())
    a = named("petersen").adjacency
    (g,) = node_features("gsn+counts", [from_adjacency(a, x=np.ones((10, 1)))])
    np.testing.assert_allclose(np.asarray(g.x)[:, 1:], np.log1p([[0, 0, 6, 6, 0]] * 10))
    net = build("gsn+counts", 6, 2)
    assert net.config.identifiers == 5  # type: ignore[union-attr]
    assert build("gin+counts", 6, 2).config.identifiers == 0  # type: ignore[union-attr]
