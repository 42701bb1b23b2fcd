"""Seeded random graphs: Erdős–Rényi, random regular, and pairs that defeat 1-WL or L2.

Everything draws from a ``numpy.random.Generator`` built from ``seed`` (an int, a Generator, or
None for fresh entropy), so equal seeds give equal graphs, and nothing is downloaded.

- :func:`one_wl_equivalent_pairs`: two random d-regular graphs on n nodes are always 1-WL
  equivalent (every node keeps the colour "degree d"); pairs are kept only when their adjacency
  spectra differ, which proves them non-isomorphic.
- :func:`cospectral_regular_pairs`: Godsil–McKay switching of a random regular graph gives a
  cospectral graph, regular of the same degree (regularity is determined by the spectrum). For
  regular graphs the all-ones vector is an eigenvector, so such a pair is L2-equivalent
  (paper, ``cospectral_G``/``cospectral_H``). Pairs are kept only when 2-FWL (3-WL) tells
  them apart, which proves them non-isomorphic.
- :func:`paperlike_random`: a stand-in for the paper's "Random" counting dataset.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from matlang.errors import GraphError
from matlang.graphs import Graph, as_graph
from matlang.runtime.datasets import CountingData

Seed = int | np.random.Generator | None


def _rng(seed: Seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _graph(a: np.ndarray, name: str | None) -> Graph:
    """A Graph from an adjacency that is simple by construction (symmetric 0/1, empty diagonal)."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return Graph(a, name)


# --------------------------------------------------------------------------- Erdős–Rényi


def erdos_renyi(
    n: int,
    p: float | None = None,
    *,
    avg_degree: float | None = None,
    seed: Seed = None,
    name: str | None = None,
) -> Graph:
    """G(n, p): each of the n(n-1)/2 edges independently with probability ``p``.

    Give ``p`` or ``avg_degree`` (then ``p = avg_degree / (n - 1)``).
    """
    if n < 0:
        raise GraphError(f"erdos_renyi needs n >= 0, got {n}")
    if (p is None) == (avg_degree is None):
        raise GraphError("erdos_renyi needs exactly one of p and avg_degree")
    if p is None:
        assert avg_degree is not None
        p = avg_degree / (n - 1) if n > 1 else 0.0
    if not 0.0 <= p <= 1.0:
        raise GraphError(f"edge probability must lie in [0, 1], got {p}")
    rng = _rng(seed)
    upper = np.triu(rng.random((n, n)) < p, 1)
    return _graph(upper | upper.T, name or f"er(n={n}, p={p:.3g})")


# --------------------------------------------------------------------------- random regular


def random_regular(
    n: int, d: int, *, seed: Seed = None, name: str | None = None, max_tries: int = 1000
) -> Graph:
    """A simple d-regular graph on n nodes, by pairing stubs while avoiding bad pairs.

    Stubs (d per node) are paired one edge at a time: a node is drawn in proportion to its free
    stubs, then a partner likewise among the nodes it may still join (no loop, no repeated
    edge); a dead end restarts. This is a variant of Steger and Wormald's algorithm (1999),
    close to uniform when d is small compared with n, and always simple.
    """
    if n < 0 or d < 0 or (d > 0 and d >= n):
        raise GraphError(f"no simple {d}-regular graph on {n} nodes (need 0 <= d < n)")
    if (n * d) % 2:
        raise GraphError(f"no {d}-regular graph on {n} nodes: n*d = {n * d} is odd")
    rng = _rng(seed)
    for _ in range(max_tries):
        a = _pair_stubs(n, d, rng)
        if a is not None:
            return _graph(a, name or f"regular(n={n}, d={d})")
    raise GraphError(f"could not build a {d}-regular graph on {n} nodes in {max_tries} tries")


def _pair_stubs(n: int, d: int, rng: np.random.Generator) -> np.ndarray | None:
    a = np.zeros((n, n), dtype=np.int64)
    free = np.full(n, d, dtype=np.int64)
    while free.any():
        # Choose the first stub's node proportionally to its free stubs, then the second among
        # the nodes it may still join; a node with no admissible partner is a dead end.
        nodes = np.flatnonzero(free)
        u = rng.choice(nodes, p=free[nodes] / free[nodes].sum())
        ok = (free > 0) & (a[u] == 0)
        ok[u] = False
        cand = np.flatnonzero(ok)
        if cand.size == 0:
            return None
        v = rng.choice(cand, p=free[cand] / free[cand].sum())
        a[u, v] = a[v, u] = 1
        free[u] -= 1
        free[v] -= 1
    return a


