"""The TU protocol: the paper's numbers as printed, the summary's epoch selection, the command,
and data-parallel training (2 processes, gloo on CPU) against one process on a fixed seed."""

from __future__ import annotations

import functools
import json
import re

import numpy as np
import pytest
import torch

from benchmarks.paper.distributed import Group, launch
from benchmarks.paper.tu import (
    PAPER_TU,
    TUResult,
    TUSettings,
    run_tu,
    train_one_fold,
)
from benchmarks.paper.tu_report import fold_ranges, tu_section
from matlang.runtime.batch import Batch
from matlang.runtime.datasets import data_available

needs_mutag = pytest.mark.skipif(not data_available("mutag"), reason="no shared data folder")


def test_paper_numbers_as_printed() -> None:
    gnnml3 = {"mutag": (90.9, 5.46), "enzymes": (63.6, 6.52), "proteins": (76.4, 5.1)}
    assert PAPER_TU["gnnml3"] == {**gnnml3, "enzymes-cont": (78.1, 5.05), "ptc": (66.7, 6.49)}
    assert PAPER_TU["mlp"]["proteins"] == (74.3, 4.88)
    # the paper's ENZYMES-cont column (appendix, TUtask), top to bottom
    cont = [PAPER_TU[m]["enzymes-cont"] for m in
            ("mlp", "gcn", "gat", "gin", "chebnet", "ppgn", "gnnml1", "gnnml3")]  # fmt: skip
    assert cont == [(70.6, 5.22), (74.2, 3.26), (73.7, 4.47), (73.3, 4.48), (75.3, 4.63),
                    (72.9, 4.18), (76.9, 5.14), (78.1, 5.05)]  # fmt: skip


def test_summary_selects_the_epoch_of_best_mean_accuracy() -> None:
    res = TUResult([[0.5, 0.9, 0.7], [0.7, 0.8, 0.9]], [1, 2], [0.0, 0.0], 10)
    s = res.summary()
    assert s["best_epoch"] == 2 and s["mean_accuracy"] == pytest.approx(85.0)
    assert s["std_accuracy"] == pytest.approx(5.0)
    assert s["last_epoch_mean_accuracy"] == pytest.approx(80.0)
    assert s["last_epoch_std_accuracy"] == pytest.approx(10.0)


