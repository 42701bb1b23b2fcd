"""runtime.preprocess: spectra, λmax, GNNML3 supports (Algorithm 1) and the cache."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from matlang.errors import MatlangError
from matlang.graphs import from_adjacency, named
from matlang.runtime import preprocess as pp
from matlang.runtime.batch import as_batch


def dense_supports(a: np.ndarray, cfg: pp.SupportConfig) -> np.ndarray:
    """Algorithm 1 with dense matrices: (n, n, S)."""
    n = a.shape[0]
    d = a.sum(1)
    if cfg.basis == "adjacency":
        b = a
    elif cfg.basis == "laplacian":
        b = np.diag(d) - a
    else:
        dis = np.where(d > 0, d, 1.0) ** -0.5 * (d > 0)
        b = np.eye(n) - dis[:, None] * a * dis[None, :]
    lam, u = np.linalg.eigh(b)
    m = np.linalg.matrix_power(a + np.eye(n), cfg.receptive_field) > 0
    sup = [
        m * (u @ np.diag(np.exp(-cfg.bandwidth * (lam - f) ** 2)) @ u.T)
        for f in np.linspace(lam.min(), lam.max(), cfg.num_bands)
    ]
    if cfg.all_pass:
        sup.append(m * np.eye(n))
    if cfg.add_mask:
        sup.append(m.astype(float))
    if cfg.add_adjacency:
        sup.append(m * a)
    return np.stack(sup, -1)


# --------------------------------------------------------------------------- spectra


def test_lambda_max_of_the_paper_pair() -> None:
    # Appendix "L1 equivalent graphs": 2.0 for decalin, 1.8418 for bicyclopentyl
    assert pp.lambda_max(named("decalin")) == pytest.approx(2.0, abs=1e-12)
    assert pp.lambda_max(named("bicyclopentyl")) == pytest.approx(1.8418, abs=1e-4)


def test_spectrum_reconstructs_its_basis() -> None:
    g = named("cospectral_G")
    for basis in pp.BASES:
        spec = pp.spectrum(g, basis)  # type: ignore[arg-type]
        b = pp.basis_matrix(g, basis)  # type: ignore[arg-type]
        u, lam = spec.eigenvectors, spec.eigenvalues
        np.testing.assert_allclose(u @ np.diag(lam) @ u.T, b, atol=1e-12)
        assert not spec.eigenvalues.flags.writeable


def test_cospectral_pair_has_the_paper_spectrum() -> None:
    want = [0, 0.44, 0.61, 0.75, 1.25, 1.25, 1.25, 1.25, 1.56, 1.64]
    for name in ("cospectral_G", "cospectral_H"):
        lam = pp.spectrum(named(name)).eigenvalues
        np.testing.assert_allclose(lam, want, atol=0.006)


def test_isolated_nodes_and_empty_graphs() -> None:
    g = from_adjacency(np.zeros((3, 3), dtype=int))
    assert pp.lambda_max(g) == 1.0  # I - D^-1/2 A D^-1/2 with d = 0 is 1 on the diagonal
    assert pp.lambda_max(g, "laplacian") == 0.0
    assert pp.lambda_max(from_adjacency(np.zeros((0, 0), dtype=int))) == 0.0


def test_unknown_basis_is_a_project_error() -> None:
    with pytest.raises(MatlangError, match="basis"):
        pp.spectrum(named("cycle4"), "random_walk")  # type: ignore[arg-type]


def test_batch_lambda_max_is_per_graph() -> None:
    b = as_batch([named("decalin"), named("bicyclopentyl"), named("cycle5")])
    lam = pp.batch_lambda_max(b)
    assert lam.shape == (3,)
    want = [pp.lambda_max(named(n)) for n in ("decalin", "bicyclopentyl", "cycle5")]
    torch.testing.assert_close(lam, torch.tensor(want, dtype=torch.float64))


# --------------------------------------------------------------------------- supports


@pytest.mark.parametrize(
    "cfg",
    [
        pp.SupportConfig(),
        pp.SupportConfig(basis="adjacency", num_bands=10, add_adjacency=True),
        pp.SupportConfig(num_bands=3, bandwidth=1.0, receptive_field=2, add_mask=True),
        pp.SupportConfig(basis="laplacian", num_bands=1, all_pass=False),
    ],
    ids=["paper", "adjacency", "r2", "one-band"],
)
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "expanded"])
def test_supports_match_algorithm_1(cfg: pp.SupportConfig, exact: bool) -> None:
    g = named("bicyclopentyl")
    a = g.adjacency.astype(float)
    cfg = dataclasses.replace(cfg, exact=exact)
    sup = pp.gnnml3_supports(g, cfg)
    ref = dense_supports(a, cfg)
    m = ref.any(-1) | (np.linalg.matrix_power(a + np.eye(10), cfg.receptive_field) > 0)
    rows, cols = sup.edge_index.numpy()
    assert sup.edge_attr.dtype == torch.float64
    assert sup.edge_attr.shape == (int(m.sum()), cfg.num_supports)
    assert sup.names == cfg.names
    assert set(zip(rows.tolist(), cols.tolist(), strict=True)) == set(
        zip(*np.nonzero(m), strict=True)
    )
    err = np.abs(sup.edge_attr.numpy() - ref[rows, cols]).max()
    if exact:
        assert err <= 1e-12 and sup.error_bound == 0.0 and sup.order == 0
    else:  # the expansion's bound holds and meets the default tolerance
        assert err <= sup.error_bound <= cfg.tolerance == 1e-6
        assert sup.order > 0


def test_receptive_field_has_self_loops_and_all_pass_is_identity() -> None:
    g = named("decalin")
    sup = pp.gnnml3_supports(g)
    rows, cols = sup.edge_index
    assert sup.edge_index.shape[1] == 2 * g.num_edges + g.num_nodes
    all_pass = sup.edge_attr[:, sup.names.index("all_pass")]
    assert torch.equal(all_pass, (rows == cols).double())


def test_support_config_checks_its_fields() -> None:
    for bad in (
        {"num_bands": -1},
        {"bandwidth": 0.0},
        {"receptive_field": 0},
        {"basis": "spectral"},
        {"num_bands": 0, "all_pass": False},
    ):
        with pytest.raises(MatlangError):
            pp.SupportConfig(**bad)  # type: ignore[arg-type]


def test_batch_supports_use_global_ids() -> None:
    graphs = [named("cycle4"), named("decalin"), named("star3")]
    cfg = pp.SupportConfig(num_bands=3)
    b = as_batch(graphs)
    sup = pp.batch_supports(b, cfg, dtype=torch.float32)
    assert sup.edge_attr.dtype == torch.float32
    off = 0
    start = 0
    for g in graphs:
        one = pp.gnnml3_supports(g, cfg)
        k = one.edge_index.shape[1]
        assert torch.equal(sup.edge_index[:, start : start + k], one.edge_index + off)
        torch.testing.assert_close(sup.edge_attr[start : start + k], one.edge_attr.float())
        off += g.num_nodes
        start += k
    assert start == sup.edge_index.shape[1]


def test_split_batch_round_trips() -> None:
    graphs = [named("cycle5"), named("path3"), named("petersen")]
    parts = pp.split_batch(as_batch(graphs))
    for g, lg in zip(graphs, parts, strict=True):
        assert lg.num_nodes == g.num_nodes
        np.testing.assert_array_equal(lg.adjacency(), g.adjacency)
        assert lg.fingerprint() == pp.as_local_graph(g).fingerprint()


# --------------------------------------------------------------------------- cache


def test_cache_hits_for_the_same_graph_and_parameters() -> None:
    cache = pp.PreprocessCache()
    g = named("cospectral_G")
    first = pp.gnnml3_supports(g, pp.SupportConfig(), cache=cache)
    again = pp.gnnml3_supports(named("cospectral_G"), pp.SupportConfig(), cache=cache)
    assert again is first
    assert (cache.hits, cache.misses) == (1, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"basis": "adjacency"},
        {"num_bands": 4},
        {"bandwidth": 2.0},
        {"receptive_field": 2},
        {"all_pass": False},
        {"add_mask": True},
        {"add_adjacency": True},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_changed_parameter_never_reads_a_stale_entry(change: dict[str, object]) -> None:
    cache = pp.PreprocessCache()
    g = named("cospectral_G")
    base = pp.SupportConfig()
    pp.gnnml3_supports(g, base, cache=cache)
    changed = dataclasses.replace(base, **change)  # type: ignore[arg-type]
    got = pp.gnnml3_supports(g, changed, cache=cache)
    fresh = pp.gnnml3_supports(g, changed)  # no cache at all
    assert cache.misses == 2 and cache.hits == 0
    assert torch.equal(got.edge_index, fresh.edge_index)
    assert torch.equal(got.edge_attr, fresh.edge_attr)
    assert got.names == changed.names
    # every field of the configuration is in the key
    key = next(k for k in cache.keys() if dict(k.params) == dict(changed.key()))
    assert {name for name, _ in key.params} == {f.name for f in dataclasses.fields(base)}


def test_cache_keys_tell_graphs_and_transforms_apart() -> None:
    cache = pp.PreprocessCache()
    # same n, same number of edges, different graphs
    lam_g = pp.lambda_max(named("decalin"), cache=cache)
    lam_h = pp.lambda_max(named("bicyclopentyl"), cache=cache)
    assert lam_g != lam_h and cache.misses == 2
    assert pp.lambda_max(named("decalin"), "laplacian", cache=cache) != lam_g
    assert cache.misses == 3
    # weights are part of the graph
    a = named("cycle4").adjacency
    weighted = from_adjacency(a * 2, allow_weights=True)
    assert pp.lambda_max(weighted, "adjacency", cache=cache) == pytest.approx(4.0)
    assert pp.lambda_max(named("cycle4"), "adjacency", cache=cache) == pytest.approx(2.0)
    assert len({k.graph for k in cache.keys()}) == 4
    assert len({(k.transform, k.graph, k.params) for k in cache.keys()}) == len(cache)


def test_cache_is_bounded_and_clearable() -> None:
    cache = pp.PreprocessCache(max_entries=2)
    for n in (3, 4, 5):
        pp.lambda_max(named(f"cycle{n}"), cache=cache)
    assert len(cache) == 2
    pp.lambda_max(named("cycle3"), cache=cache)  # evicted: computed again
    assert cache.misses == 4
    cache.clear()
    assert len(cache) == 0 and cache.hits == cache.misses == 0
    with pytest.raises(MatlangError):
        pp.PreprocessCache(max_entries=0)


def test_storing_many_keeps_the_bound_and_the_order_of_storing_one_by_one() -> None:
    """``store_many`` ends where ``store`` one by one ends: the least recently used entries
    go first, those of the same call included, and an entry stored again becomes the newest."""
    keys = [pp.CacheKey("t", f"g{i}", ()) for i in range(6)]
    one, many = pp.PreprocessCache(max_entries=3), pp.PreprocessCache(max_entries=3)
    for c in (one, many):
        c.store(keys[0], 0)
        c.store(keys[1], 1)
    for k, v in zip(keys[:4], range(4)):
        one.store(k, v * 10)
    many.store_many(keys[:4], [v * 10 for v in range(4)])
    assert one.keys() == many.keys() == keys[1:4]
    assert [many.lookup([k])[0] for k in keys[1:4]] == [10, 20, 30]


# --------------------------------------------------------------------------- cheap cache keys


@pytest.fixture
def sha256_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every content hash the preprocessing module computes."""
    calls: list[int] = []
    from matlang.runtime import local_graphs

    real = local_graphs.hashlib.sha256

    def counting(*args: object) -> object:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(local_graphs.hashlib, "sha256", counting)
    return calls


