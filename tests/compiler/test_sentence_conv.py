"""SentenceConv and SentenceReadout: exact at the identity initialisation against the dense
evaluator, gradients to every parameter, both calling conventions, the per-batch memo, errors,
and the round trips a model goes through (dtype, state_dict, pickle, determinism)."""

from __future__ import annotations

import gc
import io
import pickle
from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch

import matlang
from matlang.compiler.api import compile as compile_sentence
from matlang.errors import MatlangError
from matlang.graphs import named
from matlang.nn import SentenceConv, SentenceReadout
from matlang.runtime.batch import Batch

GRAPHS = ["K4", "cycle5", "petersen", "decalin", "star3"]
SUPPORTS = ["A", "A ⊙ A²", "A³ ⊙ I", "L", "(A + I) ⊙ A²", "let C = A ⊙ A²; C", "I", "A²"]


def _batch() -> Batch:
    return Batch.from_graphs([named(g) for g in GRAPHS], dtype=torch.float64)


def _x(b: Batch, d: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b.num_nodes, d, generator=g, dtype=torch.float64)


def _per_graph(b: Batch, x: torch.Tensor) -> list[tuple[object, np.ndarray]]:
    ptr = b.ptr.tolist()
    return [(named(g), x[ptr[k] : ptr[k + 1]].numpy()) for k, g in enumerate(GRAPHS)]


def test_supports_are_exact_at_identity_initialisation() -> None:
    d = 2
    b, conv = _batch(), SentenceConv(d, d * len(SUPPORTS), SUPPORTS, init="identity").double()
    x = _x(b, d)
    out = conv(x, b.edge_index, b.batch).detach().numpy()
    row = 0
    for g, xg in _per_graph(b, x):
        for s, text in enumerate(SUPPORTS):
            m = np.asarray(matlang.evaluate(text, g), dtype=np.float64)  # the oracle
            want = m @ xg
            got = out[row : row + g.num_nodes, s * d : (s + 1) * d]
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=text)
        row += g.num_nodes


def test_channel_and_node_sentences_are_exact_at_identity_initialisation() -> None:
    d = 3
    sentences = ["input h; relu(A h) ⊙ (A² h)", "(A³ ⊙ I) 𝟏 / 2", "A 𝟏"]
    b = _batch()
    conv = SentenceConv(d, d + 2, sentences, init="identity", product=True).double()
    x = _x(b, d, seed=1)
    out = conv(x, b.edge_index, b.batch).detach().numpy()
    row = 0
    for g, xg in _per_graph(b, x):
        n = g.num_nodes
        for c in range(d):
            want = matlang.evaluate(sentences[0], g, inputs={"h": xg[:, c]}, exact=False)
            np.testing.assert_allclose(out[row : row + n, c], want, rtol=1e-12, atol=1e-12)
        tri = nx.triangles(nx.from_numpy_array(g.adjacency))
        np.testing.assert_array_equal(out[row : row + n, d], [tri[v] for v in range(n)])
        np.testing.assert_array_equal(out[row : row + n, d + 1], g.adjacency.sum(1))
        row += n


def test_the_product_term_learns_from_the_identity_start() -> None:
    """``init="identity"`` with ``product=True``: the product term is zero at the start (the
    layer's values are the sentences' alone, as above) and still trainable — both factors zero
    was a saddle point where neither ever received a gradient."""
    d = 3
    b = _batch()
    conv = SentenceConv(d, 2 * d, ["A", "A ⊙ A²"], init="identity", product=True).double()
    x = _x(b, d, seed=2)
    a, w = conv.product_weight_a, conv.product_weight_b
    assert float(w.abs().max()) == 0.0 and float(a.abs().max()) > 0.0
    plain = SentenceConv(d, 2 * d, ["A", "A ⊙ A²"], init="identity").double()
    start = conv(x, b.edge_index, b.batch)
    torch.testing.assert_close(start, plain(x, b.edge_index, b.batch), rtol=0, atol=0)
    opt = torch.optim.Adam(conv.parameters(), lr=1e-2)
    target = torch.randn(
        start.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    for _ in range(3):
        opt.zero_grad()
        ((conv(x, b.edge_index, b.batch) - target) ** 2).mean().backward()
        assert w.grad is not None and float(w.grad.abs().max()) > 0.0
        opt.step()
    assert float(w.abs().max()) > 0.0 and a.grad is not None and float(a.grad.abs().max()) > 0.0


def test_gradients_reach_every_parameter_and_the_input() -> None:
    b = _batch()
    conv = SentenceConv(
        3,
        5,
        ["A", "A ⊙ A²", "input h; relu(A h) ⊙ (A² h)", "(A³ ⊙ I) 𝟏"],
        product=True,
        activation="tanh",
    ).double()
    x = _x(b, 3).requires_grad_(True)
    conv(x, b.edge_index, b.batch).square().sum().backward()
    for name, p in conv.named_parameters():
        assert p.grad is not None and bool(p.grad.abs().sum() > 0), name
    assert x.grad is not None and bool(x.grad.abs().sum() > 0)
    # the custom ops' backward passes against finite differences
    small = SentenceConv(2, 2, ["A ⊙ A²", "L", "input h; relu(A h) ⊙ (A² h)"]).double()
    xs = _x(b, 2, seed=3).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: small(t, b.edge_index, b.batch), (xs,))


