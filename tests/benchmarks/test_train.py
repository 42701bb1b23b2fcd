"""The benchmarks' optimiser: fused Adam is the same update as torch's per-tensor Adam."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
import torch

from benchmarks.paper.models import make_model
from benchmarks.paper.train import (
    PLATEAU_MIN_LR,
    PLATEAU_PATIENCE,
    EpochBar,
    GraphSet,
    TrainConfig,
    adam,
    fit,
)
from matlang.errors import MatlangError
from matlang.graphs import named


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_adam_takes_the_per_tensor_steps(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    model = make_model("gnnml3", 2, 1, protocol="count").to(dtype)
    twin = copy.deepcopy(model)
    initial = [p.detach().clone() for p in model.parameters()]
    fast = adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    slow = torch.optim.Adam(twin.parameters(), lr=1e-2, weight_decay=1e-4, foreach=False)
    assert fast.defaults["fused"] is True
    gen = torch.Generator().manual_seed(1)
    for _ in range(5):
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            p.grad = torch.randn(p.shape, generator=gen, dtype=dtype)
            q.grad = p.grad.clone()
        fast.step()
        slow.step()
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for (name, p), q, p0 in zip(model.named_parameters(), twin.parameters(), initial, strict=True):
        torch.testing.assert_close(p, q, rtol=tol, atol=tol, msg=name)
        assert not torch.equal(p.detach(), p0), name  # every parameter took its steps


def test_adam_refuses_an_empty_parameter_list() -> None:
    with pytest.raises(ValueError, match="empty parameter list"):
        adam([], lr=1e-3)


class _Mean(torch.nn.Module):
    """The node count over 10, whatever its one weight: the validation loss never moves."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(()))

    def forward(self, b: Any) -> torch.Tensor:
        ones = torch.ones(b.num_nodes, 1)
        sums = torch.zeros(b.num_graphs, 1).index_add_(0, b.batch, ones)
        return self.w * 0.0 + sums / 10


def _noise_sets(seed: int) -> tuple[GraphSet, GraphSet]:
    g = torch.Generator().manual_seed(seed)
    graphs = [named("K4"), named("cycle5"), named("petersen")] * 4
    y = torch.randn(len(graphs), 1, generator=g)
    return GraphSet(graphs[:8], y[:8], "graph"), GraphSet(graphs[8:], y[8:], "graph")


def test_plateau_schedule_halves_the_rate_when_validation_stalls() -> None:
    """A model that cannot improve: the validation loss stalls at once, so with ``plateau`` the rate
    is halved every PLATEAU_PATIENCE + 1 epochs down to the floor, and ``constant`` keeps it."""
    train, val = _noise_sets(0)
    cfg = TrainConfig(epochs=60, lr=1e-2, batch_size=4, stop_below=0.0, progress=False)
    flat = fit(_Mean(), train, val, config=cfg)
    assert flat.lr_by_epoch == [1e-2] * 60
    res = fit(_Mean(), train, val, config=replace(cfg, lr_schedule="plateau"))
    lrs = res.lr_by_epoch
    assert lrs[0] == 1e-2 and len(lrs) == 60
    assert all(b <= a for a, b in zip(lrs, lrs[1:]))  # never raised
    drops = [b / a for a, b in zip(lrs, lrs[1:]) if b != a]
    assert drops and all(abs(r - 0.5) < 1e-12 for r in drops[:-1])
    assert lrs[-1] < 1e-2 / 4 and min(lrs) >= PLATEAU_MIN_LR
    assert lrs.index(lrs[-1]) > PLATEAU_PATIENCE  # not before the patience ran out


def test_plateau_schedule_needs_validation() -> None:
    train, _ = _noise_sets(1)
    with pytest.raises(MatlangError, match="validation"):
        fit(
            _Mean(),
            train,
            None,
            config=TrainConfig(epochs=2, lr_schedule="plateau", progress=False),
        )
    with pytest.raises(MatlangError, match="lr_schedule must be one of"):
        TrainConfig(lr_schedule="cosine")  # type: ignore[arg-type]


