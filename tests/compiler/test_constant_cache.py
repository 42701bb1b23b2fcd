"""Graph constants cached per graph across batches (compiler/constant_cache.py): a second epoch
of reshuffled batches is served from the cache (hits counted, nothing recomputed); assembled
values equal a fresh computation exactly and the dense evaluator; a changed graph (one edge
moved, same n) or a changed option misses."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from matlang import parse_program
from matlang.compiler.api import compile
from matlang.compiler.layers.conv import SentenceConv
from matlang.evaluator import evaluate_graph
from matlang.graphs import Graph
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.generators import erdos_renyi
from matlang.runtime.preprocess import PreprocessCache

SENTENCES = [
    "(A ⊙ A²)² 𝟏",
    "tr(A³) / 6",
    "A ⊙ A²",
    "(A + I) ⊙ A²",
    "𝟏ᵀ ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)",
    "A³ ⊙ I",
]
WITH_INPUT = [
    "input h; (A ⊙ A²) h",
    "input h; (diag(A 𝟏) A ⊙ A²) h",  # not symmetric: its transpose is built in the backward
    "input h; (diag(A 𝟏) A ⊙ A²)ᵀ h + A h",
    "input h; hᵀ (A ⊙ A²) h",
]


def _graphs(count: int = 24, seed: int = 0) -> list[Graph]:
    return [erdos_renyi(8 + i % 5, 0.45, seed=seed + i) for i in range(count)]


def _epochs(graphs: list[Graph], size: int, epochs: int, seed: int = 0) -> list[list[Batch]]:
    """Shuffled batches, new Batch objects every epoch."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(epochs):
        order = rng.permutation(len(graphs))
        out.append(
            [
                Batch.from_graphs([graphs[i] for i in order[s : s + size]])
                for s in range(0, len(graphs), size)
            ]
        )
    return out


def _values(module: torch.nn.Module, batch: Batch, **kw: object) -> torch.Tensor:
    out = module(batch, **kw).detach()
    return out.to_dense() if out.is_sparse else out


def _dense(text: str, graphs: list[Graph]) -> list[np.ndarray]:
    e = parse_program(text).sentences[0].expr
    return [np.asarray(evaluate_graph(e, g), dtype=np.float64) for g in graphs]


@pytest.mark.parametrize("text", SENTENCES)
def test_second_epoch_hits_and_equals(text: str) -> None:
    graphs = _graphs()
    module = compile(text, dtype="float64")
    fresh = compile(text, dtype="float64", cache=False)
    first, second = _epochs(graphs, 7, 2)
    for b in first:
        module(b)
    assert module.cache.hits == 0 and module.cache.misses == len(graphs)
    for b in second:
        got = _values(module, b)
        assert torch.equal(got, _values(fresh, b))
    # every graph of the second epoch came from the cache
    assert module.cache.hits == len(graphs) and module.cache.misses == len(graphs)
    # and equals the dense evaluator, graph by graph
    b = second[0]
    members = b.to_graphs()
    got = _values(module, Batch.from_graphs(members)).numpy()
    want = _dense(text, members)
    level = module.plan.level
    if level == "graph":
        np.testing.assert_allclose(got, [float(w) for w in want], rtol=0, atol=1e-9)
    elif level == "node":
        np.testing.assert_allclose(got, np.concatenate(want), rtol=0, atol=1e-9)
    else:
        offs = np.cumsum([0] + [g.num_nodes for g in members])
        for i, w in enumerate(want):
            np.testing.assert_allclose(got[offs[i] : offs[i + 1], offs[i] : offs[i + 1]], w)


@pytest.mark.parametrize("text", WITH_INPUT)
def test_operators_assembled(text: str) -> None:
    """Propagate operators (CSR both ways) assembled from cached graphs: values and gradients
    equal the uncached module's."""
    graphs = _graphs(18, seed=3)
    module = compile(text, dtype="float64")
    fresh = compile(text, dtype="float64", cache=False)
    first, second = _epochs(graphs, 5, 2, seed=1)
    for b in first:
        module(b, inputs={"h": torch.ones(b.num_nodes, 2, dtype=torch.float64)})
    for b in second:
        gen = torch.Generator().manual_seed(1)
        x = torch.randn(b.num_nodes, 3, dtype=torch.float64, generator=gen)
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = module(b, inputs={"h": xa}), fresh(b, inputs={"h": xb})
        torch.testing.assert_close(ya, yb, rtol=0, atol=1e-12)
        (ya**2).sum().backward()
        (yb**2).sum().backward()
        torch.testing.assert_close(xa.grad, xb.grad, rtol=0, atol=1e-12)
    assert module.cache.hits == len(graphs)


