"""``bench filter|count|exp-classify --device``: the same option as ``bench tu``'s.
On the CPU it trains exactly what a run without it trains; a device this machine lacks is
refused before any training; on a GPU (when one is lent) the seeds train there and record it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks.paper import train
from matlang.cli import main
from matlang.runtime.datasets import data_available

needs_grid = pytest.mark.skipif(not data_available("twodgrid30"), reason="no shared data folder")


def _filter(out: Path, *extra: str, model: str = "gcn") -> list[str]:
    return ["bench", "filter", "--task", "low", "--model", model, "--epochs", "2",
            "--seeds", "2", "--out", str(out), "--no-progress", "--json", *extra]  # fmt: skip


def _without_time(rec: dict) -> dict:  # type: ignore[type-arg]
    # provenance (the diff's hash differs when the tree changes between two runs): no result
    drop = {"wall_seconds", "finished", "command", "versions", "git_commit", "dirty"}
    drop |= {"git_diff_sha256"}
    runs = [{k: v for k, v in r.items() if k != "seconds"} for r in rec["runs"]]
    return {**{k: v for k, v in rec.items() if k not in drop}, "runs": runs}


@pytest.mark.data
@needs_grid
@pytest.mark.parametrize("model", ["gnnml3"])
def test_filter_device_cpu_trains_what_no_device_trains(tmp_path: Path, model: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(_filter(tmp_path / "plain", model=model)) == 0
    assert main(_filter(tmp_path / "cpu", "--device", "cpu", model=model)) == 0
    capsys.readouterr()
    name = f"filter-twodgrid30-low-{model}.json"
    plain = json.loads((tmp_path / "plain" / name).read_text())
    cpu = json.loads((tmp_path / "cpu" / name).read_text())
    assert [r["device"] for r in cpu["runs"]] == ["cpu", "cpu"]
    assert _without_time(cpu) == _without_time(plain)  # every number, bit for bit
    assert cpu["per_seed"][0] != cpu["per_seed"][1]  # two seeds that did train differently
    assert "device" not in cpu["config"]  # CPU and GPU seeds of one cell still --append


@pytest.mark.data
@needs_grid
def test_filter_refuses_a_device_this_machine_lacks_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("fit called: the device should have been refused before")

    monkeypatch.setattr(train, "fit", no_training)
    if not torch.cuda.is_available():
        assert main(_filter(tmp_path, "--device", "cuda")) == 1
        assert "--device cuda: torch sees no CUDA device" in capsys.readouterr().err
    assert main(_filter(tmp_path, "--device", "cuda:99")) == 1
    err = capsys.readouterr().err
    assert "--device cuda:99" in err and ("no CUDA device" in err or "CUDA device(s)" in err)
    assert main(_filter(tmp_path, "--device", "tpu")) == 1
    assert "--device takes cpu, cuda or cuda:K, got 'tpu'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no file written


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.data
@needs_grid
@pytest.mark.parametrize("model", ["chebnet", "gnnml3"])
def test_cuda_filter_trains_what_the_cpu_does(tmp_path: Path, model: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two epochs of one seed on the GPU: the CPU's test R² within float32 rounding (TF32 off),
    the run recording the GPU."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert main(_filter(tmp_path / "cpu", "--seeds", "1", model=model)) == 0
    assert main(_filter(tmp_path / "gpu", "--seeds", "1", "--device", "cuda", model=model)) == 0
    name = f"filter-twodgrid30-low-{model}.json"
    cpu = json.loads((tmp_path / "cpu" / name).read_text())
    gpu = json.loads((tmp_path / "gpu" / name).read_text())
    assert gpu["runs"][0]["device"] == f"{torch.cuda.get_device_name(0)} (cuda)"
    assert gpu["per_seed"] == pytest.approx(cpu["per_seed"], abs=1e-4)


def _count(out: Path, *extra: str) -> list[str]:
    return ["bench", "count", "--task", "star", "--model", "gin", "--epochs", "2",
            "--seeds", "2", "--limit", "40", "--out", str(out), "--no-progress", "--json",
            *extra]  # fmt: skip


@pytest.mark.data
@pytest.mark.skipif(not data_available("randomgraph"), reason="no shared data folder")
def test_count_device_cpu_trains_what_no_device_trains(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(_count(tmp_path / "plain")) == 0
    assert main(_count(tmp_path / "cpu", "--device", "cpu")) == 0
    capsys.readouterr()
    name = "count-randomgraph-star-gin.limit40.json"
    plain = json.loads((tmp_path / "plain" / name).read_text())
    cpu = json.loads((tmp_path / "cpu" / name).read_text())
    assert [r["device"] for r in cpu["runs"]] == ["cpu", "cpu"]
    assert _without_time(cpu) == _without_time(plain)
    assert cpu["per_seed"][0] != cpu["per_seed"][1]
    assert "device" not in cpu["config"]


def test_count_refuses_a_device_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Refused before the data is read: no CUDA here; and where torch sees a GPU, stacked
    seeds and data-parallel processes, which train on the CPU only."""
    from matlang.runtime import datasets

    def nothing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read: the device should have been refused before")

    monkeypatch.setattr(datasets, "load_randomgraph", nothing)
    monkeypatch.setattr(train, "fit", nothing)
    if not torch.cuda.is_available():
        assert main(_count(tmp_path, "--device", "cuda")) == 1
        assert "--device cuda: torch sees no CUDA device" in capsys.readouterr().err
    assert main(_count(tmp_path, "--device", "tpu")) == 1
    assert "--device takes cpu, cuda or cuda:K, got 'tpu'" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    stacked = ["--device", "cuda", "--stack-seeds", "2", "--model", "gnnml3"]
    assert main(_count(tmp_path, *stacked)) == 1
    err = capsys.readouterr().err
    assert "--device cuda: bench count trains on a GPU in one process" in err
    assert "drop --stack-seeds" in err
    assert main(_count(tmp_path, "--device", "cuda", "--nproc", "2")) == 1
    assert "drop --nproc (or torchrun)" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.data