def one_wl_equivalent_pairs(
    count: int, n: int, d: int, *, seed: Seed = None, max_tries: int = 1000
) -> list[tuple[Graph, Graph]]:
    """``count`` pairs of random d-regular graphs on n nodes with different spectra.

    Same n and d make every pair 1-WL equivalent; different spectra make it non-isomorphic.
    """
    rng = _rng(seed)
    pairs: list[tuple[Graph, Graph]] = []
    tries = 0
    while len(pairs) < count:
        tries += 1
        if tries > max_tries:
            raise GraphError(
                f"found only {len(pairs)} non-isomorphic {d}-regular pairs on {n} nodes"
            )
        k = len(pairs)
        g = random_regular(n, d, seed=rng, name=f"reg{n}_{d}_{k}a")
        h = random_regular(n, d, seed=rng, name=f"reg{n}_{d}_{k}b")
        if not _same_spectrum(g, h):
            pairs.append((g, h))
    return pairs


def _spectrum(g: Graph) -> np.ndarray:
    return np.linalg.eigvalsh(g.adjacency.astype(np.float64))


def _same_spectrum(g: Graph, h: Graph, tol: float = 1e-8) -> bool:
    if g.num_nodes != h.num_nodes:
        return False
    return bool(np.allclose(_spectrum(g), _spectrum(h), atol=tol))


# --------------------------------------------------------------------------- GM switching


def is_switching_set(g: Graph, nodes: Sequence[int] | np.ndarray) -> bool:
    """Whether ``nodes`` is a Godsil–McKay switching set of ``g`` (one class, even size).

    Conditions: the subgraph induced on C is regular, and every node outside C has 0, |C|/2 or
    |C| neighbours in C.
    """
    a = as_graph(g).adjacency
    c = np.asarray(nodes, dtype=np.int64)
    if c.size == 0 or c.size % 2 or len(set(c.tolist())) != c.size:
        return False
    if c.min() < 0 or c.max() >= a.shape[0]:
        return False
    inner = a[np.ix_(c, c)].sum(1)
    if np.any(inner != inner[0]):
        return False
    outside = np.setdiff1d(np.arange(a.shape[0]), c)
    hits = a[np.ix_(outside, c)].sum(1)
    return bool(np.all((hits == 0) | (hits == c.size) | (2 * hits == c.size)))


def godsil_mckay_switch(
    g: Graph, nodes: Sequence[int] | np.ndarray, *, name: str | None = None
) -> Graph:
    """Godsil–McKay switching of ``g`` with respect to the switching set ``nodes`` (= C).

    Every node outside C with exactly |C|/2 neighbours in C swaps them for the other half. The
    result is cospectral with ``g`` (Godsil & McKay, 1982).
    """
    g = as_graph(g)
    if not is_switching_set(g, nodes):
        raise GraphError(
            f"{list(np.asarray(nodes).tolist())} is not a Godsil–McKay switching set: C must have "
            "even size, induce a regular subgraph, and every other node must have 0, |C|/2 or |C| "
            "neighbours in C",
            g.name,
        )
    c = np.asarray(nodes, dtype=np.int64)
    a = np.array(g.adjacency, dtype=np.int64)
    outside = np.setdiff1d(np.arange(a.shape[0]), c)
    half = outside[2 * a[np.ix_(outside, c)].sum(1) == c.size]
    block = a[np.ix_(half, c)]
    a[np.ix_(half, c)] = 1 - block
    a[np.ix_(c, half)] = (1 - block).T
    return _graph(a, name or f"{g.label()}~gm")


def switching_sets(g: Graph, size: int = 4) -> list[tuple[int, ...]]:
    """Every Godsil–McKay switching set of ``size`` nodes that changes ``g`` (exhaustive)."""
    a = as_graph(g).adjacency
    n = a.shape[0]
    if size % 2 or size <= 0 or size > n:
        return []
    combos = np.array(list(itertools.combinations(range(n), size)), dtype=np.int64)
    if combos.size == 0:
        return []
    # hits[s, v]: neighbours of v inside subset s; inner degrees come from the same table.
    hits = a[:, combos].sum(-1).T  # (S, n)
    inner = np.take_along_axis(hits, combos, axis=1)
    regular = np.all(inner == inner[:, :1], axis=1)
    member = np.zeros_like(hits, dtype=bool)
    np.put_along_axis(member, combos, True, axis=1)
    ok_out = (hits == 0) | (hits == size) | (2 * hits == size) | member
    switching = (2 * hits == size) & ~member  # some node really switches
    keep = regular & ok_out.all(1) & switching.any(1)
    return [tuple(int(v) for v in row) for row in combos[keep]]


