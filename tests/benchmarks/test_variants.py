"""Variant runs of the paper's benches: Table 1 in float32 beside float64, the
counting ablation's switches (--loss, --layers, --set, --variant) and their report sections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.paper.count import PROTOCOLS, model_options, parse_option, variant_tags
from benchmarks.paper.iso import iso_test
from benchmarks.paper.models import counting_features
from benchmarks.paper.report import write_report
from benchmarks.paper.train import GraphSet, TrainConfig, fit
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.graphs import named
from matlang.runtime.generators import erdos_renyi
from tests.fixtures import counting_data

ISO_GRAPHS = ["decalin", "bicyclopentyl", "rook4x4", "shrikhande", "petersen", "cycle10"]


# --------------------------------------------------------------------------- iso in float32


@pytest.mark.parametrize("model", ["gcn", "gat"])
def test_iso_float32_reference_is_the_float64_run(model: str) -> None:
    # make_model draws the weights in float32 and casts them: the float32 run's same-weights
    # float64 reference must find exactly the float64 run's pairs
    graphs = [named(n) for n in ISO_GRAPHS] + [erdos_renyi(8, 0.4, seed=k) for k in range(12)]
    r32 = iso_test(graphs, model, seeds=3, dtype=torch.float32, reference_dtype=torch.float64)
    r64 = iso_test(graphs, model, seeds=3, dtype=torch.float64)
    ref = r32.reference
    assert ref is not None and ref["dtype"] == "float64"
    assert ref["undistinguished"] == len(r64.undistinguished)
    assert ref["undistinguished_after_seed"] == r64.remaining
    assert ref["both"] + ref["only_this_dtype"] == len(r32.undistinguished)
    assert ref["both"] + ref["only_reference"] == len(r64.undistinguished)
    # 1-WL-equivalent decalin/bicyclopentyl stay together in both precisions
    assert [0, 1] in r32.undistinguished.tolist() and [0, 1] in r64.undistinguished.tolist()
    # float32 rounding of outputs of this size: far below 1, far above float64's
    assert 1e-9 < ref["max_rounding_l1"] < 1e-2
    assert ref["median_rounding_l1"] <= ref["max_rounding_l1"]
    assert ref["max_output"] > 0


def test_bench_iso_float32_writes_its_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from matlang.runtime import datasets

    graphs = [named(n) for n in ISO_GRAPHS]
    monkeypatch.setattr(datasets, "load_sr25", lambda: graphs)
    base = ["bench", "iso", "--dataset", "sr25", "--model", "gin", "--seeds", "2", "--json"]
    assert main([*base, "--no-progress", "--out", str(tmp_path), "--dtype", "float32"]) == 0
    out = json.loads(capsys.readouterr().out)
    rec = json.loads((tmp_path / "iso-sr25-gin.float32.json").read_text())
    assert rec["config"]["dtype"].startswith("float32")
    assert rec["undistinguished"] == out["undistinguished"] == 2  # GIN: both WL-equal pairs
    assert rec["same_weights_in_float64"]["undistinguished"] == 2
    assert out["undistinguished_same_weights_float64"] == 2
    # float64 keeps the protocol's own file name and its config text
    assert main([*base, "--no-progress", "--out", str(tmp_path)]) == 0
    rec64 = json.loads((tmp_path / "iso-sr25-gin.json").read_text())
    assert rec64["config"]["dtype"].startswith("float64 (")
    assert "same_weights_in_float64" not in rec64


# --------------------------------------------------------------------------- count switches


def _set(n: int = 12) -> GraphSet:
    graphs = counting_features([erdos_renyi(7, 0.4, seed=k) for k in range(n)])
    y = torch.tensor([float(np.trace(np.linalg.matrix_power(g.adjacency, 3))) for g in graphs])
    return GraphSet(graphs, y.reshape(-1, 1) / 6)


@pytest.mark.parametrize("model", ["gin", "gnnml3"])
def test_mean_loss_steps_on_the_sum_over_rows(model: str) -> None:
    from benchmarks.paper.models import make_model

    data = _set(12)
    grads = {}
    for reduction in ("sum", "mean"):
        torch.manual_seed(0)
        net = make_model(model, 2, 1, protocol="count")
        cfg = TrainConfig(epochs=1, batch_size=12, progress=False, reduction=reduction)
        fit(net, data, None, config=cfg)  # one step: its gradient is at the initial weights
        grads[reduction] = [p.grad.clone() for p in net.parameters() if p.grad is not None]
    assert len(grads["sum"]) == len(grads["mean"]) > 0
    for gs, gm in zip(grads["sum"], grads["mean"], strict=True):
        # float32: entries that cancel carry rounding at the scale of the largest one
        torch.testing.assert_close(gm * 12, gs, rtol=1e-4, atol=1e-4 * float(gs.abs().max()))


def test_train_config_rejects_an_unknown_reduction() -> None:
    with pytest.raises(MatlangError, match="reduction"):
        TrainConfig(reduction="max")  # type: ignore[arg-type]


def test_set_options_parse_check_and_name() -> None:
    assert parse_option("learn_supports=false") == ("learn_supports", False)
    assert parse_option("num_bands=5") == ("num_bands", 5)
    assert parse_option("bandwidth=2.5") == ("bandwidth", 2.5)
    assert parse_option("basis=adjacency") == ("basis", "adjacency")
    with pytest.raises(MatlangError, match="KEY=VALUE"):
        parse_option("num_bands")
    assert model_options(["num_bands=5", "receptive_field=2"], "gnnml3") == {
        "num_bands": 5,
        "receptive_field": 2,
    }
    with pytest.raises(MatlangError, match="no option.*nfreq.*known:.*num_bands"):
        model_options(["nfreq=5"], "gnnml3")
    with pytest.raises(MatlangError, match="--layers"):
        model_options(["layers=5"], "gnnml3")
    paper = PROTOCOLS["paper"]
    tags = variant_tags(paper, 5, "mean", {"learn_supports": False}, "abl-e30")
    assert tags == ["mean", "layers5", "learn_supports-false", "abl-e30"]
    assert variant_tags(paper, 4, "sum", {}, None) == []
    with pytest.raises(MatlangError, match="--variant"):
        variant_tags(paper, 4, "sum", {}, "a/b")


def test_bench_count_ablation_files_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from matlang.runtime import generators

    monkeypatch.setattr(generators, "paperlike_random", lambda seed=0: counting_data(36))
    base = ["bench", "count", "--model", "gnnml3", "--dataset", "paperlike", "--epochs", "3"]
    small = ["--seeds", "1", "--json", "--no-progress", "--out", str(tmp_path)]
    arms = [
        ["--variant", "abl-e3"],
        ["--batch-size", "64", "--variant", "abl-e3-b64"],
        ["--layers", "5", "--variant", "abl-e3"],
        ["--set", "learn_supports=false", "--variant", "abl-e3"],
        ["--loss", "mean", "--variant", "abl-e3"],
    ]
    for task in ("triangle", "cycle4"):
        for arm in arms:
            assert main([*base, "--task", task, *small, *arm]) == 0
    capsys.readouterr()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "count-paperlike-triangle-gnnml3.abl-e3.json" in names
    assert "count-paperlike-cycle4-gnnml3.layers5.abl-e3.json" in names
    assert "count-paperlike-triangle-gnnml3.learn_supports-false.abl-e3.json" in names
    rec = json.loads((tmp_path / "count-paperlike-triangle-gnnml3.mean.abl-e3.json").read_text())
    assert rec["config"]["loss"].startswith("mean") and rec["config"]["variant"] == "abl-e3"
    assert len(rec["runs"][0]["val_mse_by_epoch"]) == rec["runs"][0]["epochs_run"] == 3
    rec = json.loads((tmp_path / "count-paperlike-cycle4-gnnml3.layers5.abl-e3.json").read_text())
    assert rec["config"]["conv_layers"] == rec["model_info"]["config"]["layers"] == 5
    rec = json.loads(
        (tmp_path / "count-paperlike-triangle-gnnml3.learn_supports-false.abl-e3.json").read_text()
    )
    assert rec["config"]["model_options"] == {"learn_supports": False}
    assert rec["model_info"]["config"]["learn_supports"] is False
    # --append to an ablation file takes the same switches (another layer count: refused)
    again = [*base, "--task", "triangle", "--seeds", "1", "--first-seed", "1", "--append"]
    out = ["--json", "--no-progress", "--out", str(tmp_path)]
    assert main([*again, *out, "--layers", "5", "--variant", "abl-e3"]) == 0
    assert main([*again, *out, "--layers", "5", "--variant", "abl-e3-b64"]) == 1
    assert "no result file" in capsys.readouterr().err
    assert main([*again, *out, "--set", "nfreq=3", "--variant", "abl-e3"]) == 1
    assert "no option(s) nfreq" in capsys.readouterr().err

    written = write_report(tmp_path, plots=False)
    report = (tmp_path / "report.md").read_text()
    assert "## GNNML3 counting ablation\n" in report
    tables = json.loads((tmp_path / "report-variants.json").read_text())
    rows = {r["label"]: r for r in tables["count_ablation"]["rows"]}
    assert set(rows) == {
        "paper protocol",
        "batch 64",
        "5 layers",
        "fixed supports (no Eq. 7)",
        "mean loss",
    }
    layers5 = rows["5 layers"]["tasks"]["triangle"]
    assert layers5["seeds"] == [0, 1] and len(layers5["per_seed"]) == 2
    assert rows["paper protocol"]["tasks"]["cycle4"]["file"].endswith("gnnml3.abl-e3.json")
    median = rows["mean loss"]["tasks"]["cycle4"]["median_test_mse"]
    assert "| mean loss | 3 | " in report
    assert "| mean loss |" in report
    assert f"{median:.2E}".replace("E-0", "E-").replace("E+0", "E+") in report
    assert tmp_path / "report-variants.json" in written


# --------------------------------------------------------------------------- activations


def test_tanh_activation_and_output_follow_the_authors_iso_scripts() -> None:
    from benchmarks.paper.models import make_model
    from matlang.runtime.batch import Batch
    from matlang.runtime.models.base import readout

    g = counting_features([named("petersen"), named("cycle10")])
    batch = Batch.from_graphs(g, dtype=torch.float64)
    torch.manual_seed(0)
    opts = {"activation": "tanh", "output_activation": "tanh"}
    net = make_model("gcn", 2, 10, protocol="iso", dtype=torch.float64, options=opts)
    # the same computation written out: tanh after every GCN layer, sum readout, head, tanh
    x = batch.x.to(torch.float64)
    for conv in net.convs:
        x = torch.tanh(conv(x, batch.edge_index, batch.edge_weight, None))
    want = torch.tanh(net.head(readout(x, batch.batch, batch.num_graphs)))
    torch.testing.assert_close(net(batch), want)
    assert float(want.detach().abs().max()) < 1.0
    with pytest.raises(MatlangError, match="own activation"):
        make_model("gnnml3", 2, 10, protocol="iso", options={"activation": "tanh"})
    with pytest.raises(MatlangError, match="unknown activation"):
        make_model("gcn", 2, 10, protocol="iso", options={"activation": "swish"})