@pytest.mark.skipif(not data_available("randomgraph"), reason="no shared data folder")
def test_cuda_count_trains_what_the_cpu_does(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert main(_count(tmp_path / "cpu", "--model", "gnnml3")) == 0
    assert main(_count(tmp_path / "gpu", "--model", "gnnml3", "--device", "cuda")) == 0
    name = "count-randomgraph-star-gnnml3.limit40.json"
    cpu = json.loads((tmp_path / "cpu" / name).read_text())
    gpu = json.loads((tmp_path / "gpu" / name).read_text())
    assert gpu["runs"][0]["device"] == f"{torch.cuda.get_device_name(0)} (cuda)"
    assert gpu["per_seed"] == pytest.approx(cpu["per_seed"], rel=1e-3)


def _exp(out: Path, *extra: str, model: str = "gin") -> list[str]:
    return ["bench", "exp-classify", "--model", model, "--epochs", "2", "--seeds", "2",
            "--limit", "20", "--out", str(out), "--no-progress", "--json", *extra]  # fmt: skip


needs_exp = pytest.mark.skipif(not data_available("exp"), reason="no shared data folder")


@pytest.mark.data
@needs_exp
def test_exp_classify_device_cpu_trains_what_no_device_trains(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(_exp(tmp_path / "plain")) == 0
    assert main(_exp(tmp_path / "cpu", "--device", "cpu")) == 0
    capsys.readouterr()
    name = "exp-classify-exp-gin.limit20.json"
    plain = json.loads((tmp_path / "plain" / name).read_text())
    cpu = json.loads((tmp_path / "cpu" / name).read_text())
    assert [r["device"] for r in cpu["runs"]] == ["cpu", "cpu"]
    assert _without_time(cpu) == _without_time(plain)
    losses = [r["final_train_loss"] for r in cpu["runs"]]
    assert losses[0] != losses[1]  # two seeds that did train differently
    assert "device" not in cpu["config"]  # CPU and GPU seeds of one cell still --append


@needs_exp
def test_exp_classify_refuses_a_device_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from matlang.runtime import datasets

    def nothing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read: the device should have been refused before")

    monkeypatch.setattr(datasets, "load_exp", nothing)
    monkeypatch.setattr(train, "fit", nothing)
    if not torch.cuda.is_available():
        assert main(_exp(tmp_path, "--device", "cuda")) == 1
        assert "--device cuda: torch sees no CUDA device" in capsys.readouterr().err
    assert main(_exp(tmp_path, "--device", "tpu")) == 1
    assert "--device takes cpu, cuda or cuda:K, got 'tpu'" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert main(_exp(tmp_path, "--device", "cuda", "--nproc", "2")) == 1
    err = capsys.readouterr().err
    assert "--device cuda: bench exp-classify trains on a GPU in one process" in err
    assert "drop --nproc (or torchrun)" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.data
@needs_exp
@pytest.mark.parametrize("model", ["gin", "ppgn"])
def test_cuda_exp_classify_trains_as_the_cpu(tmp_path: Path, model: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert main(_exp(tmp_path / "cpu", model=model)) == 0
    assert main(_exp(tmp_path / "gpu", "--device", "cuda", model=model)) == 0
    name = f"exp-classify-exp-{model}.limit20.json"
    cpu = json.loads((tmp_path / "cpu" / name).read_text())
    gpu = json.loads((tmp_path / "gpu" / name).read_text())
    assert gpu["runs"][0]["device"] == f"{torch.cuda.get_device_name(0)} (cuda)"
    assert gpu["per_seed"] == pytest.approx(cpu["per_seed"], abs=1e-9)
    loss = [r["final_train_loss"] for r in cpu["runs"]]
    assert [r["final_train_loss"] for r in gpu["runs"]] == pytest.approx(loss, rel=1e-3)