def test_summary_over_seeds_averages_each_fold_first() -> None:
    """Two seeds on two folds: a fold's curve is its seeds' mean, the spread is over folds."""
    curves = [[0.5, 0.9], [0.7, 0.8], [0.7, 0.5], [0.9, 0.5]]
    res = TUResult(curves, [1, 2, 1, 2], [0.0] * 4, 10, [0, 0, 1, 1])
    s = res.summary()  # fold 1: [0.6, 0.7], fold 2: [0.8, 0.65]: epoch 1 (0.7 > 0.675)
    assert [v for c in res.fold_curves() for v in c] == pytest.approx([0.6, 0.7, 0.8, 0.65])
    assert s["folds"] == 2 and s["best_epoch"] == 1 and s["mean_accuracy"] == pytest.approx(70)
    assert s["std_accuracy"] == pytest.approx(10.0)
    assert s["last_epoch_std_accuracy"] == pytest.approx(2.5)
    per = res.per_seed()
    assert [p["seed"] for p in per] == [0, 1]
    assert per[0]["best_epoch"] == 2 and per[0]["mean_accuracy"] == pytest.approx(85)
    assert per[1]["best_epoch"] == 1 and per[1]["mean_accuracy"] == pytest.approx(80)


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
def test_bench_command_writes_a_result_file(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from matlang.cli import main

    monkeypatch.setenv("MATLANG_HEARTBEAT", "1e-9")
    code = main(
        ["bench", "tu", "--dataset", "mutag", "--model", "sentence", "--epochs", "1",
         "--folds", "1:2", "--out", str(tmp_path), "--no-progress", "--json"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr()
    summary = json.loads(out.out.strip().splitlines()[-1])
    # --no-progress, yet a heartbeat line per epoch of each fold (MATLANG_HEARTBEAT)
    assert sum(": epoch 1 of 1, " in ln for ln in out.err.splitlines()) == 2
    data = json.loads((tmp_path / "tu-mutag-sentence.folds1-2.json").read_text())
    assert data["folds"] == 2 and len(data["runs"]) == 2 and data["best_epoch"] == 1
    accs = [r["curve"][0] for r in data["runs"]]
    assert data["mean_accuracy"] == pytest.approx(50 * (accs[0] + accs[1]))
    assert all(18 * a == pytest.approx(round(18 * a)) for a in accs)  # 18 test graphs a fold
    assert summary["file"].endswith("tu-mutag-sentence.folds1-2.json")
    res = run_tu("mutag", "mlp", folds=[1], settings=TUSettings(epochs=1))
    assert len(res.curves) == 1 and len(res.curves[0]) == 1


needs_enzymes = pytest.mark.skipif(not data_available("enzymes"), reason="no shared data folder")


@pytest.mark.data
@needs_enzymes
def test_enzymes_cont_reads_every_feature_column() -> None:
    """ENZYMES-cont: the 3 one-hot label columns, then the 18 continuous attributes (data
    README: ``F`` [n, 21]); plain ENZYMES keeps the 3 label columns only."""
    from benchmarks.paper.tu import _fold_data

    cont, graphs, y, in_dim, classes = _fold_data("enzymes-cont", "mlp", TUSettings())
    plain, _, y_plain, plain_dim, _ = _fold_data("enzymes", "mlp", TUSettings())
    assert (in_dim, plain_dim, classes) == (21, 3, 6) and len(graphs) == 600
    assert torch.equal(y, y_plain)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(cont.folds, plain.folds, strict=True))
    x = np.concatenate([np.asarray(g.x) for g in graphs])
    assert x.shape == (19580, 21)
    np.testing.assert_array_equal(x[:, :3], np.concatenate([np.asarray(g.x) for g in plain.graphs]))
    assert (x[:, :3].sum(1) == 1).all()  # one-hot labels first
    assert x[:, 3:].max() > 1 and len(np.unique(x[:, 3:])) > 100  # continuous after them
    # the authors' enzymes_contfeat.py: 200 epochs at batch 60, degree, standardised
    from benchmarks.paper.tu_protocols import AUTHORS

    assert AUTHORS["enzymes-cont"] == (200, 60, True, True, 0.0)


@pytest.mark.data
@needs_enzymes
def test_enzymes_cont_bench_writes_the_papers_column(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from matlang.cli import main

    code = main(
        ["bench", "tu", "--dataset", "enzymes-cont", "--model", "mlp", "--epochs", "1",
         "--folds", "1", "--out", str(tmp_path), "--no-progress", "--json"]
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    data = json.loads((tmp_path / "tu-enzymes-cont-mlp.folds1-1.json").read_text())
    assert data["dataset"] == "enzymes-cont" and data["paper"] == {"mean": 70.6, "std": 5.22}
    assert data["config"]["node_features"] == "one-hot node labels + 18 continuous attributes"
    (run,) = data["runs"]
    (acc,) = run["curve"]
    assert 60 * acc == pytest.approx(round(60 * acc))  # 60 test graphs a fold
    # the model read 21 columns: its parameters are those of an MLP on 21 inputs
    from benchmarks.paper.tu import build

    params = {k: sum(p.numel() for p in build("mlp", k, 6).parameters()) for k in (3, 21)}
    assert data["model_info"]["parameters"] == params[21] != params[3]
    # the report: the column is there, ours in it; before, "not run"
    section = "\n".join(tu_section([data]))
    head = next(x for x in section.splitlines() if x.startswith("| model |"))
    assert "| ENZYMES | ENZYMES-cont | PTC |" in head
    mlp = next(x for x in section.splitlines() if x.startswith("| mlp |"))
    ours = f"{data['mean_accuracy']:.1f} ± 0.0 ({data['last_epoch_mean_accuracy']:.1f})"
    from benchmarks.paper.report_flags import deviations

    marks = deviations(data)[0]  # one epoch: ¹ (the first epoch is the best) at least
    assert "¹" in marks
    assert mlp.split(" | ")[4] == f"{ours}{marks} [folds 1 only] / 70.6 ± 5.22"
    assert "Not run: MUTAG, PROTEINS, ENZYMES, PTC (no result file" in section
    others = [{**data, "dataset": "mutag", "paper": {}}]
    section = "\n".join(tu_section(others))
    assert "Not run: PROTEINS, ENZYMES, ENZYMES-cont, PTC" in section
    assert "– / 78.1 ± 5.05" in section  # GNNML3's paper cell beside an empty one


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
    assert first["partial"]["missing_seed_folds"] == [[0, k] for k in [1, 2, *range(4, 11)]]
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
    assert data["partial"]["missing_seed_folds"] == [[0, k] for k in range(4, 11)]
    capsys.readouterr()
    assert bench("--folds", "2:4", "--append") == 1
    assert "already has seed_fold(s) [(0, 2), (0, 3)]" in capsys.readouterr().err
    assert bench("--folds", "4", "--append", "--epochs", "1") == 1
    assert "epochs = 2, this run has 1" in capsys.readouterr().err
    assert json.loads(path.read_text()) == data  # refused runs leave the file alone
    # the report names the folds that ran
    section = "\n".join(tu_section([data]))
    assert "[folds 1–3 only]" in section and f"{data['mean_accuracy']:.1f}" in section
    # beside ours, what the authors' enzymes.py and proteins.py train with
    assert "Epochs per fold: 2; batch 32" in section
    assert "ENZYMES 400 epochs at batch 60" in section
    assert "PROTEINS 50 epochs at batch 180" in section


@pytest.mark.data
@needs_mutag
def test_seeds_train_every_fold_and_append_adds_seeds(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``--seeds N --first-seed S`` trains each fold from each seed, records the seed of every
    run, and ``--append`` adds seeds; a seed's runs are those of a ``--seed K`` run alone."""
    from matlang.cli import main

    def bench(*extra: str, out: str = "a") -> int:
        return main(
            ["bench", "tu", "--dataset", "mutag", "--model", "gin", "--epochs", "2",
             "--folds", "1", "--out", str(tmp_path / out), "--no-progress", "--json", *extra]
        )  # fmt: skip

    path = tmp_path / "a" / "tu-mutag-gin.json"  # the 10-fold file, started by fold 1
    assert bench("--seeds", "2", "--append") == 0
    two = json.loads(path.read_text())
    assert two["seeds"] == [0, 1] and [(r["seed"], r["fold"]) for r in two["runs"]] == [
        (0, 1),
        (1, 1),
    ]
    c0, c1 = (r["curve"] for r in two["runs"])
    # the seed reaches the weights and the batches (two epochs on MUTAG's fold 1 predict the
    # majority class from any seed, so the curves alone cannot tell seeds apart)
    one = functools.partial(train_one_fold, Group(), "mutag", "gin", 1)
    w0, w0_again, w1 = (one(TUSettings(epochs=1, seed=s))[1] for s in (0, 0, 1))
    assert all(torch.equal(w0[k], w0_again[k]) for k in w0)
    assert any(not torch.equal(w0[k], w1[k]) for k in w0 if w0[k].is_floating_point())
    assert [p["seed"] for p in two["per_seed"]] == [0, 1]
    assert two["mean_accuracy"] == pytest.approx(100 * max((a + b) / 2 for a, b in zip(c0, c1)))
    assert bench("--seed", "1", out="b") == 0
    alone = json.loads((tmp_path / "b" / "tu-mutag-gin.folds1-1.json").read_text())
    assert alone["seeds"] == [1] and alone["runs"][0]["curve"] == c1
    capsys.readouterr()
    assert bench("--append", "--first-seed", "2") == 0
    three = json.loads(path.read_text())
    assert three["seeds"] == [0, 1, 2] and [r["seed"] for r in three["runs"]] == [0, 1, 2]
    assert three["runs"][:2] == two["runs"] and three["earlier"][0]["seeds"] == [0, 1]
    missing = three["partial"]["missing_seed_folds"]
    assert missing == [[s, k] for s in range(3) for k in range(2, 11)]
    capsys.readouterr()
    assert bench("--append", "--first-seed", "1", "--seeds", "2") == 1
    assert "already has seed_fold(s) [(1, 1), (2, 1)]" in capsys.readouterr().err
    assert bench("--seed", "3", "--seeds", "2", out="c") == 1
    assert "--seed K is --first-seed K --seeds 1" in capsys.readouterr().err
    assert json.loads(path.read_text()) == three


def test_sentence_models_are_what_their_files_say(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``gin+features`` reads log1p of the exact counts; ``sentence`` normalises its layers and
    says so in its file, so that a file of the earlier, unnormalised model refuses --append."""
    import numpy as np

    from benchmarks.paper.tu import build, node_features
    from matlang.graphs import from_adjacency, named

    a = named("petersen").adjacency
    (g,) = node_features("gin+features", [from_adjacency(a, x=np.ones((10, 1)))])
    walks = [np.diag(np.linalg.matrix_power(a.astype(np.int64), k)) for k in (4, 5)]
    expected = np.stack([np.ones(10), np.zeros(10), np.log1p(walks[0]), np.log1p(walks[1])], 1)
    np.testing.assert_allclose(np.asarray(g.x), expected, rtol=1e-12)
    net = build("sentence", 3, 2)
    assert net.norms is not None and net.hparams["norm"] == "batch"
    if not data_available("mutag"):
        return
    from matlang.cli import main

    def bench(fold: str) -> int:
        return main(
            ["bench", "tu", "--dataset", "mutag", "--model", "sentence", "--epochs", "1",
             "--folds", fold, "--append", "--out", str(tmp_path), "--no-progress", "--json"]
        )  # fmt: skip

    assert bench("1") == 0
    path = tmp_path / "tu-mutag-sentence.json"
    data = json.loads(path.read_text())
    assert data["config"]["sentence_gnn"] == {"hidden": 32, "layers": 3, "norm": "batch"}
    del data["config"]["sentence_gnn"]  # as files of the unnormalised model were written
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert bench("2") == 1
    err = capsys.readouterr().err
    assert "sentence_gnn = {'hidden': 32, 'layers': 3, 'norm': None}" in err


@pytest.mark.data
@needs_mutag
def test_authors_protocol_trains_with_their_settings_and_the_degree(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``--protocol authors``: MUTAG at their batch 16 and 100 epochs (here cut to 1), the
    degree as a feature column, a file of its own and a report table of its own."""
    import numpy as np

    from benchmarks.paper.report import write_report
    from benchmarks.paper.tu import node_features
    from matlang.cli import main
    from matlang.runtime.datasets import load_tu

    graphs = load_tu("mutag").graphs[:5]
    with_degree = node_features("mlp", graphs, degree=True)
    for g, h in zip(graphs, with_degree):
        x = np.asarray(g.x)
        np.testing.assert_array_equal(np.asarray(h.x)[:, :-1], x)
        np.testing.assert_array_equal(np.asarray(h.x)[:, -1], g.adjacency.sum(1))
    code = main(
        ["bench", "tu", "--dataset", "mutag", "--model", "mlp", "--protocol", "authors",
         "--epochs", "1", "--folds", "1", "--append", "--out", str(tmp_path), "--no-progress",
         "--json"]
    )  # fmt: skip
    assert code == 0
    data = json.loads((tmp_path / "tu-mutag-mlp.authors.json").read_text())
    assert data["config"]["batch_size"] == 16 and data["config"]["epochs"] == 1
    assert data["config"]["tu_protocol"] == "authors"
    assert data["config"]["node_features"] == "one-hot node labels + degree"
    assert data["model_info"]["parameters"] > 0
    write_report(tmp_path, plots=False)
    report = (tmp_path / "report.md").read_text()
    assert "## TU datasets, the authors' per-dataset protocol" in report
    assert f"{data['mean_accuracy']:.1f}" in report.split("the authors' per-dataset protocol")[1]


def test_standardize_uses_the_training_folds_nodes_only() -> None:
    """The authors' ENZYMES/PROTEINS scripts: ``(x - mean) / std`` with the training fold's
    node statistics (unbiased std, torch's ``std(0)``), applied to every graph."""
    import numpy as np

    from benchmarks.paper.tu import standardize
    from matlang.graphs import Graph

    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    edge = np.array([[0, 1], [1, 0]])
    graphs = [
        Graph(path, "a", np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]])),
        Graph(edge, "b", np.array([[7.0, 5.0], [8.0, 5.0]])),
        Graph(edge, "test", np.array([[100.0, 9.0], [-4.0, 1.0]])),
    ]
    out = standardize(graphs, [0, 1])
    train = np.concatenate([np.asarray(out[0].x), np.asarray(out[1].x)])
    np.testing.assert_allclose(train[:, 0].mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(train[:, 0].std(ddof=1), 1.0)
    # column 2 is 5 on every training node: centred, not divided by 0
    np.testing.assert_array_equal(train[:, 1], 0.0)
    mean, std = 4.2, float(np.std([1, 2, 3, 7, 8], ddof=1))
    np.testing.assert_allclose(
        np.asarray(out[2].x), [[(100 - mean) / std, 4.0], [(-4 - mean) / std, -4.0]]
    )
    # the test graph's values do not move the statistics
    moved = standardize([*graphs[:2], Graph(edge, "test", np.zeros((2, 2)))], [0, 1])
    np.testing.assert_array_equal(np.asarray(moved[0].x), np.asarray(out[0].x))


def test_authors_architectures_are_our_models_with_their_fields() -> None:
    """``--arch authors``: the ENZYMES GNNML3 of their script (4 layers of 64 convolution
    channels, no product part, fixed supports from 4 bands of width 2, dropout 0.1, sum and
    max readouts batch-normalised, one linear layer), and a clear error where none is
    transcribed."""
    import numpy as np

    from benchmarks.paper.tu import build
    from benchmarks.paper.tu_protocols import AUTHORS, authors_arch
    from matlang.errors import MatlangError
    from matlang.graphs import Graph
    from matlang.runtime.batch import Batch
    from matlang.runtime.models.base import readout

    assert AUTHORS["enzymes"] == (400, 60, True, True, 0.0) and not AUTHORS["mutag"].standardize
    net = build("gnnml3", 4, 6, authors_arch("enzymes", "gnnml3"))
    cfg = net.config
    assert (cfg.hidden, cfg.product_channels, cfg.layers) == (64, 0, 4)
    assert not cfg.learn_supports and cfg.support.num_bands == 4 and cfg.support.bandwidth == 2.0
    assert cfg.readout == ("sum", "max") and cfg.head == () and cfg.dropout == 0.1
    assert isinstance(net.readout_norm, torch.nn.BatchNorm1d)
    assert net.readout_norm.num_features == 128 and len(net.head.linears) == 1
    # training mode: each readout column is normalised over the batch's graphs
    rng = np.random.default_rng(0)
    graphs = []
    for n in (5, 6, 7, 8):
        a = np.triu((rng.random((n, n)) < 0.5).astype(int), 1)
        graphs.append(Graph(a + a.T, f"g{n}", rng.random((n, 4))))
    batch = Batch.from_graphs(graphs, dtype=torch.float32)
    torch.manual_seed(0)
    net.train()
    h = net.embed(batch, batch.x)
    r = net.graph_representation(batch, h)
    raw = readout(h, batch.batch, 4, ("sum", "max"))
    assert bool((raw.std(0) > 0).any())  # not every channel dead
    expected = (raw - raw.mean(0)) / torch.sqrt(raw.var(0, unbiased=False) + 1e-5)
    torch.testing.assert_close(r, expected, atol=1e-5, rtol=1e-4)
    with pytest.raises(MatlangError, match="not transcribed; transcribed: enzymes gnnml3"):
        authors_arch("mutag", "gin")


@pytest.mark.data
@pytest.mark.skipif(not data_available("enzymes"), reason="no shared data folder")
def test_authors_arch_on_enzymes_records_what_it_ran(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--protocol authors --arch authors`` on ENZYMES: batch 60, standardised features, the
    authors' MLP (4 layers of 128, mean and max readouts, one linear layer), a file and a
    report table of their own."""
    from benchmarks.paper.report import write_report
    from matlang.cli import main

    code = main(
        ["bench", "tu", "--dataset", "enzymes", "--model", "mlp", "--protocol", "authors",
         "--arch", "authors", "--epochs", "1", "--folds", "2", "--append", "--out",
         str(tmp_path), "--no-progress", "--json"]
    )  # fmt: skip
    assert code == 0
    data = json.loads((tmp_path / "tu-enzymes-mlp.authors.authors-arch.json").read_text())
    cfg = data["config"]
    assert (cfg["batch_size"], cfg["arch"]) == (60, "authors")
    assert cfg["model_options"]["hidden"] == 128 and cfg["model_options"]["readout"] == [
        "mean",
        "max",
    ]
    assert cfg["node_features"] == (
        "one-hot node labels + degree, standardised by the training fold's mean and std"
    )
    # in: 3 labels + degree; 4 layers of 128; one linear layer from 2 × 128 to 6 classes
    assert data["model_info"]["parameters"] == (4 * 128 + 128) + 3 * (128 * 128 + 128) + 256 * 6 + 6
    write_report(tmp_path, plots=False)
    report = (tmp_path / "report.md").read_text()
    section = report.split("the authors' protocol and architectures")[1]
    assert f"{data['mean_accuracy']:.1f}" in section


# --------------------------------------------------------------------------- devices

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_check_device_names_what_cannot_train_here(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from benchmarks.paper import distributed
    from matlang.errors import MatlangError

    assert distributed.check_device("cpu") == "cpu" == distributed.check_device("cpu", 4)
    with pytest.raises(MatlangError, match="cpu, cuda or cuda:K, got 'tpu'"):
        distributed.check_device("tpu")
    with pytest.raises(MatlangError, match="cpu, cuda or cuda:K, got 'meta'"):
        distributed.check_device("meta")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(MatlangError, match="--device cuda: torch sees no CUDA device"):
        distributed.check_device("cuda")
    # a machine with one GPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert distributed.check_device("cuda") == "cuda:0" == distributed.check_device("cuda:0")
    with pytest.raises(MatlangError, match="--device cuda:1: this machine has 1 CUDA device"):
        distributed.check_device("cuda:1")
    with pytest.raises(MatlangError, match="one process per GPU .* this machine has 1"):
        distributed.check_device("cuda", 2)
    with pytest.raises(MatlangError, match="give --device cuda"):
        distributed.check_device("cuda:0", 2)


def test_backend_follows_the_device_not_the_machine(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """CPU processes reduce with gloo also where torch sees GPUs (nccl reduces only CUDA
    tensors: choosing it by ``torch.cuda.is_available()`` broke CPU training there)."""
    from benchmarks.paper import distributed

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(distributed.dist, "is_nccl_available", lambda: True)
    assert distributed._backend("cpu") == "gloo"
    assert distributed._backend("cuda:1") == "nccl"
    monkeypatch.setattr(distributed.dist, "is_nccl_available", lambda: False)
    assert distributed._backend("cuda:0") == "gloo"


@pytest.mark.data
@needs_mutag
def test_bench_records_each_runs_device(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from matlang.cli import main

    args = ["bench", "tu", "--dataset", "mutag", "--model", "mlp", "--epochs", "1",
            "--folds", "3", "--out", str(tmp_path), "--no-progress", "--json"]  # fmt: skip
    assert main([*args, "--device", "cpu"]) == 0
    data = json.loads((tmp_path / "tu-mutag-mlp.folds3-3.json").read_text())
    assert [r["device"] for r in data["runs"]] == ["cpu"] and "device" not in data["config"]
    capsys.readouterr()
    if not torch.cuda.is_available():  # refused before any data is read or file written
        assert main([*args, "--device", "cuda"]) == 1
        assert "torch sees no CUDA device" in capsys.readouterr().err
    assert main([*args, "--device", "npu"]) == 1
    assert "--device takes cpu, cuda or cuda:K, got 'npu'" in capsys.readouterr().err


@needs_cuda
@pytest.mark.data
@needs_mutag
@pytest.mark.parametrize("model", ["mlp", "gcn", "gat", "gin", "chebnet", "ppgn", "gnnml1",
                                   "gnnml3", "sentence", "gin+features"])  # fmt: skip
def test_cuda_trains_what_the_cpu_does(model: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One epoch on fold 2 from the same seed: the weights on the GPU are the CPU's within
    float32 rounding (TF32 off), and every weight and buffer lives on the GPU.

    Not compared: ``sentence``'s SentenceConv biases, each followed by batch normalisation in
    training mode, which subtracts it again. Their gradient is 0 up to rounding, and Adam turns
    that rounding into steps of ``lr`` with a sign that differs between devices (seen on an H100:
    ``convs.0.bias`` apart, everything else equal). Nor the running mean of the norm after each
    such conv: it averages the conv's outputs, bias included, so it inherits the bias's
    difference (seen on an H200: ``norms.0.running_mean`` apart, ``running_var`` equal)."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    settings = TUSettings(epochs=1, batch_size=16, seed=3)
    _, cpu = train_one_fold(Group(), "mutag", model, 2, settings)
    _, gpu = train_one_fold(Group(device="cuda:0"), "mutag", model, 2, settings)
    assert cpu.keys() == gpu.keys()
    for k in cpu:
        assert gpu[k].device.type == "cuda", k
        if model == "sentence" and re.fullmatch(r"convs\.\d+\.bias|norms\.\d+\.running_mean", k):
            continue
        torch.testing.assert_close(gpu[k].cpu(), cpu[k], rtol=1e-3, atol=1e-4, msg=k)


@needs_cuda
@pytest.mark.data
@needs_mutag
def test_bench_on_cuda_records_the_gpu(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from matlang.cli import main

    code = main(
        ["bench", "tu", "--dataset", "mutag", "--model", "ppgn", "--epochs", "2", "--folds",
         "1", "--out", str(tmp_path), "--no-progress", "--json", "--device", "cuda"]
    )  # fmt: skip
    assert code == 0
    data = json.loads((tmp_path / "tu-mutag-ppgn.folds1-1.json").read_text())
    (run,) = data["runs"]
    assert run["device"] == f"{torch.cuda.get_device_name(0)} (cuda)" and len(run["curve"]) == 2
    assert all(18 * a == pytest.approx(round(18 * a)) for a in run["curve"])


@pytest.mark.data
@needs_mutag
def test_sentence_biases_before_batch_norm_get_no_gradient() -> None:
    """Why the CUDA comparison skips ``sentence``'s conv biases: batch normalisation in training
    mode removes each channel's mean, so a bias just before it has gradient 0 up to rounding,
    while the weights' gradients do not vanish."""
    from benchmarks.paper.tu import _fold_data, build

    _, graphs, y, in_dim, classes = _fold_data("mutag", "sentence", TUSettings())
    torch.manual_seed(0)
    net = build("sentence", in_dim, classes).double()
    batch = Batch.from_graphs(graphs[:32], dtype=torch.float64)
    torch.nn.functional.cross_entropy(net(batch), y[:32]).backward()
    grads = dict(net.named_parameters())
    biases = [k for k in grads if re.fullmatch(r"convs\.\d+\.bias", k)]
    assert len(biases) == 3
    for k in biases:
        assert grads[k].grad.abs().max() < 1e-12, k
    weights = [g.grad.abs().max() for k, g in grads.items() if k.endswith("weight")]
    assert min(weights) > 1e-6


def test_report_names_the_folds_trained_on_a_gpu() -> None:
    from benchmarks.paper.tu_report import devices_note

    h100 = "NVIDIA H100 80GB HBM3 (cuda)"
    runs = [{"fold": k, "device": h100} for k in (2, 3, 5, 10)] + [
        {"fold": 1},
        {"fold": 4, "device": "cpu"},
    ]
    row = {"model": "ppgn", "dataset": "proteins", "runs": runs}
    (line,) = [x for x in devices_note([row]) if x]
    assert line.startswith(
        f"Trained on a GPU (`--device cuda`): ppgn on PROTEINS, folds 2–3, 5, 10 on {h100};"
    )
    assert devices_note([{**row, "runs": runs[4:]}]) == []


@pytest.mark.data
@needs_mutag
def test_model_variants_train_on_tu_and_help_lists_them(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``bench tu --model gnnml3-adjacency``: GNNML3 of the classification protocol with the
    variant's fields (adjacency spectrum, widths 17), recorded in the file; ``--help`` and the
    refusal of an unknown model name the variants."""
    from benchmarks.paper.model_variants import MODEL_VARIANTS
    from benchmarks.paper.tu import model_choices
    from matlang.cli import main

    assert set(MODEL_VARIANTS) <= set(model_choices())
    args = ["bench", "tu", "--dataset", "mutag", "--epochs", "1", "--folds", "1",
            "--out", str(tmp_path), "--no-progress", "--json"]  # fmt: skip
    assert main([*args, "--model", "gnnml3-adjacency"]) == 0
    assert main([*args, "--model", "gnnml3"]) == 0
    variant = json.loads((tmp_path / "tu-mutag-gnnml3-adjacency.folds1-1.json").read_text())
    paper = json.loads((tmp_path / "tu-mutag-gnnml3.folds1-1.json").read_text())
    v, g = variant["model_info"]["config"], paper["model_info"]["config"]
    assert v["support"]["basis"] == "adjacency" != g["support"]["basis"]
    assert (v["hidden"], v["product_channels"]) == (17, 17) != (g["hidden"], g["product_channels"])
    assert v["support"]["num_bands"] == g["support"]["num_bands"]  # the protocol's bands
    assert variant["model_info"]["parameters"] < paper["model_info"]["parameters"]
    assert variant["paper"] == {}  # a labelled variant: no paper number of its own
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["bench", "tu", "--help"])
    assert "gnnml3-adjacency" in capsys.readouterr().out
    assert main([*args, "--model", "gnnml3-laplace"]) == 1
    assert "gnnml3-adjacency" in capsys.readouterr().err


def test_authors_enzymes_cont_gnnml3_is_their_tensorflow_script() -> None:
    """``--protocol authors --arch authors`` on ENZYMES-cont: the model of
    ``enzymes_contfeats_gnnml3_tf.py`` — its supports transcribed from the script (numpy:
    I, then three Gaussian bands of width ``dv = 1`` centred on ``linspace(λmin, λmax, 3)`` of
    the normalised Laplacian, masked by ``M = (A + I)^16 > 0``) equal ours on a path of 20
    nodes (where M leaves out the pairs 17 or more hops apart) and a random graph; two layers
    of 200, mean and max readouts, a head of 100; 400 epochs of 3 updates with L2 1e-4."""
    import numpy as np

    from benchmarks.paper.tu import build
    from benchmarks.paper.tu_protocols import authors_arch, authors_protocol
    from matlang.graphs import Graph
    from matlang.runtime.batch import Batch

    def theirs(a: np.ndarray) -> np.ndarray:  # the script's loop, one graph, (S, n, n)
        n = a.shape[0]
        d = a.sum(axis=0)
        with np.errstate(divide="ignore"):
            dis = 1 / np.sqrt(d)
        dis[np.isinf(dis)] = 0
        dd = np.diag(dis)
        nl = np.eye(n) - (a.dot(dd)).T.dot(dd)
        v, u = np.linalg.eigh(nl)
        v[v < 0] = 0
        m = a + np.eye(n)
        for _ in range(1, 5):  # recfield = 5
            m = m.dot(m)
        m = m > 0
        sp = np.zeros((4, n, n))
        sp[0] = np.eye(n)
        for i, f in enumerate(np.linspace(v.min(), v.max(), 3)):
            sp[i + 1] = m * (u.dot(np.diag(np.exp(-((v - f) ** 2)))).dot(u.T))
        return sp

    path = np.diag(np.ones(19), 1)
    rng = np.random.default_rng(3)
    rand = np.triu((rng.random((12, 12)) < 0.3).astype(float), 1)
    net = build("gnnml3", 22, 6, authors_arch("enzymes-cont", "gnnml3"))
    cfg = net.config
    for a in (path + path.T, rand + rand.T):
        n = a.shape[0]
        batch = Batch.from_graphs([Graph(a.astype(int), "g", np.zeros((n, 22)))])
        sup = net.supports(batch, torch.float64)
        ours = np.zeros((sup.num_supports, n, n))
        row, col = sup.edge_index.numpy()
        ours[:, row, col] = sup.edge_attr.numpy().T
        assert cfg.support.names == ("band0", "band1", "band2", "all_pass")  # theirs: I first
        np.testing.assert_allclose(ours, theirs(a)[[1, 2, 3, 0]], atol=1e-6)
    assert not (theirs(path + path.T)[1] != 0)[0, 17:].any()  # beyond 16 hops: masked
    assert (cfg.hidden, cfg.product_channels, cfg.layers, cfg.head) == (200, 0, 2, (100,))
    assert cfg.readout == ("mean", "max") and cfg.dropout == 0.1 and not cfg.learn_supports
    assert authors_protocol("enzymes-cont", "gnnml3", True) == (400, 180, True, True, 1e-4)
    # without --arch authors the dataset's protocol (enzymes_contfeat.py's) stays
    assert authors_protocol("enzymes-cont", "gnnml3", False) == (200, 60, True, True, 0.0)
