"""A layer's supports cached per graph as CSR blocks (:mod:`compiler.layers.support_cache`):
a new batch of graphs seen before is assembled from the cache, and what it assembles equals
the supports computed on the whole batch and the dense oracle, whatever else is in the batch."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import matlang
from matlang.compiler import api
from matlang.compiler.layers import stage as st
from matlang.compiler.layers import support_cache as sc
from matlang.compiler.layers import supports as sp
from matlang.compiler.layers.support_cache import seen_graphs
from matlang.graphs import named
from matlang.nn import SentenceConv
from matlang.runtime.batch import Batch
from matlang.runtime.cache import GraphCache

GRAPHS = ["K4", "cycle5", "petersen", "decalin", "star3", "path4"]
#: symmetric and not, plain (A, I: read off the batch) and computed
SUPPORTS = ["I", "A", "A ⊙ A²", "diag(A 𝟏) A", "(A + I) ⊙ A²", "A³ ⊙ I"]


def _batch(names: list[str]) -> Batch:
    return Batch.from_graphs([named(g) for g in names], dtype=torch.float64)


def _dense(sup: st.Supports) -> list[np.ndarray]:
    return [m.to_dense().numpy() for m in sup.csr(torch.float64)]


def _oracle(text: str, order: list[str], b: Batch) -> np.ndarray:
    """The sentence's matrix on the batch of the named graphs ``order``, block by block, by
    the exact dense evaluator."""
    whole = np.zeros((b.num_nodes, b.num_nodes))
    ptr = b.ptr.tolist()
    for k, g in enumerate(order):
        lo, hi = ptr[k], ptr[k + 1]
        whole[lo:hi, lo:hi] = np.asarray(matlang.evaluate(text, named(g)), dtype=np.float64)
    return whole


def _fresh(b: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch's index tensors as new tensors: a new batch object to the memo."""
    return b.edge_index.clone(), b.batch.clone()


def test_a_batch_of_cached_graphs_is_assembled_equal_to_the_oracle() -> None:
    stage = st.Stage.lowered("supports", SUPPORTS, level="matrix")
    first = _batch(GRAPHS)
    stage.supports(*_fresh(first), first.num_nodes)
    filed = [k for k in stage.cache.keys() if k.transform == sc.TRANSFORM]
    assert len(filed) == len(GRAPHS)  # every graph filed once, all its supports in one entry
    # another batch: the same graphs in another order, one twice
    order = ["petersen", "star3", "K4", "petersen", "path4", "decalin", "cycle5"]
    b = _batch(order)
    hits = stage.cache.hits
    with pytest.MonkeyPatch.context() as mp:  # assembled: nothing is materialised
        mp.setattr(api, "materialise", lambda *a: pytest.fail("materialised a cached graph"))
        sup = stage.supports(*_fresh(b), b.num_nodes)
    assert stage.cache.hits == hits + len(order)
    # I is the operand itself in the products (no sparse product); its matrix is still there
    assert sup.identity == [t == "I" for t in SUPPORTS]
    dense = _dense(sup)
    for s, text in enumerate(SUPPORTS):
        np.testing.assert_array_equal(dense[s], _oracle(text, order, b), err_msg=text)
    # and equal, array for array, to the supports computed without the cache
    cold = st.Stage.lowered("supports", SUPPORTS, level="matrix")
    cold_sup = cold.supports(*_fresh(b), b.num_nodes)
    for s in range(len(SUPPORTS)):
        assert torch.equal(sup.rowptrs[s], cold_sup.rowptrs[s])
        assert torch.equal(sup.cols[s], cold_sup.cols[s])
        assert torch.equal(sup.vals[s], cold_sup.vals[s])
    rows, which, vals = sup.entries()
    crows, cwhich, cvals = cold_sup.entries()
    assert torch.equal(rows, crows) and torch.equal(which, cwhich) and torch.equal(vals, cvals)


def test_a_partly_cached_batch_files_its_new_graphs_and_values_do_not_depend_on_the_batch() -> None:
    stage = st.Stage.lowered("supports", SUPPORTS, level="matrix")
    a = _batch(["K4", "cycle5"])
    stage.supports(*_fresh(a), a.num_nodes)
    b = _batch(["cycle5", "petersen", "K4"])  # one new graph: computed whole, it is filed
    mixed = _dense(stage.supports(*_fresh(b), b.num_nodes))
    assert len([k for k in stage.cache.keys() if k.transform == sc.TRANSFORM]) == 3
    alone = _batch(["petersen"])
    solo = _dense(stage.supports(*_fresh(alone), alone.num_nodes))
    lo, hi = b.ptr[1].item(), b.ptr[2].item()
    for s in range(len(SUPPORTS)):
        np.testing.assert_array_equal(mixed[s][lo:hi, lo:hi], solo[s])


