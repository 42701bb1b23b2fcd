"""Reference models: shapes, the paper's theorems on its graph pairs, training, padding, exact
GNNML1/GNNML3 layers from given weights, the registry and ``matlang models``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import io
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor

from matlang.errors import GraphError, MatlangError
from matlang.graphs import PAPER_PAIRS, Graph, from_adjacency, named
from matlang.runtime import preprocess as pp
from matlang.runtime import sparse
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.models import MODELS, build_model, resolve_config
from matlang.runtime.models.base import GraphModel
from matlang.runtime.models.gat import GATConfig
from matlang.runtime.models.gin import GINConfig
from matlang.runtime.models.gnnml1 import GNNML1Conv
from matlang.runtime.models.gnnml3 import GNNML3, GNNML3Conv, SupportOperator

ALL = list(MODELS)
SEEDS = (0, 1, 2)
#: Float64 rounding leaves gaps below 1e-14 between equivalent graphs; the separated pairs of
#: the paper's theorems differ by more than 1e-8 (relative) at every seed we tried.
SAME, APART = 1e-11, 1e-9


def small(
    name: str, in_dim: int = 1, out_dim: int = 4, task: str = "graph", **over: object
) -> GraphModel:
    """A narrow float64 model (the theorems do not depend on width)."""
    cfg: dict[str, object] = {"hidden": 8, "layers": 3}
    if name == "gnnml3":
        cfg["product_channels"] = 8
    cfg.update(over)
    return build_model(name, in_dim, out_dim, cfg, task=task).double()  # type: ignore[arg-type]


def pair_outputs(model: GraphModel, a: Graph, b: Graph, **inputs: object) -> tuple[Tensor, Tensor]:
    with torch.no_grad():
        out = model(as_batch([a, b]), **inputs)
    return out[0], out[1]


def relative_gap(u: Tensor, v: Tensor) -> float:
    scale = max(float(u.abs().sum()), float(v.abs().sum()), 1e-300)
    return float((u - v).abs().sum()) / scale


def two_triangles() -> Graph:
    t = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)
    a = np.zeros((6, 6), dtype=int)
    a[:3, :3] = a[3:, 3:] = t
    return from_adjacency(a, name="2xC3")


# --------------------------------------------------------------------------- shapes & inputs


#: The paper's isomorphism-test architecture (benchmarks/paper/configs.py's ``iso``) as fields
#: over the library's default: 3 layers, no hidden linear layer, each model's width.
_ISO_WIDTH = {"mlp": 120, "gcn": 120, "gat": 120, "gin": 76, "chebnet": 54, "ppgn": 56,
              "gnnml1": 60, "gnnml3": 30}  # fmt: skip


def shallow(name: str) -> dict[str, Any]:
    extra = {"gat": {"heads": 8}, "gnnml3": {"product_channels": 30}}.get(name, {})
    return {"layers": 3, "head": [], "hidden": _ISO_WIDTH[name], **extra}


@pytest.mark.parametrize("name", ALL)
def test_graph_and_node_outputs(name: str) -> None:
    graphs = [named("decalin"), named("cycle5"), named("star3")]
    torch.manual_seed(0)
    g = build_model(name, 1, 3, shallow(name))
    out = g(graphs)
    assert out.shape == (3, 3) and out.dtype == torch.float32
    assert torch.isfinite(out).all()
    nd = build_model(name, 1, 2, "default", task="node")
    assert nd(graphs).shape == (10 + 5 + 4, 2)


def test_models_accept_every_batch_form() -> None:
    torch.manual_seed(0)
    model = small("gnnml1")
    g = named("petersen")
    ref = model([g])
    ei = torch.from_numpy(g.edge_index)
    pyg_like = SimpleNamespace(edge_index=ei, num_nodes=10, x=None, batch=None)
    for form in (g, [g], as_batch([g]), pyg_like, "petersen"):
        torch.testing.assert_close(model(form), ref)


def test_node_features_are_used_and_checked() -> None:
    rng = np.random.default_rng(0)
    g = Graph(named("cycle6").adjacency, "c6", rng.normal(size=(6, 3)))
    model = small("gin", in_dim=3)
    assert model([g]).shape == (1, 4)
    with pytest.raises(GraphError, match="expects 3 node feature"):
        model([named("cycle6")])


# --------------------------------------------------------------------------- theorems


@pytest.mark.parametrize("pair", list(PAPER_PAIRS))
@pytest.mark.parametrize("name", ["gnnml1", "gin", "gcn", "gat", "mlp"])
def test_1wl_models_never_separate_1wl_equivalent_pairs(name: str, pair: str) -> None:
    # Theorems 1 and 6: GIN and GNNML1 are at most as powerful as 1-WL; all three pairs are
    # 1-WL-equivalent, so no weights can separate them.
    a, b = (named(n) for n in PAPER_PAIRS[pair])
    for seed in SEEDS:
        torch.manual_seed(seed)
        gap = relative_gap(*pair_outputs(small(name), a, b))
        assert gap < SAME, f"{name} separated {pair} (seed {seed}): {gap:.2e}"


def test_chebnet_separates_decalin_and_bicyclopentyl() -> None:
    # Theorem 2: their normalised Laplacians' λmax differ (2.0 vs 1.8418)
    a, b = named("decalin"), named("bicyclopentyl")
    for seed in SEEDS:
        torch.manual_seed(seed)
        model = small("chebnet")
        assert relative_gap(*pair_outputs(model, a, b)) > APART
        # with one fixed λmax for every graph it is back to 1-WL
        fixed = torch.tensor([2.0, 2.0], dtype=torch.float64)
        assert relative_gap(*pair_outputs(model, a, b, lambda_max=fixed)) < SAME


def test_chebnet_shift_separates_regular_graphs_of_different_lambda_max() -> None:
    # Appendix after Theorem 2: L1 = 0 on regular graphs, so plain ChebNet cannot use λmax;
    # L + εI can. C6 (λmax 2) and two triangles (λmax 1.5) are both 2-regular on 6 nodes.
    a, b = named("cycle6"), two_triangles()
    torch.manual_seed(0)
    plain = small("chebnet")
    assert relative_gap(*pair_outputs(plain, a, b)) < SAME
    torch.manual_seed(0)
    shifted = build_model("chebnet", 1, 4, {"hidden": 8, "layers": 3, "shift": 0.01}).double()
    assert relative_gap(*pair_outputs(shifted, a, b)) > APART


def test_chebnet_uses_each_graphs_lambda_max() -> None:
    graphs = [named("decalin"), named("bicyclopentyl"), named("petersen")]
    model = small("chebnet")
    lam = model.lambda_max(as_batch(graphs))  # type: ignore[operator]
    want = [pp.lambda_max(g) for g in graphs]
    torch.testing.assert_close(lam, torch.tensor(want, dtype=torch.float64))
    assert len(model.cache) == 3


@pytest.mark.parametrize(
    "name, options",
    [
        ("gnnml3", {"basis": "adjacency", "num_bands": 10}),
        ("gnnml3", {"basis": "normalized_laplacian", "num_bands": 5}),
        ("ppgn", {}),
        ("ppgn", {"bias": True}),
    ],
    ids=["gnnml3-adjacency", "gnnml3-laplacian", "ppgn", "ppgn-bias"],
)
def test_3wl_models_separate_what_1wl_cannot_but_not_strongly_regular_graphs(
    name: str, options: dict[str, object]
) -> None:
    # GNNML3 and PPGN reach L3: they separate the 1-WL pair and the cospectral (L2) pair, but
    # not the 4x4 rook's graph and the Shrikhande graph (3-WL-equivalent, Appendix).
    pairs = {p: tuple(named(n) for n in PAPER_PAIRS[p]) for p in PAPER_PAIRS}
    for seed in SEEDS:
        torch.manual_seed(seed)
        model = small(name, **options)
        assert relative_gap(*pair_outputs(model, *pairs["1-wl"])) > APART
        assert relative_gap(*pair_outputs(model, *pairs["l2"])) > APART
        assert relative_gap(*pair_outputs(model, *pairs["3-wl"])) < SAME


# --------------------------------------------------------------------------- batching


@pytest.mark.parametrize("name", ALL)
def test_a_graphs_output_does_not_depend_on_its_batch(name: str) -> None:
    torch.manual_seed(0)
    model = small(name, task="graph")
    node_model = small(name, task="node")
    g = named("bicyclopentyl")
    others = [named("petersen"), named("cycle3"), named("rook4x4")]
    with torch.no_grad():
        alone = model([g])[0]
        inside = model([others[0], g, *others[1:]])[1]
        alone_nodes = node_model([g])
        inside_nodes = node_model([others[0], g, *others[1:]])[10:20]
    torch.testing.assert_close(inside, alone, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(inside_nodes, alone_nodes, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("readout", [("sum",), ("sum", "max"), ("mean",)])
def test_ppgn_padding_never_changes_a_result(readout: tuple[str, ...], bias: bool) -> None:
    torch.manual_seed(3)
    cfg = {"hidden": 8, "layers": 3, "readout": readout, "bias": bias}
    model = build_model("ppgn", 1, 4, cfg).double()
    node_model = build_model("ppgn", 1, 2, cfg, task="node").double()
    small_graphs = [named("path3"), named("cycle4"), named("K1")]
    big = [named("rook4x4"), named("petersen")]
    with torch.no_grad():
        for g in small_graphs:
            alone = model([g])[0]
            padded = model([big[0], g, big[1]])[1]
            torch.testing.assert_close(padded, alone, rtol=1e-12, atol=1e-12)
            nodes = node_model([big[0], g, big[1]])[16 : 16 + g.num_nodes]
            torch.testing.assert_close(nodes, node_model([g]), rtol=1e-12, atol=1e-12)


def test_ppgn_dense_batch_masks() -> None:
    from matlang.runtime.models.ppgn import dense_batch

    b = as_batch([named("path3"), named("cycle5")])
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]).T.double()
    h, valid, diagonal = dense_batch(b, x)
    assert h.shape == (2, 2, 5, 5)  # channels first: [A | diag(x)], graphs, n_max, n_max
    assert int(valid[0].sum()) == 9 and int(valid[1].sum()) == 25
    assert int(diagonal[0].sum()) == 3
    torch.testing.assert_close(h[0, 0, :3, :3], torch.tensor(named("path3").adjacency).double())
    torch.testing.assert_close(h[1, 1].diagonal(), torch.arange(4.0, 9.0).double())
    assert float(h[:, 0, 3:, :].abs().sum()) == 0.0 and float(h[:, 0, :, 3:].abs().sum()) == 0.0


def test_ppgn_size_buckets() -> None:
    """Padding every graph of a batch to its largest costs n_max³ per graph: one PTC graph of
    109 nodes among 31 of 25 gets a bucket of its own; one size, or small graphs, one bucket."""
    from matlang.runtime.models.ppgn import dense_batch, size_buckets

    assert size_buckets([25] * 31 + [109]) == [list(range(31)), [31]]
    assert size_buckets([40, 40, 40]) == [[0, 1, 2]]
    assert size_buckets([3, 16, 9, 1]) == [[3, 0, 2, 1]]
    # 20 then 30: 2·30³ > 1.5·(20³ + 30³), so 30 starts a bucket; 31 joins it
    assert size_buckets([31, 20, 30]) == [[1], [2, 0]]
    # dense_batch of some graphs: those, in that order, padded to their largest
    b = as_batch([named("path3"), named("cycle5"), named("K1")])
    x = torch.arange(1.0, 10.0).double()[:, None]
    h, valid, _ = dense_batch(b, x, [2, 0])
    assert h.shape == (2, 2, 3, 3) and int(valid[0].sum()) == 1 and int(valid[1].sum()) == 9
    torch.testing.assert_close(h[0, 1], torch.tensor(named("path3").adjacency).double())
    torch.testing.assert_close(h[1, 1].diagonal(), torch.tensor([1.0, 2.0, 3.0]).double())
    assert float(h[1, 0, 0, 0]) == 9.0 and float(h[0, 0].abs().sum()) == 0.0


def mixed_sizes(seed: int, density: float) -> list[Graph]:
    """Random graphs of 5 to 40 nodes in mixed order, which PPGN pads in ≥ 3 size buckets."""
    from matlang.runtime.models.ppgn import size_buckets

    rng = np.random.default_rng(seed)
    graphs = []
    for n in (40, 5, 22, 18, 33, 7):
        a = np.triu((rng.random((n, n)) < density).astype(int), 1)
        graphs.append(from_adjacency(a + a.T))
    assert len(size_buckets([g.num_nodes for g in graphs])) >= 3
    return graphs


@pytest.mark.parametrize("task", ["graph", "node"])
def test_ppgn_buckets_give_each_graph_its_own_result(task: str) -> None:
    """A batch of graphs of 5 to 40 nodes (several buckets, in mixed order) gives every
    graph, and every node, what the graph gives alone; gradients reach every parameter."""
    torch.manual_seed(0)
    graphs = mixed_sizes(seed=1, density=0.2)
    cfg = {"hidden": 6, "layers": 2, "readout": ("sum", "max"), "bias": True}
    model = build_model("ppgn", 1, 3, cfg, task=task).double()  # type: ignore[arg-type]
    out = model(graphs)
    alone = torch.cat([model([g]) for g in graphs])
    torch.testing.assert_close(out, alone, rtol=1e-10, atol=1e-10)
    out.square().sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.parameters())


def test_ppgn_masked_batch_norm_is_batchnorm2d_on_one_size() -> None:
    """On graphs of one size (BREC's pairs) the block norm is BatchNorm2d without affine
    parameters: in training (batch statistics, running estimates) and in evaluation."""
    from matlang.runtime.models.ppgn import MaskedBatchNorm

    torch.manual_seed(0)
    h = torch.randn(4, 3, 5, 5, dtype=torch.float64) * 3 + 1
    valid = torch.ones(3, 5, 5, dtype=torch.bool)
    for momentum in (0.1, 1.0):
        ours = MaskedBatchNorm(4, momentum=momentum).double()
        ref = torch.nn.BatchNorm2d(4, affine=False, momentum=momentum).double()
        for _ in range(2):
            got = ours([h], [valid])[0]
            want = ref(h.transpose(0, 1)).transpose(0, 1)
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ours.running_var, ref.running_var, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ours.running_mean, ref.running_mean, rtol=1e-12, atol=1e-12)
        ours.eval(), ref.eval()
        got = ours([h * 2], [valid])[0]
        torch.testing.assert_close(got, ref(2 * h.transpose(0, 1)).transpose(0, 1))


@pytest.mark.parametrize("task", ["graph", "node"])
def test_ppgn_brec_configuration_does_not_depend_on_buckets(task: str) -> None:
    """BREC's PPGN (batch norm after every block, no ReLU after m_3, max readouts, output
    norm) couples the graphs of a batch through the norm's statistics: those are taken over
    the valid entries of every bucket, so a bucketed batch gives the one-tensor numbers, in
    training and in evaluation; the padding stays zero; gradients reach every parameter."""
    from matlang.runtime.models.ppgn import dense_batch

    torch.manual_seed(0)
    graphs = mixed_sizes(seed=4, density=0.25)
    cfg = dict(resolve_config("ppgn", "brec").__dict__, hidden=6, layers=3)
    bucketed = build_model("ppgn", 1, 4, cfg, task=task).double()  # type: ignore[arg-type]
    whole = build_model("ppgn", 1, 4, {**cfg, "buckets": False}, task=task).double()  # type: ignore[arg-type]
    whole.load_state_dict(bucketed.state_dict())
    out = bucketed(graphs)
    torch.testing.assert_close(out, whole(graphs), rtol=1e-10, atol=1e-10)
    for name, buf in bucketed.named_buffers():
        torch.testing.assert_close(buf, dict(whole.named_buffers())[name], rtol=1e-10, atol=1e-10)
    out.square().sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in bucketed.parameters())
    bucketed.eval(), whole.eval()
    with torch.no_grad():
        torch.testing.assert_close(bucketed(graphs), whole(graphs), rtol=1e-10, atol=1e-10)
        # the blocks' outputs: zero padding, and signed (no ReLU after m_3)
        b = as_batch(graphs)
        x = torch.ones(b.num_nodes, 1, dtype=torch.float64)
        ((outs, valid, _),) = whole.layer_outputs(b, x)
        assert all(float(h[:, ~valid].abs().max()) == 0.0 for h in outs)
        assert all(float(h[:, valid].min()) < 0.0 for h in outs)
    assert dense_batch(b, x)[0].shape[-1] == 40


def test_ppgn_brec_configuration_is_brecs() -> None:
    """The named configuration holds the numbers of BREC's configs/BREC.json and its model:
    5 blocks of 32, one linear layer to 16 outputs from every block's diagonal and
    off-diagonal maxima (2·32·5 inputs), biases; and a bad momentum is refused."""
    cfg = resolve_config("ppgn", "brec")
    model = build_model("ppgn", 1, 16, cfg)
    assert (cfg.layers, cfg.hidden, cfg.readout, cfg.head) == (5, 32, ("max",), ())
    assert model.head(torch.zeros(1, 2 * 32 * 5)).shape == (1, 16)
    assert model.norms is not None and len(model.norms) == 5 and model.output_norm is not None
    # blocks: m1, m2 (in → 32) and m3 (32 + in → 32), all with biases; head 320 → 16
    blocks = sum((2 * (i * 32 + 32) + (32 + i) * 32 + 32) for i in (2, 32, 32, 32, 32))
    assert model.num_parameters() == blocks + 320 * 16 + 16
    with pytest.raises(MatlangError, match="norm_momentum"):
        build_model("ppgn", 1, 1, {"norm": True, "norm_momentum": 0.0})


def test_ppgn_xavier_initialisation() -> None:
    """``init="xavier"``: every linear map of the blocks and the head gets Xavier-normal
    weights (std √(2 / (fan_in + fan_out))) and zero biases, as BREC's PPGN; others refused."""
    torch.manual_seed(0)
    model = build_model("ppgn", 1, 16, "brec-xavier")
    brec = resolve_config("ppgn", "brec")
    assert resolve_config("ppgn", "brec-xavier") == dataclasses.replace(brec, init="xavier")
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 3 * 5 + 1
    for m in linears:
        assert m.bias is not None and float(m.bias.detach().abs().max()) == 0.0
        out_f, in_f = m.weight.shape
        want = (2.0 / (in_f + out_f)) ** 0.5
        if m.weight.numel() >= 1000:  # the sample std is within a few % of the target
            std = float(m.weight.detach().std())
            assert abs(std / want - 1) < 0.1, (m, std, want)
    default = build_model("ppgn", 1, 16, "brec")
    assert float(default.convs[1].m1.bias.detach().abs().max()) > 0.0  # torch's own: uniform biases
    with pytest.raises(MatlangError, match="init must be"):
        build_model("ppgn", 1, 1, {"init": "kaiming"})