def test_partly_new_batches() -> None:
    """Seen and unseen graphs in one batch: the unseen ones are computed together, the result
    equals a fresh computation."""
    graphs = _graphs(30, seed=5)
    module = compile("(A ⊙ A²)² 𝟏 + (A³ ⊙ I) 𝟏", dtype="float64")
    fresh = compile("(A ⊙ A²)² 𝟏 + (A³ ⊙ I) 𝟏", dtype="float64", cache=False)
    module(Batch.from_graphs(graphs[::2]))
    mixed = Batch.from_graphs(graphs[::-1])
    assert torch.equal(module(mixed), fresh(mixed))
    assert module.cache.hits == 15 and module.cache.misses == 30


def test_weighted_graphs() -> None:
    rng = np.random.default_rng(2)
    graphs = []
    for g in _graphs(10, seed=7):
        a = np.asarray(g.adjacency, dtype=np.float64)
        w = np.triu(rng.integers(1, 4, a.shape) * a, 1) / 2
        graphs.append(Graph(w + w.T))
    module = compile("(A ⊙ A²) 𝟏", dtype="float64")
    fresh = compile("(A ⊙ A²) 𝟏", dtype="float64", cache=False)
    for b in [x for epoch in _epochs(graphs, 4, 2) for x in epoch]:
        assert torch.equal(module(b), fresh(b))
    assert module.cache.hits == 10
    want = np.concatenate(_dense("(A ⊙ A²) 𝟏", graphs))
    got = module(Batch.from_graphs(graphs)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_moved_edge_misses() -> None:
    """Same n, same number of edges, one edge moved: another fingerprint, a miss, new values."""
    g = erdos_renyi(12, 0.4, seed=11)
    a = np.asarray(g.adjacency).copy()
    i, j = map(int, np.argwhere(np.triu(a, 1))[0])
    k, m = map(int, np.argwhere(np.triu(1 - a, 1) > 0)[0])
    a[i, j] = a[j, i] = 0
    a[k, m] = a[m, k] = 1
    moved = Graph(a)
    module = compile("(A ⊙ A²)² 𝟏", dtype="float64")
    module(Batch.from_graphs([g]))
    got = module(Batch.from_graphs([moved]))
    assert module.cache.hits == 0 and module.cache.misses == 2
    want = _dense("(A ⊙ A²)² 𝟏", [moved])[0]
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=0, atol=1e-12)


def test_changed_option_misses() -> None:
    """A shared cache: another sentence, another dtype or another option never reads an entry
    made under different ones; the default backend named explicitly is the same option (with
    or without torch-sparse installed)."""
    graphs = _graphs(6)
    shared = PreprocessCache()
    b = Batch.from_graphs(graphs)
    a = compile("(A ⊙ A²) 𝟏", dtype="float64", cache=shared)
    a(b)
    assert shared.misses == 6
    others = [
        compile("(A ⊙ A²)² 𝟏", dtype="float64", cache=shared),
        compile("(A ⊙ A²) 𝟏", dtype="float32", cache=shared),
        compile("(A ⊙ A²) 𝟏", dtype="float64", nonfinite="keep", cache=shared),
    ]
    other_backends = [n for n in sparse.available_backends() if n != sparse.default_backend()]
    others += [compile("(A ⊙ A²) 𝟏", dtype="float64", backend=n, cache=shared)
               for n in other_backends]
    for other in others:
        hits = shared.hits
        other(Batch.from_graphs(graphs))
        assert shared.hits == hits
    same = compile("(A ⊙ A²) 𝟏", dtype="float64", backend=sparse.default_backend(), cache=shared)
    hits = shared.hits
    same(Batch.from_graphs(graphs))
    assert shared.hits == hits + 6
    # .float() reads what the float32 module filed (same sentence and options), not its own
    a.float()
    hits = shared.hits
    a(Batch.from_graphs(graphs))
    assert shared.hits == hits + 6 and len(shared) == (1 + len(others)) * 6


def test_cheap_plans_and_opt_out() -> None:
    """A plan that only reads the edges is not cached (fingerprinting would cost as much);
    cache=False keeps nothing."""
    b = Batch.from_graphs(_graphs(4))
    m = compile("input h; A h", dtype="float64")
    m(b, inputs={"h": torch.ones(b.num_nodes, dtype=torch.float64)})
    assert len(m.cache) == 0
    off = compile("(A ⊙ A²) 𝟏", cache=False)
    off(b)
    assert off.cache is None


def test_pickled_module_starts_empty() -> None:
    m = compile("(A ⊙ A²) 𝟏", dtype="float64")
    b = Batch.from_graphs(_graphs(4))
    want = m(b)
    m2 = pickle.loads(pickle.dumps(m))
    assert len(m2.cache) == 0
    assert torch.equal(m2(Batch.from_graphs(_graphs(4))), want)