def cospectral_regular_pairs(
    count: int,
    n: int = 10,
    d: int = 4,
    *,
    seed: Seed = None,
    max_tries: int = 2000,
) -> list[tuple[Graph, Graph]]:
    """``count`` pairs of cospectral, non-isomorphic d-regular graphs on n nodes.

    Each pair is a random d-regular graph and its Godsil–McKay switch on a 4-node set; the pair
    is kept when 2-FWL distinguishes it (proof of non-isomorphism). Such pairs are 1-WL and
    L2-equivalent but not 3-WL-equivalent. The switching-set search is exhaustive over 4-subsets,
    so keep n modest (≤ 30). Use d ≥ 4: random cubic graphs almost never have a 4-node
    switching set whose switch is non-isomorphic.
    """
    from matlang.runtime.wl import equivalent

    rng = _rng(seed)
    pairs: list[tuple[Graph, Graph]] = []
    for _ in range(max_tries):
        if len(pairs) == count:
            return pairs
        k = len(pairs)
        g = random_regular(n, d, seed=rng, name=f"cospec{n}_{d}_{k}a")
        sets = switching_sets(g, 4)
        if not sets:
            continue
        chosen = sets[int(rng.integers(len(sets)))]
        h = godsil_mckay_switch(g, chosen, name=f"cospec{n}_{d}_{k}b")
        if not equivalent(g, h, "3-wl"):
            pairs.append((g, h))
    if len(pairs) == count:
        return pairs
    raise GraphError(
        f"found only {len(pairs)} of {count} cospectral {d}-regular pairs on {n} nodes in "
        f"{max_tries} tries"
        + (" (cubic graphs rarely allow switching; try d >= 4)" if d < 4 else "")
    )


# --------------------------------------------------------------------------- paper-like Random


#: Node counts of :func:`paperlike_random`: 10 + Binomial(18, 8.8/18), so 10..28, mean 18.8.
PAPERLIKE_NODES = (10, 18, 8.8 / 18)
#: Label names of :func:`paperlike_random`.
PAPERLIKE_LABELS = (
    "count_triangle",
    "count_tailed_triangle",
    "count_star",
    "count_cycle4",
    "count_custom",
)
#: Edge probability giving 31.3 undirected edges on average: 31.3 / E[n(n-1)/2] (= 169.57).
PAPERLIKE_P = 31.3 / 169.5698


def paperlike_random(seed: Seed = 0) -> CountingData:
    """A **stand-in** for the paper's "Random" dataset, which is not available.

    The paper reports 5000 graphs with 18.8 nodes and 62.67 directed (≈31.3 undirected) edges
    on average, split 1500/1000/2500; the authors' ``randomgraph.mat`` is missing (data README).
    This draws 5000 Erdős–Rényi graphs with n = 10 + Binomial(18, 8.8/18) and p = 0.1846,
    matching those means, in a random split of those sizes. Labels follow the authors'
    ``GraphCountDataset`` formulas: ``count_triangle`` = tr(A³)/6, ``count_tailed_triangle`` =
    Σ diag(A³)/2 · (deg − 2), ``count_star`` = Σ C(deg, 3), ``count_cycle4`` =
    (tr(A⁴) + tr(A²) − 2·Σ(A²))/8 and ``count_custom`` = Σ A diag(exp(−A²𝟏)) A.
    Numbers reproduced on it are not the paper's numbers.
    """
    rng = _rng(seed)
    base, trials, prob = PAPERLIKE_NODES
    sizes = base + rng.binomial(trials, prob, size=5000)
    graphs: list[Graph | None] = [None] * 5000
    labels = {k: np.zeros(5000) for k in PAPERLIKE_LABELS}
    # Graphs of one size are drawn and counted together (batched matmuls), in index order.
    for n in np.unique(sizes).tolist():
        idx = np.flatnonzero(sizes == n)
        upper = np.triu(rng.random((len(idx), n, n)) < PAPERLIKE_P, 1)
        adj = (upper | upper.transpose(0, 2, 1)).astype(np.int64)
        for key, values in _count_labels(adj).items():
            labels[key][idx] = values
        for pos, i in enumerate(idx.tolist()):
            graphs[i] = _graph(adj[pos], f"paperlike:{i}")
    perm = rng.permutation(5000)
    return CountingData(
        [g for g in graphs if g is not None],
        np.sort(perm[:1500]),
        np.sort(perm[1500:2500]),
        np.sort(perm[2500:]),
        labels,
        f"paperlike_random(seed={seed!r}): a stand-in for the paper's Random dataset",
    )


def _count_labels(adj: np.ndarray) -> dict[str, np.ndarray]:
    """The authors' counting targets for a stack of adjacencies (see :func:`paperlike_random`)."""
    a2 = adj @ adj
    a3 = a2 @ adj
    deg = adj.sum(-1)
    closed3 = np.diagonal(a3, axis1=1, axis2=2)
    closed2 = np.diagonal(a2, axis1=1, axis2=2)
    closed4 = np.einsum("gij,gji->g", a2, a2)  # tr(A^4) = sum of squared entries of A^2
    # A diag(exp(-A^2 1)) A: scale the columns of A, then multiply by A.
    custom = (adj * np.exp(-a2.sum(-1))[:, None, :]) @ adj
    return {
        "count_triangle": closed3.sum(-1) / 6,
        "count_tailed_triangle": np.sum(closed3 / 2 * (deg - 2), axis=-1),
        "count_star": np.sum(deg * (deg - 1) * (deg - 2) // 6, axis=-1).astype(np.float64),
        "count_cycle4": (closed4 + closed2.sum(-1) - 2 * a2.sum((1, 2))) / 8,
        "count_custom": custom.sum((1, 2)),
    }
