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


def test_uncountable_pattern_labels_are_exact_counts_and_sentence_models_refused() -> None:
    # K4: no MATLANG sentence counts it; its labels are the spasm's exact count (= brute force)
    data = counting_data(9, nodes=9, p=0.6)
    t = count_targets(data, "pattern:K4")
    k4 = read_pattern("K4")[0]
    expected = [brute_sub(k4, g.adjacency) for g in data.graphs]
    assert t.values.tolist() == expected and max(expected) > 0 and t.sentence is None
    assert pattern_task("pattern:K4")["theory"] == "no"
    for model in ("compiled", "compiled-random", "sentence"):
        with pytest.raises(MatlangError, match="no MATLANG sentence counts K4.*treewidth 3"):
            count_test(data, "pattern:K4", model, seeds=[0], train=ONE_EPOCH)
    res = count_test(data, "pattern:K4", "gin", seeds=[0], train=ONE_EPOCH)
    assert np.isfinite(res.median_test_mse)


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


def test_report_gets_the_beyond_the_paper_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_paperlike: None
) -> None:
    from benchmarks.paper.report import load_results, render

    small = ["--dataset", "paperlike", "--epochs", "1", "--seeds", "1", "--no-progress"]
    for task, model in (("pattern:C5", "compiled"), ("pattern:K4", "gin")):
        argv = ["bench", "count", "--task", task, "--model", model, *small, "--out", str(tmp_path)]
        assert main([*argv, "--allow-dirty"]) == 0
    capsys.readouterr()
    results = load_results(tmp_path)  # pattern files are read under their own names
    assert {r.data["task"] for r in results} == {"pattern:C5", "pattern:K4"}
    text = render(results)
    section = text[text.index("## Counting beyond the paper") :]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table[0] == "| Model | `C5` | `K4` |"
    assert table[2] == "| *countable by* | *L2* | *no* |"
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in table[3:]}
    c5 = json.loads((tmp_path / "count-paperlike-pattern-C5-compiled.json").read_text())
    assert float(rows["compiled"][0].rstrip("†‡§ ")) == pytest.approx(
        c5["median_test_mse"], abs=1e-12
    )
    assert rows["compiled"][1].startswith("n/a (no sentence)")
    # no paper protocol to differ from: 1 seed and 1 epoch are not marked as deviations
    assert not any("†" in line for line in table)
    assert rows[next(k for k in rows if k.lower() == "gin")][0] == "–"


def test_least_squares_sentence_model_counts_c5_exactly() -> None:
    # sentence-lstsq: polynomial sentence layers (no activation) at their seeded weights, the
    # readout fitted by least squares: the count is a linear map of graph-level sentences the
    # layers hold, so the fit is exact where Adam on `sentence` is not
    data = counting_data(180, nodes=10, p=0.4)
    no_steps = TrainConfig(epochs=0, progress=False)
    res = count_test(
        data, "pattern:C5", "sentence-lstsq", seeds=[0, 1], train=no_steps, options={"hidden": 24}
    )
    assert res.model["config"]["activation"] is None and res.model["config"]["head"] == "linear"
    assert len(res.model["config"]["sentences"]) > 4  # every masked matrix, not the first four
    assert res.median_test_mse < 1e-10
    assert all(r.readout is not None and r.readout["features"] == 48 for r in res.runs)
    assert all(r.epochs_run == 0 for r in res.runs)
    # the same layers with an L1 support set (I, A) cannot hold C5's count: the fit is poor
    l1 = count_test(
        data,
        "pattern:C5",
        "sentence-lstsq",
        seeds=[0],
        train=no_steps,
        options={"hidden": 24, "sentences": ("I", "A / 3")},
    )
    assert l1.median_test_mse > 1e-3


def test_least_squares_sentence_model_refusals() -> None:
    data = counting_data(12)
    with pytest.raises(MatlangError, match="no gradient steps.*--epochs 0, not 1"):
        count_test(data, "pattern:C5", "sentence-lstsq", seeds=[0], train=ONE_EPOCH)
    no_steps = TrainConfig(epochs=0, progress=False)
    with pytest.raises(MatlangError, match="no MATLANG sentence counts K4"):
        count_test(data, "pattern:K4", "sentence-lstsq", seeds=[0], train=no_steps)
    from benchmarks.paper.models import make_model

    with pytest.raises(MatlangError, match="trains in bench count only"):
        make_model("sentence-lstsq", 3, 2, protocol="filter", task="node")


def test_report_says_how_the_least_squares_model_was_fitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_paperlike: None
) -> None:
    from benchmarks.paper.report import load_results, render

    argv = ["bench", "count", "--task", "pattern:C5", "--model", "sentence-lstsq"]
    argv += ["--dataset", "paperlike", "--seeds", "1", "--no-progress", "--out", str(tmp_path)]
    assert main([*argv, "--allow-dirty"]) == 0
    capsys.readouterr()
    record = json.loads((tmp_path / "count-paperlike-pattern-C5-sentence-lstsq.json").read_text())
    assert record["config"]["epochs_max"] == 0 and record["runs"][0]["epochs_run"] == 0
    readout = record["runs"][0]["readout"]
    assert readout["features"] == 256 and readout["ridge"] in (
        0.0,
        1e-10,
        1e-8,
        1e-6,
        1e-4,
        1e-2,
        1.0,
    )
    text = render(load_results(tmp_path))
    text = text[text.index("## Counting beyond the paper") :]
    row = next(line for line in text.splitlines() if line.startswith("| sentence-lstsq |"))
    assert float(row.split(" | ")[1].rstrip("†‡§ |")) == pytest.approx(
        record["median_test_mse"], rel=0.01
    )
    note = next(line for line in text.splitlines() if line.startswith("- sentence-lstsq:"))
    ridge = f"{readout['ridge']:g}"
    fitted = "no gradient steps: the layers at their seeded weights, the readout fitted by "
    assert f"{fitted}least squares (ridge {ridge}, chosen on validation)" in note