def test_the_same_graph_object_hits_without_hashing(sha256_calls: list[int]) -> None:
    cache = pp.PreprocessCache()
    g = named("cospectral_G")
    first = pp.gnnml3_supports(g, pp.SupportConfig(), cache=cache)
    assert len(sha256_calls) == 1
    for _ in range(3):
        assert pp.gnnml3_supports(g, pp.SupportConfig(), cache=cache) is first
    assert pp.lambda_max(g, cache=cache) == pytest.approx(pp.lambda_max(g))
    assert len(sha256_calls) == 1  # the fingerprint is remembered per Graph object
    assert (cache.hits, cache.misses) == (3, 2)
    # an equal graph in another object is hashed once, then served the same entry
    assert pp.gnnml3_supports(named("cospectral_G"), cache=cache) is first
    assert len(sha256_calls) == 2


def test_a_batch_seen_before_is_served_without_hashing(sha256_calls: list[int]) -> None:
    cache = pp.PreprocessCache()
    cfg = pp.SupportConfig(num_bands=3)
    b = as_batch([named("cycle5"), named("decalin"), named("cycle5")])
    first = pp.batch_supports(b, cfg, cache=cache, dtype=torch.float32)
    assert len(sha256_calls) == 3 and (cache.hits, cache.misses) == (1, 2)
    again = pp.batch_supports(b, cfg, cache=cache, dtype=torch.float32)
    assert again is first and cache.batch_hits == 1 and len(sha256_calls) == 3
    # another dtype or configuration is another result, its graphs still come from the cache
    wide = pp.batch_supports(b, cfg, cache=cache, dtype=torch.float64)
    assert wide.edge_attr.dtype == torch.float64 and cache.misses == 2
    torch.testing.assert_close(wide.edge_attr.float(), first.edge_attr)


