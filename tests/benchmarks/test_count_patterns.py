"""``bench count --task pattern:NAME``: labels by the pattern's exact counting sentence, checked
against brute-force subgraph counts; one-epoch smoke runs of compiled, sentence and a reference
model; the command's file and record."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.paper.count import (
    count_targets,
    count_test,
    pattern_supports,
    pattern_task,
    task_file_name,
)
from benchmarks.paper.train import TrainConfig
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.patterns import read_pattern
from tests.fixtures import counting_data
from tests.matlang.test_spasm import brute_sub

ONE_EPOCH = TrainConfig(epochs=1, batch_size=8, progress=False)


@pytest.mark.parametrize("name", ["C5", "diamond", "P4"])
def test_pattern_targets_are_brute_force_counts(name: str) -> None:
    data = counting_data(9)
    t = count_targets(data, f"pattern:{name}")
    p = read_pattern(name)[0]
    assert t.values.tolist() == [brute_sub(p, g.adjacency) for g in data.graphs]
    assert t.sentence.startswith("let H1 = ")


def test_uncountable_patterns_are_refused_with_the_reason() -> None:
    with pytest.raises(MatlangError, match="no MATLANG sentence counts this pattern"):
        count_targets(counting_data(6), "pattern:K4")


def test_pattern_task_records_the_theory() -> None:
    t = pattern_task("pattern:C5")
    assert t["fragment"] == "L2" and t["theory"] == "L2" and t["pattern"] == "Dhc"
    assert pattern_task("pattern:star3")["theory"] == "1-WL"
    assert pattern_task("pattern:diamond")["theory"] == "3-WL"
    assert task_file_name("pattern:0-1 1-2 2-0") == "pattern-0_1_1_2_2_0"


def test_sentence_supports_are_the_rooted_sentence_masked_matrices() -> None:
    data = counting_data(9)
    rooted = pattern_task("pattern:C4")["rooted_sentence"]
    supports = pattern_supports(rooted, data.graphs)
    assert supports[:2] == ["I", "A / 3"] and supports[2].startswith("(A ⊙ A³) / ")
    scale = int(supports[2].rsplit("/", 1)[1])
    top = max(
        int((g.adjacency * np.linalg.matrix_power(g.adjacency, 3)).max()) for g in data.graphs
    )
    assert scale == 3 * top


@pytest.mark.parametrize("model", ["compiled", "sentence", "gin"])
def test_one_epoch_smoke_runs(model: str) -> None:
    data = counting_data(12)
    res = count_test(data, "pattern:C5", model, seeds=[0], train=ONE_EPOCH)
    assert len(res.runs) == 1 and np.isfinite(res.median_test_mse)
    if model == "compiled":  # exact at initialisation: the selected epoch keeps it
        assert res.median_test_mse < 1e-10
    if model == "sentence":
        assert any("⊙" in s for s in res.model["config"]["sentences"])


def test_bench_count_pattern_command_writes_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_paperlike: None
) -> None:
    args = ["bench", "count", "--task", "pattern:C5", "--model", "compiled", "--dataset"]
    small = ["paperlike", "--epochs", "1", "--seeds", "1", "--json", "--no-progress"]
    assert main([*args, *small, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    record = json.loads((tmp_path / "count-paperlike-pattern-C5-compiled.json").read_text())
    assert record["task"] == "pattern:C5"
    assert record["pattern"]["theory"] == "L2" and record["median_test_mse"] < 1e-10
    with pytest.raises(SystemExit):
        main(["bench", "count", "--task", "pentagon", "--model", "gin"])
    assert "pattern:NAME" in capsys.readouterr().err
