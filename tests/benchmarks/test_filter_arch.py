"""``bench filter --arch authors``: GNNML3 and PPGN in the architecture of the authors'
``filtering.py`` (GNNML3: three ML3Layers of 32 + 16 channels, tanh · tanh products, a linear
output; PPGN: three blocks of 20 channels, column sums, a linear output)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.paper.filter import AUTHORS_ARCH, authors_arch, filter_test
from benchmarks.paper.models import make_model
from benchmarks.paper.train import TrainConfig
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.runtime.datasets import data_available
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
    with pytest.raises(MatlangError, match="--arch authors.*'mlp'.*gnnml3, ppgn"):
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
    assert set(AUTHORS_ARCH) == {"gnnml3", "ppgn"}


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
    # the cell's number, then its marks (†, §, ᶜ, …: see the report's legend)
    band = re.match(r"[-+0-9.Ee]+", rows[1].split(" | ")[3].split(" / ")[0]).group(0)
    assert float(band) == pytest.approx(record["median_r2"], abs=1e-4)
    assert {r.path.name for r in used} == {path.name, "filter-twodgrid30-band-gnnml3.json"}


def _authors_ppgn(model: torch.nn.Module, adjacency: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The forward of the authors' filtering PPGN, written from their script's definition, with
    the weights of ``model``: the input ``X2 = [A | diag(x)]`` and the masks ``M`` =
    [diagonal, off-diagonal] of one graph, three blocks ``relu(m3([relu(m1 X) relu(m2 X) | X]))``
    (1×1 convolutions without bias, every output times ``M_0 + M_1``), after each block the
    sums over axis 2 (each column) of ``X M_0`` and ``X M_1``, one Linear on their concatenation."""
    n = adjacency.shape[0]
    eye = torch.eye(n, dtype=x.dtype)
    h = torch.stack([adjacency, torch.diag(x[:, 0])])  # (2, n, n)
    masks = torch.stack([eye, 1 - eye])
    valid = masks.sum(0)

    def conv(linear: torch.nn.Linear, t: torch.Tensor) -> torch.Tensor:
        return torch.einsum("oc,cij->oij", linear.weight, t)

    reads = []
    for block in model.convs:
        x1 = torch.relu(conv(block.m1, h) * valid)
        x2 = torch.relu(conv(block.m2, h) * valid)
        prod = torch.matmul(x1, x2) * valid
        h = torch.relu(conv(block.m3, torch.cat([prod, h])) * valid)
        reads += [(h * masks[0]).sum(1), (h * masks[1]).sum(1)]  # (C, n) each: column sums
    return model.head(torch.cat(reads).T)


def test_authors_filter_ppgn_is_the_authors_ppgn() -> None:
    """filtering.py's PPGN: parameters from its layer shapes (``mlp1_* Conv2d(2 → 20)``,
    ``mlp1_3 Conv2d(22 → 20)``, two blocks of ``20 → 20`` and ``40 → 20``, no biases,
    ``h1 = Linear(120, 1)``), and its forward on a graph whose blocks make ``H`` asymmetric."""
    from matlang.graphs import Graph

    blocks = (2 * 2 * 20 + 22 * 20) + 2 * (2 * 20 * 20 + 40 * 20)
    opts = authors_arch("ppgn")
    model = make_model("ppgn", 1, 1, protocol="filter", task="node", options=opts).double()
    assert sum(p.numel() for p in model.parameters()) == blocks + 121 == 3_841
    rng = np.random.default_rng(0)
    upper = np.triu(rng.random((9, 9)) < 0.4, 1)
    adjacency = (upper | upper.T).astype(float)
    signal = rng.standard_normal((9, 1))
    with torch.no_grad():
        ours = model([Graph(adjacency, "g", signal)])
        theirs = _authors_ppgn(model, torch.tensor(adjacency), torch.tensor(signal))
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-10)
        rows = make_model(
            "ppgn", 1, 1, protocol="filter", task="node", options={**opts, "node_sum": "row"}
        ).double()
        rows.load_state_dict(model.state_dict())
        assert not torch.allclose(rows([Graph(adjacency, "g", signal)]), ours)  # asymmetric H
    with pytest.raises(MatlangError, match="node_sum must be 'row' or 'column', got 'both'"):
        make_model("ppgn", 1, 1, protocol="filter", task="node", options={"node_sum": "both"})