def test_layer_outputs_and_gradients_equal_with_and_without_the_cache() -> None:
    """A training step on a batch assembled from the cache equals the same step on the
    supports computed whole (a non-symmetric support included: its transpose is converted)."""
    order = ["decalin", "K4", "petersen", "star3"]
    b = _batch(order)

    def step(warm: bool) -> list[torch.Tensor]:
        gc.collect()  # the last step's layer, and the stage it held, are gone
        torch.manual_seed(0)
        conv = SentenceConv(3, 4, SUPPORTS).double()
        if warm:  # the graphs filed by an earlier batch of another order
            w = _batch(list(reversed(GRAPHS)))
            conv(torch.zeros(w.num_nodes, 3, dtype=torch.float64), *_fresh(w))
        x = torch.randn(
            b.num_nodes, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
        )
        x.requires_grad_(True)
        out = conv(x, *_fresh(b))
        (out * torch.arange(out.numel(), dtype=torch.float64).reshape(out.shape)).sum().backward()
        assert x.grad is not None
        return [out.detach(), x.grad] + [p.grad for p in conv.parameters() if p.grad is not None]

    for got, want in zip(step(True), step(False)):
        torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)


def test_weighted_batches_and_plain_supports_are_not_filed() -> None:
    b = _batch(GRAPHS)
    plain = st.Stage.lowered("supports", ["A", "I"], level="matrix")
    plain.supports(*_fresh(b), b.num_nodes)
    assert not [k for k in plain.cache.keys() if k.transform == sc.TRANSFORM]
    conv = SentenceConv(2, 2, ["A ⊙ A²"]).double()
    x = torch.ones(b.num_nodes, 2, dtype=torch.float64)
    w = torch.rand(b.edge_index.shape[1], dtype=torch.float64) + 0.5
    w = (w + w[_reverse(b.edge_index)]) / 2  # a symmetric weighting
    conv(x, b.edge_index, b.batch, edge_weight=w)
    stage = st.stage(conv._support_key)
    assert not [k for k in stage.cache.keys() if k.transform == sc.TRANSFORM]


def _reverse(ei: torch.Tensor) -> torch.Tensor:
    """For each edge (i, j), the position of (j, i)."""
    n = int(ei.max()) + 1
    key = ei[0] * n + ei[1]
    order = torch.argsort(key)
    return order[torch.searchsorted(key[order], ei[1] * n + ei[0])]


def test_split_and_assemble_round_trip_with_empty_rows_and_an_empty_support() -> None:
    rng = np.random.default_rng(3)
    sizes = [4, 1, 6, 3]
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    n = int(ptr[-1])
    mats = []
    for p in (0.6, 0.3, 0.0):
        m = np.zeros((n, n))
        for k in range(len(sizes)):
            lo, hi = ptr[k], ptr[k + 1]
            m[lo:hi, lo:hi] = (rng.random((hi - lo, hi - lo)) < p) * rng.integers(
                1, 9, (hi - lo,) * 2
            )
        mats.append(m)
    csrs = []
    for m in mats:
        r, c = np.nonzero(m)
        csrs.append(
            st.make_csr(torch.from_numpy(r), torch.from_numpy(c), torch.from_numpy(m[r, c]), n)
        )
    pieces = [sc.split(csrs, ptr, k) for k in range(len(sizes))]
    back = sc.assemble(
        [pieces[k] for k in (2, 0, 3, 1)], np.concatenate([[0], np.cumsum([6, 4, 3, 1])])
    )
    perm = np.concatenate([np.arange(ptr[k], ptr[k + 1]) for k in (2, 0, 3, 1)])
    for (rowptr, cols, vals), m in zip(back, mats):
        got = torch.sparse_csr_tensor(rowptr, cols, vals, (n, n)).to_dense().numpy()
        np.testing.assert_array_equal(got, m[np.ix_(perm, perm)])


