"""Issue 33 item 6: SentenceConv inside PyG's explainers (edge masks through ``set_masks``, as
PyG's own convs read them), ``torch.fx`` (refused, naming ``torch.compile``), ``to_hetero`` and
``HeteroConv`` (edge types that join a node type to itself; bipartite ones refused)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.explain import Explainer, GNNExplainer  # noqa: E402
from torch_geometric.explain.algorithm.utils import clear_masks, set_masks  # noqa: E402
from torch_geometric.nn import (  # noqa: E402
    HeteroConv,
    MessagePassing,
    SAGEConv,
    SimpleConv,
    to_hetero,  # noqa: E402
)
from torch_geometric.utils import from_networkx  # noqa: E402

import matlang  # noqa: E402
from matlang.compiler.layers.explain import a_degree, nonlinear_reason  # noqa: E402
from matlang.errors import GraphError, MatlangError  # noqa: E402
from matlang.graphs import from_adjacency  # noqa: E402
from matlang.nn import SentenceConv  # noqa: E402
from matlang.parser import as_program  # noqa: E402


def _graph():
    g = nx.disjoint_union(nx.cycle_graph(6), nx.complete_graph(4))
    g.add_edge(0, 7)
    d = from_networkx(g)
    d.x = torch.randn(10, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return g, d


def _symmetric_mask(ei, seed=1):
    """A mask with one value per undirected edge (the same on both directions)."""
    gen = torch.Generator().manual_seed(seed)
    table = torch.randn(100, generator=gen, dtype=torch.float64)
    lo, hi = torch.minimum(ei[0], ei[1]), torch.maximum(ei[0], ei[1])
    return table[(lo * 10 + hi) % 100].clone()


def _reverse(ei):
    """The position of each edge's reverse."""
    return [int(((ei[0] == j) & (ei[1] == i)).nonzero()) for i, j in ei.t().tolist()]


class _Net(torch.nn.Module):
    def __init__(self, sentences):
        super().__init__()
        torch.manual_seed(0)
        self.c1 = SentenceConv(3, 8, sentences, activation="relu").double()
        self.c2 = SentenceConv(8, 2, sentences).double()

    def forward(self, x, edge_index):
        return self.c2(self.c1(x, edge_index), edge_index)


def test_sentence_conv_is_a_message_passing_and_prints_its_sentences():
    conv = SentenceConv(2, 4, ["A", "A ⊙ A²"])
    assert isinstance(conv, MessagePassing)
    text = repr(conv)
    assert text.startswith("SentenceConv(\n  2, 4, product=False, activation=None")
    assert "[support] A ⊙ A²  (L3, at most 3-WL, mask E" in text
    assert "aggr" not in text and text.count("\n") == 4
    with pytest.raises(MatlangError, match="torch.compile"):
        torch.jit.script(conv)


@pytest.mark.parametrize(
    ("text", "degree"),
    [("A", 1), ("L", 1), ("A + I", 1), ("input h; A h", 1), ("let f(x) = 2*x; f(A)", 1),
     ("A ⊙ A²", 3), ("(A³ ⊙ I) 𝟏", 3), ("A / (𝟏ᵀ A 𝟏)", None),
     ("input h; relu(A h) ⊙ (A h)", None), ("let f(x, y) = x*y; input h; f(h, A h)", 1)],
)
def test_degree_in_a(text, degree):
    assert a_degree(as_program(text).sentences[-1].expr) == degree
    assert (nonlinear_reason(text) is None) == (degree == 1)


def test_mask_is_the_edge_weight_and_matches_pyg_simple_conv():
    g, d = _graph()
    ei = d.edge_index
    raw = _symmetric_mask(ei)
    conv = SentenceConv(3, 3, ["A"], init="identity", bias=False).double()
    pyg = SimpleConv(aggr="sum")  # PyG's own conv: Σ_j x_j, message scaled by the mask
    plain = conv(d.x, ei)
    mask = torch.nn.Parameter(raw.clone())
    for apply_sigmoid in (True, False):
        weight = raw.sigmoid() if apply_sigmoid else raw
        set_masks(conv, mask, ei, apply_sigmoid=apply_sigmoid)
        set_masks(pyg, mask, ei, apply_sigmoid=apply_sigmoid)
        got = conv(d.x, ei)
        clear_masks(conv)
        want = conv(d.x, ei, edge_weight=weight)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(got.detach().numpy(), pyg(d.x, ei).detach().numpy(), atol=1e-6)
        # against the exact evaluator on the weighted A
        a = np.zeros((10, 10))
        a[ei[1].numpy(), ei[0].numpy()] = weight.detach().numpy()
        exact = np.asarray(matlang.evaluate("A", from_adjacency(a, allow_weights=True)), float)
        np.testing.assert_allclose(got.detach().numpy(), exact @ d.x.numpy(), atol=1e-6)
        clear_masks(pyg)
    torch.testing.assert_close(conv(d.x, ei), plain)  # cleared: the unweighted layer again


