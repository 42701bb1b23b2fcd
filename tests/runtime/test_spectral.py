"""runtime.spectral and the eigendecomposition-free preprocessing: Lanczos λmax against a dense
eigvalsh, Chebyshev supports on the mask against the exact eigendecomposition (the oracle),
the probing colouring against BFS distances, and the cache keys of the new options."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.sparse import csgraph

from matlang.errors import GraphError, MatlangError
from matlang.graphs import Graph, from_adjacency, named
from matlang.runtime import datasets, spectral
from matlang.runtime import preprocess as pp
from matlang.runtime.batch import as_batch
from matlang.runtime.generators import erdos_renyi


def grid(rows: int, cols: int) -> Graph:
    a = np.zeros((rows * cols, rows * cols), dtype=int)
    idx = np.arange(rows * cols).reshape(rows, cols)
    for u, v in [(idx[:-1], idx[1:]), (idx[:, :-1], idx[:, 1:])]:
        a[u.ravel(), v.ravel()] = a[v.ravel(), u.ravel()] = 1
    return from_adjacency(a, name=f"grid{rows}x{cols}")


def union(*graphs: Graph, isolated: int = 0) -> Graph:
    """Disjoint union, plus isolated nodes at the end."""
    n = sum(g.num_nodes for g in graphs) + isolated
    a = np.zeros((n, n), dtype=int)
    off = 0
    for g in graphs:
        a[off : off + g.num_nodes, off : off + g.num_nodes] = g.adjacency
        off += g.num_nodes
    return from_adjacency(a)


# graphs of >= LANCZOS_MIN_NODES nodes go through Lanczos; the others through eigvalsh
GRAPHS = {
    "grid6x7": grid(6, 7),  # bipartite: λmax(normalised) = 2 without Lanczos
    "er40": erdos_renyi(40, avg_degree=4, seed=3),
    "disconnected": union(named("petersen"), named("cycle5"), grid(4, 5), named("cospectral_G")),
    "isolated": union(erdos_renyi(30, avg_degree=3, seed=1), named("cycle5"), isolated=4),
    "path3+isolated": union(named("path3"), isolated=2),
    "single": from_adjacency(np.zeros((1, 1), dtype=int)),
    "edge": from_adjacency(np.array([[0, 1], [1, 0]])),
    "no edges": from_adjacency(np.zeros((5, 5), dtype=int)),
    "empty": from_adjacency(np.zeros((0, 0), dtype=int)),
}


def max_error(g: Graph, cfg: pp.SupportConfig) -> tuple[float, pp.Supports]:
    approx = pp.gnnml3_supports(g, dataclasses.replace(cfg, exact=False))  # the expansion
    exact = pp.gnnml3_supports(g, dataclasses.replace(cfg, exact=True))
    assert torch.equal(approx.edge_index, exact.edge_index)
    diff = (approx.edge_attr - exact.edge_attr).abs()
    return float(diff.max()) if diff.numel() else 0.0, approx


# --------------------------------------------------------------------------- λmax


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("basis", pp.BASES)
def test_lambda_max_by_lanczos_matches_eigvalsh(name: str, basis: pp.Basis) -> None:
    g = GRAPHS[name]
    exact = pp.lambda_max(g, basis, exact=True)
    if g.num_nodes:
        want = float(np.linalg.eigvalsh(pp.basis_matrix(g, basis))[-1])
        assert exact == pytest.approx(want, abs=1e-12)
    assert pp.lambda_max(g, basis) == pytest.approx(exact, abs=1e-9)


def test_lanczos_finds_both_ends() -> None:
    rng = np.random.default_rng(0)
    for n in (40, 200):
        m = sp.random(n, n, density=5 / n, random_state=rng)
        b = (m + m.T).tocsr()
        lo, hi, resid = spectral.lanczos_extremes(b)
        lam = np.linalg.eigvalsh(b.toarray())
        assert lo == pytest.approx(lam[0], abs=1e-9) and hi == pytest.approx(lam[-1], abs=1e-9)
        assert resid <= 1e-9 * max(1.0, abs(lam[0]), abs(lam[-1]))


def test_batch_lambda_max_by_lanczos_is_per_graph() -> None:
    graphs = [GRAPHS[k] for k in ("grid6x7", "er40", "single", "isolated", "no edges")]
    lam = pp.batch_lambda_max(as_batch(graphs))
    want = [pp.lambda_max(g, exact=True) for g in graphs]
    torch.testing.assert_close(lam, torch.tensor(want, dtype=torch.float64), atol=1e-9, rtol=0)


def test_bipartite_components_are_detected() -> None:
    a = GRAPHS["disconnected"]  # petersen and C5 are odd, the grid is bipartite
    assert spectral.bipartite_edge_component(pp.as_local_graph(a).sparse_adjacency())
    odd = union(named("petersen"), named("cycle5"), isolated=3)
    assert not spectral.bipartite_edge_component(pp.as_local_graph(odd).sparse_adjacency())


# --------------------------------------------------------------------------- supports


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize(
    "cfg",
    [
        pp.SupportConfig(),
        pp.SupportConfig(basis="adjacency", num_bands=4, add_adjacency=True),
        pp.SupportConfig(basis="laplacian", num_bands=3, bandwidth=1.0, receptive_field=2),
    ],
    ids=["paper", "adjacency", "laplacian-r2"],
)
def test_expanded_supports_meet_the_tolerance(name: str, cfg: pp.SupportConfig) -> None:
    err, sup = max_error(GRAPHS[name], cfg)
    assert err <= sup.error_bound <= cfg.tolerance


def test_a_tighter_tolerance_raises_the_order_and_lowers_the_error() -> None:
    g = GRAPHS["disconnected"]
    errors, orders = [], []
    for tol in (1e-3, 1e-6, 1e-10):
        err, sup = max_error(g, pp.SupportConfig(tolerance=tol))
        assert err <= sup.error_bound <= tol
        errors.append(err)
        orders.append(sup.order)
    assert orders == sorted(orders) and orders[0] < orders[-1]
    assert errors[-1] < 1e-10 < errors[0]


def test_a_fixed_order_reports_the_bound_it_reaches() -> None:
    g = GRAPHS["er40"]
    err, sup = max_error(g, pp.SupportConfig(order=4))
    assert sup.order == 4
    assert 1e-6 < err <= sup.error_bound  # a low order misses the tolerance, and says so


def test_batch_supports_report_the_worst_graph() -> None:
    graphs = [GRAPHS["grid6x7"], GRAPHS["er40"], GRAPHS["single"]]
    cfg = pp.SupportConfig(exact=False)
    b = pp.batch_supports(as_batch(graphs), cfg, dtype=torch.float64)
    parts = [pp.gnnml3_supports(g, cfg) for g in graphs]
    assert b.error_bound == max(p.error_bound for p in parts) > 0
    assert b.order == max(p.order for p in parts)
    exact = pp.batch_supports(as_batch(graphs), pp.SupportConfig(exact=True), dtype=torch.float64)
    assert float((b.edge_attr - exact.edge_attr).abs().max()) <= b.error_bound


def test_new_options_are_checked() -> None:
    for bad in ({"tolerance": 0.0}, {"tolerance": -1.0}, {"order": -1}, {"exact": "yes"}):
        with pytest.raises(MatlangError):
            pp.SupportConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="tolerance"):
        pp.gnnml3_supports(GRAPHS["er40"], pp.SupportConfig(tolerance=1e-300, exact=False))


# --------------------------------------------------------------------------- building blocks


@pytest.mark.parametrize("name", ["grid6x7", "er40", "disconnected", "isolated"])
@pytest.mark.parametrize("distance", [1, 3, 8])
def test_colours_are_further_apart_than_the_distance(name: str, distance: int) -> None:
    adj = pp.as_local_graph(GRAPHS[name]).sparse_adjacency()
    colours, count = spectral.distance_colouring(adj, distance)
    assert colours.shape == (adj.shape[0],) and set(colours.tolist()) == set(range(count))
    hops = csgraph.shortest_path(adj, unweighted=True, directed=False)
    same = colours[:, None] == colours[None, :]
    np.fill_diagonal(same, False)
    assert (hops[same] > distance).all()


def test_a_large_grid_needs_few_colours() -> None:
    idx = np.arange(3600).reshape(60, 60)
    u = np.concatenate([idx[:-1].ravel(), idx[:, :-1].ravel()])
    v = np.concatenate([idx[1:].ravel(), idx[:, 1:].ravel()])
    adj = sp.coo_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[v, u])), (3600, 3600)).tocsr()
    _, count = spectral.distance_colouring(adj, 21)
    assert count <= 22 * 22 // 2 + 22  # a lattice colouring of the L1 ball: (D + 1)² / 2


def test_chebyshev_series_bound_holds_on_the_interval() -> None:
    centres = np.array([0.0, 0.7, 2.0])
    f = spectral.gaussian_bands(centres, 5.0)
    series = spectral.chebyshev_series(f, 0.0, 2.0, tolerance=1e-8)
    x = np.linspace(0.0, 2.0, 2001)
    approx = np.polynomial.chebyshev.chebval(x - 1.0, series.coefficients.T)
    assert np.abs(approx - f(x)).max() <= series.bound <= 1e-8
    with pytest.raises(GraphError, match="tolerance"):
        spectral.chebyshev_series(spectral.gaussian_bands(centres, 1e4), 0, 2, tolerance=1e-9,
                                  max_order=128)


# --------------------------------------------------------------------------- cache keys


def test_lambda_max_cache_tells_exact_and_lanczos_apart() -> None:
    cache = pp.PreprocessCache()
    g = GRAPHS["er40"]
    pp.lambda_max(g, cache=cache)
    pp.lambda_max(g, exact=True, cache=cache)
    assert cache.misses == 2 and cache.hits == 0
    assert {dict(k.params)["exact"] for k in cache.keys()} == {True, False}


@pytest.mark.parametrize(
    "change", [{"exact": True}, {"tolerance": 1e-9}, {"order": 7}], ids=lambda c: next(iter(c))
)
def test_the_new_options_never_read_a_stale_entry(change: dict[str, object]) -> None:
    cache = pp.PreprocessCache()
    g = GRAPHS["er40"]
    base = pp.SupportConfig(exact=False)  # the expansion (the default on er40 is exact)
    first = pp.gnnml3_supports(g, base, cache=cache)
    changed = dataclasses.replace(base, **change)  # type: ignore[arg-type]
    got = pp.gnnml3_supports(g, changed, cache=cache)
    assert cache.misses == 2 and cache.hits == 0
    assert not torch.equal(got.edge_attr, first.edge_attr)
    fresh = pp.gnnml3_supports(g, changed)
    assert torch.equal(got.edge_attr, fresh.edge_attr) and got.order == fresh.order
    # a batch seen before is not served the other configuration's result either
    b = as_batch([g, GRAPHS["grid6x7"]])
    one = pp.batch_supports(b, base, cache=cache, dtype=torch.float64)
    two = pp.batch_supports(b, changed, cache=cache, dtype=torch.float64)
    assert not torch.equal(one.edge_attr, two.edge_attr)


# --------------------------------------------------------------------------- paper datasets

needs_data = pytest.mark.skipif(
    not datasets.data_available(), reason="data folder not found (set MATLANG_DATA)"
)


@needs_data
def test_paper_graphs_meet_the_tolerance() -> None:
    exp = datasets.load_exp().graphs
    sample = [
        *datasets.load_graph8c()[::1500],
        *datasets.load_sr25()[:3],
        *exp[::150],
        max(exp, key=lambda g: g.num_nodes),
        datasets.load_twodgrid30().graph,
    ]
    for g in sample:
        err, sup = max_error(g, pp.SupportConfig())
        assert err <= sup.error_bound <= 1e-6, g.name


def test_default_supports_are_exact_on_small_graphs_and_expanded_on_large_ones() -> None:
    small, large = GRAPHS["er40"], grid(15, 15)
    assert pp.EXACT_BELOW > small.num_nodes and pp.EXACT_BELOW <= large.num_nodes
    for g, expanded in ((small, False), (large, True)):
        auto = pp.gnnml3_supports(g)
        exact = pp.gnnml3_supports(g, pp.SupportConfig(exact=True))
        err = float((auto.edge_attr - exact.edge_attr).abs().max())
        if expanded:
            assert auto.order > 0 and 0 < err <= auto.error_bound <= 1e-6
        else:
            assert auto.order == 0 and auto.error_bound == 0.0 and err == 0.0
    # a fixed order asks for the expansion whatever the size
    assert pp.gnnml3_supports(small, pp.SupportConfig(order=6)).order == 6
