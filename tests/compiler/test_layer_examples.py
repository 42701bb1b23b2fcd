"""The layer examples run end to end with tiny settings (2 epochs on MUTAG's first fold)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from matlang.runtime.datasets import data_available

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [
    pytest.mark.data,
    pytest.mark.skipif(not data_available("mutag"), reason="no shared data folder"),
]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_sentence_model(capsys: pytest.CaptureFixture[str]) -> None:
    acc = _load("train_sentence_model").main(["--epochs", "2", "--hidden", "8"])
    out = capsys.readouterr().out
    assert "[support] A ⊙ A²  (L3, at most 3-WL" in out
    assert "epoch   2" in out and 0.0 <= acc <= 1.0
    assert f"test accuracy {acc:.3f}" in out  # 18 test graphs of fold 1: a multiple of 1/18
    assert abs(acc * 18 - round(acc * 18)) < 1e-6


def test_pyg_sentence_features(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch_geometric")
    acc = _load("pyg_sentence_features").main(["--epochs", "2"])
    out = capsys.readouterr().out
    assert "x=[17, 9]" in out and "graph_features=[1, 1]" in out  # 7 atom types + 2 counts
    assert f"test accuracy {acc:.3f}" in out and abs(acc * 18 - round(acc * 18)) < 1e-6