def test_mask_gets_the_gradient_of_edge_weight_and_zero_removes_the_edge():
    g, d = _graph()
    ei = d.edge_index
    model = _Net(["A", "A + I", "input h; A h"])
    mask = torch.nn.Parameter(_symmetric_mask(ei))
    set_masks(model, mask, ei, apply_sigmoid=True)
    model(d.x, ei).square().sum().backward()
    clear_masks(model)
    w = mask.detach().sigmoid().requires_grad_(True)
    h = model.c1(d.x, ei, edge_weight=w)
    model.c2(h, ei, edge_weight=w).square().sum().backward()
    # each edge's weight is the mean of its two directions' masks: the gradient is shared
    g = (w.grad + w.grad[_reverse(ei)]) / 2
    np.testing.assert_allclose(
        mask.grad.numpy(), (g * w * (1 - w)).detach().numpy(), rtol=1e-6, atol=1e-9
    )
    assert mask.grad.abs().min() > 0
    # a 0/1 mask (no sigmoid) that drops the bridge 0-7 gives the graph without it
    keep = ~(((ei[0] == 0) & (ei[1] == 7)) | ((ei[0] == 7) & (ei[1] == 0)))
    set_masks(model, keep.to(torch.float64), ei, apply_sigmoid=False)
    masked = model(d.x, ei)
    clear_masks(model)
    torch.testing.assert_close(masked, model(d.x, ei[:, keep]))
    assert not torch.allclose(masked, model(d.x, ei))


