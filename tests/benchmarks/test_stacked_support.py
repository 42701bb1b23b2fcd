"""MLP, GCN, ChebNet and GAT seeds trained together (benchmarks.paper.stacked_support) against
the same seeds one at a time: the same outputs, the same gradients, the same training to float
rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks.paper.models import counting_features, make_model
from benchmarks.paper.stacked import run_seeds_stacked, stack_models
from benchmarks.paper.stacked_support import StackedSupport
from benchmarks.paper.train import (
    GraphSet,
    TrainConfig,
    mean_loss,
    run_seeds,
    seed_everything,
    squared_error,
)
from matlang.errors import MatlangError
from matlang.runtime.generators import erdos_renyi

MODELS = ["mlp", "gcn", "chebnet", "gat"]


def _set(n: int, seed: int) -> GraphSet:
    """Graphs of 5–9 nodes (one with an isolated node), their edge counts as targets."""
    graphs = [erdos_renyi(5 + (k % 5), 0.45, seed=seed + k) for k in range(n)]
    graphs = counting_features(graphs)
    return GraphSet(graphs, torch.tensor([[float(g.num_edges)] for g in graphs]))


def _build(model: str, **options: object):  # noqa: ANN202 - a factory
    return lambda: make_model(model, 2, 1, protocol="count", options=options or None)


def _models(model: str, seeds: list[int], **options: object) -> list[torch.nn.Module]:
    out = []
    for s in seeds:
        seed_everything(s)
        out.append(_build(model, **options)())
    return out


@pytest.mark.parametrize("model", MODELS)
def test_stacked_outputs_equal_each_model(model: str) -> None:
    data = _set(14, 0)
    assert any(g.adjacency.sum(1).min() == 0 for g in data.graphs)  # an isolated node
    models = _models(model, [0, 5])
    stack = stack_models(models)
    assert isinstance(stack, StackedSupport)
    dense = stack.densify(data)
    out = stack.forward(dense.take(torch.arange(len(data))).expand(2))
    for k, net in enumerate(models):
        with torch.no_grad():
            ref = torch.cat([net(b) for b, _, _ in data.batches(5)])
        torch.testing.assert_close(out[k].detach(), ref, rtol=1e-5, atol=1e-4)
    assert not torch.allclose(out[0], out[1])  # two seeds, two models


@pytest.mark.parametrize("model", [*MODELS, "gnnml3"])
def test_stacked_gradients_equal_each_model(model: str) -> None:
    """Every parameter's gradient of every seed, stacked against each model alone (GNNML3's
    stacked form, :class:`~benchmarks.paper.stacked.StackedGNNML3`, too)."""
    data = _set(10, 3)
    models = _models(model, [1, 2])
    stack = stack_models(models)
    dense = stack.densify(data)
    batch = dense.take(torch.arange(len(data)).unsqueeze(0).expand(2, -1))
    torch.square(stack.forward(batch) - batch.y).sum().backward()
    whole = next(data.batches(len(data)))[0]
    for k, net in enumerate(models):
        net.zero_grad()
        squared_error(net(whole), data.y).backward()
        for name, p in net.named_parameters():
            grad = stack.params[name].grad
            assert grad is not None and p.grad is not None
            atol = 1e-5 if model == "gnnml3" else 1e-4
            torch.testing.assert_close(grad[k], p.grad, rtol=1e-4, atol=atol, msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_stacked_training_matches_seeds_one_at_a_time(model: str) -> None:
    train, val, test = _set(30, 0), _set(12, 100), _set(12, 200)
    cfg = TrainConfig(epochs=3, batch_size=4, progress=False)
    score = lambda net: mean_loss(net, test, squared_error)  # noqa: E731
    one, _ = run_seeds([0, 1], _build(model), train, val, squared_error, score, cfg)
    together, info = run_seeds_stacked([0, 1], _build(model), train, val, test, cfg)
    assert info["class"] == type(_build(model)()).__name__
    for a, b in zip(one, together, strict=True):
        assert (a.seed, a.epochs_run, a.best_epoch) == (b.seed, b.epochs_run, b.best_epoch)
        np.testing.assert_allclose(b.val_loss, a.val_loss, rtol=1e-3)
        assert b.metric == pytest.approx(a.metric, rel=1e-3)
        assert (a.stacked, b.stacked) == (1, 2)


def test_chebnet_supports_are_its_chebyshev_polynomials() -> None:
    """T_0 = I, T_1 = L̂, T_k = 2 L̂ T_{k−1} − T_{k−2}, against numpy on one graph's L̂ built
    from its own eigenvalues (an independent computation of the scaled Laplacian)."""
    data = _set(1, 7)
    (net,) = _models("chebnet", [0])
    dense = stack_models([net]).densify(data)
    a = data.graphs[0].adjacency.astype(float)
    n = a.shape[0]
    deg = a.sum(1)
    dis = np.where(deg > 0, 1 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
    lap = np.eye(n) - dis[:, None] * a * dis[None, :]
    lam = np.linalg.eigvalsh(lap).max()
    hat = 2 * lap / lam - np.eye(n)
    t = [np.eye(n), hat]
    while len(t) < net.config.K:
        t.append(2 * hat @ t[-1] - t[-2])
    got = dense.graphs.c[0, :n, :n].double().numpy()
    np.testing.assert_allclose(got, np.stack(t, -1), atol=1e-5)


def test_stacking_refuses_what_it_does_not_compute() -> None:
    cfg = TrainConfig(epochs=1, progress=False)
    data = _set(6, 0)
    with pytest.raises(MatlangError, match="not GIN"):
        run_seeds_stacked([0, 1], _build("gin"), data, data, data, cfg)
    with pytest.raises(MatlangError, match="stacked GCN training needs no dropout"):
        run_seeds_stacked([0], _build("gcn", dropout=0.5), data, data, data, cfg)
    with pytest.raises(MatlangError, match="the sum readout"):
        run_seeds_stacked([0], _build("mlp", readout=("mean",)), data, data, data, cfg)
    # batch-normalised readouts are not in any stacked forward (GNNML3's took them before)
    for model in ("gnnml3", "chebnet"):
        with pytest.raises(MatlangError, match="needs no readout normalisation"):
            run_seeds_stacked([0], _build(model, readout_norm=True), data, data, data, cfg)