def _disjoint_union(*graphs: Graph) -> Graph:
    n = sum(g.num_nodes for g in graphs)
    a = np.zeros((n, n), dtype=int)
    at = 0
    for g in graphs:
        a[at : at + g.num_nodes, at : at + g.num_nodes] = g.adjacency
        at += g.num_nodes
    return from_adjacency(a)


def iso_ppgn(bias: bool) -> GraphModel:
    """PPGN as Table 1 runs it (3 layers, width 56, sum readout, linear map to 10), float64."""
    cfg = {"hidden": 56, "layers": 3, "readout": ("sum",), "head": (), "bias": bias}
    return build_model("ppgn", 2, 10, cfg).double()


def with_degree(g: Graph) -> Graph:
    """The isomorphism test's node features ``[1, degree]``."""
    deg = g.adjacency.sum(1).astype(np.float64)
    return from_adjacency(g.adjacency, x=np.stack([np.ones_like(deg), deg], 1))


def test_ppgn_separates_a_1wl_pair_beyond_table1_tolerance_without_biases() -> None:
    # Table 1 calls a pair distinguished when its 10 outputs differ by more than 1e-3 (L1).
    # Decalin / bicyclopentyl (1-WL-equivalent, 3-WL-distinct) beside the same 40-cycle, n = 50
    # like EXP: without biases the gap is ~4e-3 at every seed; with biases relu(b) fills all n²
    # entries, the outputs grow to ~1e4 and the gap falls to ~1e-6 (the EXP failure).
    cycle = named("cycle40")
    a = with_degree(_disjoint_union(named("decalin"), cycle))
    b = with_degree(_disjoint_union(named("bicyclopentyl"), cycle))
    for seed in SEEDS:
        torch.manual_seed(seed)
        u, v = pair_outputs(iso_ppgn(bias=False), a, b)
        assert float((u - v).abs().sum()) > 2e-3
        torch.manual_seed(seed)
        u, v = pair_outputs(iso_ppgn(bias=True), a, b)
        assert float((u - v).abs().sum()) < 1e-3 < float(u.abs().max())