def test_a_directed_mask_is_averaged_over_both_directions():
    g, d = _graph()
    ei = d.edge_index
    conv = SentenceConv(3, 3, "A", init="identity", bias=False).double()
    raw = torch.randn(ei.shape[1], dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    set_masks(conv, raw, ei, apply_sigmoid=False)
    got = conv(d.x, ei)
    clear_masks(conv)
    rev = _reverse(ei)
    torch.testing.assert_close(got, conv(d.x, ei, edge_weight=(raw + raw[rev]) / 2))
    set_masks(conv, raw[:-1], ei, apply_sigmoid=False)
    with pytest.raises(GraphError, match="edge mask has shape"):
        conv(d.x, ei)


def test_gnn_explainer_returns_a_real_edge_mask():
    g, d = _graph()
    model = _Net(["A", "A + I"])
    explainer = Explainer(
        model,
        GNNExplainer(epochs=20, lr=0.05),
        explanation_type="model",
        edge_mask_type="object",
        node_mask_type=None,
        model_config=dict(mode="multiclass_classification", task_level="node", return_type="raw"),
    )
    torch.manual_seed(0)
    explanation = explainer(d.x, d.edge_index, index=0)
    mask = explanation.edge_mask
    assert mask.shape == (d.edge_index.shape[1],)
    # edges of the 2-hop neighbourhood of node 0 get a value, those far away 0
    inside = mask[mask > 0]
    assert inside.numel() >= 6 and float(inside.std()) > 1e-3
    far = (d.edge_index[0] >= 8) & (d.edge_index[1] >= 8)  # the clique's edges away from 7
    assert torch.all(mask[far] == 0)


def test_a_nonlinear_support_refuses_an_explainers_mask_by_name():
    g, d = _graph()
    model = _Net(["A", "A ⊙ A²"])
    explainer = Explainer(
        model,
        GNNExplainer(epochs=2),
        explanation_type="model",
        edge_mask_type="object",
        node_mask_type=None,
        model_config=dict(mode="multiclass_classification", task_level="node", return_type="raw"),
    )
    with pytest.raises(MatlangError, match=r"support sentence 'A ⊙ A²' is not linear in A"):
        explainer(d.x, d.edge_index, index=0)
    conv = SentenceConv(3, 4, ["A", "(A³ ⊙ I) 𝟏"]).double()
    set_masks(conv, torch.zeros(d.edge_index.shape[1]), d.edge_index)
    with pytest.raises(MatlangError, match=r"node sentence '\(A³ ⊙ I\) 𝟏'.*degree 3"):
        conv(d.x, d.edge_index)
    clear_masks(conv)
    assert conv(d.x, d.edge_index).shape == (10, 4)  # without a mask the layer runs


def test_fx_symbolic_trace_is_refused_with_torch_compile_named():
    with pytest.raises(MatlangError, match=r"SentenceConv cannot be traced by torch.fx.*"
                       r"torch.compile"):
        torch.fx.symbolic_trace(_Net(["A"]))


class _Hetero(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = SentenceConv(-1, 4, ["A", "A ⊙ A²"])

    def forward(self, x, edge_index):
        return self.conv(x, edge_index).relu()


def _hetero_inputs():
    gen = torch.Generator().manual_seed(0)
    ep = from_networkx(nx.cycle_graph(5)).edge_index
    ea = from_networkx(nx.complete_graph(4)).edge_index
    x = {"paper": torch.randn(5, 3, generator=gen), "author": torch.randn(4, 2, generator=gen)}
    return x, {("paper", "cites", "paper"): ep, ("author", "knows", "author"): ea}


def test_to_hetero_with_edge_types_on_one_node_type():
    x, edges = _hetero_inputs()
    model = to_hetero(_Hetero(), (["paper", "author"], list(edges)))
    out = model(x, edges)
    for (src, rel, dst), ei in edges.items():
        conv = model.conv[f"{src}__{rel}__{dst}"]
        torch.testing.assert_close(out[src], conv(x[src], ei).relu())
    assert model.conv["paper__cites__paper"].in_channels == 3
    assert model.conv["author__knows__author"].in_channels == 2


def test_bipartite_edge_types_are_refused_and_hetero_conv_mixes_in_a_pyg_conv():
    x, edges = _hetero_inputs()
    writes = torch.tensor([[0, 1, 3], [2, 3, 4]])
    meta = (["paper", "author"], [("paper", "cites", "paper"), ("author", "writes", "paper"),
                                  ("paper", "rev_writes", "author")])
    model = to_hetero(_Hetero(), meta)
    with pytest.raises(GraphError, match="bipartite edge type"):
        model(x, {("paper", "cites", "paper"): edges[("paper", "cites", "paper")],
                  ("author", "writes", "paper"): writes,
                  ("paper", "rev_writes", "author"): writes.flip(0)})
    torch.manual_seed(0)
    hetero = HeteroConv({("paper", "cites", "paper"): SentenceConv(3, 4, ["A", "A ⊙ A²"]),
                         ("author", "writes", "paper"): SAGEConv((2, 3), 4)}, aggr="sum")
    out = hetero(x, {("paper", "cites", "paper"): edges[("paper", "cites", "paper")],
                     ("author", "writes", "paper"): writes})
    convs = hetero.convs
    want = convs[("paper", "cites", "paper")](x["paper"], edges[("paper", "cites", "paper")])
    want = want + convs[("author", "writes", "paper")]((x["author"], x["paper"]), writes)
    torch.testing.assert_close(out["paper"], want)


def test_sentence_gnn_with_graph_sentences_refuses_a_mask_its_readout_would_ignore():
    from matlang.nn import SentenceGNN

    g, d = _graph()
    batch = torch.zeros(10, dtype=torch.long)
    linear = SentenceGNN(3, 2, ["I", "A"], hidden=4, layers=2).double()
    with_readout = SentenceGNN(3, 2, ["I", "A"], hidden=4, layers=2, graph_sentences=["tr(A³)"])
    with_readout = with_readout.double()
    mask = torch.zeros(d.edge_index.shape[1], dtype=torch.float64)
    set_masks(linear, mask, d.edge_index)
    assert linear(d.x, d.edge_index, batch).shape == (1, 2)  # the convs take the mask
    set_masks(with_readout, mask, d.edge_index)
    with pytest.raises(MatlangError, match=r"graph_sentences readout \['tr\(A³\)'\]"):
        with_readout(d.x, d.edge_index, batch)
    clear_masks(with_readout)
    assert with_readout(d.x, d.edge_index, batch).shape == (1, 2)
