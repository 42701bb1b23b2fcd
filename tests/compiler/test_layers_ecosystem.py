"""Sentence layers among PyG's tools: Sequential, DataLoader, InMemoryDataset (the project's
data through ``runtime.pyg``), and ``torch.compile`` with dynamic shapes."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from matlang.graphs import cycle, named
from matlang.nn import SentenceConv
from matlang.runtime.batch import Batch
from matlang.runtime.datasets import data_available
from matlang.transforms import SentenceFeatures

pyg = pytest.importorskip("torch_geometric")

GRAPHS = ["K4", "petersen", "decalin", "cycle5", "star3", "rook4x4"]


def _data_list() -> list:
    from matlang.runtime.pyg import to_pyg

    graphs = [named(g) for g in GRAPHS]
    data = to_pyg(graphs)
    for k, d in enumerate(data):
        d.y = torch.tensor([float(k % 2)])
    return data


def test_sequential_and_dataloader_train_every_parameter() -> None:
    from torch_geometric import nn as gnn
    from torch_geometric.loader import DataLoader

    torch.manual_seed(0)
    model = gnn.Sequential(
        "x, edge_index, batch",
        [
            (SentenceConv(1, 8, ["A", "A ⊙ A²"], activation="relu"), "x, edge_index, batch -> x"),
            (
                SentenceConv(
                    8, 8, ["(A + I) ⊙ A²", "input h; relu(A h)", "(A³ ⊙ I) 𝟏"], product=True
                ),
                "x, edge_index, batch -> x",
            ),
            (gnn.global_add_pool, "x, batch -> x"),
            (torch.nn.Linear(8, 1), "x -> x"),
        ],
    )
    loader = DataLoader(_data_list(), batch_size=3, shuffle=False)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(15):
        total = 0.0
        for b in loader:
            opt.zero_grad()
            out = model(b.x, b.edge_index, b.batch).squeeze(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(out, b.y)
            loss.backward()
            if epoch == 0:  # before training can saturate a logit
                for name, p in model.named_parameters():
                    assert p.grad is not None and bool(p.grad.abs().sum() > 0), name
            opt.step()
            total += loss.item()
        losses.append(total)
    assert losses[-1] < 0.5 * losses[0]
    # the first layer inside Sequential computes what it computes alone
    b = next(iter(loader))
    conv = next(m for m in model.modules() if isinstance(m, SentenceConv))
    torch.testing.assert_close(model.module_0(b.x, b.edge_index, b.batch), conv(b))


@pytest.mark.data
@pytest.mark.skipif(not data_available("mutag"), reason="no shared data folder")
def test_project_dataset_as_pyg_dataset_with_sentence_features() -> None:
    from torch_geometric.loader import DataLoader

    from matlang.runtime.datasets import load_tu
    from matlang.runtime.pyg import pyg_dataset, to_pyg

    tu = load_tu("mutag")
    data = to_pyg(tu)
    assert len(data) == 188 and data[0].x.shape == (17, 7)
    assert [int(d.y) for d in data] == tu.y.tolist()
    ds = pyg_dataset(tu, pre_transform=SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2", "A 𝟏"]))
    assert ds.num_features == 9 and ds.num_classes == 2
    b = next(iter(DataLoader(ds, batch_size=188)))
    degrees = torch.cat([torch.as_tensor(g.adjacency.sum(1)) for g in tu.graphs])
    torch.testing.assert_close(b.x[:, 8].double(), degrees.double())
    assert float(b.x[:, 7].sum()) == 0.0  # MUTAG's molecules have no triangles


def test_to_pyg_counting_targets_and_errors() -> None:
    from matlang.errors import DataError
    from matlang.runtime.datasets import CountingData
    from matlang.runtime.pyg import to_pyg

    graphs = [named("K4"), cycle(3)]
    data = CountingData(graphs, [0], [1], [], {"count_triangle": [4, 1], "count_star": [4, 0]})
    out = to_pyg(data, targets=["count_triangle", "count_star"])
    assert out[0].y.tolist() == [[4.0, 4.0]] and out[1].y.tolist() == [[1.0, 0.0]]
    one = to_pyg(data, targets=["count_triangle"])  # one target: still a row, (1, 1)
    assert one[0].y.shape == (1, 1) and one[0].y.dtype == torch.float32
    from torch_geometric.data import Batch

    assert Batch.from_data_list(one).y.tolist() == [[4.0], [1.0]]
    with pytest.raises(DataError, match="no target"):
        to_pyg(data, targets=["count_cycle"])
    with pytest.raises(DataError, match="list of Graphs"):
        to_pyg([1, 2])


def test_torch_compile_has_no_graph_break_and_no_recompile_per_batch_shape() -> None:
    """``SentenceConv.forward`` with supports and structural columns compiles to one graph,
    once, for batches of any shape (dynamic=True); outputs and gradients match eager. (About
    13 s: aot_eager traces forward and backward; inductor's code generation is left out. Under
    inductor there is one more compilation, once: its decomposition of small matrix products
    guards on N ≤ 28.)"""
    import torch._dynamo
    from torch._dynamo.testing import CompileCounterWithBackend

    torch.manual_seed(0)
    conv = SentenceConv(3, 4, ["A", "A ⊙ A²", "(A³ ⊙ I) 𝟏"], product=True, activation="relu")
    b = Batch.from_graphs([named("K4"), cycle(5)])
    x = torch.randn(b.num_nodes, 3)
    explained = torch._dynamo.explain(conv)(x, b.edge_index, b.batch)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(conv, backend=counter, dynamic=True)
    for graphs in ([named("K4"), cycle(5)], [cycle(6)], [cycle(7), named("petersen"), cycle(3)]):
        b = Batch.from_graphs(graphs)
        x1 = torch.randn(b.num_nodes, 3, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_(True)
        y1, y2 = compiled(x1, b.edge_index, b.batch), conv(x2, b.edge_index, b.batch)
        torch.testing.assert_close(y1, y2)
        y1.square().sum().backward()
        y2.square().sum().backward()
        torch.testing.assert_close(x1.grad, x2.grad)
    assert counter.frame_count == 1


def test_sentence_gnn_compiles_without_graph_break_given_the_graph_count() -> None:
    """The readout's size comes from ``num_graphs`` (or the data object's): no ``.item()``."""
    import torch._dynamo

    from matlang.compiler.layers.model import SentenceGNN

    torch.manual_seed(0)
    model = SentenceGNN(3, 2, hidden=8, layers=2, norm="batch").eval()
    b = Batch.from_graphs([named("K4"), cycle(5), cycle(3)])
    x = torch.randn(b.num_nodes, 3)
    explained = torch._dynamo.explain(model)(x, b.edge_index, b.batch, b.num_graphs)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    torch.testing.assert_close(
        model(x, b.edge_index, b.batch, b.num_graphs), model(x, b.edge_index, b.batch)
    )
    assert model(x, b.edge_index, b.batch).shape == (3, 2)


class _ChannelModel(torch.nn.Module):
    """A channel-wise node sentence in a SentenceConv, a channel-wise graph sentence and a
    graph constant in a SentenceReadout."""

    def __init__(self) -> None:
        super().__init__()
        from matlang.nn import SentenceReadout

        self.conv = SentenceConv(3, 4, ["A", "input h; relu(A h) ⊙ (A² h)"], activation="relu")
        self.read = SentenceReadout(["tr(A³) / 6", "input h; 𝟏ᵀ (A ⊙ A²) h"], in_channels=4)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, g: int):
        return self.read(self.conv(x, edge_index, batch), edge_index, batch, g)


def test_channel_wise_sentences_compile_without_graph_break_or_recompile() -> None:
    """The Plan interpreter behind channel-wise sentences is one custom op under
    ``torch.compile`` (its backward another): no graph break, one compilation for batches of
    different shapes (of ≥ 2 graphs: torch specialises a size of 1), values and gradients equal
    to eager autograd through the interpreter. (About 15 s.)"""
    import torch._dynamo
    from torch._dynamo.testing import CompileCounterWithBackend

    torch.manual_seed(0)
    model = _ChannelModel()
    b = Batch.from_graphs([named("K4"), cycle(5)])
    x = torch.randn(b.num_nodes, 3)
    explained = torch._dynamo.explain(model)(x, b.edge_index, b.batch, b.num_graphs)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, backend=counter, dynamic=True)
    for graphs in ([named("K4"), cycle(5)], [cycle(7), named("petersen"), cycle(3)]):
        b = Batch.from_graphs(graphs)
        x1 = torch.randn(b.num_nodes, 3, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_(True)
        y1 = compiled(x1, b.edge_index, b.batch, b.num_graphs)
        y2 = model(x2, b.edge_index, b.batch, b.num_graphs)
        assert y1.shape == (len(graphs), 1 + 4)
        torch.testing.assert_close(y1, y2)
        y1.square().sum().backward()
        y2.square().sum().backward()
        torch.testing.assert_close(x1.grad, x2.grad)
    assert counter.frame_count == 1
    torch._dynamo.reset()


def test_channel_ops_match_eager_autograd_and_check_the_graph_count() -> None:
    """The custom ops, run eagerly: the same values and input gradient as autograd through
    the interpreter (float64), the schema/fake/autograd registration passes torch's opcheck,
    and a wrong ``num_graphs`` is a GraphError."""
    from matlang.compiler.layers.sentences import describe_sentences
    from matlang.compiler.layers.stage import channels_op, sentence_stage, stage
    from matlang.errors import GraphError

    # the ops find a stage by its key while its owner (here this test) holds it
    node = sentence_stage("apply", describe_sentences("input h; relu(A h) ⊙ (A² h)"), level="node")
    key = node.key
    b = Batch.from_graphs([named("K4"), cycle(5), named("petersen")])
    torch.manual_seed(1)
    x1 = torch.randn(b.num_nodes, 2, dtype=torch.float64, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    y1 = channels_op(x1, b.edge_index, b.batch, key, -1)
    y2 = stage(key).apply(x2, b.edge_index, b.batch)
    g = torch.randn_like(y2)
    (y1 * g).sum().backward()
    (y2 * g).sum().backward()
    torch.testing.assert_close(y1, y2)
    torch.testing.assert_close(x1.grad, x2.grad)
    assert float(x1.grad.abs().sum()) > 0
    torch.library.opcheck(channels_op, (x1.detach(), b.edge_index, b.batch, key, -1))
    graph = sentence_stage("apply", describe_sentences("input h; 𝟏ᵀ (A ⊙ A²) h"), level="graph")
    graph_key = graph.key
    assert channels_op(x1, b.edge_index, b.batch, graph_key, 3).shape == (3, 2)
    with pytest.raises(GraphError, match="num_graphs=2, but the batch vector holds 3"):
        channels_op(x1, b.edge_index, b.batch, graph_key, 2)


def test_pyg_dataset_pickles_by_name(tmp_path: Any) -> None:
    """torch.save and DataLoader workers under ``spawn`` pickle the dataset: its class is
    ``matlang.runtime.pyg.MatlangDataset`` (not a local class), found again in a fresh process
    that has made no dataset yet."""
    import pickle
    import subprocess
    import sys

    pytest.importorskip("torch_geometric")
    from matlang.data import load_tu, pyg_dataset

    ds = pyg_dataset(load_tu("mutag"))
    assert type(ds).__module__ == "matlang.runtime.pyg" and type(ds).__name__ == "MatlangDataset"
    path = tmp_path / "mutag.pt"
    torch.save(ds, path)
    again = torch.load(path, weights_only=False)
    assert len(again) == len(ds) == 188
    assert torch.equal(again[7].edge_index, ds[7].edge_index)
    blob = tmp_path / "mutag.pkl"
    blob.write_bytes(pickle.dumps(ds))
    code = (
        "import pickle, sys; ds = pickle.loads(open(sys.argv[1], 'rb').read()); "
        "print(len(ds), int(ds[7].edge_index.shape[1]), type(ds).__module__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(blob)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["188", str(ds[7].edge_index.shape[1]), "matlang.runtime.pyg"]