def test_ppgn_without_biases_reads_a_disjoint_union_as_the_sum_of_its_parts() -> None:
    # No bias: the blocks map a block-diagonal H to a block-diagonal H (W·0 = 0, relu(0) = 0),
    # so every sum readout of G ∪ C is readout(G) + readout(C), and a shared component C
    # cancels from the difference of two graphs' outputs.
    torch.manual_seed(0)
    model = iso_ppgn(bias=False)
    cycle = named("cycle40")
    a, b = named("decalin"), named("bicyclopentyl")
    big_a, big_b = (with_degree(_disjoint_union(g, cycle)) for g in (a, b))
    u, v = pair_outputs(model, with_degree(a), with_degree(b))
    big_u, big_v = pair_outputs(model, big_a, big_b)
    torch.testing.assert_close(big_u - big_v, u - v, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- training


def toy_batch(task: str) -> tuple[Batch, Tensor]:
    graphs = [named(n) for n in ("cycle4", "cycle6", "path4", "path6", "star3", "star5", "K4")]
    graphs += [named("decalin"), named("cospectral_G")]
    b = as_batch(graphs)
    deg = torch.zeros(b.num_nodes).index_add_(0, b.edge_index[0], torch.ones(b.num_edges))
    if task == "node":
        return b, (deg / 4)[:, None]
    tri = torch.tensor(
        [float(np.trace(np.linalg.matrix_power(g.adjacency, 3))) / 6 for g in graphs]
    )
    return b, torch.stack([tri / 4, torch.tensor([g.num_edges / 20 for g in graphs])], 1)


@pytest.mark.parametrize("task", ["graph", "node"])
@pytest.mark.parametrize("name", ALL)
def test_every_model_trains(name: str, task: str) -> None:
    torch.manual_seed(0)
    batch, y = toy_batch(task)
    model = build_model(name, 1, y.shape[1], shallow(name), task=task)  # type: ignore[arg-type]
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(batch), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0], losses
    if name in ("gin",):
        assert all(conv.eps.grad is not None for conv in model.convs)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- exact layers