def test_a_changed_batch_is_never_served_stale_supports() -> None:
    cache = pp.PreprocessCache()
    cfg = pp.SupportConfig(num_bands=3)
    b = as_batch([named("cycle4"), named("star3")])  # both: 4 nodes, 8 directed edges
    before = pp.batch_supports(b, cfg, cache=cache)
    other = as_batch([named("star3"), named("cycle4")])
    # in place through numpy: torch's version counter does not see this write
    b.edge_index.numpy()[:] = other.edge_index.numpy()
    after = pp.batch_supports(b, cfg, cache=cache)
    fresh = pp.batch_supports(other, cfg)  # no cache at all
    assert cache.batch_hits == 0
    assert not torch.equal(after.edge_index, before.edge_index)
    assert torch.equal(after.edge_index, fresh.edge_index)
    assert torch.equal(after.edge_attr, fresh.edge_attr)


def test_a_graph_with_other_edges_is_another_entry() -> None:
    cache = pp.PreprocessCache()
    g, h = named("decalin"), named("bicyclopentyl")  # same n, same number of edges
    sg = pp.gnnml3_supports(g, cache=cache)
    sh = pp.gnnml3_supports(h, cache=cache)
    assert cache.misses == 2 and cache.hits == 0
    fresh = pp.gnnml3_supports(h)
    assert torch.equal(sh.edge_index, fresh.edge_index)
    assert torch.equal(sh.edge_attr, fresh.edge_attr)
    assert not torch.equal(sg.edge_attr, sh.edge_attr)


