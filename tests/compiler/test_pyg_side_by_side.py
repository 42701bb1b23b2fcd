"""Issue 33's side-by-side example (examples/pyg_side_by_side.py): it runs with a tiny budget
and prints its table, and its "same architecture" claim holds — ``SentenceConv(["I", "A"])``
with GraphConv's weights gives GraphConv's output."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import torch
from matlang.runtime.datasets import load_tu
from matlang.runtime.pyg import graph_to_data
from torch_geometric.nn import GraphConv

from matlang.nn import SentenceConv

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "pyg_side_by_side.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pyg_side_by_side", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sentence_conv_i_a_is_graph_conv() -> None:
    from torch_geometric.data import Batch

    tu = load_tu("mutag")
    b = Batch.from_data_list([graph_to_data(g) for g in tu.graphs[:5]])
    x = b.x.to(torch.float64)
    torch.manual_seed(0)
    theirs = GraphConv(x.shape[1], 6).double()
    ours = SentenceConv(x.shape[1], 6, ["I", "A"]).double()
    with torch.no_grad():
        ours.weight[0] = theirs.lin_root.weight.t()
        ours.weight[1] = theirs.lin_rel.weight.t()
        ours.bias.copy_(theirs.lin_rel.bias)
    torch.testing.assert_close(ours(x, b.edge_index), theirs(x, b.edge_index))


def test_example_runs_and_prints_its_table(capsys) -> None:
    torch.set_num_threads(1)
    rows = _load().main(["--epochs", "1", "--max-graphs", "16", "--hidden", "8"])
    out = capsys.readouterr().out
    assert [r["model"] for r in rows] == [
        "GraphConv (PyG)",
        "SentenceConv [I, A]",
        "GINConv (PyG)",
        "SentenceConv [I, A, A ⊙ A²]",
    ]
    for r in rows:
        assert r["model"] in out
        assert r["epoch_s"] > 0 and 0.0 <= r["train_acc"] <= 1.0 and 0.0 <= r["test_acc"] <= 1.0
    # the same architecture: GraphConv and SentenceConv [I, A] have the same parameter count
    assert rows[0]["parameters"] == rows[1]["parameters"]