def test_gnnml1_layers_from_weights_reproduce_a_sentence() -> None:
    # H1 = [1 | A1]; H2 = A H1[:,1] + H1[:,1] ⊙ H1[:,1] = A²1 + d ⊙ d; 1ᵀ H2 = 2 Σ d²
    one = torch.tensor
    l1 = GNNML1Conv.from_weights(
        one([[1.0, 0.0]]), one([[0.0, 1.0]]), one([[0.0, 0.0]]), one([[0.0, 0.0]])
    )
    col = one([[0.0], [1.0]])
    l2 = GNNML1Conv.from_weights(torch.zeros(2, 1), col, col, col)
    assert l1.activation == "identity" and l1.bias is None
    assert [tuple(w.shape) for w in l1.weights] == [(1, 2)] * 4
    for name in ("decalin", "cospectral_H", "star4"):
        g = named(name)
        a = torch.tensor(g.adjacency, dtype=torch.float64)
        ei = torch.from_numpy(g.edge_index)
        h = torch.ones(g.num_nodes, 1, dtype=torch.float64)
        h2 = l2(l1(h.float(), ei), ei).double()
        d = a.sum(1, keepdim=True)
        torch.testing.assert_close(h2, a @ d + d * d, rtol=1e-6, atol=1e-5)
        assert float(h2.detach().sum()) == pytest.approx(2 * float((d**2).sum()))