def test_sentence_conv_over_shuffled_batches() -> None:
    """SentenceConv's supports come from the cache on the second epoch (every graph a hit)
    and give the values of supports computed afresh."""
    from matlang.compiler.layers.stage import stage

    graphs = _graphs(16, seed=9)
    torch.manual_seed(0)
    conv = SentenceConv(2, 3, ["A ⊙ A² + A", "(A + I) ⊙ A² - I"]).double()
    first, second = _epochs(graphs, 4, 2, seed=2)
    for b in first:
        conv(torch.ones(b.num_nodes, 2, dtype=torch.float64), b.edge_index, b.batch)
    st = stage(conv._support_key)
    cache = st.cache  # the layer's one cache: its supports per graph (both sentences at once)
    assert cache is not None and len(st._modules) == 2
    # the sentences' modules file nothing: a new graph is stored once, as its supports
    assert all(m.cache is None for m in st._modules.values())
    assert len(cache) == len(graphs)
    before = cache.hits
    xs = [torch.randn(b.num_nodes, 2, dtype=torch.float64) for b in second]
    got = [conv(x, b.edge_index, b.batch) for x, b in zip(xs, second)]
    assert cache.hits - before == len(graphs)  # one look-up per graph for both sentences
    cache.clear()
    for x, b, y in zip(xs, second, got):
        want = conv(x, b.edge_index.clone(), b.batch)  # a new tensor: supports computed afresh
        torch.testing.assert_close(y, want, rtol=0, atol=1e-12)
    # after clear(): every graph missed once, by the layer (the sentences' constant stages
    # filed each graph again before, three misses a graph)
    assert cache.misses == len(graphs)


def test_batch_fingerprints_equal_one_by_one() -> None:
    """graph_fingerprints (the whole batch at once) gives graph_fingerprint's digests."""
    from matlang.runtime.preprocess import graph_fingerprint, graph_fingerprints

    rng = np.random.default_rng(4)
    rows, cols = rng.integers(0, 9, 40), rng.integers(0, 9, 40)
    w = rng.random(40)
    bounds = np.array([0, 0, 13, 40])
    sizes = np.array([3, 9, 9])
    for weight in (None, w):
        got = graph_fingerprints(sizes, bounds, rows, cols, weight)
        want = [
            graph_fingerprint(
                int(sizes[k]),
                rows[bounds[k] : bounds[k + 1]],
                cols[bounds[k] : bounds[k + 1]],
                None if weight is None else weight[bounds[k] : bounds[k + 1]],
            )
            for k in range(3)
        ]
        assert got == want and len(set(got)) == 3


def test_fingerprints_tell_graphs_apart_in_every_width() -> None:
    """Digests hash the edges in the narrowest width holding the graph's ids (8, 16, 32 bits):
    the same graph in any batch (beside graphs of other widths) has one digest, and graphs that
    differ in one edge, in ``n`` or in a weight have different ones."""
    from matlang.runtime.local_graphs import _width
    from matlang.runtime.preprocess import graph_fingerprint, graph_fingerprints

    assert [_width(n) for n in (1, 256, 257, 65536, 65537, 2**32, 2**32 + 1)] == [
        0, 0, 1, 1, 2, 2, 3
    ]
    small = (np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1]))
    big_n = 70_000  # 32-bit ids
    big = (np.array([0, 69_999]), np.array([69_999, 0]))
    alone = [graph_fingerprint(3, *small, None), graph_fingerprint(big_n, *big, None)]
    rows = np.concatenate([small[0], big[0]])
    cols = np.concatenate([small[1], big[1]])
    together = graph_fingerprints(np.array([3, big_n]), np.array([0, 4, 6]), rows, cols, None)
    assert together == alone
    others = {
        graph_fingerprint(4, *small, None),  # another n
        graph_fingerprint(3, np.array([0, 1]), np.array([1, 0]), None),  # an edge fewer
        graph_fingerprint(3, *small, np.array([1.0, 1.0, 2.0, 2.0])),  # weighted
        graph_fingerprint(3, *small, np.array([1.0, 1.0, 3.0, 3.0])),
        graph_fingerprint(300, *small, None),  # the same edges, 16-bit ids
    }
    assert len(others) == 5 and alone[0] not in others


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_fingerprints_in_windows_and_chunks_equal_whole(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing a batch in windows of graphs and a large graph in chunks of its edges (bounded
    buffers, whatever the batch) gives the digests of hashing everything at once."""
    from matlang.runtime import local_graphs
    from matlang.runtime.preprocess import graph_fingerprints

    rng = np.random.default_rng(5)
    sizes = np.array([3, 300, 9, 1, 70_000])
    counts = np.array([5, 0, 17, 0, 11])
    bounds = np.concatenate([[0], np.cumsum(counts)])
    rows = np.concatenate([rng.integers(0, n, c) for n, c in zip(sizes, counts)])
    cols = np.concatenate([rng.integers(0, n, c) for n, c in zip(sizes, counts)])
    w = rng.random(rows.size)
    want = [graph_fingerprints(sizes, bounds, rows, cols, x) for x in (None, w)]
    monkeypatch.setattr(local_graphs, "FINGERPRINT_CHUNK", chunk)
    assert [graph_fingerprints(sizes, bounds, rows, cols, x) for x in (None, w)] == want
