"""Generators: simplicity, regularity, cospectrality, reproducible seeds, the Random stand-in."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from matlang.errors import GraphError
from matlang.graphs import Graph, named
from matlang.runtime import generators as gen
from matlang.runtime import wl


def assert_simple(g: Graph) -> None:
    a = g.adjacency
    assert np.isin(a, (0, 1)).all()
    assert np.array_equal(a, a.T)
    assert not np.diag(a).any()


def spectrum(g: Graph) -> np.ndarray:
    return np.linalg.eigvalsh(g.adjacency.astype(np.float64))


# --------------------------------------------------------------------------- Erdős–Rényi


def test_erdos_renyi_simple_and_seeded() -> None:
    g = gen.erdos_renyi(30, 0.3, seed=5)
    assert_simple(g)
    assert np.array_equal(g.adjacency, gen.erdos_renyi(30, 0.3, seed=5).adjacency)
    assert not np.array_equal(g.adjacency, gen.erdos_renyi(30, 0.3, seed=6).adjacency)
    assert gen.erdos_renyi(6, 0.0, seed=0).num_edges == 0
    assert gen.erdos_renyi(6, 1.0, seed=0).num_edges == 15


def test_erdos_renyi_average_degree() -> None:
    rng = np.random.default_rng(0)
    degrees = [
        gen.erdos_renyi(50, avg_degree=4.0, seed=rng).adjacency.sum() / 50 for _ in range(40)
    ]
    assert np.mean(degrees) == pytest.approx(4.0, rel=0.05)


def test_erdos_renyi_errors() -> None:
    with pytest.raises(GraphError, match="exactly one of p and avg_degree"):
        gen.erdos_renyi(5)
    with pytest.raises(GraphError, match=r"\[0, 1\]"):
        gen.erdos_renyi(5, 1.5)


# --------------------------------------------------------------------------- random regular


@pytest.mark.parametrize("n,d", [(10, 3), (16, 4), (25, 12), (50, 5), (7, 0), (8, 7)])
def test_random_regular(n: int, d: int) -> None:
    g = gen.random_regular(n, d, seed=3)
    assert_simple(g)
    assert g.num_nodes == n
    assert set(g.adjacency.sum(1).tolist()) == {d}
    assert np.array_equal(g.adjacency, gen.random_regular(n, d, seed=3).adjacency)


def test_random_regular_varies_with_seed() -> None:
    graphs = {gen.random_regular(12, 3, seed=s).adjacency.tobytes() for s in range(10)}
    assert len(graphs) > 5


def test_random_regular_errors() -> None:
    with pytest.raises(GraphError, match="odd"):
        gen.random_regular(7, 3)
    with pytest.raises(GraphError, match="need 0 <= d < n"):
        gen.random_regular(4, 4)


def test_one_wl_equivalent_pairs() -> None:
    pairs = gen.one_wl_equivalent_pairs(4, 14, 3, seed=1)
    assert len(pairs) == 4
    for g, h in pairs:
        assert_simple(g)
        assert_simple(h)
        assert wl.equivalent(g, h, "1-wl")
        assert not np.allclose(spectrum(g), spectrum(h))  # hence non-isomorphic
    again = gen.one_wl_equivalent_pairs(4, 14, 3, seed=1)
    assert all(
        np.array_equal(a.adjacency, b.adjacency)
        for p, q in zip(pairs, again, strict=True)
        for a, b in zip(p, q, strict=True)
    )


# --------------------------------------------------------------------------- GM switching


def test_godsil_mckay_switch_is_cospectral() -> None:
    rng = np.random.default_rng(11)
    switched = 0
    for _ in range(10):
        g = gen.random_regular(12, 4, seed=rng)
        for c in gen.switching_sets(g, 4)[:3]:
            assert gen.is_switching_set(g, c)
            h = gen.godsil_mckay_switch(g, c)
            assert_simple(h)
            assert np.allclose(spectrum(g), spectrum(h))
            assert set(h.adjacency.sum(1).tolist()) == {4}
            switched += 1
    assert switched > 0


def test_switching_sets_are_exhaustive_and_valid() -> None:
    g = gen.random_regular(10, 4, seed=2)
    found = set(gen.switching_sets(g, 4))
    for c in itertools.combinations(range(10), 4):
        valid = gen.is_switching_set(g, c)
        changes = (
            gen.godsil_mckay_switch(g, c).adjacency.tobytes() != g.adjacency.tobytes()
            if valid
            else False
        )
        assert (c in found) == (valid and changes)


def test_godsil_mckay_invalid_set() -> None:
    with pytest.raises(GraphError, match="not a Godsil–McKay switching set"):
        gen.godsil_mckay_switch(named("P4"), [0, 1, 2])


@pytest.mark.parametrize("n,d", [(10, 4), (12, 5)])
def test_cospectral_regular_pairs(n: int, d: int) -> None:
    pairs = gen.cospectral_regular_pairs(3, n, d, seed=4)
    assert len(pairs) == 3
    for g, h in pairs:
        assert_simple(h)
        assert set(g.adjacency.sum(1).tolist()) == set(h.adjacency.sum(1).tolist()) == {d}
        assert np.allclose(spectrum(g), spectrum(h))
        assert wl.equivalent(g, h, "1-wl")
        assert not wl.equivalent(g, h, "3-wl")
    again = gen.cospectral_regular_pairs(3, n, d, seed=4)
    assert [p[1].adjacency.tobytes() for p in pairs] == [p[1].adjacency.tobytes() for p in again]


def test_paper_cospectral_pair_is_a_gm_switch_pair_in_kind() -> None:
    # The paper's L2 pair has the properties the generator promises.
    g, h = named("cospectral_G"), named("cospectral_H")
    assert np.allclose(spectrum(g), spectrum(h))
    assert set(g.adjacency.sum(1).tolist()) == set(h.adjacency.sum(1).tolist()) == {4}


# --------------------------------------------------------------------------- Random stand-in


def test_paperlike_random() -> None:
    data = gen.paperlike_random(seed=0)
    assert len(data.graphs) == 5000
    nodes = np.array([g.num_nodes for g in data.graphs])
    edges = np.array([g.num_edges for g in data.graphs])
    assert nodes.mean() == pytest.approx(18.8, abs=0.15)
    assert edges.mean() == pytest.approx(31.3, abs=0.5)
    sizes = (len(data.train_idx), len(data.val_idx), len(data.test_idx))
    assert sizes == (1500, 1000, 2500)
    together = np.concatenate([data.train_idx, data.val_idx, data.test_idx])
    assert np.array_equal(np.sort(together), np.arange(5000))
    assert "stand-in" in data.source
    for g in data.graphs[:3]:
        assert_simple(g)
    # Labels against brute force on a few small graphs.
    for i in np.flatnonzero(nodes <= 14)[:5].tolist():
        a = data.graphs[i].adjacency
        n = a.shape[0]
        tri = sum(a[u, v] * a[v, w] * a[u, w] for u, v, w in itertools.combinations(range(n), 3))
        assert data.labels["count_triangle"][i] == tri
        deg = a.sum(1)
        assert data.labels["count_star"][i] == sum(d * (d - 1) * (d - 2) // 6 for d in deg)
        c4 = 0
        for quad in itertools.combinations(range(n), 4):
            for p in ((0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3)):
                q = [quad[k] for k in p]
                c4 += all(a[q[k], q[(k + 1) % 4]] for k in range(4))
        assert data.labels["count_cycle4"][i] == c4
        # The authors' formulas, written out for one graph.
        a3 = np.linalg.matrix_power(a, 3)
        tailed = np.sum(np.diag(a3) / 2 * (deg - 2))
        custom = np.sum(a @ np.diag(np.exp(-(a @ a).sum(1))) @ a)
        assert data.labels["count_tailed_triangle"][i] == pytest.approx(tailed)
        assert data.labels["count_custom"][i] == pytest.approx(custom)
    again = gen.paperlike_random(seed=0)
    assert all(
        np.array_equal(g.adjacency, h.adjacency)
        for g, h in zip(data.graphs[:50], again.graphs[:50], strict=True)
    )
    assert np.array_equal(data.test_idx, again.test_idx)
    for key in gen.PAPERLIKE_LABELS:
        assert np.array_equal(data.labels[key], again.labels[key])
