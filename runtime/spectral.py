r"""Spectral preprocessing without eigendecompositions: λmax by Lanczos and matrix functions
``M ⊙ Φ(B)`` on a sparse mask by Chebyshev expansion and probing.

**Expansion.** With the spectrum of ``B`` inside ``[lo, hi]`` and ``B̃ = (2B − (lo + hi) I) /
(hi − lo)``, ``Φ(B) ≈ p_K(B) = Σ_{k ≤ K} c_k T_k(B̃)``. The ``c_k`` are those of Φ's Chebyshev
interpolant on many points (a DCT), and ``K`` is the smallest order with
``Σ_{k > K} |c_k| ≤ tol``. Since ``|T_k| ≤ 1`` on ``[−1, 1]``,

.. math::
    \max_{ij} |\Phi(B) - p_K(B)|_{ij} \le \|\Phi(B) - p_K(B)\|_2 \le \sum_{k > K} |c_k|,

a bound on every entry, the mask's included. No damping (Jackson, Lanczos σ): the band
functions ``exp(−b (λ − f)²)`` are entire, so the plain series converges super-exponentially,
while Jackson's factors ``g_k = 1 − O(k²/K²)`` would leave an error of order ``1/K²``.

**Probing.** ``p_K(B)_{ij} = 0`` when the hop distance ``d(i, j) > K``. Colour the nodes so that
two nodes of one colour lie more than ``K + r`` apart (``r``: the mask's radius); then for every
mask entry ``(i, j)`` the node ``j`` is the only one of its colour within ``K`` hops of ``i`` and
``(p_K(B) z_c)_i = p_K(B)_{ij}`` for ``z_c`` the indicator of ``j``'s colour ``c``. So ``P``
colours cost ``P · K`` sparse products with ``B̃`` and give every mask entry exactly (no
aliasing): ``O(P K E)`` time, ``O(n · chunk)`` memory, never an n × n array.

The colouring comes from BFS distances to a few far-apart landmarks ``ℓ_t`` (farthest-point
sampling, per connected component): colour = ``(ℓ_t mod (D + 1))_t`` plus a rank among the
nodes of a component with the very same distance vector. Two nodes of one colour either have
some ``|ℓ_t(u) − ℓ_t(v)| ≥ D + 1`` (so ``d(u, v) ≥ D + 1`` by the triangle inequality) or lie
in different components. On a 2-D grid it needs about ``(D + 1)²/2`` colours, which is
optimal up to rounding; on expanders (``D`` above the diameter) it falls back to one colour per
node, an ``O(n K E)`` evaluation — exact to the tolerance, but not linear (see README).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.fft import dct
from scipy.linalg import eigh_tridiagonal
from scipy.sparse import csgraph

from matlang.errors import GraphError

try:  # y += A x for CSR A and a block of vectors, accumulating in place (no temporary)
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover
    _csr_matvec = _csr_matvecs = None

#: Graphs with fewer nodes get their extreme eigenvalues from a dense ``eigvalsh`` (exact and,
#: there, faster than ARPACK, which also needs ``k < n``).
LANCZOS_MIN_NODES = 32

#: Graphs with fewer nodes evaluate the series with dense n × n products (no colouring): there
#: scipy.sparse's per-call cost exceeds the arithmetic.
DENSE_BELOW = 64

#: Landmarks per component for the probing colouring (a 2-D grid needs its 4 corners).
LANDMARKS = 4

#: Floats of one block of probe vectors (three blocks live at once): 2²² ≈ 32 MiB each.
PROBE_BLOCK = 1 << 22


# --------------------------------------------------------------------------- extreme eigenvalues


@dataclass(frozen=True)
class Extremes:
    """Bounds on a symmetric matrix's spectrum: ``lo ≤ λmin``, ``λmax ≤ hi`` up to ``error``
    (Lanczos: the Ritz pair's residual norm, which bounds the distance to an eigenvalue)."""

    lo: float
    hi: float
    error: float


def _seeded_start(n: int) -> np.ndarray:
    # a fixed start vector, so results do not change run to run; not ones: that is an
    # eigenvector of the Laplacians and of regular adjacencies
    q = np.random.default_rng(0x5EC7).standard_normal(n)
    return q / np.linalg.norm(q)


def lanczos_extremes(
    b: sp.csr_matrix, *, tolerance: float = 1e-10, max_steps: int = 5000, lowest: bool = True
) -> tuple[float, float, float]:
    """``(θmin, θmax, residual)``: the extreme Ritz values of plain Lanczos on ``b`` (no
    restarts, no reorthogonalisation: loss of orthogonality only adds copies of converged Ritz
    values, Paige 1980) once the residual norms ``β_m |y_m|`` are below
    ``tolerance · max(1, |θ|)`` (θmax's only, and θmin = nan, unless ``lowest``). Each Ritz
    value lies within its residual of an eigenvalue."""
    n = b.shape[0]
    b = b.tocsr()
    matvec = _matvec(b)
    q = _seeded_start(n)
    q_prev = np.zeros(n)
    beta = 0.0
    alphas: list[float] = []
    betas: list[float] = []
    check = 8
    lo = hi = resid = 0.0
    for _ in range(min(max_steps, n)):
        w = matvec(q)
        alpha = float(q @ w)
        w -= alpha * q
        w -= beta * q_prev
        beta = float(np.linalg.norm(w))
        alphas.append(alpha)
        betas.append(beta)
        m = len(alphas)
        done = beta <= 1e-12 * max(1.0, abs(alpha)) or m == min(max_steps, n)
        if m >= check or done:
            check = m + max(4, m // 10)  # a tridiagonal solve is O(m): cheap next to B x
            d, e = np.asarray(alphas), np.asarray(betas[:-1])
            ends = []
            for idx in (0, m - 1) if lowest else (m - 1,):
                theta, y = eigh_tridiagonal(d, e, select="i", select_range=(idx, idx))
                ends.append((float(theta[0]), beta * abs(float(y[-1, 0]))))
            lo = ends[0][0] if lowest else math.nan
            hi = ends[-1][0]
            resid = max(r for _, r in ends)
            if done or all(r <= tolerance * max(1.0, abs(t)) for t, r in ends):
                return lo, hi, resid
        q_prev, q = q, w / beta
    return lo, hi, resid  # pragma: no cover - the loop returns at its last step


def _matvec(b: sp.csr_matrix) -> Callable[[np.ndarray], np.ndarray]:
    """``x ↦ b @ x`` straight through scipy's kernel: Lanczos makes hundreds of small
    products, where the dispatch of ``b @ x`` costs as much as the product."""
    if _csr_matvec is None:  # pragma: no cover - scipy without its private kernels
        return lambda x: b @ x
    n, m = b.shape
    indptr, indices, data = b.indptr, b.indices, b.data

    def mv(x: np.ndarray) -> np.ndarray:
        y = np.zeros(n)
        _csr_matvec(n, m, indptr, indices, data, x, y)
        return y

    return mv


def bipartite_edge_component(adj: sp.csr_matrix) -> bool:
    """Some connected component with an edge is bipartite (then the normalised Laplacian has
    the eigenvalue 2, its largest possible): BFS levels differ by one along every edge."""
    ncomp, comp = csgraph.connected_components(adj, directed=False)
    roots = _per_component_argmax(-np.arange(adj.shape[0]), comp.astype(np.int64), ncomp)
    level = _bfs_from(adj, roots)
    coo = adj.tocoo()
    odd_edge = (level[coo.row] - level[coo.col]) % 2 == 0  # same parity: an odd cycle
    has_edge = np.bincount(comp[coo.row], minlength=ncomp) > 0
    has_odd = np.bincount(comp[coo.row], weights=odd_edge, minlength=ncomp) > 0
    return bool((has_edge & ~has_odd).any())


def extremes(
    b: sp.csr_matrix,
    *,
    lowest: bool,
    exact: bool = False,
    top: float | None = None,
    tolerance: float = 1e-10,
) -> Extremes:
    """``λmax`` (and ``λmin`` when ``lowest``; else ``lo = 0``: a Laplacian with an edge) of
    the symmetric sparse ``b``: dense ``eigvalsh`` when ``exact`` or ``n < LANCZOS_MIN_NODES``,
    else Lanczos. ``top``: ``λmax`` when the caller knows it (a bipartite graph's normalised
    Laplacian: 2). A matrix without off-diagonal entries (no edges) is read off its diagonal,
    both ends."""
    n = b.shape[0]
    if n == 0:
        return Extremes(0.0, 0.0, 0.0)
    d = b.diagonal()
    if b.nnz == np.count_nonzero(d):  # diagonal: isolated nodes only
        return Extremes(float(d.min()), float(d.max()), 0.0)
    if exact or n < LANCZOS_MIN_NODES:
        lam = np.linalg.eigvalsh(b.toarray())
        return Extremes(float(lam[0]) if lowest else 0.0, float(lam[-1]), 0.0)
    if top is not None and not lowest:
        return Extremes(0.0, top, 0.0)
    lo, hi, resid = lanczos_extremes(b, tolerance=tolerance, lowest=lowest)
    return Extremes(lo if lowest else 0.0, hi if top is None else top, resid)


# --------------------------------------------------------------------------- Chebyshev series


@dataclass(frozen=True)
class Series:
    """Chebyshev coefficients of several functions on ``[lo, hi]``, cut at one order."""

    lo: float
    hi: float
    coefficients: np.ndarray  # (S, K + 1)
    bound: float  # max over functions of Σ_{k > K} |c_k|: a bound on every entry's error

    @property
    def order(self) -> int:
        return self.coefficients.shape[1] - 1


def _dct_coefficients(f: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, m: int):
    """Coefficients of the degree-(m−1) interpolant of ``f`` at the Chebyshev points of the
    first kind, shape (S, m): ``c_k = (2/m) Σ_j f(x_j) cos(k (j + ½) π / m)``, ``c_0`` halved."""
    x = np.cos(np.pi * (np.arange(m) + 0.5) / m)
    y = np.atleast_2d(f(0.5 * (hi + lo) + 0.5 * (hi - lo) * x))
    c = dct(y, type=2, axis=-1) / m
    c[:, 0] *= 0.5
    return c


def chebyshev_series(
    f: Callable[[np.ndarray], np.ndarray],
    lo: float,
    hi: float,
    *,
    tolerance: float,
    order: int | None = None,
    max_order: int = 4096,
) -> Series:
    """The series of ``f`` (vectorised: ``(m,) → (S, m)``) on ``[lo, hi]``, cut at ``order``
    or at the smallest order whose tail ``Σ_{k > K} |c_k|`` is at most ``tolerance``."""
    need = 0 if order is None else order
    m = 64
    while True:
        c = _dct_coefficients(f, lo, hi, max(m, 2 * need + 2))
        absc = np.abs(c)
        # tail[s, K] = Σ_{k > K} |c_{s,k}|; the last quarter stands for the neglected rest
        tail = np.cumsum(absc[:, ::-1], axis=1)[:, ::-1]
        tail = np.concatenate([tail[:, 1:], np.zeros((c.shape[0], 1))], axis=1)
        resolved = float(tail[:, 3 * c.shape[1] // 4].max()) <= 1e-3 * tolerance
        if resolved or m >= max_order:
            break
        m *= 2
    worst = tail.max(axis=0)
    if order is None:
        ok = np.nonzero(worst <= tolerance)[0]
        if ok.size == 0 or not resolved:
            raise GraphError(
                f"a Chebyshev order up to {max_order} does not reach the tolerance {tolerance:g} "
                f"on the spectrum interval [{lo:g}, {hi:g}]; pass a larger tolerance or exact=True"
            )
        k = int(ok[0])
    else:
        k = order
    return Series(lo, hi, np.ascontiguousarray(c[:, : k + 1]), float(worst[k]))


# --------------------------------------------------------------------------- probing colouring


def _bfs_from(adj: sp.csr_matrix, sources: np.ndarray) -> np.ndarray:
    """Hop distance of every node to the nearest of ``sources`` (one per component here, so
    each node gets its own component's source), as int64."""
    d = csgraph.dijkstra(adj, directed=False, indices=sources, unweighted=True, min_only=True)
    return d.astype(np.int64)


def _per_component_argmax(values: np.ndarray, comp: np.ndarray, ncomp: int) -> np.ndarray:
    """The node of largest value in each component (ties: the smallest index)."""
    order = np.lexsort((np.arange(values.size), -values, comp))
    first = np.searchsorted(comp[order], np.arange(ncomp), side="left")
    return order[first]


def distance_colouring(adj: sp.csr_matrix, distance: int) -> tuple[np.ndarray, int]:
    """Colours ``(n,)`` and their number ``P`` such that two nodes of one colour are more than
    ``distance`` hops apart (or in different components); see the module docstring."""
    n = adj.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    ncomp, comp = csgraph.connected_components(adj, directed=False)
    comp = comp.astype(np.int64)
    first = _per_component_argmax(-np.arange(n), comp, ncomp)  # smallest node of each component
    far = _BfsLandmarks(adj, comp, ncomp, _per_component_argmax(_bfs_from(adj, first), comp, ncomp))
    dist = far.run(LANDMARKS)  # (L, n)
    # more landmarks split ties, fewer make fewer residue classes: keep the best prefix
    best = min((_landmark_colours(dist[:k], comp, distance) for k in range(2, LANDMARKS + 1)),
               key=lambda cp: cp[1])
    return best


def _landmark_colours(dist: np.ndarray, comp: np.ndarray, distance: int) -> tuple[np.ndarray, int]:
    n = dist.shape[1]
    mod = distance + 1
    # colour key: residues, then the rank among equal distance vectors within a component
    keys = np.vstack([dist % mod, dist, comp[None, :]])
    order = np.lexsort(keys[::-1])
    sk = keys[:, order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (sk[:, 1:] != sk[:, :-1]).any(axis=0)
    starts = np.nonzero(new_group)[0]
    group_start = starts[np.cumsum(new_group) - 1]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - group_start
    if math.log2(max(n, 2)) + dist.shape[0] * math.log2(mod) < 62:
        key = rank.copy()  # mixed radix: residues < mod, rank < n, fits in int64
        for res in dist % mod:
            key = key * mod + res
        _, colours = np.unique(key, return_inverse=True)
    else:
        _, colours = np.unique(np.vstack([dist % mod, rank]), axis=1, return_inverse=True)
    colours = colours.reshape(-1).astype(np.int64)
    return colours, int(colours.max()) + 1


@dataclass
class _BfsLandmarks:
    """Farthest-point sampling of landmarks, one new landmark per component per round."""

    adj: sp.csr_matrix
    comp: np.ndarray
    ncomp: int
    start: np.ndarray

    def run(self, count: int) -> np.ndarray:
        out = [_bfs_from(self.adj, self.start)]
        nearest = out[0].copy()
        for _ in range(count - 1):
            nxt = _per_component_argmax(nearest, self.comp, self.ncomp)
            out.append(_bfs_from(self.adj, nxt))
            nearest = np.minimum(nearest, out[-1])
        return np.stack(out)


# --------------------------------------------------------------------------- masked evaluation


def masked_series(
    b: sp.csr_matrix,
    series: Series,
    rows: np.ndarray,
    cols: np.ndarray,
    colours: np.ndarray,
    num_colours: int,
) -> np.ndarray:
    """``p_K(B)[rows, cols]`` for every function of ``series``, shape ``(S, len(rows))``, by
    probing: ``colours`` must separate the nodes by more than ``K + r`` hops."""
    n = b.shape[0]
    s, k1 = series.coefficients.shape
    out = np.zeros((s, rows.size))
    if rows.size == 0:
        return out
    lo, hi = series.lo, series.hi
    # ±2B̃ = ±(4B − 2(lo + hi) I) / (hi − lo): see _chebyshev_block for the signs
    two_bt = ((4.0 * b - 2.0 * (hi + lo) * sp.identity(n, format="csr")) / (hi - lo)).tocsr()
    two_bt.sort_indices()
    minus_two_bt = (-two_bt).tocsr()
    # mask entries grouped by their column's colour, so a block of colours owns a slice
    col_colour = colours[cols]
    by_colour = np.argsort(col_colour, kind="stable")
    bounds = np.searchsorted(col_colour[by_colour], np.arange(num_colours + 1), side="left")
    block = max(1, min(num_colours, PROBE_BLOCK // max(n, 1)))
    for c0 in range(0, num_colours, block):
        c1 = min(num_colours, c0 + block)
        width = c1 - c0
        entries = by_colour[bounds[c0] : bounds[c1]]
        if entries.size == 0:
            continue
        flat = rows[entries] * width + (col_colour[entries] - c0)
        z = np.zeros((n, width))
        members = np.nonzero((colours >= c0) & (colours < c1))[0]
        z[members, colours[members] - c0] = 1.0
        gathered = _chebyshev_block((two_bt, minus_two_bt), z, k1, flat)
        out[:, entries] = series.coefficients @ gathered
    return out


def _chebyshev_block(
    two_bt: tuple[sp.csr_matrix, sp.csr_matrix], z: np.ndarray, k1: int, flat: np.ndarray
) -> np.ndarray:
    """``(T_k(B̃) Z).flat[flat]`` for ``k < k1``, shape (k1, len(flat)).

    One accumulating sparse product per order and nothing else: with ``V_k = ε_k T_k`` and
    signs ``ε = +, +, −, −, +, +, …`` the recurrence ``T_{k+1} = 2B̃ T_k − T_{k−1}`` reads
    ``V_{k+1} = V_{k−1} + (ε_{k+1} ε_k) 2B̃ V_k``, i.e. ``V_{k−1}``'s buffer ``+= (±2B̃) V_k``
    (scipy's ``csr_matvecs`` accumulates into its output), so no array is allocated or
    rescaled per order."""
    gathered = np.empty((k1, flat.size))
    gathered[0] = z.reshape(-1)[flat]
    if k1 == 1:
        return gathered
    prev = z
    cur = 0.5 * (two_bt[0] @ z)  # T_1 = B̃ Z
    gathered[1] = cur.reshape(-1)[flat]
    eps = [1.0, 1.0, -1.0, -1.0]
    for k in range(1, k1 - 1):
        sign = eps[(k + 1) % 4] * eps[k % 4]
        _accumulate(two_bt[0] if sign > 0 else two_bt[1], cur, prev)  # prev ← V_{k+1}
        prev, cur = cur, prev
        gathered[k + 1] = eps[(k + 1) % 4] * cur.reshape(-1)[flat]
    return gathered


def _accumulate(a: sp.csr_matrix, x: np.ndarray, y: np.ndarray) -> None:
    """``y += a @ x`` in place (x, y: C-contiguous float64 (n, w))."""
    if _csr_matvecs is None:  # pragma: no cover - scipy without its private kernels
        y += a @ x
        return
    n, w = x.shape
    _csr_matvecs(n, n, w, a.indptr, a.indices, a.data, x.reshape(-1), y.reshape(-1))


def dense_series(
    b: np.ndarray, series: Series, rows: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """``p_K(B)[rows, cols]`` with dense n × n products (small graphs), shape (S, len(rows))."""
    n = b.shape[0]
    lo, hi = series.lo, series.hi
    bt = (2.0 * b - (hi + lo) * np.eye(n)) / (hi - lo)
    k1 = series.coefficients.shape[1]
    gathered = np.empty((k1, rows.size))
    prev, cur = np.eye(n), bt
    gathered[0] = prev[rows, cols]
    if k1 > 1:
        gathered[1] = cur[rows, cols]
    for k in range(2, k1):
        prev, cur = cur, 2.0 * (bt @ cur) - prev  # T_{k+1} = 2 B̃ T_k − T_{k−1}
        gathered[k] = cur[rows, cols]
    return series.coefficients @ gathered


def gaussian_bands(centres: np.ndarray, bandwidth: float) -> Callable[[np.ndarray], np.ndarray]:
    """``λ ↦ (exp(−b (λ − f_s)²))_s``: GNNML3's band functions, vectorised ``(m,) → (S, m)``."""

    def f(lam: np.ndarray) -> np.ndarray:
        return np.exp(-bandwidth * (lam[None, :] - centres[:, None]) ** 2)

    return f


def centre_sensitivity(bandwidth: float) -> float:
    """``max_λ |∂/∂f exp(−b (λ − f)²)| = √(2b/e)``: a centre moved by δ moves every entry of
    the support by at most this times δ (spectral norm)."""
    return math.sqrt(2.0 * bandwidth / math.e)


__all__ = [
    "LANCZOS_MIN_NODES",
    "Extremes",
    "Series",
    "centre_sensitivity",
    "chebyshev_series",
    "dense_series",
    "distance_colouring",
    "extremes",
    "gaussian_bands",
    "masked_series",
]
