"""The TU protocol: the paper's numbers as printed, the summary's epoch selection, the command,
and data-parallel training (2 processes, gloo on CPU) against one process on a fixed seed."""

from __future__ import annotations

import functools
import json

import pytest
import torch

from benchmarks.paper.distributed import Group, launch
from benchmarks.paper.tu import (
    PAPER_TU,
    TUResult,
    TUSettings,
    fold_ranges,
    run_tu,
    train_one_fold,
    tu_section,
)
from runtime.datasets import data_available

needs_mutag = pytest.mark.skipif(not data_available("mutag"), reason="no shared data folder")


def test_paper_numbers_as_printed() -> None:
    gnnml3 = {"mutag": (90.9, 5.46), "enzymes": (63.6, 6.52), "proteins": (76.4, 5.1)}
    assert PAPER_TU["gnnml3"] == {**gnnml3, "ptc": (66.7, 6.49)}
    assert PAPER_TU["mlp"]["proteins"] == (74.3, 4.88)  # ENZYMES-cont (70.6) is not a column


def test_summary_selects_the_epoch_of_best_mean_accuracy() -> None:
    res = TUResult([[0.5, 0.9, 0.7], [0.7, 0.8, 0.9]], [1, 2], [0.0, 0.0], 10)
    s = res.summary()
    assert s["best_epoch"] == 2 and s["mean_accuracy"] == pytest.approx(85.0)
    assert s["std_accuracy"] == pytest.approx(5.0)
    assert s["last_epoch_mean_accuracy"] == pytest.approx(80.0)
    assert s["last_epoch_std_accuracy"] == pytest.approx(10.0)


def test_shards_cover_a_batch_once() -> None:
    batch = list(range(7))
    parts = [Group(r, 3).shard(batch) for r in range(3)]
    assert sum(parts, []) == batch and [len(p) for p in parts] == [2, 2, 3]


@pytest.mark.slow  # ~15 s alone, ~45 s on a loaded machine: spawning 2 Python processes
@pytest.mark.data
@needs_mutag
def test_two_processes_train_what_one_does() -> None:
    settings = TUSettings(epochs=1, batch_size=16, seed=3)
    body = functools.partial(
        train_one_fold, dataset="mutag", model="gin", fold=2, settings=settings
    )
    one_curve, one = body(Group())
    two_curve, two = launch(body, 2)
    assert one.keys() == two.keys()
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=1e-4, atol=1e-5, msg=k)
    assert two_curve == one_curve
    # and training moved the weights away from where the seed put them
    _, start = train_one_fold(Group(), "mutag", "gin", 2, TUSettings(epochs=0, seed=3))
    assert any(not torch.allclose(start[k], one[k]) for k in one if one[k].is_floating_point())


@pytest.mark.data
@needs_mutag
def test_bench_command_writes_a_result_file(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from matlang.cli import main

    code = main(
        ["bench", "tu", "--dataset", "mutag", "--model", "sentence", "--epochs", "1",
         "--folds", "1:2", "--out", str(tmp_path), "--no-progress", "--json"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    data = json.loads((tmp_path / "tu-mutag-sentence.folds1-2.json").read_text())
    assert data["folds"] == 2 and len(data["runs"]) == 2 and data["best_epoch"] == 1
    accs = [r["curve"][0] for r in data["runs"]]
    assert data["mean_accuracy"] == pytest.approx(50 * (accs[0] + accs[1]))
    assert all(18 * a == pytest.approx(round(18 * a)) for a in accs)  # 18 test graphs a fold
    assert summary["file"].endswith("tu-mutag-sentence.folds1-2.json")
    res = run_tu("mutag", "mlp", folds=[1], settings=TUSettings(epochs=1))
    assert len(res.curves) == 1 and len(res.curves[0]) == 1


def test_fold_ranges() -> None:
    assert fold_ranges([5, 1, 2, 3, 9, 10]) == "1–3, 5, 9–10"
    assert fold_ranges([4]) == "4"


@pytest.mark.data
@needs_mutag
def test_append_adds_folds_to_the_ten_fold_file(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from matlang.cli import main

    def bench(*extra: str) -> int:
        return main(
            ["bench", "tu", "--dataset", "mutag", "--model", "mlp", "--epochs", "2",
             "--out", str(tmp_path), "--no-progress", "--json", *extra]
        )  # fmt: skip

    path = tmp_path / "tu-mutag-mlp.json"
    assert bench("--folds", "3", "--append") == 0  # no file yet: the first piece starts it
    first = json.loads(path.read_text())
    assert first["partial"]["missing_folds"] == [1, 2, *range(4, 11)]
    assert first["config"]["folds"] == list(range(1, 11))
    capsys.readouterr()
    assert bench("--folds", "1:2", "--append") == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    data = json.loads(path.read_text())
    assert printed["mean_accuracy"] == data["mean_accuracy"] and printed["folds"] == 3
    assert [r["fold"] for r in data["runs"]] == [1, 2, 3] and data["folds"] == 3
    assert data["runs"][2] == first["runs"][0]  # the earlier fold is kept as it was
    assert data["earlier"][0]["git_commit"] == first["git_commit"]
    means = [sum(r["curve"][e] for r in data["runs"]) / 3 for e in range(2)]
    assert data["best_epoch"] == 1 + means.index(max(means))
    assert data["mean_accuracy"] == pytest.approx(100 * max(means))
    assert data["partial"]["missing_folds"] == list(range(4, 11))
    capsys.readouterr()
    assert bench("--folds", "2:4", "--append") == 1
    assert "already has fold(s) [2, 3]" in capsys.readouterr().err
    assert bench("--folds", "4", "--append", "--epochs", "1") == 1
    assert "epochs = 2, this run has 1" in capsys.readouterr().err
    assert json.loads(path.read_text()) == data  # refused runs leave the file alone
    # the report names the folds that ran
    section = "\n".join(tu_section([data]))
    assert "[folds 1–3 only]" in section and f"{data['mean_accuracy']:.1f}" in section