@pytest.mark.parametrize("d", [2, 4])  # d ≤ out: supports first (support_mix); d > out: x W_s
def test_product_term_equals_its_formula_with_every_gradient(d: int) -> None:
    """The layer with the GNNML product term ``(x W_a) ⊙ (x W_b)``, on both orders of its
    products: the output, and the gradients of ``x`` and of every weight, equal those of the
    formula written out with the dense supports of the exact evaluator, and pass finite
    differences."""
    from torch.autograd import gradcheck

    b = _batch()
    sentences = ["I", "A", "A ⊙ A²"]
    conv = SentenceConv(d, 3, sentences, product=True).double()
    x = _x(b, d, seed=5).requires_grad_(True)
    out = conv(x, b.edge_index, b.batch)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    names = ["weight", "product_weight_a", "product_weight_b", "bias"]
    got = torch.autograd.grad(out, [x] + [getattr(conv, k) for k in names], g)
    n = b.num_nodes
    dense = torch.zeros(len(sentences), n, n, dtype=torch.float64)
    ptr = b.ptr.tolist()
    for k, name in enumerate(GRAPHS):
        lo, hi = ptr[k], ptr[k + 1]
        for s, text in enumerate(sentences):  # the oracle's supports, graph by graph
            m = np.asarray(matlang.evaluate(text, named(name)), dtype=np.float64)
            dense[s, lo:hi, lo:hi] = torch.from_numpy(m)
    xr = x.detach().clone().requires_grad_(True)
    params = [getattr(conv, k).detach().clone().requires_grad_(True) for k in names]
    w, wa, wb, bias = params
    want = sum(dense[s] @ xr @ w[s] for s in range(len(sentences)))
    want = want + (xr @ wa) * (xr @ wb) + bias
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    expected = torch.autograd.grad(want, [xr, *params], g)
    for name, a, e in zip(["x", *names], got, expected):
        torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12, msg=name)

    def f(x: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(conv, dict(zip(names, ps)), (x, b.edge_index, b.batch))

    small = _x(b, d, seed=6).requires_grad_(True)
    assert gradcheck(f, (small, *[p.detach().clone().requires_grad_(True) for p in params]))


def test_data_objects_and_the_tuple_convention_agree() -> None:
    b = _batch()
    x = _x(b, 2).to(torch.float32)
    conv = SentenceConv(2, 4, ["A", "A ⊙ A²"])
    want = conv(x, b.edge_index, b.batch)
    data = Batch(b.edge_index, b.batch, b.ptr, x)
    torch.testing.assert_close(conv(data), want)
    pyg = pytest.importorskip("torch_geometric.data")
    pb = pyg.Batch.from_data_list(
        [
            pyg.Data(x=x[lo:hi], edge_index=torch.as_tensor(named(g).edge_index), num_nodes=hi - lo)
            for g, lo, hi in zip(GRAPHS, b.ptr[:-1].tolist(), b.ptr[1:].tolist())
        ]
    )
    torch.testing.assert_close(conv(pb), want)
    torch.testing.assert_close(conv(pb.x, pb.edge_index, pb.batch), want)
    # A holds the weights (as matlang.evaluate reads them), in the layer too: with
    # every weight 2, A is 2A and A ⊙ A² is 8 (A ⊙ A²), the same as scaling W_0 and W_1
    pb.edge_weight = torch.full((pb.edge_index.shape[1],), 2.0)
    scaled = SentenceConv(2, 4, ["A", "A ⊙ A²"])
    scaled.load_state_dict(conv.state_dict())
    with torch.no_grad():
        scaled.weight[0] *= 2
        scaled.weight[1] *= 8
    want2 = scaled(pb.x, pb.edge_index, pb.batch)
    torch.testing.assert_close(conv(pb), want2)
    torch.testing.assert_close(conv(pb.x, pb.edge_index, pb.batch, pb.edge_weight), want2)


def test_graph_constants_are_computed_once_per_batch() -> None:
    b = _batch()
    conv = SentenceConv(2, 2, ["A ⊙ A²", "(A + I) ⊙ A²"])
    x = _x(b, 2).float()
    before = conv.graph_constants_computed()
    first = conv(x, b.edge_index, b.batch)
    conv(x, b.edge_index, b.batch)
    assert conv.graph_constants_computed() == before + 1
    # an in-place change of the edges is seen: K4 loses edge (0, 1) in both directions
    ei = b.edge_index.clone()
    conv(x, ei, b.batch)
    keep = ~(((ei[0] == 0) & (ei[1] == 1)) | ((ei[0] == 1) & (ei[1] == 0)))
    kept = ei[:, keep]
    ei.resize_(2, kept.shape[1]).copy_(kept)
    changed = conv(x, ei, b.batch)
    assert conv.graph_constants_computed() == before + 3
    assert not torch.allclose(changed[:4], first[:4])
    torch.testing.assert_close(changed[4:], first[4:])


def test_a_full_support_gives_the_compile_error() -> None:
    with pytest.raises(MatlangError) as layer_err:
        SentenceConv(2, 2, ["A", "exp(A)"])
    with pytest.raises(MatlangError) as compile_err:
        compile_sentence("exp(A)")
    assert str(layer_err.value) == str(compile_err.value)
    assert "^" in str(layer_err.value)
    SentenceConv(2, 2, ["exp(A)"], dense=True)  # allowed on request


@pytest.mark.parametrize(
    ("sentences", "message"),
    [
        (["tr(A³)"], "graph-level"),
        (["input h, g; (A h) ⊙ g"], "free inputs"),
        ([], "at least one sentence"),
    ],
)
def test_misuse_is_named(sentences: list[str], message: str) -> None:
    with pytest.raises(MatlangError, match=message):
        SentenceConv(2, 2, sentences)


def test_identity_initialisation_checks_the_width() -> None:
    with pytest.raises(MatlangError, match=r"\(2 \+ 0\) × 3 \+ 0 = 6"):
        SentenceConv(3, 5, ["A", "I"], init="identity")


def test_repr_shows_sentences_fragment_wl_receptive_field_cost_and_parameters() -> None:
    conv = SentenceConv(4, 8, ["A", "A ⊙ A²", "input h; relu(A h) ⊙ (A² h)"], product=True)
    text = repr(conv)
    assert f"parameters={conv.num_parameters()}" in text
    assert conv.num_parameters() == 3 * 4 * 8 + 2 * 4 * 8 + 8
    assert "[support] A ⊙ A²  (L3, at most 3-WL, mask E, receptive field 1" in text
    assert "[support] A  (L1, at most 1-WL, mask E" in text
    assert "[channel] input h; relu(A h) ⊙ (A² h)  (L1, at most 1-WL, receptive field 2" in text
    assert "FLOPs ≈ 2*E**2/n + E per graph" in text


def test_dtypes_state_dict_pickle_and_determinism() -> None:
    b = _batch()
    x = _x(b, 3)
    torch.manual_seed(0)
    conv = SentenceConv(3, 4, ["A", "A ⊙ A²", "input h; relu(A h)"], product=True)
    y32 = conv(x.float(), b.edge_index, b.batch)
    assert y32.dtype == torch.float32
    assert torch.equal(y32, conv(x.float(), b.edge_index, b.batch))  # deterministic
    conv64 = pickle.loads(pickle.dumps(conv)).to(torch.float64)
    y64 = conv64(x, b.edge_index, b.batch)
    assert y64.dtype == torch.float64
    torch.testing.assert_close(y64.float(), y32, rtol=1e-5, atol=1e-5)
    torch.manual_seed(1)
    other = SentenceConv(3, 4, ["A", "A ⊙ A²", "input h; relu(A h)"], product=True)
    assert not torch.allclose(other(x.float(), b.edge_index, b.batch), y32)
    other.load_state_dict(conv.state_dict())
    assert torch.equal(other(x.float(), b.edge_index, b.batch), y32)
    buf = io.BytesIO()
    torch.save(conv, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert torch.equal(loaded(x.float(), b.edge_index, b.batch), y32)


def _project_objects() -> int:
    """Live project ``nn.Module`` s and sentence-layer stages."""
    from matlang.compiler.layers.stage import Stage

    count = 0
    for o in gc.get_objects():
        t = type(o)  # type(), not isinstance: some of torch's objects warn when asked
        if issubclass(t, Stage) or (
            issubclass(t, torch.nn.Module) and (t.__module__ or "").startswith("matlang.")
        ):
            count += 1
    return count


def test_layers_own_their_stages_and_nothing_outlives_them() -> None:
    """Six layers used, then deleted and collected: none of their stages or compiled modules
    stays alive (no process-wide registry holds them); a pickled layer whose original is gone
    builds and files its stages again."""
    from matlang.compiler.layers import stage as st

    b = _batch()
    x = _x(b, 3).float()
    gc.collect()
    before = _project_objects()
    layers: list[torch.nn.Module] = [
        SentenceConv(3, 4, ["A", f"A ⊙ A^{k + 2}", "input h; relu(A h)", "(A³ ⊙ I) 𝟏"])
        for k in range(5)
    ]
    layers.append(SentenceReadout(["tr(A³) / 6", "input h; 𝟏ᵀ (A ⊙ A²) h"], in_channels=3))
    for layer in layers:
        layer(x, b.edge_index, b.batch)
    blob = pickle.dumps(layers[0])
    want = layers[0](x, b.edge_index, b.batch)
    assert len(st._STAGES) > 0
    del layers, layer
    gc.collect()
    assert _project_objects() == before
    assert len(st._STAGES) == 0
    loaded = pickle.loads(blob)
    assert torch.equal(loaded(x, b.edge_index, b.batch), want)
    assert st.stage(loaded._support_key) is loaded._support_stage


def test_readout_gives_exact_graph_features_and_channel_readouts() -> None:
    b = _batch()
    x = _x(b, 2)
    readout = SentenceReadout(["tr(A³) / 6", "input h; 𝟏ᵀ (A ⊙ A²) h"], in_channels=2)
    assert readout.out_channels == 1 + 2
    r = readout(x, b.edge_index, b.batch)
    assert r.shape == (len(GRAPHS), 3)
    for k, (g, xg) in enumerate(_per_graph(b, x)):
        assert r[k, 0].item() == sum(nx.triangles(nx.from_numpy_array(g.adjacency)).values()) / 3
        a = g.adjacency.astype(float)
        np.testing.assert_allclose(r[k, 1:].numpy(), np.ones(len(a)) @ (a * (a @ a)) @ xg)
    with pytest.raises(MatlangError, match="SentenceConv"):
        SentenceReadout(["A 𝟏"])


def test_sentence_gnn_batch_norm_is_affine_in_evaluation() -> None:
    from matlang.compiler.layers.model import SentenceGNN

    b = _batch()
    x = _x(b, 3).float()
    torch.manual_seed(0)
    normed = SentenceGNN(3, 2, hidden=8, layers=2, norm="batch")
    plain = SentenceGNN(3, 2, hidden=8, layers=2, norm=None)
    missing, unexpected = plain.load_state_dict(normed.state_dict(), strict=False)
    assert not missing and all(k.startswith("norms.") for k in unexpected)
    normed.eval()
    for bn in normed.norms:  # fresh running statistics (mean 0, variance 1): the identity
        bn.eps = 0.0
    torch.testing.assert_close(normed(x, b.edge_index, b.batch), plain(x, b.edge_index, b.batch))
    # in training, each layer's sum is standardised per channel over the batch's nodes
    for bn in normed.norms:
        bn.eps = 1e-5
    normed.train()
    seen = []
    normed.norms[0].register_forward_hook(lambda m, i, o: seen.append(o.detach()))
    normed(x * 1e3, b.edge_index, b.batch).sum().backward()
    torch.testing.assert_close(seen[0].mean(0), torch.zeros(8), atol=1e-4, rtol=0)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in normed.parameters())
    with pytest.raises(MatlangError, match="norm"):
        SentenceGNN(3, 2, norm="layer")


def test_sentence_gnn_without_activation_is_a_polynomial_with_a_linear_head() -> None:
    from matlang.compiler.layers.model import SentenceGNN

    b = _batch()
    x = _x(b, 3).double()
    torch.manual_seed(0)
    kw: dict[str, Any] = {"hidden": 8, "norm": None, "activation": None, "head": "linear"}
    linear = SentenceGNN(3, 2, ["I", "A", "A ⊙ A²"], layers=2, product=False, **kw).double()
    assert isinstance(linear.head, torch.nn.Linear) and linear.hparams["activation"] is None

    def f(m: torch.nn.Module, t: float) -> torch.Tensor:
        return m(t * x, b.edge_index, b.batch) - m(0 * x, b.edge_index, b.batch)

    # no activation, no product: linear in the features (a ReLU model is not, on these weights)
    torch.testing.assert_close(f(linear, 2.0), 2 * f(linear, 1.0))
    torch.testing.assert_close(f(linear, -1.0), -f(linear, 1.0))
    relu = SentenceGNN(3, 2, ["I", "A", "A ⊙ A²"], layers=2, product=False, hidden=8, norm=None)
    relu.load_state_dict({k: v for k, v in linear.state_dict().items() if "head" not in k}, False)
    assert not torch.allclose(f(relu.double(), -1.0), -f(relu.double(), 1.0))
    # with the product term and one layer: degree 2, so the third difference vanishes
    quad = SentenceGNN(3, 2, ["I", "A"], layers=1, product=True, **kw).double()
    d3 = f(quad, 3.0) - 3 * f(quad, 2.0) + 3 * f(quad, 1.0)
    torch.testing.assert_close(d3, torch.zeros_like(d3), atol=1e-9, rtol=0)
    assert not torch.allclose(f(quad, 2.0), 2 * f(quad, 1.0))
    with pytest.raises(MatlangError, match="activation"):
        SentenceGNN(3, 2, activation="tanh")
    with pytest.raises(MatlangError, match="head"):
        SentenceGNN(3, 2, head="attention")


def test_bench_model_sentence_is_a_sentence_gnn_of_the_counting_budget() -> None:
    from benchmarks.paper.models import describe_model, make_model

    net = make_model("sentence", 2, 1, protocol="count", options={"layers": 5})
    info = describe_model(net)
    assert info["class"] == "SentenceGNN" and info["config"]["layers"] == 5
    assert info["config"]["sentences"] == ["I", "A / 3", "A ⊙ A² / 4", "A ⊙ A³ / 30"]
    assert info["config"]["norm"] is None and info["config"]["product"]
    four = describe_model(make_model("sentence", 2, 1, protocol="count"))
    assert 25_000 <= four["parameters"] <= 35_000  # the reference models' ~30K
    from benchmarks.paper.models import counting_features

    graphs = counting_features([named(g) for g in GRAPHS])
    out = net(Batch.from_graphs(graphs, dtype=torch.float32))
    assert out.shape == (len(GRAPHS), 1) and torch.isfinite(out).all()


def test_sentence_gnn_dtype_state_dict_and_torch_save() -> None:
    from matlang.compiler.layers.model import SentenceGNN

    b = _batch()
    x = _x(b, 3)
    torch.manual_seed(0)
    kw = {"hidden": 8, "layers": 2, "norm": "batch", "graph_sentences": ["tr(A³) / 6"]}
    net = SentenceGNN(3, 2, **kw).eval()
    y32 = net(x.float(), b.edge_index, b.batch)
    assert y32.dtype == torch.float32 and torch.isfinite(y32).all()
    buf = io.BytesIO()
    torch.save(net, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert torch.equal(loaded(x.float(), b.edge_index, b.batch), y32)
    torch.manual_seed(1)
    other = SentenceGNN(3, 2, **kw).eval()
    assert not torch.allclose(other(x.float(), b.edge_index, b.batch), y32)
    other.load_state_dict(net.state_dict())
    assert torch.equal(other(x.float(), b.edge_index, b.batch), y32)
    y64 = other.to(torch.float64)(x, b.edge_index, b.batch)
    assert y64.dtype == torch.float64
    torch.testing.assert_close(y64.float(), y32, rtol=1e-5, atol=1e-5)


def test_symmetric_supports_transpose_without_a_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sentences symmetric by structure: the backward's ``Cᵀ`` is the supports' rows
    interleaved by offsets. Its CSR equals the sorted transpose of ``C``, and the gradients
    equal those of the general path (the transpose converted to CSR) and the dense oracle."""
    from matlang.compiler.layers import stage as st

    sym = ["A", "A ⊙ A²", "(A + I) ⊙ A²", "I"]
    b = _batch()
    d = 3

    conv_of: list[SentenceConv] = []

    def grads(symmetric: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        monkeypatch.setattr(st.Stage, "symmetric_sentences", property(lambda self: symmetric))
        conv_of.clear()  # the last layer and its stage go: this one builds its own
        gc.collect()
        torch.manual_seed(0)
        conv = SentenceConv(d, 4, sym).double()
        conv_of.insert(0, conv)
        x = _x(b, d).requires_grad_(True)
        w = _x(b, 4, seed=1)
        (conv(x, b.edge_index, b.batch) * w).sum().backward()
        return x.grad.clone(), [p.grad.clone() for p in conv.parameters()]

    fast_x, fast_p = grads(True)
    sup = conv_of[0]._support_stage.supports(b.edge_index, b.batch, b.num_nodes)
    assert sup.symmetric
    ts = sup.csr_t(torch.float64)
    fwds = sup.csr(torch.float64)
    assert all(t is fwd for t, fwd in zip(ts, fwds))  # Cᵀ = C: no transposition
    for t, fwd in zip(ts, fwds):
        assert torch.equal(t.to_dense(), fwd.to_dense().t())
        for row in range(fwd.shape[0]):  # sorted columns in every row (torch's CSR invariant)
            c = fwd.col_indices()[fwd.crow_indices()[row] : fwd.crow_indices()[row + 1]]
            assert bool((c[1:] > c[:-1]).all())
    # the supports are the sentences' matrices, by the dense oracle
    dense = torch.stack([m.to_dense() for m in fwds], 1)
    ptr = b.ptr.tolist()
    for k, g in enumerate(GRAPHS):
        lo, hi = ptr[k], ptr[k + 1]
        for s_, text in enumerate(sym):
            want = np.asarray(matlang.evaluate(text, named(g)), dtype=np.float64)
            np.testing.assert_array_equal(dense[lo:hi, s_, lo:hi].numpy(), want, err_msg=text)
    slow_x, slow_p = grads(False)
    torch.testing.assert_close(fast_x, slow_x, rtol=1e-13, atol=1e-13)
    for a, c in zip(fast_p, slow_p):
        torch.testing.assert_close(a, c, rtol=1e-13, atol=1e-13)
    monkeypatch.undo()
    assert st.Stage.lowered("supports", sym, level="matrix").symmetric_sentences
    assert not st.Stage.lowered(
        "supports", ["A", "diag(A 𝟏) A"], level="matrix"
    ).symmetric_sentences


def test_sentence_gnn_default_trains_a_count_as_robustly_as_gin() -> None:
    """Issue 33.9: the default SentenceGNN (batch norm) on a triangle-count regression ends at
    most at the train MSE of a PyG GIN of the same width and depth; unnormalised, the same
    model diverges (``A ⊙ A²``, ``A ⊙ A³`` entries multiply over the layers)."""
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GIN, global_add_pool

    from matlang.compiler.layers.model import SentenceGNN

    rng = np.random.default_rng(0)
    data = []
    for _ in range(200):
        n = int(rng.integers(10, 15))
        a = np.triu((rng.random((n, n)) < 0.3).astype(float), 1)
        a = a + a.T
        ei = torch.tensor(np.array(np.nonzero(a)), dtype=torch.long)
        y = torch.tensor([[np.trace(a @ a @ a) / 6]], dtype=torch.float32)
        data.append(Data(x=torch.ones(n, 1), edge_index=ei, y=y, num_nodes=n))

    class GINRegressor(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gin = GIN(1, 32, 3)
            self.head = torch.nn.Sequential(
                torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)
            )

        def forward(self, d: Any) -> torch.Tensor:
            return self.head(global_add_pool(self.gin(d.x, d.edge_index), d.batch))

    def train(make: Any, epochs: int = 15) -> list[float]:
        torch.manual_seed(0)
        model = make()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loader = DataLoader(
            data, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0)
        )
        history = []
        for _ in range(epochs):
            total = 0.0
            for b in loader:
                opt.zero_grad()
                loss = ((model(b) - b.y) ** 2).mean()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * b.num_graphs
            history.append(total / len(data))
        return history

    assert pyg is not None
    default = SentenceGNN(1, 1)
    assert default.hparams["norm"] == "batch" and "BatchNorm1d" in repr(default)
    gin = train(GINRegressor)
    ours = train(lambda: SentenceGNN(1, 1))
    assert np.isfinite(ours).all() and ours[-1] <= gin[-1] and ours[-1] < 0.1 * ours[0]
    plain = train(lambda: SentenceGNN(1, 1, norm=None), epochs=3)
    assert not np.isfinite(plain[-1]) or plain[-1] > 1e3 * gin[-1]


def test_stacked_supports_from_parts_in_any_order() -> None:
    """``_Supports`` keeps one CSR matrix per support (row pointers by a bincount): entries
    given row-major or shuffled give the same matrices, equal to the dense stack
    ``[C_1 ‖ … ‖ C_S]``, their transposes and entries too, with an empty row and an empty
    support."""
    from matlang.compiler.layers import supports as st

    rng = np.random.default_rng(0)
    n = 7
    dense = [(rng.random((n, n)) < p) * rng.integers(1, 9, (n, n)) for p in (0.5, 0.3, 0.0)]
    dense[0][3] = 0  # an empty row
    parts, shuffled = [], []
    for m in dense:
        r, c = np.nonzero(m)
        t = (torch.from_numpy(r), torch.from_numpy(c), torch.from_numpy(m[r, c].astype(float)))
        parts.append(t)
        perm = torch.from_numpy(rng.permutation(r.size))
        shuffled.append(tuple(x[perm] for x in t))
    want = np.concatenate(dense, 1).astype(float)
    for given in (parts, shuffled):
        sup = st.Supports([st.make_csr(*t, n) for t in given], n)
        assert not sup.symmetric
        ms = sup.csr(torch.float64)
        got = np.concatenate([m.to_dense().numpy() for m in ms], 1)
        np.testing.assert_array_equal(got, want)
        for m in ms:
            cols = m.col_indices()
            for row in range(n):  # torch's CSR invariant: sorted columns in every row
                c = cols[m.crow_indices()[row] : m.crow_indices()[row + 1]]
                assert bool((c[1:] > c[:-1]).all())
        ts = np.concatenate([m.to_dense().numpy() for m in sup.csr_t(torch.float64)], 0)
        np.testing.assert_array_equal(ts, want.T)
        rows, which, vals = sup.entries()
        back = np.zeros((n, 3 * n))
        cols = np.concatenate([c.numpy() for c in sup.cols])
        back[rows.numpy(), which.numpy() * n + cols] = vals.numpy()
        np.testing.assert_array_equal(back, want)


@pytest.mark.parametrize("text", ["A", "I", "Aᵀ", "A ⊙ A", "A/3", "I + A"])
def test_plain_supports_equal_materialise(text: str) -> None:
    """``A`` and ``I`` are read off the batch (no interpreter pass); the index and values equal
    :func:`materialise`'s for them, and every other plan is left to it."""
    from matlang.compiler.api import materialise
    from matlang.compiler.layers import stage as st
    from matlang.compiler.layers import supports

    b = _batch()
    module = st.Stage.lowered("supports", [text], level="matrix").module(0, torch.float64)
    plain = supports.plain_support(module, b)
    if text not in ("A", "I"):
        if plain is not None:  # another spelling of one of them: still the same matrix
            index, values = materialise(module, b)
            assert torch.equal(plain[0], index) and torch.equal(plain[1], values)
        return
    assert plain is not None
    index, values = materialise(module, b)
    assert torch.equal(plain[0], index) and torch.equal(plain[1], values.to(torch.float64))


def test_layers_take_nonfinite_as_compile_does() -> None:
    """A float32 overflow in a layer: ``"error"`` (the default) names the sentence and the graph
    and says which option keeps it; ``nonfinite="keep"`` — which the message names, and which
    SentenceConv and SentenceReadout now take — lets the inf through, as ``compile`` does."""
    from matlang.compiler.layers.readout import SentenceReadout
    from matlang.errors import EvaluationError, MatlangError

    tri = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
    x = torch.full((3, 1), 1e20)  # (A h)² = 4e40 > float32's 3.4e38
    conv = ["input h; relu(A h) ⊙ (A² h)"]
    readout = ["input h; 𝟏ᵀ ((A h) ⊙ (A h))"]
    with pytest.raises(EvaluationError, match=r"is inf on graph #0 \(nonfinite='keep' keeps"):
        SentenceConv(1, 1, conv, init="identity", bias=False)(x, tri)
    with pytest.raises(EvaluationError, match=r"SentenceConv and SentenceReadout take it"):
        SentenceReadout(readout, 1)(x, tri)
    kept = SentenceConv(1, 1, conv, init="identity", bias=False, nonfinite="keep")(x, tri)
    assert torch.isinf(kept).all()
    assert torch.isinf(SentenceReadout(readout, 1, nonfinite="keep")(x, tri)).all()
    # finite values are the same either way
    small = torch.ones(3, 1)
    a = SentenceConv(1, 1, conv, init="identity", bias=False)(small, tri)
    b = SentenceConv(1, 1, conv, init="identity", bias=False, nonfinite="keep")(small, tri)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(MatlangError, match="nonfinite must be 'error' or 'keep', got 'ignore'"):
        SentenceConv(1, 1, ["A"], nonfinite="ignore")


def test_differentiable_edge_weights_are_read_every_call_so_gradcheck_holds() -> None:
    """Edge weights that require grad are never served from a memo: a write through ``.data``
    (how ``torch.autograd.gradcheck`` perturbs its inputs, bypassing torch's version counter)
    is seen — the layer gave the old values, and gradcheck a false 'Jacobian mismatch' —, an
    asymmetric write is refused, and gradcheck passes on symmetric weights."""
    from torch.autograd import gradcheck

    from matlang.compiler.layers.readout import SentenceReadout
    from matlang.errors import GraphError

    ei = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 0, 0, 2], [1, 0, 2, 1, 3, 2, 0, 3, 2, 0]])
    u = torch.tensor([1.5, 0.7, 2.0, 1.1, 0.9], dtype=torch.float64, requires_grad=True)
    x = torch.randn(4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    conv = SentenceConv(2, 2, ["A", "A ⊙ A²", "input h; A h"]).double()
    w = u.detach().repeat_interleave(2).requires_grad_(True)
    before = conv(x, ei, edge_weight=w).detach()
    w.data.mul_(2)
    after = conv(x, ei, edge_weight=w).detach()
    fresh = conv(x, ei, edge_weight=w.detach().clone()).detach()
    torch.testing.assert_close(after, fresh, rtol=0, atol=0)
    assert not torch.allclose(before, after)
    w.data[0] = 5.0  # (0, 1) no longer equals (1, 0)
    with pytest.raises(GraphError, match=r"edge \(0, 1\) has no reverse edge \(1, 0\) of the same"):
        conv(x, ei, edge_weight=w)
    assert gradcheck(lambda u: conv(x, ei, edge_weight=u.repeat_interleave(2)), (u,))
    readout = SentenceReadout(["tr(A^3)", "input h; 𝟏ᵀ A h"], 2)
    assert gradcheck(lambda u: readout(x, ei, edge_weight=u.repeat_interleave(2)), (u,))


def test_max_row_sum_scale_is_differentiated_in_the_edge_weights() -> None:
    """``normalize="max_row_sum"`` divides by the largest row sum, itself a function of the
    weights: the gradient through it (detached, an edge in the largest row got a wrong
    gradient: -0.2258 for 3.0 below, central differences -0.0934) agrees with central
    differences on one graph and on a batch of two, each scaled by its own largest row."""
    from torch.autograd import gradcheck

    ei = torch.tensor([[0, 1, 1, 2, 2, 0, 2, 3], [1, 0, 2, 1, 0, 2, 3, 2]])
    x = torch.randn(4, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    conv = SentenceConv(1, 1, ["A"], normalize="max_row_sum", bias=False).double()
    with torch.no_grad():
        conv.weight.fill_(1.0)
    u = torch.tensor([2.0, 3.0, 1.0, 1.5], dtype=torch.float64, requires_grad=True)
    conv(x, ei, edge_weight=u.repeat_interleave(2)).sum().backward()
    assert u.grad is not None
    eps, numeric = 1e-6, []
    for k in range(4):
        d = torch.zeros(4, dtype=torch.float64)
        d[k] = eps
        f = [
            conv(x, ei, edge_weight=(u.detach() + s * d).repeat_interleave(2)).sum()
            for s in (1, -1)
        ]
        numeric.append(float(f[0] - f[1]) / (2 * eps))
    torch.testing.assert_close(
        u.grad, torch.tensor(numeric, dtype=torch.float64), atol=1e-6, rtol=0
    )
    two = torch.cat([ei, ei + 4], 1)
    batch = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    wide = SentenceConv(1, 3, ["A", "A ⊙ A²"], normalize="max_row_sum").double()
    xs = torch.cat([x, 2 * x])
    v = torch.tensor(
        [2.0, 3.0, 1.0, 1.5, 0.5, 1.2, 2.5, 0.8], dtype=torch.float64, requires_grad=True
    )
    assert gradcheck(lambda v: wide(xs, two, batch, edge_weight=v.repeat_interleave(2)), (v,))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_features_run_in_float32_and_come_back_in_their_dtype(
    dtype: torch.dtype,
) -> None:
    """Channel sentences on float16/bfloat16 features (SentenceReadout refused them: 'dtype
    must be torch.float32 or torch.float64'): computed in float32, returned in the features'
    dtype, equal to the float32 result rounded — plain and weighted calls alike."""
    from matlang.compiler.layers.readout import SentenceReadout

    ei = torch.tensor([[0, 1, 1, 2, 2, 0, 2, 3], [1, 0, 2, 1, 0, 2, 3, 2]])
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(0)).to(dtype)
    readout = SentenceReadout(["tr(A^3)", "input h; 𝟏ᵀ (A h)"], 2)
    want = readout(x.float(), ei).to(dtype)
    assert readout(x, ei).dtype == dtype
    torch.testing.assert_close(readout(x, ei), want, rtol=0, atol=0)
    weighted = readout(x, ei, edge_weight=torch.ones(8))
    torch.testing.assert_close(weighted, want, rtol=0, atol=0)
    conv = SentenceConv(2, 2, ["input h; relu(A h) ⊙ (A² h)"], init="identity", bias=False)
    ref = conv(x.float(), ei).to(dtype)
    half = conv.to(dtype)(x, ei)
    assert half.dtype == dtype
    torch.testing.assert_close(half, ref, rtol=1e-2, atol=1e-2)


def test_a_data_object_without_x_is_named_when_the_width_does_not_fit() -> None:
    """A data object without ``x`` gets one constant feature per node; a layer wanting more
    channels says so, instead of only 'x has 1 channels'."""
    from torch_geometric.data import Data

    from matlang.compiler.layers.readout import SentenceReadout
    from matlang.errors import MatlangError

    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)
    with pytest.raises(MatlangError, match=r"expects 2 \(the data object has no x: one constant"):
        SentenceConv(2, 2, ["A"])(data)
    with pytest.raises(MatlangError, match=r"expects 3 \(the data object has no x"):
        SentenceReadout(["input h; 𝟏ᵀ A h"], 3)(data)
    assert SentenceConv(1, 1, ["A"], init="identity", bias=False)(data).tolist() == [[1.0], [1.0]]
    with pytest.raises(MatlangError, match=r"x has 3 channels, the layer expects 2$"):
        SentenceConv(2, 2, ["A"])(torch.ones(2, 3), data.edge_index)