@pytest.mark.parametrize("supports", [["I"], ["I", "A ⊙ A²"], ["A ⊙ A²", "I"]])
def test_identity_support_is_the_operand(supports: list[str]) -> None:
    """``I`` skips its product: the layer's output and gradients equal the dense formula
    ``Σ_s C_s x W_s`` (``I`` alone included: the output is never an alias of its input)."""
    b = _batch(["K4", "decalin"])
    torch.manual_seed(0)
    conv = SentenceConv(3, 2, supports, bias=False).double()
    x = torch.randn(b.num_nodes, 3, dtype=torch.float64, requires_grad=True)
    out = conv(x, b.edge_index, b.batch)
    out.pow(2).sum().backward()
    xd = x.detach().clone().requires_grad_(True)
    want = torch.zeros(b.num_nodes, 2, dtype=torch.float64)
    ptr = b.ptr.tolist()
    for s, text in enumerate(supports):
        c = torch.zeros(b.num_nodes, b.num_nodes, dtype=torch.float64)
        for k, g in enumerate(["K4", "decalin"]):
            lo, hi = ptr[k], ptr[k + 1]
            c[lo:hi, lo:hi] = torch.as_tensor(
                np.asarray(matlang.evaluate(text, named(g)), dtype=np.float64)
            )
        want = want + c @ xd @ conv.weight[s].detach()
    want.pow(2).sum().backward()
    torch.testing.assert_close(out.detach(), want.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(x.grad, xd.grad, rtol=1e-12, atol=1e-12)
    # no sparse matrix was built for I, forward or backward (the batch's memo holds them),
    # here (x W first: d > out) nor in a layer that multiplies x first (d ≤ out)
    sup = conv._support_stage.supports(b.edge_index, b.batch, b.num_nodes)
    built = {k for k, _ in [*sup._csr, *sup._csr_t]}
    assert built == {k for k, text in enumerate(supports) if text != "I"}
    wide = SentenceConv(2, 3, supports).double()
    xs = torch.randn(b.num_nodes, 2, dtype=torch.float64, requires_grad=True)
    ei = b.edge_index.clone()  # a new batch to the memo
    wide(xs, ei, b.batch).pow(2).sum().backward()
    sup = wide._support_stage.supports(ei, b.batch, b.num_nodes)
    assert {k for k, _ in [*sup._csr, *sup._csr_t]} == {
        k for k, text in enumerate(supports) if text != "I"
    }


def _filed_stage() -> st.Stage:
    stage = st.Stage.lowered("supports", SUPPORTS, level="matrix")
    warm = _batch(GRAPHS)
    stage.supports(*_fresh(warm), warm.num_nodes)
    return stage


def test_a_batch_of_seen_graphs_is_not_validated_again() -> None:
    """Every graph filed (so validated before): the batch is assembled without validation,
    and equals the supports of the validated path."""
    stage = _filed_stage()
    b = _batch(["star3", "K4", "petersen"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(st, "make_batch", lambda *a, **k: pytest.fail("validated a seen batch"))
        sup = stage.supports(*_fresh(b), b.num_nodes)
    want = st.Stage.lowered("supports", SUPPORTS, level="matrix").supports(*_fresh(b), b.num_nodes)
    for s in range(len(SUPPORTS)):
        assert torch.equal(
            sup.csr(torch.float64)[s].to_dense(), want.csr(torch.float64)[s].to_dense()
        )
    assert sup.identity == want.identity == [t == "I" for t in SUPPORTS]


def _edit(b: Batch, how: str) -> torch.Tensor:
    ei = b.edge_index.clone()
    if how == "between graphs":  # the last edge of graph 0 rewired into graph 1
        ei[1, int((ei[0] < b.ptr[1]).sum()) - 1] = int(b.ptr[1])
    elif how == "no reverse":  # drop one direction of an edge
        ei = ei[:, 1:]
    elif how == "self-loop":
        ei = torch.cat([ei, torch.tensor([[0], [0]])], 1)
    elif how == "out of range":
        ei[1, -1] = b.num_nodes + 3
    elif how == "repeat":  # an edge and its reverse twice
        ei = torch.cat([ei, ei[:, :1], ei[:, :1].flip(0)], 1)
    return ei


def _row_major(ei: torch.Tensor, n: int) -> torch.Tensor:
    return ei[:, torch.argsort(ei[0] * n + ei[1], stable=True)]


@pytest.mark.parametrize("order", ["as edited", "row-major", "reversed"])
@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("between graphs", "joins graph"),
        ("no reverse", "has no reverse edge"),
        ("self-loop", "self-loop"),
        ("out of range", "refers to node"),
        ("repeat", "twice|repeat"),
    ],
)
def test_a_broken_batch_of_seen_graphs_gets_the_validation_error(
    how: str, message: str, order: str
) -> None:
    """The shortcut never vouches for a batch that is not exactly its filed graphs, and what it
    checked on the way (ids, order, repeats, graphs: handed on to the validation) leaves the
    rest checked: each defect gets the error a new batch gets, in row-major order and not."""
    stage = _filed_stage()
    b = _batch(["K4", "cycle5"])
    ei = _edit(b, how)
    if order == "row-major":
        ei = _row_major(ei, b.num_nodes)
    elif order == "reversed":
        ei = ei.flip(1).contiguous()
    with pytest.raises(matlang.errors.GraphError, match=message):
        stage.supports(ei, b.batch.clone(), b.num_nodes)
    fresh = st.Stage.lowered("supports", SUPPORTS, level="matrix")  # nothing filed: same error
    with pytest.raises(matlang.errors.GraphError, match=message):
        fresh.supports(ei, b.batch.clone(), b.num_nodes)


def test_a_batch_equal_to_filed_graphs_but_for_ids_256_apart_is_refused() -> None:
    """A batch of graphs seen before is taken as its filed graphs only when its edges are
    theirs exactly, nothing else being checked first: three cycles of 200 nodes are filed,
    then met again with two columns of the middle one moved 256 ids, one up (into the next
    graph), one down (into the one before). Rows stay in order, each row's columns sorted,
    every degree and every signature the same, and each local id the same modulo 256 (a
    comparison of one-byte ids would take the batch for the filed one). It gets the
    validation's error, and the filed batch is still served."""
    from matlang.graphs import Graph

    n = 200
    ring = np.zeros((n, n), dtype=np.int64)
    ring[np.arange(n), (np.arange(n) + 1) % n] = 1
    ring = ring + ring.T
    graphs = [Graph(ring, name=f"C{n}.{k}") for k in range(3)]
    b = Batch.from_graphs(graphs, dtype=torch.float64)
    stage = st.Stage.lowered("supports", ["A", "A ⊙ A²"], level="matrix")
    stage.supports(*_fresh(b), b.num_nodes)
    stage.supports(*_fresh(b), b.num_nodes)  # split into its pieces: the look compares them
    ei = b.edge_index.clone()
    lo = int(b.ptr[1])
    row, col = ei[0], ei[1]
    up = int(torch.nonzero((row == lo + 10) & (col == lo + 11))[0])  # row 10's last column
    down = int(torch.nonzero((row == lo + 100) & (col == lo + 99))[0])  # row 100's first
    ei[1, up] += 256
    ei[1, down] -= 256
    hit = seen_graphs(
        Batch.from_edge_index(ei.clone(), b.batch.clone(), num_nodes=b.num_nodes),
        stage.cache,
        stage._cache_params,
    )
    assert hit is None  # an edge between graphs: left to the validation
    with pytest.raises(matlang.errors.GraphError, match="joins graph"):
        stage.supports(ei, b.batch.clone(), b.num_nodes)
    sup = stage.supports(*_fresh(b), b.num_nodes)
    assert sup.csr(torch.float64)[1].to_dense().sum() == 0  # a 200-cycle has no triangle


def test_seen_graphs_in_another_edge_order_or_size_are_not_taken_for_filed_ones() -> None:
    """An unsorted edge list of filed graphs is validated and gives the same supports; a
    filed graph's edges under another node count (an isolated node more) are another graph."""
    stage = _filed_stage()
    b = _batch(["cycle5", "K4"])
    perm = torch.randperm(b.edge_index.shape[1], generator=torch.Generator().manual_seed(0))
    shuffled = stage.supports(b.edge_index[:, perm].clone(), b.batch.clone(), b.num_nodes)
    sorted_ = stage.supports(*_fresh(b), b.num_nodes)
    for x, y in zip(shuffled.csr(torch.float64), sorted_.csr(torch.float64)):
        assert torch.equal(x.to_dense(), y.to_dense())
    one = _batch(["K4"])
    bigger = torch.zeros(5, dtype=torch.int64)  # K4's edges on 5 nodes: node 4 isolated
    hit = seen_graphs(
        Batch.from_edge_index(one.edge_index.clone(), bigger, num_nodes=5),
        stage.cache,
        stage._cache_params,
    )
    assert hit is not None and hit[2] is None  # keyed, but not a filed graph
    sup = stage.supports(one.edge_index.clone(), bigger, 5)
    dense = sup.csr(torch.float64)[SUPPORTS.index("A ⊙ A²")].to_dense()
    assert dense[4].abs().sum() == 0 and dense[:4, :4].sum() == 12 * 2


def test_split_many_gives_each_graphs_block_of_the_batch() -> None:
    """Each piece, rebuilt as a dense matrix from its row counts, local columns and values,
    is the graph's diagonal block of the batch's support."""
    b = _batch(GRAPHS)
    stage = st.Stage.lowered("supports", ["A ⊙ A²", "diag(A 𝟏) A"], level="matrix")
    sup = stage.supports(*_fresh(b), b.num_nodes)
    csrs = list(zip(sup.rowptrs, sup.cols, sup.vals))
    ptr = b.ptr.numpy()
    dense = _dense(sup)
    for k, piece in zip([4, 0, 2], sc.split_many(csrs, ptr, [4, 0, 2])):
        lo, hi = int(ptr[k]), int(ptr[k + 1])
        assert [c.shape for c in piece.counts] == [(hi - lo,)] * 2
        for s_ in range(2):
            rows = np.repeat(np.arange(hi - lo), piece.counts[s_])
            block = np.zeros((hi - lo, hi - lo))
            block[rows, piece.cols[s_]] = piece.vals[s_]
            np.testing.assert_array_equal(block, dense[s_][lo:hi, lo:hi])
            assert piece.nnz[s_] == piece.cols[s_].size


def test_an_unsorted_batch_is_sorted_once_seen_or_new(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyG's ``cat([e, e.flip(0)], 1)`` order: a batch of new graphs is sorted once — the look
    for seen graphs hands its sorted rows to the validation — and a batch of seen graphs once,
    without validation; both give the supports of the coalesced batch."""
    import scipy.sparse._sparsetools as tools

    sorts = [0]
    real = tools.coo_tocsr

    def counted(*args):
        sorts[0] += 1
        return real(*args)

    monkeypatch.setattr(tools, "coo_tocsr", counted)
    b = _batch(["cycle5", "K4", "petersen"])
    perm = torch.randperm(b.edge_index.shape[1], generator=torch.Generator().manual_seed(1))
    want = st.Stage.lowered("supports", SUPPORTS, level="matrix").supports(*_fresh(b), b.num_nodes)
    stage = st.Stage.lowered("supports", SUPPORTS, level="matrix")
    for seen in (False, True):
        sorts[0] = 0
        got = stage.supports(b.edge_index[:, perm].clone(), b.batch.clone(), b.num_nodes)
        assert sorts[0] == 1, (seen, sorts[0])
        for x, y in zip(got.csr(torch.float64), want.csr(torch.float64)):
            assert torch.equal(x.to_dense(), y.to_dense())
    assert stage.computed == 2 and len(stage.cache) == 3


def test_the_signatures_are_the_same_on_both_paths_and_a_piece_keeps_its_graphs_edges() -> None:
    """A graph is filed under its signature (nodes, edges, the sum of its local column ids),
    the same from the look for seen graphs and from the computed path, whatever else is in the
    batch; each filed piece keeps its graph's edges (row counts, local columns), and the
    pieces laid end to end are the batch's edges."""
    b = _batch(["K4", "cycle5", "petersen"])
    hit = seen_graphs(Batch.from_edge_index(*_fresh(b), num_nodes=b.num_nodes), GraphCache(), ())
    assert hit is not None
    # K4: degrees 3 at local ids 0..3; cycle5: 2; petersen: 3 at 0..9
    want = [(4, 12, 18, 9 * 10), (5, 10, 20, 4 * 15), (10, 30, 135, 9 * 55)]
    assert [k.graph for k in hit[0]] == want
    rows, cols = b.edge_index[0].numpy(), b.edge_index[1].numpy()
    ptr = b.ptr.numpy()
    indptr = np.searchsorted(rows, np.arange(b.num_nodes + 1))
    assert sc.graph_signatures(ptr, indptr, cols) == want
    alone = _batch(["petersen"])
    arows, acols = alone.edge_index[0].numpy(), alone.edge_index[1].numpy()
    aptr = alone.ptr.numpy()
    aindptr = np.searchsorted(arows, np.arange(alone.num_nodes + 1))
    assert sc.graph_signatures(aptr, aindptr, acols) == [want[2]]
    stage = st.Stage.lowered("supports", ["A ⊙ A²"], level="matrix")
    stage.supports(*_fresh(b), b.num_nodes)
    pieces = sorted(sc.filed_pieces(stage.cache), key=lambda p: p.edges[0].size)
    for piece, name in zip(pieces, ["K4", "cycle5", "petersen"]):
        ei = np.asarray(named(name).edge_index)
        counts = np.bincount(ei[0], minlength=piece.edges[0].size)
        np.testing.assert_array_equal(piece.edges[0], counts)
        np.testing.assert_array_equal(piece.edges[1], ei[1])
    assert sc.same_edges(pieces, ptr, indptr, cols)
    assert not sc.same_edges(pieces[::-1], ptr, indptr, cols)


@pytest.mark.parametrize(
    "sizes",
    [[3, 2], [5, 0, 1, 4, 6], [256, 257, 10]],
    ids=["all edgeless", "empty graphs among", "256 and 257 nodes"],
)
def test_unusual_batches_give_the_uncached_values_new_and_seen(sizes: list[int]) -> None:
    """Batches without edges, with empty graphs, or with graphs on both sides of the filed
    edges' one-byte limit (256 nodes): the cached layer, on the batch new and then seen twice,
    gives what a layer with a stage of its own (the same sentences written otherwise) gives,
    and each graph alone gives its rows of the batch."""
    pyg = pytest.importorskip("torch_geometric.data")
    from matlang.runtime.generators import erdos_renyi

    graphs = []
    for k, n in enumerate(sizes):
        p = 0.0 if sizes == [3, 2] or n < 2 else min(0.4, 6 / n)
        if p:
            ei = torch.as_tensor(
                np.asarray(erdos_renyi(n, p, seed=k).edge_index), dtype=torch.int64
            )
        else:
            ei = torch.zeros((2, 0), dtype=torch.int64)
        graphs.append(pyg.Data(x=torch.randn(n, 3), edge_index=ei, num_nodes=n))
    torch.manual_seed(0)
    ref = SentenceConv(3, 2, ["I", "A", "A² ⊙ A", "diag(A 𝟏) A"])
    conv = SentenceConv(3, 2, ["I", "A", "A ⊙ A²", "diag(A 𝟏) A"])
    conv.load_state_dict(ref.state_dict())
    assert conv._support_stage is not ref._support_stage
    for _ in range(3):
        b = pyg.Batch.from_data_list(graphs)
        out = conv(b.x, b.edge_index, b.batch)
        want = ref(b.x, b.edge_index.clone(), b.batch.clone())
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
    off = 0
    for g in graphs:
        alone = conv(g.x, g.edge_index, torch.zeros(g.num_nodes, dtype=torch.int64))
        torch.testing.assert_close(out[off : off + g.num_nodes], alone, rtol=1e-6, atol=1e-6)
        off += g.num_nodes


@pytest.mark.parametrize("seed", range(4))
def test_random_batches_new_and_seen_in_any_edge_order_equal_a_stage_of_their_own(
    seed: int,
) -> None:
    """A property check of the look for seen graphs, its keys and its hand-over to the
    validation: random batches drawn from a small pool of random graphs (0 to 40 nodes, a few
    over 256), each graph's edges in row-major, reversed, ``cat([e, e.flip(0)])`` or shuffled
    order, some graphs repeated within a batch, many of them seen before. The cached layer
    gives, batch after batch, what a layer with a stage of its own (the same sentences written
    otherwise, a cache of its own) gives on a fresh copy of the batch."""
    pyg = pytest.importorskip("torch_geometric.data")
    from matlang.runtime.generators import erdos_renyi

    rng = np.random.default_rng(seed)
    pool = []
    for k in range(12):
        n = int(rng.choice([0, 1, 2, 5, 9, 17, 40, 260])) if k % 5 else int(rng.integers(3, 30))
        p = float(rng.uniform(0.05, 0.5)) if n > 1 else 0.0
        ei = (
            np.asarray(erdos_renyi(n, p, seed=seed * 100 + k).edge_index) if p else np.zeros((2, 0))
        )
        pool.append((n, torch.as_tensor(ei, dtype=torch.int64)))
    pool += [
        (0, torch.zeros((2, 0), dtype=torch.int64)),
        (4, torch.zeros((2, 0), dtype=torch.int64)),
    ]
    edgeless = [i for i, (_, ei) in enumerate(pool) if ei.shape[1] == 0]

    def ordered(ei: torch.Tensor, how: int) -> torch.Tensor:
        if how == 1:
            return ei.flip(1)
        if how == 2:
            half = ei[:, ei[0] < ei[1]]
            return torch.cat([half, half.flip(0)], 1)
        if how == 3:
            return ei[:, torch.as_tensor(rng.permutation(ei.shape[1]), dtype=torch.int64)]
        return ei

    torch.manual_seed(seed)
    ref = SentenceConv(3, 2, ["I", "A", "A² ⊙ A", "diag(A 𝟏) A", "(A + I) ⊙ A²"])
    conv = SentenceConv(3, 2, ["I", "A", "A ⊙ A²", "diag(A 𝟏) A", "(A + I) ⊙ A²"])
    conv.load_state_dict(ref.state_dict())
    ref._support_stage.cache = None  # its own stage (other texts): the uncached path
    assert conv._support_stage is not ref._support_stage
    for step in range(9):  # the last batch: only graphs without edges
        picks = rng.integers(0, len(pool), size=int(rng.integers(1, 7)))
        if step == 8:
            picks = rng.choice(edgeless, size=int(rng.integers(1, 4)))
        how = int(rng.integers(0, 4))  # one order for the batch: PyG keeps each graph's edges
        graphs = [
            pyg.Data(
                x=torch.randn(pool[i][0], 3),
                edge_index=ordered(pool[i][1], how).contiguous(),
                num_nodes=pool[i][0],
            )
            for i in picks
        ]
        b = pyg.Batch.from_data_list(graphs)
        out = conv(b.x, b.edge_index, b.batch)
        want = ref(b.x, b.edge_index.clone(), b.batch.clone())
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
    assert conv._support_stage.cache.hits > 0  # graphs seen before were assembled


def test_a_support_on_the_edges_is_filed_as_its_values_only() -> None:
    """``A ⊙ A²`` has an entry per edge, in the edges' row-major order: its cache entry keeps
    the values only, and a batch assembled from the cache (its edges given in any order)
    takes its own edges as the structure — equal to the dense oracle; a support on another
    mask keeps its blocks."""
    texts = ["A ⊙ A²", "(A + I) ⊙ A²"]
    stage = st.Stage.lowered("supports", texts, level="matrix")
    assert stage.on_edges == (True, False)
    first = _batch(GRAPHS)
    stage.supports(*_fresh(first), first.num_nodes)
    pieces = sc.filed_pieces(stage.cache)
    assert len(pieces) == len(GRAPHS)
    for piece in pieces:
        assert piece.counts[0] is None and piece.cols[0] is None
        assert piece.counts[1] is not None and piece.cols[1] is not None
    assert sorted(int(p.vals[0].size) for p in pieces) == sorted(
        2 * named(g).num_edges for g in GRAPHS
    )
    order = ["path4", "petersen", "K4", "petersen", "star3"]
    b = _batch(order)
    perm = torch.randperm(b.num_edges, generator=torch.Generator().manual_seed(0))
    hits = stage.cache.hits
    with pytest.MonkeyPatch.context() as mp:  # assembled: nothing is materialised
        mp.setattr(api, "materialise", lambda *a: pytest.fail("materialised a cached graph"))
        sup = stage.supports(b.edge_index[:, perm].clone(), b.batch.clone(), b.num_nodes)
    assert stage.cache.hits == hits + len(order)
    for s, text in enumerate(texts):
        np.testing.assert_array_equal(_dense(sup)[s], _oracle(text, order, b), err_msg=text)
    with pytest.raises(matlang.MatlangError, match="needs the batch's edges"):
        sc.assemble(pieces, first.ptr.numpy())


def test_cached_supports_assembles_a_support_on_the_edges_from_the_batchs_edges() -> None:
    """The look-up that takes a validated batch's coalesced edges (no seen-graph keys)
    assembles a values-only support on those edges: equal to the supports computed whole."""
    from matlang.runtime.masks import prepared_edges

    texts = ["A ⊙ A²", "diag(A 𝟏) A"]
    stage = st.Stage.lowered("supports", texts, level="matrix")
    first = _batch(GRAPHS)
    stage.supports(*_fresh(first), first.num_nodes)
    b = _batch(["decalin", "K4", "cycle5"])
    edges, _ = prepared_edges(b)

    def fail() -> list[sc.Csr]:
        raise AssertionError("computed a batch of filed graphs")

    got = sc.cached_supports(
        b,
        edges,
        stage.cache,
        stage._cache_params,
        fail,
        None,
        stage.on_edges,
        lambda: sp.edge_csr(b, edges),
    )
    cold = st.Stage.lowered("supports", texts, level="matrix")
    cold.cache = None
    want = cold.supports(*_fresh(b), b.num_nodes)
    for s in range(len(texts)):
        assert torch.equal(got[s][0], want.rowptrs[s])
        assert torch.equal(got[s][1], want.cols[s])
        assert torch.equal(got[s][2], want.vals[s])
    assert got[0][1]._base is None  # a copy of the columns, never a view of the edges


def _graph_batch(graphs: list) -> Batch:
    return Batch.from_graphs(graphs, dtype=torch.float64)


def _oracle_of(text: str, graphs: list, b: Batch) -> np.ndarray:
    """``text`` on the batch of ``graphs``, block by block, by the dense evaluator."""
    whole = np.zeros((b.num_nodes, b.num_nodes))
    ptr = b.ptr.tolist()
    for k, g in enumerate(graphs):
        lo, hi = ptr[k], ptr[k + 1]
        whole[lo:hi, lo:hi] = np.asarray(matlang.evaluate(text, g), dtype=np.float64)
    return whole


def test_graphs_that_share_a_signature_are_told_apart_by_their_edges() -> None:
    """The paths 0-1-2-3 and 0-2-1-3 have the same signature (4 nodes, 6 entries, local
    columns summing to 9) but are other labelled graphs with other supports: the second is
    computed, not served the first's entry, and both are then assembled from one entry, each
    its own, equal to the dense evaluator."""
    from matlang.graphs import from_edge_index

    def path(order: list[int]) -> matlang.graphs.Graph:
        e = [(order[i], order[i + 1]) for i in range(3)]
        src, dst = [u for u, _ in e], [v for _, v in e]
        ei = np.array([src + dst, dst + src])
        return from_edge_index(ei, 4)

    p, q = path([0, 1, 2, 3]), path([0, 2, 1, 3])
    texts = ["A ⊙ A²", "diag(A 𝟏) A", "A³ ⊙ I"]
    stage = st.Stage.lowered("supports", texts, level="matrix")
    first = _graph_batch([p])
    stage.supports(*_fresh(first), first.num_nodes)
    second = _graph_batch([q])
    got = _dense(stage.supports(*_fresh(second), second.num_nodes))
    for s, text in enumerate(texts):
        np.testing.assert_array_equal(got[s], _oracle_of(text, [q], second), err_msg=text)
    (key,) = stage.cache.keys()
    assert key.graph == (4, 6, 9, 1 * 1 + 4 * 2 + 4 * 3 + 1 * 4)
    both = _graph_batch([q, p, q])
    with pytest.MonkeyPatch.context() as mp:  # assembled: nothing is materialised
        mp.setattr(api, "materialise", lambda *a: pytest.fail("materialised a cached graph"))
        got = _dense(stage.supports(*_fresh(both), both.num_nodes))
    for s, text in enumerate(texts):
        np.testing.assert_array_equal(got[s], _oracle_of(text, [q, p, q], both), err_msg=text)
    assert len(stage.cache.lookup([key])[0]) == 2  # one entry: both graphs, each once
    # both new in one batch: filed in one entry, neither lost
    fresh = st.Stage.lowered("supports", texts, level="matrix")
    pair = _graph_batch([p, q])
    fresh.supports(*_fresh(pair), pair.num_nodes)
    assert len(fresh.cache) == 1 and len(fresh.cache.lookup(fresh.cache.keys())[0]) == 2
    again = _graph_batch([q, p])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(api, "materialise", lambda *a: pytest.fail("materialised a cached graph"))
        got = _dense(fresh.supports(*_fresh(again), again.num_nodes))
    for s, text in enumerate(texts):
        np.testing.assert_array_equal(got[s], _oracle_of(text, [q, p], again), err_msg=text)


def test_a_batch_of_new_graphs_compares_nothing_and_a_graph_filed_twice_is_kept_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch with a graph whose signature is not filed is computed and filed without
    comparing any graph's edges or splitting anything (done when a graph is met again); a
    filed graph in a batch with a new one is filed again, and the repeat is dropped when its
    entry is next read."""
    stage = st.Stage.lowered("supports", SUPPORTS, level="matrix")
    calls = {"same_edges": 0, "split_many": 0}

    def counted(name):  # type: ignore[no-untyped-def]
        real = getattr(sc, name)

        def f(*a):  # type: ignore[no-untyped-def]
            calls[name] += 1
            return real(*a)

        return f

    for name in calls:
        monkeypatch.setattr(sc, name, counted(name))
    a = _batch(["K4", "cycle5"])
    stage.supports(*_fresh(a), a.num_nodes)
    b = _batch(["K4", "petersen"])  # petersen is new: K4 is filed a second time
    stage.supports(*_fresh(b), b.num_nodes)
    assert calls == {"same_edges": 0, "split_many": 0}
    (k4_key,) = [k for k in stage.cache.keys() if k.graph[:3] == (4, 12, 18)]
    assert len(stage.cache.lookup([k4_key])[0]) == 2
    c = _batch(["petersen", "K4", "cycle5"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(api, "materialise", lambda *a: pytest.fail("materialised a cached graph"))
        got = _dense(stage.supports(*_fresh(c), c.num_nodes))
    assert calls["same_edges"] == 1 and calls["split_many"] == 2
    assert len(stage.cache.lookup([k4_key])[0]) == 1  # the repeat dropped
    for s, text in enumerate(SUPPORTS):
        np.testing.assert_array_equal(
            got[s], _oracle(text, ["petersen", "K4", "cycle5"], c), err_msg=text
        )


@pytest.mark.parametrize("n", [5, 300], ids=["byte ids", "int32 ids"])
def test_same_edges_tells_graphs_of_equal_degrees_apart(n: int) -> None:
    """Two labelled cycles with the same degrees (all 2): the pieces split from a batch are
    its edges laid end to end; swapped, their row counts agree and only the columns tell
    them apart — on both paths of the comparison (one byte an id up to 256 nodes, int32
    beyond)."""
    from matlang.graphs import from_edge_index

    def cycle(step: int) -> matlang.graphs.Graph:
        order = [(i * step) % n for i in range(n)]
        e = [(order[i], order[(i + 1) % n]) for i in range(n)]
        src, dst = [u for u, _ in e], [v for _, v in e]
        return from_edge_index(np.array([src + dst, dst + src]), n)

    b = _graph_batch([cycle(1), cycle(2 if n % 2 else 7)])  # a step coprime with n
    stage = st.Stage.lowered("supports", ["A ⊙ A²"], level="matrix")
    sup = stage.supports(*_fresh(b), b.num_nodes)
    ptr = b.ptr.numpy()
    rowptr, cols = sup.rowptrs[0], sup.cols[0]
    pieces = sc.split_many([(rowptr, cols, sup.vals[0])], ptr, [0, 1], [True], (rowptr, cols))
    assert pieces[0].edges[1].dtype == (np.uint8 if n <= 256 else np.int32)
    indptr = rowptr.numpy()
    np.testing.assert_array_equal(pieces[0].edges[0], pieces[1].edges[0])  # same degrees
    assert sc.same_edges(pieces, ptr, indptr, cols.numpy())
    assert not sc.same_edges(pieces[::-1], ptr, indptr, cols.numpy())