def test_gnnml1_from_weights_checks_shapes() -> None:
    with pytest.raises(MatlangError, match="shape"):
        GNNML1Conv.from_weights(
            torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(2, 3), torch.zeros(2, 2)
        )


def test_gnnml3_layer_from_weights_is_exact() -> None:
    g = named("cospectral_G")
    sup = pp.gnnml3_supports(g, pp.SupportConfig(num_bands=0, add_adjacency=True))
    assert sup.names == ("all_pass", "adjacency")
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
    w5 = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    w6 = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    layer = GNNML3Conv.from_weights(w, w5, w6)
    assert not layer.learn_supports and layer.weight.dtype == torch.float64
    x = torch.randn(10, 3, generator=gen, dtype=torch.float64)
    out = layer(x, sup.edge_index, sup.edge_attr)
    a = torch.tensor(g.adjacency, dtype=torch.float64)
    want = torch.cat([x @ w[0] + a @ x @ w[1], (x @ w5) * (x @ w6)], 1)
    torch.testing.assert_close(out, want)
    with pytest.raises(GraphError, match="supports"):
        layer(x, sup.edge_index, sup.edge_attr[:, :1])


def test_gnnml3_support_mlps_have_the_papers_shapes() -> None:
    s = 6
    layer = GNNML3Conv(3, 5, s)
    for mlp in (layer.support_mlp1, layer.support_mlp2, layer.support_mlp3):
        assert mlp is not None and (mlp.in_features, mlp.out_features) == (s, 2 * s)
    assert layer.support_mlp4 is not None
    assert (layer.support_mlp4.in_features, layer.support_mlp4.out_features) == (4 * s, s)
    c = layer.learned_supports(torch.rand(7, s))
    assert c.shape == (7, s) and bool((c >= 0).all())  # ReLU output


def test_gnnml3_support_mlps_in_the_authors_form() -> None:
    # the authors' ML3Layer: C = relu(W4 [relu(W1 C') ‖ tanh(W2 C') ⊙ tanh(W3 C')]), no biases
    gen = torch.Generator().manual_seed(3)
    s = 5
    layer = GNNML3Conv(3, 4, s, support_mlp="authors").double()
    mlps = (layer.support_mlp1, layer.support_mlp2, layer.support_mlp3, layer.support_mlp4)
    assert all(m is not None and m.bias is None for m in mlps)
    w1, w2, w3, w4 = (m.weight for m in mlps)  # type: ignore[union-attr]
    c = torch.randn(40, s, generator=gen, dtype=torch.float64)
    z = torch.cat([torch.relu(c @ w1.T), torch.tanh(c @ w2.T) * torch.tanh(c @ w3.T)], 1)
    torch.testing.assert_close(layer.learned_supports(c), torch.relu(z @ w4.T))
    # 0 where C' is 0, and entries that differ in C' differ in C (sigmoids: all near one value)
    assert float(layer.learned_supports(torch.zeros(2, s, dtype=torch.float64)).abs().max()) == 0
    torch.manual_seed(0)
    small_c = 0.05 * torch.rand(200, s, dtype=torch.float64)
    spread = {}
    for form in ("sigmoid", "authors"):
        lay = GNNML3Conv(3, 4, s, support_mlp=form).double()
        out = lay.learned_supports(small_c)
        spread[form] = float(out.std(0).sum() / out.mean(0).abs().sum().clamp_min(1e-12))
    assert spread["authors"] > 10 * spread["sigmoid"]
    assert "support_mlp='sigmoid'" in repr(GNNML3Conv(3, 4, s, support_mlp="sigmoid"))
    assert "support_mlp=" not in repr(layer)  # the default
    with pytest.raises(MatlangError, match="support_mlp must be one of sigmoid, authors"):
        GNNML3Conv(3, 4, s, support_mlp="tanh")


