"""Issue 33, SentenceConv as a PyG user calls it: weights (A holds them, as
``matlang.evaluate`` reads them), sparse adjacencies, self-loops, half precision, TorchScript,
lazy ``in_channels``, ``normalize=``; values against the exact dense evaluator."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Batch as PygBatch
from torch_geometric.transforms import ToSparseTensor
from torch_geometric.utils import from_networkx

import matlang
from matlang.errors import GraphError, MatlangError
from matlang.graphs import from_adjacency
from matlang.nn import SentenceConv
from matlang.transforms import SentenceFeatures

GRAPHS = [nx.cycle_graph(5), nx.complete_graph(4), nx.petersen_graph()]
SENTENCES = ["A ⊙ A²", "input h; relu(A h) ⊙ (A h)", "(A³ ⊙ I) 𝟏"]


def _batch(graphs=GRAPHS, d=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    datas = []
    for g in graphs:
        dt = from_networkx(g)
        dt.x = torch.randn(g.number_of_nodes(), d, generator=gen, dtype=torch.float64)
        datas.append(dt)
    return PygBatch.from_data_list(datas)


def _weights(ei):
    """Symmetric weights, a function of the unordered pair of global ids."""
    i, j = ei
    return (1.0 + ((i + j) % 3) + 0.5 * (i * j % 2)).to(torch.float64)


def _dense_identity(pb, w=None, d=2):
    """[C X ‖ f(X) ‖ U] graph by graph on the exact evaluator (A holds the weights)."""
    rows = []
    for k in range(pb.num_graphs):
        lo, hi = int(pb.ptr[k]), int(pb.ptr[k + 1])
        sel = (pb.edge_index[0] >= lo) & (pb.edge_index[0] < hi)
        a = np.zeros((hi - lo, hi - lo))
        ei = pb.edge_index[:, sel] - lo
        a[ei[0].numpy(), ei[1].numpy()] = 1.0 if w is None else w[sel].numpy()
        g = from_adjacency(a, allow_weights=True)
        x = pb.x[lo:hi].numpy()
        c = np.asarray(matlang.evaluate(SENTENCES[0], g), dtype=float)
        f = np.stack(
            [_channel(g, x[:, c]) for c in range(d)],
            1,
        ).reshape(hi - lo, d)
        u = np.asarray(matlang.evaluate(SENTENCES[2], g), dtype=float).reshape(-1, 1)
        rows.append(np.concatenate([c @ x, f, u], 1))
    return np.concatenate(rows)


def _channel(g, h):
    return np.asarray(matlang.evaluate(SENTENCES[1], g, inputs={"h": h}))


def _identity_conv(**kw):
    return SentenceConv(2, 5, SENTENCES, init="identity", **kw).double()


def test_weighted_graph_reads_weights_as_evaluate_does():
    pb = _batch()
    w = _weights(pb.edge_index)
    conv = _identity_conv()
    want = _dense_identity(pb, w)
    got = conv(pb.x, pb.edge_index, pb.batch, edge_weight=w)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-10)
    pb.edge_weight = w
    np.testing.assert_allclose(conv(pb).detach().numpy(), want, rtol=1e-10, atol=1e-10)
    # and unweighted stays the 0/1 adjacency
    np.testing.assert_allclose(
        conv(pb.x, pb.edge_index, pb.batch).detach().numpy(), _dense_identity(pb), atol=1e-10
    )


def test_edge_weight_gets_gradients_through_a_linear_support():
    pb = _batch()
    base = _weights(pb.edge_index)
    t = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    conv = SentenceConv(2, 2, "A", init="identity").double()
    out = conv(pb.x, pb.edge_index, pb.batch, edge_weight=base * t)
    out.sum().backward()
    # out = t · (A_w x): d(sum)/dt = sum(A_w x)
    want = conv(pb.x, pb.edge_index, pb.batch, edge_weight=base).sum() / 1.0
    torch.testing.assert_close(t.grad, want.detach())


def test_sparse_adjacencies_and_to_sparse_tensor():
    pb = _batch()
    n = pb.num_nodes
    conv = _identity_conv()
    want = conv(pb.x, pb.edge_index, pb.batch)
    adj_t = torch.sparse_coo_tensor(pb.edge_index.flip(0), torch.ones(pb.num_edges), (n, n))
    torch.testing.assert_close(conv(pb.x, adj_t, pb.batch), want)
    torch.testing.assert_close(conv(pb.x, adj_t.to_sparse_csr(), pb.batch), want)
    # weights as the adjacency's values
    w = _weights(pb.edge_index)
    adj_w = torch.sparse_coo_tensor(pb.edge_index.flip(0), w, (n, n))
    np.testing.assert_allclose(
        conv(pb.x, adj_w, pb.batch).detach().numpy(), _dense_identity(pb, w), atol=1e-10
    )
    with pytest.raises(GraphError, match="twice"):
        conv(pb.x, adj_w, pb.batch, edge_weight=w)


def test_to_sparse_tensor_before_sentence_features():
    g = nx.complete_graph(3)
    d = from_networkx(g)
    d.num_nodes = 3
    d.edge_weight = torch.full((d.edge_index.shape[1],), 2.0)
    feats = SentenceFeatures("(A³ ⊙ I) 𝟏 / 2")
    plain = feats(d)
    # triangles per node with every weight 2: A³'s diagonal is 8 · 2 / 2 = 8 (evaluate's rule)
    weighted = from_adjacency(2 * nx.to_numpy_array(g), allow_weights=True)
    want = np.asarray(matlang.evaluate("(A³ ⊙ I) 𝟏 / 2", weighted))
    np.testing.assert_allclose(plain.x[:, -1].numpy(), want.reshape(-1))
    assert float(want.reshape(-1)[0]) == 8.0
    try:
        sparse = ToSparseTensor(attr="edge_weight")(d.clone())
    except ImportError:  # no torch_sparse: PyG's ToSparseTensor cannot run here
        n = 3
        sparse = d.clone()
        sparse.adj_t = torch.sparse_coo_tensor(d.edge_index.flip(0), d.edge_weight, (n, n))
        del sparse.edge_index, sparse.edge_weight
    np.testing.assert_allclose(feats(sparse).x[:, -1].numpy(), want.reshape(-1))


def test_self_loops_refused_by_name_or_dropped_on_request():
    pb = _batch()
    n = pb.num_nodes
    loops = torch.arange(n).repeat(2, 1)
    ei = torch.cat([pb.edge_index, loops], 1)
    with pytest.raises(GraphError, match="self_loops='remove'"):
        _identity_conv()(pb.x, ei, pb.batch)
    conv = _identity_conv(self_loops="remove")
    torch.testing.assert_close(conv(pb.x, ei, pb.batch), conv(pb.x, pb.edge_index, pb.batch))
    w = torch.cat([_weights(pb.edge_index), torch.full((n,), 7.0, dtype=torch.float64)])
    np.testing.assert_allclose(
        conv(pb.x, ei, pb.batch, edge_weight=w).detach().numpy(),
        _dense_identity(pb, _weights(pb.edge_index)),
        atol=1e-10,
    )


def test_a_float_third_argument_is_named():
    pb = _batch()
    with pytest.raises(GraphError, match="edge_weight="):
        _identity_conv()(pb.x, pb.edge_index, _weights(pb.edge_index))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computes_in_float32(dtype):
    pb = _batch()
    conv = SentenceConv(2, 8, SENTENCES, product=True, activation="relu")
    ref = conv(pb.x.float(), pb.edge_index, pb.batch)
    half = conv.to(dtype)
    out = half(pb.x.to(dtype), pb.edge_index, pb.batch)
    assert out.dtype == dtype
    # the parameters were rounded to dtype: compare with float32 on the rounded parameters
    ref = half.float()(pb.x.to(dtype).float(), pb.edge_index, pb.batch)
    tol = 1e-2 if dtype == torch.float16 else 4e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol * ref.abs().max().item())
    half.to(dtype)(pb.x.to(dtype), pb.edge_index, pb.batch).float().sum().backward()
    assert half.weight.grad is not None and half.weight.grad.dtype == dtype


def test_jit_script_is_refused_with_torch_compile_named():
    with pytest.raises(MatlangError, match="torch.compile"):
        torch.jit.script(_identity_conv())


def test_lazy_in_channels():
    pb = _batch(d=3)
    lazy = SentenceConv(-1, 6, SENTENCES, product=True).double()
    assert "parameters=" in repr(lazy)
    out = lazy(pb.x, pb.edge_index, pb.batch)
    assert lazy.in_channels == 3 and lazy.weight.shape == (1, 3, 6)
    eager = SentenceConv(3, 6, SENTENCES, product=True).double()
    eager.load_state_dict(lazy.state_dict())
    torch.testing.assert_close(eager(pb.x, pb.edge_index, pb.batch), out)
    fresh = SentenceConv(-1, 6, SENTENCES, product=True).double()
    fresh.load_state_dict(lazy.state_dict())  # a lazy layer takes its width from the state
    torch.testing.assert_close(fresh(pb.x, pb.edge_index, pb.batch), out)
    with pytest.raises(MatlangError, match="positive"):
        SentenceConv(-2, 6, "A")


def test_normalize_max_row_sum_per_graph_batch_independent():
    pb = _batch()
    conv = SentenceConv(2, 2, "A ⊙ A²", init="identity", normalize="max_row_sum").double()
    assert "normalize=max_row_sum" in repr(conv)
    got = conv(pb.x, pb.edge_index, pb.batch).detach().numpy()
    rows = []
    for k, g in enumerate(GRAPHS):
        lo, hi = int(pb.ptr[k]), int(pb.ptr[k + 1])
        c = np.asarray(matlang.evaluate("A ⊙ A²", g), dtype=float)
        rows.append(c @ pb.x[lo:hi].numpy() / max(1.0, np.abs(c).sum(1).max()))
    np.testing.assert_allclose(got, np.concatenate(rows), atol=1e-12)
    alone = _batch(GRAPHS[1:2])
    alone.x = pb.x[int(pb.ptr[1]) : int(pb.ptr[2])]
    np.testing.assert_allclose(
        conv(alone.x, alone.edge_index, alone.batch).detach().numpy(), rows[1], atol=1e-12
    )
    w = _weights(pb.edge_index)
    weighted = conv(pb.x, pb.edge_index, pb.batch, edge_weight=w).detach().numpy()
    raw = (
        SentenceConv(2, 2, "A ⊙ A²", init="identity")
        .double()(pb.x, pb.edge_index, pb.batch, edge_weight=w)
        .detach()
        .numpy()
    )
    assert np.all(np.abs(weighted) <= np.abs(raw) + 1e-12) and not np.allclose(weighted, raw)


def test_sentence_gnn_passes_weights_and_normalize_to_its_layers():
    from matlang.nn import SentenceGNN

    pb = _batch()
    w = _weights(pb.edge_index)
    torch.manual_seed(0)
    model = SentenceGNN(
        2, 3, ["A", "A ⊙ A²"], hidden=4, layers=2, normalize="max_row_sum", norm=None
    )
    model = model.double()
    assert all(c.normalize == "max_row_sum" for c in model.convs)
    pb.edge_weight = w
    got = model(pb)
    # by hand: the layers on the weighted graph, the sum readout, the head
    h, pooled = pb.x, []
    for conv in model.convs:
        h = conv(h, pb.edge_index, pb.batch, edge_weight=w)
        pooled.append(
            torch.zeros(pb.num_graphs, h.shape[1], dtype=h.dtype).index_add_(0, pb.batch, h)
        )
    torch.testing.assert_close(got, model.head(torch.cat(pooled, 1)))
    first = model.convs[0]
    assert not torch.allclose(
        first(pb.x, pb.edge_index, pb.batch, edge_weight=w), first(pb.x, pb.edge_index, pb.batch)
    )


def test_sentence_readout_reads_weights_as_evaluate_does():
    from matlang.nn import SentenceReadout

    pb = _batch()
    w = _weights(pb.edge_index)
    readout = SentenceReadout(["tr(A³)", "input h; 𝟏ᵀ (A ⊙ A²) h"], in_channels=2)
    got = readout(pb.x, pb.edge_index, pb.batch, pb.num_graphs, edge_weight=w)
    want = []
    for k in range(pb.num_graphs):
        lo, hi = int(pb.ptr[k]), int(pb.ptr[k + 1])
        sel = (pb.edge_index[0] >= lo) & (pb.edge_index[0] < hi)
        a = np.zeros((hi - lo, hi - lo))
        ei = pb.edge_index[:, sel] - lo
        a[ei[0].numpy(), ei[1].numpy()] = w[sel].numpy()
        g = from_adjacency(a, allow_weights=True)
        h = pb.x[lo:hi].numpy()
        tr = float(matlang.evaluate("tr(A³)", g))
        cols = [
            float(matlang.evaluate("input h; 𝟏ᵀ (A ⊙ A²) h", g, inputs={"h": h[:, c]}))
            for c in range(2)
        ]
        want.append([tr, *cols])
    np.testing.assert_allclose(got.detach().numpy(), np.array(want), rtol=1e-10)
    pb.edge_weight = w
    torch.testing.assert_close(readout(pb), got)
