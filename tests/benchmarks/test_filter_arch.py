"""``bench filter --arch authors``: GNNML3 in the architecture of the authors' ``filtering.py``
(three ML3Layers of 32 + 16 channels, tanh · tanh products, a linear output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from matlang.runtime.datasets import data_available

from benchmarks.paper.filter import AUTHORS_ARCH, authors_arch, filter_test
from benchmarks.paper.models import make_model
from benchmarks.paper.train import TrainConfig
from matlang.cli import main
from matlang.errors import MatlangError
from tests.benchmarks.test_paper import _grid


def _authors_parameters(supports: int = 11, conv: int = 32, prod: int = 16) -> int:
    """The parameter count of the authors' filtering GNNML3, from its layer shapes:
    ``SpectConv(ninp, 32, 11 supports)`` (a weight per support and a bias), ``fc11``/``fc12``
    ``Linear(ninp, 16)``, three layers (ninp 1, then 48), ``fc2 = Linear(48, 1)``."""
    total = 0
    for ninp in (1, conv + prod, conv + prod):
        total += supports * ninp * conv + conv  # SpectConv
        total += 2 * (ninp * prod + prod)  # fc11, fc12
    return total + (conv + prod) + 1  # fc2


def test_authors_filter_architecture_is_the_authors_gnnml3() -> None:
    model = make_model(
        "gnnml3", 1, 1, protocol="filter", task="node", options=authors_arch("gnnml3")
    )
    assert sum(p.numel() for p in model.parameters()) == _authors_parameters() == 37_489
    assert len(model.convs) == 3 and all(c.product_activation == "tanh" for c in model.convs)
    # the layer is relu(conv) ‖ tanh(x W₅ + b₅) ⊙ tanh(x W₆ + b₆), by hand (products < 0 kept)
    conv = model.convs[1]
    torch.manual_seed(0)
    x = torch.randn(4, 48)
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3, 0, 1, 2, 3], [1, 0, 2, 1, 3, 2, 0, 1, 2, 3]])
    support = torch.rand(edge_index.shape[1], 11)
    out = conv(x, edge_index, support)
    dense = torch.zeros(11, 4, 4)
    dense[:, edge_index[0], edge_index[1]] = support.T
    want_conv = torch.relu(torch.einsum("sij,jk,sko->io", dense, x, conv.weight) + conv.bias)
    left = torch.tanh(x @ conv.weight5 + conv.bias5)
    right = torch.tanh(x @ conv.weight6 + conv.bias6)
    torch.testing.assert_close(out, torch.cat([want_conv, left * right], 1))
    assert (out[:, 32:] < 0).any()
    with pytest.raises(MatlangError, match="--arch authors.*'mlp'.*gnnml3"):
        authors_arch("mlp")
    with pytest.raises(MatlangError, match="unknown activation 'softsign'"):
        make_model(
            "gnnml3",
            1,
            1,
            protocol="filter",
            task="node",
            options={"product_activation": "softsign"},
        )
    assert set(AUTHORS_ARCH) == {"gnnml3"}


def test_authors_filter_architecture_trains_in_the_protocol() -> None:
    grid = _grid(14)
    cfg = TrainConfig(epochs=3, batch_size=1, stop_below=0.0, progress=False)
    res = filter_test(grid, "low", "gnnml3", seeds=[0], train=cfg, options=authors_arch("gnnml3"))
    assert res.model["parameters"] == 37_489
    assert res.model["config"]["product_activation"] == "tanh"
    assert res.runs[0].epochs_run == 3


def test_bench_filter_arch_authors_refuses_a_model_without_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["bench", "filter", "--task", "band", "--model", "gcn", "--arch", "authors"]
    assert main([*argv, "--no-save", "--epochs", "1"]) != 0
    assert "filtering architecture of 'gcn' is not written here" in capsys.readouterr().err


@pytest.mark.data
@pytest.mark.skipif(not data_available("twodgrid30"), reason="no twodgrid30 data")
def test_bench_filter_arch_authors_writes_its_file_and_its_table3_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.paper.report import load_results, table2_variant_rows, table3

    base = ["bench", "filter", "--task", "band", "--model", "gnnml3", "--epochs", "1"]
    base += ["--out", str(tmp_path), "--no-progress", "--allow-dirty"]
    assert main([*base, "--arch", "authors"]) == 0 and main(base) == 0
    capsys.readouterr()
    path = tmp_path / "filter-twodgrid30-band-gnnml3.authors-arch.json"
    record = json.loads(path.read_text())
    assert record["config"]["arch"] == "authors"
    assert record["config"]["model_options"] == authors_arch("gnnml3")
    assert record["model_info"]["parameters"] == 37_489
    # the protocol's table reads the plain file; the authors' architecture is a row of its own
    results = load_results(tmp_path)
    assert [r.path.name for r in results] == ["filter-twodgrid30-band-gnnml3.json"]
    md, used = table3(results, table2_variant_rows(tmp_path))
    rows = [line for line in md.splitlines() if line.startswith("| GNNML3")]
    label = "| GNNML3 (authors' `filtering.py` architecture) | – / 0.9995 | – / 0.9909 | "
    assert rows[1].startswith(label)
    band = rows[1].split(" | ")[3].split(" / ")[0].rstrip("†‡§")
    assert float(band) == pytest.approx(record["median_r2"], abs=1e-4)
    assert {r.path.name for r in used} == {path.name, "filter-twodgrid30-band-gnnml3.json"}
