"""Seeds trained together (benchmarks.paper.stacked) against the same seeds one at a time:
the same outputs at initialisation, the same gradients, the same training to float rounding."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.paper.count import count_test
from benchmarks.paper.models import counting_features, make_model
from benchmarks.paper.stacked import MAX_NODES, StackedGNNML3, densify, run_seeds_stacked
from benchmarks.paper.train import (
    GraphSet,
    TrainConfig,
    mean_loss,
    run_seeds,
    seed_everything,
    squared_error,
)
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.runtime import datasets
from matlang.runtime.datasets import CountingData
from matlang.runtime.generators import erdos_renyi
from tests.fixtures import counting_data


def _set(n: int, seed: int) -> GraphSet:
    """Graphs of 5–9 nodes (the dense path pads them to 9), their edge counts as targets."""
    graphs = counting_features([erdos_renyi(5 + (k % 5), 0.45, seed=seed + k) for k in range(n)])
    return GraphSet(graphs, torch.tensor([[float(g.num_edges)] for g in graphs]))


def _build(**options: object):  # noqa: ANN202 - a factory of GNNML3 models
    return lambda: make_model("gnnml3", 2, 1, protocol="count", options=options or None)


def _models(seeds: list[int], **options: object) -> list[torch.nn.Module]:
    out = []
    for s in seeds:
        seed_everything(s)
        out.append(_build(**options)())
    return out


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"local_supports": True},
        {"learn_supports": False},
        {"product_channels": 0},
        {"support_mlp": "authors"},
        {"support_mlp": "authors", "local_supports": True},
    ],
    ids=["eq7", "local", "fixed-supports", "no-product", "authors", "authors-local"],
)
def test_stacked_outputs_equal_each_model(options: dict[str, object]) -> None:
    data = _set(14, 0)
    models = _models([0, 5], **options)
    stack = StackedGNNML3(models)
    dense = densify(models[0], data)  # type: ignore[arg-type]
    assert dense.graphs.x.shape[1] == 9 and float(dense.graphs.node.sum()) == sum(
        g.num_nodes for g in data.graphs
    )
    for g in (0, 3):  # M's entries of a graph, as a list: its supports' edges exactly
        graph = data.graphs[g]
        sup = models[0].supports(next(data.subset([g]).batches(1))[0])  # type: ignore[operator]
        listed = dense.graphs.entries[g, : int(dense.counts[g])]
        n = dense.graphs.x.shape[1]
        assert sorted(listed.tolist()) == sorted(
            (sup.edge_index[0] * n + sup.edge_index[1]).tolist()
        )
        assert float(dense.graphs.entry_mask[g].sum()) == sup.edge_index.shape[1] > graph.num_nodes
    idx = torch.arange(len(data))
    out = stack.forward(dense.take(idx).expand(2))
    for k, model in enumerate(models):
        with torch.no_grad():
            ref = torch.cat([model(b) for b, _, _ in data.batches(5)])
        torch.testing.assert_close(out[k].detach(), ref, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out[0], out[1])  # two seeds, two models


def test_stacked_training_matches_seeds_one_at_a_time(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    train, val, test = _set(30, 0), _set(12, 100), _set(12, 200)
    cfg = TrainConfig(epochs=3, batch_size=4, progress=False)
    score = lambda net: mean_loss(net, test, squared_error)  # noqa: E731
    one, _ = run_seeds([0, 1], _build(), train, val, squared_error, score, cfg)
    monkeypatch.setenv("MATLANG_HEARTBEAT", "1e-9")  # the stacked loop's heartbeat too
    together, info = run_seeds_stacked([0, 1], _build(), train, val, test, cfg)
    beats = capsys.readouterr().err.splitlines()
    assert [b.split(",")[0].split(": ")[1] for b in beats] == [f"epoch {k} of 3" for k in (1, 2, 3)]
    assert all("×2" in b and "(val=" in b for b in beats)
    assert info["class"] == "GNNML3"
    for a, b in zip(one, together, strict=True):
        assert (a.seed, a.epochs_run, a.best_epoch) == (b.seed, b.epochs_run, b.best_epoch)
        np.testing.assert_allclose(b.val_loss, a.val_loss, rtol=1e-3)
        assert b.metric == pytest.approx(a.metric, rel=1e-3)
        assert b.final_train_loss == pytest.approx(a.final_train_loss, rel=1e-3)
        assert (a.stacked, b.stacked) == (1, 2)


def test_stacked_seeds_stop_early_on_their_own() -> None:
    train, val, test = _set(12, 0), _set(6, 100), _set(6, 200)
    cfg = TrainConfig(epochs=4, batch_size=4, stop_below=1e12, progress=False)
    runs, _ = run_seeds_stacked([0, 1], _build(), train, val, test, cfg)
    assert all(r.stopped_early and r.epochs_run == 1 for r in runs)


def test_stacking_refuses_what_it_does_not_compute() -> None:
    cfg = TrainConfig(epochs=1, progress=False)
    data = _set(6, 0)
    gin = lambda: make_model("gin", 2, 1, protocol="count")  # noqa: E731
    with pytest.raises(MatlangError, match="GNNML3, MLP, GCN, ChebNet, GAT only, not GIN"):
        run_seeds_stacked([0, 1], gin, data, data, data, cfg)
    with pytest.raises(MatlangError, match="no dropout"):
        run_seeds_stacked([0], _build(dropout=0.5), data, data, data, cfg)
    authors = _build(product_activation="tanh", activate_product=False)
    with pytest.raises(MatlangError, match="identity product activation, the layer's ReLU"):
        run_seeds_stacked([0], authors, data, data, data, cfg)
    big = GraphSet(counting_features([erdos_renyi(MAX_NODES + 1, 0.1, seed=0)]), torch.ones(1, 1))
    with pytest.raises(MatlangError, match="small graphs"):
        run_seeds_stacked([0], _build(), big, big, big, cfg)


def _counting_data() -> CountingData:
    return counting_data(36, nodes=8, p=0.4)


def test_count_test_stacks_in_groups_and_reports_each_group() -> None:
    seen: list[list[int]] = []
    res = count_test(
        _counting_data(),
        "triangle",
        "gnnml3",
        seeds=[0, 1, 2],
        train=TrainConfig(epochs=1, batch_size=4, progress=False),
        stack_seeds=2,
        on_seed=lambda r: seen.append([run.seed for run in r.runs]),
    )
    assert seen == [[0, 1], [0, 1, 2]]
    assert [r.stacked for r in res.runs] == [2, 2, 1]
    alone = count_test(
        _counting_data(),
        "triangle",
        "gnnml3",
        seeds=[2],
        train=TrainConfig(epochs=1, batch_size=4, progress=False),
    )
    assert res.runs[2].metric == pytest.approx(alone.runs[0].metric, rel=1e-3)


def test_bench_count_stack_seeds_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from matlang.runtime import generators

    monkeypatch.setattr(generators, "paperlike_random", lambda seed=0: _counting_data())
    base = ["bench", "count", "--task", "triangle", "--model", "gnnml3", "--dataset"]
    small = ["paperlike", "--epochs", "1", "--json", "--no-progress", "--out", str(tmp_path)]
    assert main([*base, *small, "--seeds", "2", "--stack-seeds", "2"]) == 0
    path = tmp_path / "count-paperlike-triangle-gnnml3.json"
    rec = json.loads(path.read_text())
    assert [r.get("stacked_seeds") for r in rec["runs"]] == [2, 2]
    # seeds trained alone take --append to the same file: the same experiment
    assert main([*base, *small, "--first-seed", "2", "--seeds", "1", "--append"]) == 0
    rec = json.loads(path.read_text())
    assert rec["seeds"] == [0, 1, 2] and "stacked_seeds" not in rec["runs"][2]
    capsys.readouterr()
    assert main([*base, *small, "--seeds", "2", "--stack-seeds", "2", "--nproc", "2"]) == 1
    assert "drop --nproc" in capsys.readouterr().err
    gin = ["bench", "count", "--task", "triangle", "--model", "gin", "--dataset"]
    assert main([*gin, *small, "--seeds", "2", "--stack-seeds", "2"]) == 1
    assert "stacked for GNNML3, MLP, GCN, ChebNet, GAT only, not GIN" in capsys.readouterr().err


@pytest.mark.skipif(not datasets.data_available(), reason="data folder not found")
def test_stacked_throughput_benchmark_reports_both_arms(tmp_path: Path) -> None:
    from benchmarks.perf import stacked

    out = tmp_path / "stacked.json"
    assert stacked.main(["--seeds", "2", "--steps", "2", "--repeats", "1", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    step = res["seconds_per_seed_step"]
    assert step["alone"] > 0 and step["stacked"] > 0
    assert res["speedup"] == pytest.approx(step["alone"] / step["stacked"])
    assert res["seconds_per_seed_epoch"]["alone"] == pytest.approx(step["alone"] * 150)
    assert "seeds stacked" in out.with_suffix(".md").read_text()
    with pytest.raises(SystemExit, match="not replaced"):
        stacked.main(["--seeds", "2", "--steps", "1", "--repeats", "1", "--out", str(out)])
    # several models, Table 2's batch: one result each, in order
    many = tmp_path / "models.json"
    argv = ["--seeds", "2", "--steps", "1", "--repeats", "1", "--batch-size", "64"]
    assert stacked.main([*argv, "--models", "gcn,gat", "--out", str(many)]) == 0
    res = json.loads(many.read_text())
    assert [r["model"].split()[0] for r in res] == ["gcn", "gat"]
    assert res[0]["seconds_per_seed_epoch"]["alone"] == pytest.approx(
        res[0]["seconds_per_seed_step"]["alone"] * 24  # 1500 graphs, batch 64: 24 steps
    )


def test_report_marks_stacked_seeds_and_times_only_seeds_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.paper.report import TABLE2_TASKS, write_report
    from benchmarks.paper.report_flags import seed_ranges as _seed_ranges
    from matlang.runtime import generators

    assert _seed_ranges([5, 0, 1, 2, 7, 8]) == "0–2, 5, 7–8"
    monkeypatch.setattr(generators, "paperlike_random", lambda seed=0: _counting_data())
    base = ["bench", "count", "--task", "triangle", "--model", "gnnml3", "--dataset"]
    small = ["paperlike", "--epochs", "2", "--json", "--no-progress", "--out", str(tmp_path)]
    arm = ["--variant", "abl-e2"]
    assert main([*base, *small, *arm, "--seeds", "1"]) == 0
    assert (
        main(
            [
                *base,
                *small,
                *arm,
                "--first-seed",
                "1",
                "--seeds",
                "2",
                "--stack-seeds",
                "2",
                "--append",
            ]
        )
        == 0
    )
    capsys.readouterr()
    rec = json.loads((tmp_path / "count-paperlike-triangle-gnnml3.abl-e2.json").read_text())
    write_report(tmp_path, plots=False)
    report = (tmp_path / "report.md").read_text()
    tables = json.loads((tmp_path / "report-variants.json").read_text())
    cell = tables["count_ablation"]["rows"][0]["tasks"]["triangle"]
    assert cell["seeds"] == [0, 1, 2] and cell["stacked"] == 2
    alone = rec["runs"][0]
    assert cell["seconds_per_epoch"] == pytest.approx(alone["seconds"] / alone["epochs_run"])
    assert "(3, 2 stacked: " in report
    # the ablation's full-budget arm (abl-e200) is also a row of Table 2, after GNNML3's
    assert main([*base, *small, "--variant", "abl-e200", "--seeds", "2", "--stack-seeds", "2"]) == 0
    assert main([*base, *small, "--seeds", "1"]) == 0
    capsys.readouterr()
    full = json.loads((tmp_path / "count-paperlike-triangle-gnnml3.abl-e200.json").read_text())
    write_report(tmp_path, plots=False)
    report = (tmp_path / "report.md").read_text()
    table2 = report[report.index("## Table 2") : report.index("## Table 3")]
    rows = [line for line in table2.splitlines() if line.startswith("| GNNML3")]
    assert [r.split(" | ")[0] for r in rows] == ["| GNNML3", "| GNNML3, batch 10"]
    median = f"{full['median_test_mse']:.2E}".replace("E-0", "E-").replace("E+0", "E+")
    column = 1 + TABLE2_TASKS.index("triangle")
    assert rows[1].split(" | ")[column].startswith(median)
    assert (
        "- GNNML3, batch 10: `count-paperlike-triangle-gnnml3.abl-e200.json`; 2 seed(s)" in report
    )
    assert "seed(s) 0–1 trained stacked" in report