def test_batch_keys_equal_graph_keys_for_any_edge_order() -> None:
    graphs = [named("petersen"), named("path3"), named("cycle5")]
    b = as_batch(graphs)
    # PyG-like batch whose edges are interleaved across graphs (weighted, to key the weights)
    perm = torch.randperm(b.num_edges, generator=torch.Generator().manual_seed(0))
    w = (b.edge_index[0] + b.edge_index[1] + 1).float()  # symmetric: w_ij = w_ji
    shuffled = dataclasses.replace(b, edge_index=b.edge_index[:, perm], edge_weight=w[perm])
    plain = dataclasses.replace(b, edge_weight=w)
    for k, lg in enumerate(pp.split_batch(shuffled)):
        assert lg.num_nodes == graphs[k].num_nodes
        edges = pp._batch_edges(shuffled)
        assert edges.fingerprint(k) == lg.fingerprint()
    cache = pp.PreprocessCache()
    lam = pp.batch_lambda_max(plain, "adjacency", cache=cache)
    assert cache.misses == 3
    for k, lg in enumerate(pp.split_batch(plain)):
        assert float(lam[k]) == pp.lambda_max(lg, "adjacency")
        assert pp.lambda_max(lg, "adjacency", cache=cache) == float(lam[k])
    assert cache.hits == 3 and cache.misses == 3


def test_clear_forgets_batches_and_fingerprints() -> None:
    cache = pp.PreprocessCache()
    b = as_batch([named("cycle5")])
    pp.batch_supports(b, cache=cache)
    pp.batch_supports(b, cache=cache)
    assert cache.batch_hits == 1
    cache.clear()
    assert (cache.hits, cache.misses, cache.batch_hits, len(cache)) == (0, 0, 0, 0)
    pp.batch_supports(b, cache=cache)
    assert cache.batch_hits == 0 and cache.misses == 1


def test_default_takes_the_eigendecomposition_where_it_is_predicted_faster() -> None:
    """The ``count`` configuration (adjacency basis, 10 narrow bands: Chebyshev order 88) on a
    small-diameter graph of 500 nodes: every node needs its own probe, the expansion costs more
    than the eigendecomposition, and the default takes the latter (order 0, exact supports);
    on a 32 × 32 grid (order 64, a sparser B) it keeps the expansion, within its tolerance."""
    rng = np.random.default_rng(0)
    a = np.triu(rng.random((500, 500)) < 5 / 499, 1)
    r, c = np.nonzero(a | a.T)
    er = pp.LocalGraph(torch.from_numpy(np.stack([r, c]).astype(np.int64)), 500)
    idx = np.arange(1024).reshape(32, 32)
    u = np.concatenate([idx[:-1].ravel(), idx[:, :-1].ravel()])
    v = np.concatenate([idx[1:].ravel(), idx[:, 1:].ravel()])
    grid = pp.LocalGraph(torch.from_numpy(np.stack([np.r_[u, v], np.r_[v, u]])), 1024)
    cfg = pp.SupportConfig(basis="adjacency", num_bands=10)
    exact = dataclasses.replace(cfg, exact=True)
    got = pp.gnnml3_supports(er, cfg)
    want = pp.gnnml3_supports(er, exact)
    assert got.order == 0 and got.error_bound == 0.0
    assert torch.equal(got.edge_index, want.edge_index)
    assert torch.allclose(got.edge_attr, want.edge_attr, atol=1e-12)
    got = pp.gnnml3_supports(grid, cfg)
    assert got.order > 0
    want = pp.gnnml3_supports(grid, exact)
    assert float((got.edge_attr - want.edge_attr).abs().max()) <= cfg.tolerance
    assert not pp._dense_is_faster(pp.DENSE_FALLBACK_MAX + 1, 10**6, 10**6, 10**6)