@pytest.mark.parametrize(
    "sentences",
    [["I", "A", "A ⊙ A²"], ["A diag(A 𝟏)", "I"], ["A"], ["I"], ["I", "I", "A"]],
    ids=["symmetric", "asymmetric", "one", "identity", "two-identities"],
)
@pytest.mark.parametrize("normalize", [None, "max_row_sum"])
@pytest.mark.parametrize("loss", ["sum", "weighted"])
@pytest.mark.parametrize("product", [False, True], ids=["", "product"])
def test_supports_first_gradients_equal_the_dense_reference(
    sentences: list[str], normalize: str | None, loss: str, product: bool
) -> None:
    """The supports-first product (``d ≤ out``: one autograd node for ``Σ_s (σ_s ⊙ C_s x)
    W_s``), with the product term ``(x W_a) ⊙ (x W_b)`` or without, against the same sum on
    dense supports from the compiled sentences, forward and the gradients of ``x`` and of
    every weight: a ``.sum()`` loss (an expanded gradient, taken once) and a weighted one; an
    asymmetric support takes its real transpose."""
    b = _batch()
    d, out = 2, 3
    # bias: zero at first, and added in place (the node's output must be a tensor of its own)
    conv = SentenceConv(
        d, out, sentences, normalize=normalize, bias=True, product=product
    ).double()
    x = _x(b, d, seed=5).requires_grad_(True)
    gen = torch.Generator().manual_seed(1)
    r = torch.randn(b.num_nodes, out, generator=gen, dtype=torch.float64)

    def reduce(y: torch.Tensor) -> torch.Tensor:
        return y.sum() if loss == "sum" else (y * r).sum()

    n = b.num_nodes
    dense = []
    for s in sentences:
        index, values = matlang.compiler.api.materialise(s, b)
        c = torch.zeros(n, n, dtype=torch.float64)
        c[index[0], index[1]] = values
        if normalize is not None:  # each graph's block over its largest absolute row sum
            ptr = b.ptr.tolist()
            for k in range(len(ptr) - 1):
                blk = c[ptr[k] : ptr[k + 1], ptr[k] : ptr[k + 1]]
                top = float(blk.abs().sum(1).max()) if blk.numel() else 0.0
                blk /= max(top, 1.0)
        dense.append(c)
    x2 = x.detach().clone().requires_grad_(True)
    w2 = conv.weight.detach().clone().requires_grad_(True)
    y2 = sum(c @ x2 @ w2[k] for k, c in enumerate(dense))
    assert isinstance(y2, torch.Tensor)
    ab: list[torch.Tensor] = []
    if product:
        with torch.no_grad():  # W_b starts at zero: both factors nonzero, or W_b learns nothing
            conv.product_weight_b.copy_(torch.randn(d, out, generator=gen, dtype=torch.float64))
        ab = [
            conv.product_weight_a.detach().clone().requires_grad_(True),
            conv.product_weight_b.detach().clone().requires_grad_(True),
        ]
        y2 = y2 + (x2 @ ab[0]) * (x2 @ ab[1])
    reduce(y2).backward()
    params = [conv.weight] + ([conv.product_weight_a, conv.product_weight_b] if product else [])
    for p in params:
        p.grad = None
    x.grad = None
    reduce(conv(x, b.edge_index, b.batch)).backward()
    torch.testing.assert_close(conv(x, b.edge_index, b.batch), y2, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-10, atol=1e-10)
    for p, q in zip(params, [w2, *ab]):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-10, atol=1e-10)
    # a first layer: x needs no gradient, the weights still get theirs
    for p in params:
        p.grad = None
    reduce(conv(x.detach(), b.edge_index, b.batch)).backward()
    for p, q in zip(params, [w2, *ab]):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-10, atol=1e-10)