def test_gnnml3_takes_precomputed_supports() -> None:
    torch.manual_seed(0)
    model = small("gnnml3")
    graphs = [named("decalin"), named("cycle5")]
    b = as_batch(graphs)
    sup = pp.batch_supports(b, model.config.support, dtype=torch.float64)  # type: ignore[attr-defined]
    with torch.no_grad():
        torch.testing.assert_close(model(b, supports=sup), model(b))
    assert model.cache.misses == 2


@pytest.mark.parametrize("backend", sparse.available_backends())
@pytest.mark.parametrize("pattern", ["supports", "shuffled", "repeated"])
def test_gnnml3_one_product_equals_one_propagation_per_support(backend: str, pattern: str) -> None:
    # Σ_s C^(s) H_s as one N × N·S product against the reference kernel, once per support
    graphs = [named("decalin"), named("petersen"), named("star3")]
    b = as_batch(graphs)
    sup = pp.batch_supports(
        b, pp.SupportConfig(num_bands=3, receptive_field=2), dtype=torch.float64
    )
    ei, attr = sup.edge_index, sup.edge_attr
    gen = torch.Generator().manual_seed(0)
    if pattern != "supports":  # any order; an entry stored twice adds up
        perm = torch.randperm(ei.shape[1], generator=gen)
        if pattern == "repeated":
            perm = torch.cat([perm, perm[:7]])
        ei, attr = (
            ei[:, perm],
            attr[perm] + torch.rand(perm.shape[0], 4, generator=gen, dtype=torch.float64),
        )
    n, s = b.num_nodes, attr.shape[1]
    op = SupportOperator(ei, n, s)
    h = torch.randn(n, s, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    c = attr.clone().requires_grad_()
    want = sparse.propagate(ei, h[:, 0], c[:, 0], n, backend=backend)
    for k in range(1, s):
        want = want + sparse.propagate(ei, h[:, k], c[:, k], n, backend=backend)
    got = op.propagate(h, c)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    g = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(
        torch.autograd.grad(got, (h, c), g), torch.autograd.grad(want, (h, c), g)
    )
    small_op = SupportOperator(ei[:, :40], n, s)
    assert torch.autograd.gradcheck(
        lambda cc, hh: small_op.propagate(hh, cc), (c[:40].detach().requires_grad_(), h)
    )


def test_gnnml3_layers_share_one_operator() -> None:
    torch.manual_seed(0)
    model = small("gnnml3")
    assert isinstance(model, GNNML3)
    b = as_batch([named("cospectral_G"), named("cycle5")])
    sup = model.supports(b)
    op = SupportOperator(sup.edge_index, b.num_nodes, sup.num_supports)
    conv = model.convs[0]
    assert isinstance(conv, GNNML3Conv)
    x = torch.randn(b.num_nodes, 1, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(
            conv(x, sup.edge_index, sup.edge_attr, operator=op),
            conv(x, sup.edge_index, sup.edge_attr),
            rtol=0,
            atol=0,
        )
    with pytest.raises(GraphError, match="support rows"):
        conv(x, sup.edge_index[:, 1:], sup.edge_attr)


def test_gnnml3_local_supports_vanish_where_the_initial_supports_do() -> None:
    torch.manual_seed(0)
    s = 4
    eq7 = GNNML3Conv(3, 5, s, support_mlp="sigmoid").double()
    local = GNNML3Conv(3, 5, s, local_supports=True, support_mlp="sigmoid").double()
    local.load_state_dict(eq7.state_dict())
    c0 = torch.zeros(3, s, dtype=torch.float64)
    # zero up to the rounding of sigmoid's vector lanes (z(0) in another row position)
    torch.testing.assert_close(local.learned_supports(c0), c0, rtol=0, atol=1e-15)
    assert bool((eq7.learned_supports(c0) > 0).any())  # Eq. 7: sigmoid(0) = ½ reaches C
    c1 = torch.rand(50, s, dtype=torch.float64)
    got = local.learned_supports(c1)
    assert bool((got >= 0).all())
    # C = ReLU(mlp4(z(C')) − mlp4(z(0))): mlp4's bias cancels
    pre4 = eq7.support_mlp4(eq7._support_features(c1))  # type: ignore[misc]
    z0 = eq7.support_mlp4(eq7._support_features(c0[:1]))  # type: ignore[misc]
    torch.testing.assert_close(got, torch.relu(pre4 - z0), rtol=1e-12, atol=1e-14)
    assert "local_supports=True" in repr(local)


def test_gnnml3_local_supports_keep_a_wide_receptive_field_bounded() -> None:
    # the filtering blow-up in small: on a 12×12 grid with r = 5, Eq. 7's C weighs the whole
    # 5-hop ball (61 entries per interior row); local supports stay near the scale of C'
    grid = np.zeros((144, 144), dtype=int)
    for i in range(12):
        for j in range(12):
            for di, dj in ((0, 1), (1, 0)):
                if i + di < 12 and j + dj < 12:
                    u, v = 12 * i + j, 12 * (i + di) + j + dj
                    grid[u, v] = grid[v, u] = 1
    g = from_adjacency(grid, x=np.linspace(-1, 1, 144).reshape(-1, 1))
    scale = {}
    for form, local in (("sigmoid", False), ("sigmoid", True), ("authors", False)):
        torch.manual_seed(0)
        cfg = {
            "hidden": 16,
            "product_channels": 8,
            "layers": 4,
            "bandwidth": 10.0,
            "num_bands": 10,
            "receptive_field": 5,
            "local_supports": local,
            "support_mlp": form,
        }
        model = build_model("gnnml3", 1, 1, cfg, task="node").double()
        with torch.no_grad():
            scale[form, local] = float(model(g).abs().max())
    assert scale["sigmoid", False] > 1e3  # 1e4–1e5 at this seed
    assert scale["sigmoid", True] < 10
    # the authors' bias-free form is 0 where C' is: Eq. 7 as it stands stays local too
    assert scale["authors", False] < 10


# --------------------------------------------------------------------------- backends


@pytest.mark.skipif(
    "torch_sparse" not in sparse.available_backends(),
    reason="torch_sparse does not import here (CI installs it)",
)
@pytest.mark.parametrize("name", ALL)
def test_models_agree_across_backends(name: str) -> None:
    torch.manual_seed(0)
    model = small(name)
    graphs = [named("decalin"), named("petersen"), named("star3")]
    with torch.no_grad():
        model.backend = "torch"
        ref = model(graphs)
        model.backend = "torch_sparse"
        torch.testing.assert_close(model(graphs), ref, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- registry & CLI


def test_the_library_names_one_configuration_per_model_of_about_30k_parameters() -> None:
    """The library's own configuration of each model, ``default`` (the paper's named ones come
    with the experiments: tests/benchmarks/test_configs.py)."""
    for name, spec in MODELS.items():
        assert spec.default == "default" and "default" in spec.configs
        assert spec.configs["default"].layers == 4
        n = build_model(name, 1, 1).num_parameters()
        assert 25_000 <= n <= 35_000, f"{name}: {n}"


def test_register_config_names_a_configuration() -> None:
    from matlang.runtime.models import register_config

    spec = MODELS["gin"]
    mine = GINConfig(hidden=8, layers=2)
    try:
        register_config("gin", "test-small", mine)
        register_config("gin", "test-small", GINConfig(hidden=8, layers=2))  # again: no change
        assert resolve_config("gin", "test-small") is mine
        assert build_model("gin", 1, 1, "test-small").config == mine
        with pytest.raises(MatlangError, match="another configuration named 'test-small'"):
            register_config("gin", "test-small", GINConfig(hidden=9, layers=2))
        with pytest.raises(MatlangError, match="needs a GINConfig"):
            register_config("gin", "test-gat", GATConfig())
    finally:
        spec.configs.pop("test-small", None)
    with pytest.raises(MatlangError, match="no configuration 'no-such-configuration'; known: "):
        resolve_config("gin", "no-such-configuration")


def test_gnnml3_default_is_the_benchmarked_supports_and_count_stays_by_name() -> None:
    """GNNML3's default preprocessing is the configuration the spectral benchmark measures
    (``SupportConfig()``: normalised Laplacian, 5 bands); the paper's counting supports
    (adjacency, 10 bands) are a field away. Both within their stated bound of the
    eigendecomposition; on a 20 × 20 grid the default's expansion needs less than a third of
    the counting supports' order."""
    default = resolve_config("gnnml3")
    assert default is MODELS["gnnml3"].configs["default"] and default.support == pp.SupportConfig()
    count = resolve_config("gnnml3", {"basis": "adjacency", "num_bands": 10})
    assert default.layers == count.layers == 4
    assert resolve_config("gnnml3", {"num_bands": 7}).support.basis == "normalized_laplacian"
    assert all(resolve_config(m) is MODELS[m].configs["default"] for m in MODELS)
    idx = np.arange(400).reshape(20, 20)
    a = np.zeros((400, 400), dtype=int)
    for u, v in ((idx[:-1], idx[1:]), (idx[:, :-1], idx[:, 1:])):
        a[u.ravel(), v.ravel()] = a[v.ravel(), u.ravel()] = 1
    g = from_adjacency(a, name="grid20x20")
    orders = {}
    for name, cfg in (("default", default.support), ("count", count.support)):
        exact = pp.gnnml3_supports(g, dataclasses.replace(cfg, exact=True)).edge_attr
        for sup in (
            pp.gnnml3_supports(g, cfg),  # as the model takes them
            pp.gnnml3_supports(g, dataclasses.replace(cfg, exact=False)),  # the expansion
        ):
            err = float((sup.edge_attr - exact).abs().max())
            assert err <= sup.error_bound <= cfg.tolerance == 1e-6, name
        assert sup.order > 0 and sup.error_bound > 0
        orders[name] = sup.order
    assert 3 * orders["default"] < orders["count"], orders
    out = build_model("gnnml3", 1, 1, task="node").double()(g)
    assert out.shape == (400, 1) and bool(torch.isfinite(out).all())


def test_build_model_configurations_and_errors() -> None:
    m = build_model("gin", 2, 3, {"hidden": 8, "layers": 2})
    assert m.config.hidden == 8 and m.config.layers == 2 and m.config.head == (32,)
    assert resolve_config("gat", "default") == MODELS["gat"].configs["default"]
    assert isinstance(build_model("GAT", 1, 1, GATConfig(hidden=8, heads=2)), GraphModel)
    with pytest.raises(MatlangError, match="unknown model"):
        build_model("gcnn", 1, 1)
    with pytest.raises(MatlangError, match="no configuration"):
        build_model("gcn", 1, 1, "huge")
    with pytest.raises(MatlangError, match="no option"):
        build_model("gcn", 1, 1, {"K": 3})
    with pytest.raises(MatlangError, match="needs a GATConfig"):
        build_model("gat", 1, 1, resolve_config("gcn"))
    with pytest.raises(MatlangError, match="unknown task"):
        build_model("gcn", 1, 1, task="edge")  # type: ignore[arg-type]
    with pytest.raises(MatlangError, match="multiple of heads"):
        build_model("gat", 1, 1, {"hidden": 10, "heads": 4})
    with pytest.raises(MatlangError, match="readout"):
        build_model("gcn", 1, 1, {"readout": ("median",)})


def _models_command(argv: list[str]) -> str:
    """Run ``matlang models ARGV`` through this module's own parser; return its stdout."""
    from matlang.cli import models as cli_models

    parser = argparse.ArgumentParser(prog="matlang")
    cli_models.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["models", *argv])
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert args.func(args) == 0
    return buf.getvalue()


def test_matlang_models_command() -> None:
    from matlang.cli import COMMANDS
    from matlang.cli import models as cli_models

    assert cli_models in COMMANDS
    rows = json.loads(_models_command(["--json", "--in-dim", "2", "--out-dim", "10"]))
    assert {(r["model"], r["config"]) for r in rows} == {
        (m, c) for m in MODELS for c in MODELS[m].configs  # plugins' configurations included
    }
    assert {(m, "default") for m in MODELS} <= {(r["model"], r["config"]) for r in rows}
    for r in rows:
        assert r["parameters"] == build_model(r["model"], 2, 10, r["config"]).num_parameters()
    text = _models_command(["--config", "default"])
    assert "gnnml3" in text and "brec" not in text.split("\n", 2)[2]
    with pytest.raises(MatlangError, match="no configuration named"):
        _models_command(["--config", "nope"])


# --------------------------------------------------------------------------- PyG cross-checks

needs_pyg = pytest.mark.skipif(
    importlib.util.find_spec("torch_geometric") is None, reason="torch_geometric not installed"
)


@needs_pyg
def test_layers_match_pytorch_geometric() -> None:
    import torch_geometric.nn as pyg

    from matlang.runtime.models.chebnet import ChebConv, scaled_laplacian
    from matlang.runtime.models.gat import GATConv
    from matlang.runtime.models.gcn import GCNConv
    from matlang.runtime.models.gin import GINConv

    torch.manual_seed(0)
    graphs = [named("decalin"), named("bicyclopentyl")]
    b = as_batch(graphs)
    ei = b.edge_index
    x = torch.randn(b.num_nodes, 3, dtype=torch.float64)

    ours_gcn, theirs_gcn = GCNConv(3, 4).double(), pyg.GCNConv(3, 4).double()
    with torch.no_grad():
        theirs_gcn.lin.weight.copy_(ours_gcn.weight.T)
        theirs_gcn.bias.copy_(torch.randn(4))
        ours_gcn.bias.copy_(theirs_gcn.bias)
    torch.testing.assert_close(ours_gcn(x, ei), theirs_gcn(x, ei))

    ours_gin = GINConv(3, 4).double()
    theirs_gin = pyg.GINConv(ours_gin.mlp, train_eps=True).double()
    with torch.no_grad():
        ours_gin.eps.fill_(0.3)
        theirs_gin.eps.fill_(0.3)
    torch.testing.assert_close(ours_gin(x, ei), theirs_gin(x, ei))

    ours_cheb, theirs_cheb = ChebConv(3, 4, K=3).double(), pyg.ChebConv(3, 4, K=3).double()
    with torch.no_grad():
        for k, lin in enumerate(theirs_cheb.lins):
            lin.weight.copy_(ours_cheb.weight[k].T)
        theirs_cheb.bias.zero_()
    lam = pp.batch_lambda_max(b)
    lei, lw = scaled_laplacian(b, lam)
    torch.testing.assert_close(
        ours_cheb(x, lei, lw), theirs_cheb(x, ei, batch=b.batch, lambda_max=lam)
    )

    ours_gat, theirs_gat = GATConv(3, 4, heads=2).double(), pyg.GATConv(3, 4, heads=2).double()
    with torch.no_grad():
        theirs_gat.lin.weight.copy_(ours_gat.weight.T)
        theirs_gat.att_src.copy_(ours_gat.att_src[None])
        theirs_gat.att_dst.copy_(ours_gat.att_dst[None])
        theirs_gat.bias.zero_()
    torch.testing.assert_close(ours_gat(x, ei), theirs_gat(x, ei))


def test_without_the_experiments_a_paper_configuration_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import matlang.runtime.models as registry

    spec = MODELS["gin"]
    monkeypatch.setattr(registry, "load_named_configs", lambda: None)  # no plugin installed
    bare = dataclasses.replace(spec, configs={"default": spec.configs["default"]})
    monkeypatch.setitem(registry.MODELS, "gin", bare)
    with pytest.raises(MatlangError, match="known: default .*pip install -e benchmarks"):
        build_model("gin", 1, 1, "iso")