def test_the_schedule_is_recorded_only_when_not_the_papers() -> None:
    """A result file records ``lr_schedule`` for ``plateau`` only: files written before the
    option (constant rate) keep comparing equal for ``--append``."""
    import argparse

    from benchmarks.paper.common import train_record

    base = {"epochs": 5, "lr": 1e-3, "weight_decay": 0.0, "batch_size": 4, "stop_below": 1e-4}
    old = train_record(argparse.Namespace(**base))  # a parser without the option
    constant = train_record(argparse.Namespace(**base, lr_schedule="constant"))
    plateau = train_record(argparse.Namespace(**base, lr_schedule="plateau"))
    assert old == constant and "lr_schedule" not in constant
    assert plateau["lr_schedule"].startswith("plateau: halved after 10 epochs")


class _SizeFeatures(torch.nn.Module):
    """Graph-level features [n, n², n³] (n the graph's node count) into a linear head."""

    def __init__(self, head: torch.nn.Module, scale: float = 1.0) -> None:
        super().__init__()
        self.head = head
        self.scale = scale

    def forward(self, batch: Any) -> torch.Tensor:
        n = (batch.ptr[1:] - batch.ptr[:-1]).to(torch.float64).reshape(-1, 1)
        return self.head(self.scale * torch.cat([n, n**2, n**3], 1).to(self.head_dtype))

    @property
    def head_dtype(self) -> torch.dtype:
        return next(self.head.parameters()).dtype


def _sized(sizes: list[int]) -> GraphSet:
    from matlang.graphs import Graph

    graphs = [Graph(torch.zeros(k, k).numpy(), f"g{k}") for k in sizes]
    n = torch.tensor(sizes, dtype=torch.float64)
    return GraphSet(graphs, (2.0 + 3 * n - 0.5 * n**2).to(torch.float32))


def test_fit_readout_solves_least_squares_into_the_head() -> None:
    from benchmarks.paper.train import fit_readout, readout_layer

    train, val = _sized([1, 2, 3, 4, 5, 7, 9]), _sized([6, 8])
    model = _SizeFeatures(torch.nn.Linear(3, 1).double())
    info = fit_readout(model, train, val)
    # y = 2 + 3n − n²/2 exactly: the plain least-squares solution, read back from the layer
    assert info["ridge"] == 0.0 and info["val_mse"] < 1e-20 and info["features"] == 3
    w = model.head.weight.detach().reshape(-1).tolist()
    assert w == pytest.approx([3.0, -0.5, 0.0], abs=1e-9)
    assert float(model.head.bias.detach()) == pytest.approx(2.0, abs=1e-9)
    # the head's last Linear when the head is a Sequential ending in one; else a clear error
    seq = _SizeFeatures(torch.nn.Sequential(torch.nn.Identity(), torch.nn.Linear(3, 1)))
    assert readout_layer(seq) is seq.head[1]
    with pytest.raises(MatlangError, match="no linear readout"):
        readout_layer(_SizeFeatures(torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.ReLU())))
    # features that are not finite are refused, naming where
    bad = _SizeFeatures(torch.nn.Linear(3, 1).double(), scale=float("inf"))
    with pytest.raises(MatlangError, match="not finite on the training graphs"):
        fit_readout(bad, train, val)


def test_heartbeat_writes_how_far_training_got(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """MATLANG_HEARTBEAT=S: a line on stderr every S seconds even without a progress bar (the
    logs of .ci/gpu-runs), naming the epoch, the epochs in all and the seconds an epoch."""
    train, val = _noise_sets(2)
    cfg = TrainConfig(epochs=3, batch_size=4, stop_below=0.0, progress=False)
    fit(_Mean(), train, val, config=cfg, desc="noise")
    assert capsys.readouterr().err == ""  # unset: nothing
    monkeypatch.setenv("MATLANG_HEARTBEAT", "1e-9")  # every epoch
    fit(_Mean(), train, val, config=cfg, desc="noise")
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(",")[0] for ln in lines] == [f"noise: epoch {k} of 3" for k in (1, 2, 3)]
    assert all(" s an epoch, " in ln and "(train=" in ln and " val=" in ln for ln in lines)
    monkeypatch.setenv("MATLANG_HEARTBEAT", "3600")  # not yet due: no line
    fit(_Mean(), train, val, config=cfg, desc="noise")
    assert capsys.readouterr().err == ""
    for bad in ("soon", "0", "-5", "inf"):
        monkeypatch.setenv("MATLANG_HEARTBEAT", bad)
        with pytest.raises(MatlangError, match=f"MATLANG_HEARTBEAT='{bad}': give seconds"):
            EpochBar(2, "x", False)
