"""Issue 33's side-by-side example (examples/pyg_side_by_side.py): it runs with a tiny budget
and prints its table, and its "same architecture" claim holds — ``SentenceConv(["I", "A"])``
with GraphConv's weights gives GraphConv's output."""

from __future__ import annotations

from types import ModuleType

import torch
from torch_geometric.nn import GraphConv

from matlang.nn import SentenceConv
from matlang.runtime.datasets import load_tu
from matlang.runtime.pyg import graph_to_data
from tests.fixtures import load_example


def _load() -> ModuleType:
    return load_example("pyg_side_by_side")


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
    example = _load()
    rows = example.main(["--epochs", "1", "--max-graphs", "16", "--hidden", "8"])
    out = capsys.readouterr().out
    assert "cpu epoch s" in out
    if torch.cuda.is_available():
        assert "cuda epoch s" in out and example.NO_CUDA not in out
    else:
        assert "cuda: no CUDA device here" in out and "cuda epoch s" not in out
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


def _rows(scale: float) -> list[dict]:
    return [
        {"model": name, "parameters": 10 + i, "epoch_s": scale * (i + 1),
         "first_epoch_s": scale * (i + 2), "train_acc": 0.5, "test_acc": 0.25}
        for i, name in enumerate(["GraphConv (PyG)", "SentenceConv [I, A]"])
    ]


def test_table_has_a_column_per_device_and_a_note_for_one_not_here() -> None:
    example = _load()
    both = example.table({"cpu": _rows(1.0), "cuda": _rows(0.001)}).splitlines()
    assert both[0].split() == [
        "model", "params", "cpu", "epoch", "s", "cpu", "1st", "ep", "s",
        "cuda", "epoch", "s", "cuda", "1st", "ep", "s", "train", "test",
    ]
    assert both[2].split()[-6:] == ["2.000", "3.000", "0.002", "0.003", "0.500", "0.250"]
    assert len(both) == 3
    alone = example.table({"cpu": _rows(1.0), "cuda": example.NO_CUDA}).splitlines()
    assert "cuda" not in alone[0] and alone[-1] == "cuda: no CUDA device here"
    assert alone[1].split()[-4:] == ["1.000", "2.000", "0.500", "0.250"]
    assert example.table({"cuda": example.NO_CUDA}).splitlines()[-1] == "cuda: no CUDA device here"
