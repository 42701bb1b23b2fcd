"""Data-parallel training of the counting protocol: 2 processes (gloo on CPU) against one, on a
fixed seed, through ``fit``'s sharded batches — the test MSE (a continuous function of every
trained weight) agrees within rounding."""

from __future__ import annotations

import functools

import pytest

from benchmarks.paper.count import _in_group, count_test
from benchmarks.paper.distributed import launch
from benchmarks.paper.train import TrainConfig
from matlang.runtime.datasets import data_available


@pytest.mark.slow  # spawns 2 Python processes (~15 s alone, ~45 s on a loaded machine)
@pytest.mark.data
@pytest.mark.skipif(not data_available("randomgraph"), reason="no shared data folder")
def test_two_processes_count_like_one() -> None:
    from matlang.runtime.datasets import load_randomgraph

    data = load_randomgraph()
    # batch 7 over 30 graphs: shards of 3 and 4, and a last global batch of 2
    kw = dict(
        data=data, task="triangle", model="gin", seeds=[5], limit=30,
        train=TrainConfig(epochs=3, batch_size=7, stop_below=0.0, progress=False),
    )  # fmt: skip
    one = count_test(**kw)  # type: ignore[arg-type]
    two = launch(functools.partial(_in_group, **kw), 2)
    assert one.runs[0].epochs_run == two.runs[0].epochs_run == 3
    assert two.median_test_mse == pytest.approx(one.median_test_mse, rel=1e-4)
    assert two.runs[0].final_train_loss == pytest.approx(one.runs[0].final_train_loss, rel=1e-4)
    init = count_test(**{**kw, "train": TrainConfig(epochs=0, progress=False)})  # type: ignore[arg-type]
    assert init.median_test_mse != pytest.approx(one.median_test_mse, rel=1e-3)  # it trained
