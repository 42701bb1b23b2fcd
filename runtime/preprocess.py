r"""Preprocessing: per-graph spectra, ChebNet's λmax and GNNML3's initial supports, cached.

Everything here is computed once per graph (numpy, float64) and kept in an explicit
:class:`~runtime.cache.GraphCache` (``PreprocessCache``) that the caller owns. A cache entry is
filed under a :class:`~runtime.cache.CacheKey` made of the transform's name, a fingerprint of
the graph (sha256 of ``n``, the bytes of its local ``edge_index`` and of its edge weights) and
*every* parameter of the transform, so a changed parameter can never read a stale entry.
Finding the key is cheap: a :class:`~matlang.graphs.Graph` (immutable) is fingerprinted once
per cache; a batch's graphs are fingerprinted straight from the batch's arrays, and a batch
object seen before (evaluation reuses its batches every epoch) gets its assembled result back
after an exact comparison of its arrays with the ones it had.

GNNML3 supports (paper Algorithm 1, Appendix "Datasets and Application Details"): on the
receptive field ``M = (A + I)^r > 0`` (``r = 1``: ``M = A + I``), with ``B = U diag(λ) Uᵀ`` the
normalised Laplacian (or the adjacency),

.. math::
    C'^{(s)} = M \odot U\,\mathrm{diag}(\Phi_s(\lambda))\,U^\top, \qquad
    \Phi_s(\lambda) = e^{-b(\lambda - f_s)^2},

``f_s`` spread uniformly over ``[λmin, λmax]`` of the graph, plus the all-pass support
``Φ_0(λ) = 1``, i.e. ``M ⊙ U Uᵀ = M ⊙ I = I``. The supports are edge features on the edges of
``M`` (self-loops included).

By default no eigendecomposition is taken: λmax comes from Lanczos (or is 2 for a normalised
Laplacian with a bipartite component) and each band ``M ⊙ Φ_s(B)`` from a Chebyshev series in
``B`` evaluated on ``M``'s entries only, its order chosen for ``SupportConfig.tolerance``
(:mod:`runtime.spectral`). ``SupportConfig(exact=True)`` and ``lambda_max(..., exact=True)``
keep the dense eigendecomposition: the oracle of the tests.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from matlang.errors import GraphError, MatlangError
from matlang.runtime import spectral
from matlang.runtime.batch import Batch
from matlang.runtime.cache import (  # noqa: F401 - re-exported
    MISSING,
    CacheKey,
    GraphCache,
    PreprocessCache,
)
from matlang.runtime.local_graphs import (  # noqa: F401 - re-exported
    LocalGraph,
    _batch_edges,
    _BatchEdges,
    as_local_graph,
    graph_fingerprint,
    graph_fingerprints,
    split_batch,
)

#: The matrix whose spectrum is taken: ``I - D^{-1/2} A D^{-1/2}`` (isolated nodes: 1 on the
#: diagonal), ``D - A``, or ``A``.
Basis = Literal["normalized_laplacian", "laplacian", "adjacency"]
BASES: tuple[str, ...] = ("normalized_laplacian", "laplacian", "adjacency")

T = TypeVar("T")


# --------------------------------------------------------------------------- cache
# (the per-graph cache lives in runtime/cache.py; its names are re-exported here)


def _through_cache(
    cache: PreprocessCache | None,
    transform: str,
    fingerprint: Callable[[PreprocessCache], str],
    build: Callable[[], LocalGraph],
    params: tuple[tuple[str, Any], ...],
    compute: Callable[[LocalGraph], T],
) -> T:
    """``compute`` of one graph through the cache, filed under its fingerprint; the graph is
    built (``build()``) only on a miss."""
    if cache is None:
        return compute(build())
    key = CacheKey(transform, fingerprint(cache), params)
    return cache.get_or_compute(key, lambda: compute(build()))


def _cached(
    cache: PreprocessCache | None,
    transform: str,
    graph: Any,
    params: tuple[tuple[str, Any], ...],
    compute: Callable[[LocalGraph], T],
) -> T:
    """``compute`` of one graph, through the cache."""
    return _through_cache(
        cache,
        transform,
        lambda c: c.fingerprint(graph),
        lambda: as_local_graph(graph),
        params,
        compute,
    )


def _per_graph(
    cache: PreprocessCache | None,
    transform: str,
    batch: Batch,
    params: tuple[tuple[str, Any], ...],
    compute: Callable[[LocalGraph], T],
) -> list[T]:
    """``compute`` of every graph of a batch, through the cache; fingerprints come straight
    from the batch's arrays and only missing graphs are built."""
    edges = _batch_edges(batch)
    return [
        _through_cache(
            cache,
            transform,
            functools.partial(_batch_fingerprint, edges, k),
            functools.partial(edges.graph, k),
            params,
            compute,
        )
        for k in range(batch.num_graphs)
    ]


def _batch_fingerprint(edges: _BatchEdges, k: int, cache: PreprocessCache) -> str:
    return edges.fingerprint(k)  # straight from the batch's arrays: nothing to remember


# --------------------------------------------------------------------------- spectra


@dataclass(frozen=True, eq=False)
class Spectrum:
    """``B = U diag(λ) Uᵀ``: eigenvalues ascending, eigenvectors as columns (read-only)."""

    eigenvalues: np.ndarray  # (n,)
    eigenvectors: np.ndarray  # (n, n)


def _check_basis(basis: str) -> None:
    if basis not in BASES:
        raise MatlangError(f"unknown spectral basis {basis!r}; known: {', '.join(BASES)}")


def basis_matrix(graph: Any, basis: Basis = "normalized_laplacian") -> np.ndarray:
    """The dense matrix ``B`` of ``basis`` for one graph (float64)."""
    _check_basis(basis)
    a = as_local_graph(graph).adjacency()
    if basis == "adjacency":
        return a
    d = a.sum(axis=1)
    if basis == "laplacian":
        return np.diag(d) - a
    with np.errstate(divide="ignore"):
        dis = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    return np.eye(a.shape[0]) - dis[:, None] * a * dis[None, :]


def spectrum(
    graph: Any, basis: Basis = "normalized_laplacian", *, cache: PreprocessCache | None = None
) -> Spectrum:
    """The eigendecomposition of ``basis`` (Laplacian eigenvalues clipped at 0 from below)."""
    _check_basis(basis)

    def compute(lg: LocalGraph) -> Spectrum:
        b = basis_matrix(lg, basis)
        if b.shape[0] == 0:
            lam, u = np.zeros(0), np.zeros((0, 0))
        else:
            if not np.allclose(b, b.T):
                raise GraphError("a spectrum needs a symmetric adjacency (undirected graph)")
            lam, u = np.linalg.eigh(b)
            if basis != "adjacency":
                lam = np.clip(lam, 0.0, None)  # PSD: only rounding makes them negative
        lam.setflags(write=False)
        u.setflags(write=False)
        return Spectrum(lam, u)

    return _cached(cache, "spectrum", graph, (("basis", basis),), compute)


def sparse_basis(graph: Any, basis: Basis = "normalized_laplacian") -> sp.csr_matrix:
    """The sparse matrix ``B`` of ``basis`` for one graph (scipy CSR, float64, sorted
    indices), checked symmetric."""
    _check_basis(basis)
    a = as_local_graph(graph).sparse_adjacency()
    _check_symmetric(a)
    if basis == "adjacency":
        return a
    n = a.shape[0]
    d = np.asarray(a.sum(axis=1)).ravel()
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    if basis == "laplacian":
        diag = d
        off = -a.data
    else:
        dis = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
        diag = np.ones(n)  # isolated nodes too
        off = -dis[rows] * a.data * dis[a.indices]
    # B = diag + off in one COO build (a self-loop's entry adds to the diagonal)
    rows = np.concatenate([rows, np.arange(n)])
    cols = np.concatenate([a.indices, np.arange(n)])
    b = sp.csr_matrix((np.concatenate([off, diag]), (rows, cols)), shape=(n, n))
    b.sum_duplicates()
    return b


def _check_symmetric(a: sp.csr_matrix) -> None:
    """``A = Aᵀ`` within np.allclose's tolerances (canonical CSR: compare the arrays)."""
    t = a.transpose().tocsr()
    t.sum_duplicates()
    same = np.array_equal(a.indptr, t.indptr) and np.array_equal(a.indices, t.indices)
    if not same or not np.allclose(a.data, t.data):
        raise GraphError("a spectrum needs a symmetric adjacency (undirected graph)")


def _extremes(lg: LocalGraph, basis: Basis, b: sp.csr_matrix, exact: bool) -> spectral.Extremes:
    """Spectrum bounds of ``B``: ``λmin`` is known for the Laplacians (0, or 1 for a normalised
    Laplacian without edges, read off the diagonal), and a normalised Laplacian has ``λmax = 2``
    exactly when a component with an edge is bipartite."""
    top = None
    if basis == "normalized_laplacian" and not exact and b.shape[0] >= spectral.LANCZOS_MIN_NODES:
        if spectral.bipartite_edge_component(lg.sparse_adjacency()):
            top = 2.0
    return spectral.extremes(b, lowest=basis == "adjacency", exact=exact, top=top)


def lambda_max(
    graph: Any,
    basis: Basis = "normalized_laplacian",
    *,
    exact: bool = False,
    cache: PreprocessCache | None = None,
) -> float:
    """The largest eigenvalue of ``basis`` for this graph (0.0 for a graph without nodes): by
    Lanczos to a relative residual of 1e-10 (graphs of fewer than
    ``spectral.LANCZOS_MIN_NODES`` nodes, or ``exact``: a dense ``eigvalsh``)."""
    _check_basis(basis)
    params = (("basis", basis), ("exact", exact))
    return _cached(cache, "lambda_max", graph, params, _lambda_max(basis, exact))


def _lambda_max(basis: Basis, exact: bool = False) -> Callable[[LocalGraph], float]:
    def compute(lg: LocalGraph) -> float:
        return _extremes(lg, basis, sparse_basis(lg, basis), exact).hi

    return compute


def batch_lambda_max(
    batch: Batch,
    basis: Basis = "normalized_laplacian",
    *,
    exact: bool = False,
    cache: PreprocessCache | None = None,
    dtype: torch.dtype = torch.float64,
) -> Tensor:
    """λmax of every graph of the batch, shape ``(G,)`` (see :func:`lambda_max`)."""
    _check_basis(basis)
    params = (("basis", basis), ("exact", exact))
    vals = _per_graph(cache, "lambda_max", batch, params, _lambda_max(basis, exact))
    return torch.tensor(vals, dtype=dtype, device=batch.edge_index.device)


# --------------------------------------------------------------------------- GNNML3 supports


@dataclass(frozen=True)
class SupportConfig:
    """Parameters of GNNML3's initial supports (every one of them is part of the cache key).

    Args:
        basis: spectrum of the normalised Laplacian (paper default) or the adjacency (the paper's
            choice for ZINC and substructure counting).
        num_bands: number of band supports ``Φ_s``, centres ``f_s = linspace(λmin, λmax)``.
        bandwidth: ``b`` in ``exp(-b (λ - f_s)²)`` (paper: 5).
        receptive_field: ``r``, mask ``M = (A + I)^r > 0`` (paper: 1).
        all_pass: add the all-pass support ``Φ_0 = 1``, i.e. ``I`` on ``M``.
        add_mask: add ``M`` itself (1 on every edge of the receptive field).
        add_adjacency: add ``A`` restricted to ``M`` (the authors' code does for counting).
        exact: ``True``: band supports from a dense eigendecomposition (``O(n³)``; the test
            oracle); ``False``: a Chebyshev expansion evaluated on ``M`` only
            (``runtime.spectral``); ``None`` (default): the eigendecomposition for graphs under
            ``EXACT_BELOW`` nodes (there it is both cheaper and exact: 0.5 vs 1.1 ms at 8
            nodes, 3 vs 24 ms at 100, one thread) and the expansion from there on (unless
            ``order`` is given, which asks for the expansion).
        tolerance: the expansion's bound on every support entry's error (max abs on ``M``
            against the exact supports; λmax's Lanczos residual included).
        order: a fixed expansion order instead of the one ``tolerance`` asks for (the bound
            it reaches is reported in :attr:`Supports.error_bound`).
    """

    basis: Basis = "normalized_laplacian"
    num_bands: int = 5
    bandwidth: float = 5.0
    receptive_field: int = 1
    all_pass: bool = True
    add_mask: bool = False
    add_adjacency: bool = False
    exact: bool | None = None
    tolerance: float = 1e-6
    order: int | None = None

    def __post_init__(self) -> None:
        _check_basis(self.basis)
        if self.num_bands < 0:
            raise MatlangError(f"num_bands must be non-negative, got {self.num_bands}")
        if not self.bandwidth > 0:
            raise MatlangError(f"bandwidth b must be positive, got {self.bandwidth}")
        if self.receptive_field < 1:
            raise MatlangError(f"receptive_field must be at least 1, got {self.receptive_field}")
        if self.num_supports == 0:
            raise MatlangError("a support configuration needs at least one support")
        if not self.tolerance > 0:
            raise MatlangError(f"tolerance must be positive, got {self.tolerance}")
        if self.order is not None and self.order < 0:
            raise MatlangError(f"order must be non-negative (or None), got {self.order}")
        if self.exact not in (None, True, False):
            raise MatlangError(f"exact must be True, False or None (automatic), got {self.exact!r}")

    @property
    def names(self) -> tuple[str, ...]:
        """One name per support column, in order."""
        out = [f"band{s}" for s in range(self.num_bands)]
        if self.all_pass:
            out.append("all_pass")
        if self.add_mask:
            out.append("mask")
        if self.add_adjacency:
            out.append("adjacency")
        return tuple(out)

    @property
    def num_supports(self) -> int:
        return len(self.names)

    def key(self) -> tuple[tuple[str, Any], ...]:
        return tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self))


@dataclass(frozen=True, eq=False)
class Supports:
    """Supports as edge features on the edges of the receptive field ``M``.

    ``error_bound``: a bound on every entry's error against the exact eigendecomposition
    (0 for ``exact=True``; a batch: the largest of its graphs'); ``order``: the largest
    Chebyshev order used (0 when exact)."""

    edge_index: Tensor  # (2, E_M), row-major sorted per graph, self-loops included
    edge_attr: Tensor  # (E_M, S)
    names: tuple[str, ...]
    error_bound: float = 0.0
    order: int = 0

    @property
    def num_supports(self) -> int:
        return len(self.names)

    @staticmethod
    def concat(parts: list[Supports], offsets: list[int], names: tuple[str, ...]) -> Supports:
        """The supports of a batch from its graphs' (local ids; graph ``k``'s nodes start at
        ``offsets[k]``): entries concatenated in graph order, the largest bound and order."""
        if parts:
            ei = torch.cat([p.edge_index + off for p, off in zip(parts, offsets, strict=True)], 1)
            attr = torch.cat([p.edge_attr for p in parts], 0)
        else:
            ei = torch.zeros(2, 0, dtype=torch.int64)
            attr = torch.zeros(0, len(names), dtype=torch.float64)
        bound = max((p.error_bound for p in parts), default=0.0)
        order = max((p.order for p in parts), default=0)
        return Supports(ei, attr, names, bound, order)


def receptive_field_mask(graph: Any, receptive_field: int = 1) -> np.ndarray:
    """``(A + I)^r > 0`` as a boolean n×n matrix."""
    a = as_local_graph(graph).adjacency() != 0
    step = a | np.eye(a.shape[0], dtype=bool)
    m = step.copy()
    for _ in range(receptive_field - 1):
        m = (m.astype(np.int64) @ step.astype(np.int64)) > 0
    return m


def receptive_field_pattern(graph: Any, receptive_field: int = 1) -> sp.csr_matrix:
    """``(A + I)^r > 0`` as a sparse boolean CSR matrix with sorted indices."""
    lg = as_local_graph(graph)
    a = lg.sparse_adjacency()
    step = ((a != 0) + sp.identity(lg.num_nodes, dtype=bool, format="csr")).astype(bool).tocsr()
    m = step
    for _ in range(receptive_field - 1):
        m = (m @ step).astype(bool).tocsr()
    m.sort_indices()
    return m


def gnnml3_supports(
    graph: Any,
    config: SupportConfig | None = None,
    *,
    cache: PreprocessCache | None = None,
) -> Supports:
    """GNNML3's initial supports ``C'`` of one graph (local ids, float64; Algorithm 1)."""
    cfg = SupportConfig() if config is None else config
    return _cached(cache, "gnnml3_supports", graph, cfg.key(), _supports(cfg))


def _exact_bands(lg: LocalGraph, cfg: SupportConfig, rows: np.ndarray, cols: np.ndarray):
    """The bands from a dense eigendecomposition: ``Σ_k U[i,k] U[j,k] φ_k`` on M's entries."""
    # not cached: n×n eigenvectors per graph would dwarf the supports we keep
    spec = spectrum(lg, cfg.basis)
    lam, u = spec.eigenvalues, spec.eigenvectors
    lo, hi = (float(lam.min()), float(lam.max())) if lam.size else (0.0, 0.0)
    centres = np.linspace(lo, hi, cfg.num_bands)
    phi = np.exp(-cfg.bandwidth * (lam[:, None] - centres[None, :]) ** 2)  # (n, S)
    if not rows.size:
        return np.zeros((cfg.num_bands, 0))
    return ((u[rows] * u[cols]) @ phi).T


def _expanded_bands(
    lg: LocalGraph, cfg: SupportConfig, rows: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, float, int]:
    """The bands as a Chebyshev series in ``B`` evaluated on M's entries (``runtime.spectral``:
    by probing; below ``spectral.DENSE_BELOW`` nodes with dense n × n products, which cost less
    than sparse bookkeeping there), its error bound and order."""
    small = lg.num_nodes < spectral.DENSE_BELOW
    if small:
        dense = basis_matrix(lg, cfg.basis)
        if dense.size and not np.allclose(dense, dense.T):
            raise GraphError("a spectrum needs a symmetric adjacency (undirected graph)")
        b = sp.csr_matrix(dense)
    else:
        b = sparse_basis(lg, cfg.basis)
    d = b.diagonal()
    if b.nnz == np.count_nonzero(d):  # no edges: B is diagonal and Φ(B) = diag(Φ(B_ii))
        lo, hi = (float(d.min()), float(d.max())) if d.size else (0.0, 0.0)
        centres = np.linspace(lo, hi, cfg.num_bands)
        bands = spectral.gaussian_bands(centres, cfg.bandwidth)
        return bands(d)[:, rows] * (rows == cols), 0.0, 0
    if small:
        lam = np.linalg.eigvalsh(dense)
        lo = float(lam[0]) if cfg.basis == "adjacency" else 0.0  # Laplacians: 0 with an edge
        ext = spectral.Extremes(lo, float(lam[-1]), 0.0)
    else:
        ext = _extremes(lg, cfg.basis, b, exact=False)
    bands = spectral.gaussian_bands(np.linspace(ext.lo, ext.hi, cfg.num_bands), cfg.bandwidth)
    # the centres move by at most the Lanczos residual: budget it, and widen the interval
    # by it so that it holds the whole spectrum
    centre_error = spectral.centre_sensitivity(cfg.bandwidth) * ext.error
    budget = cfg.tolerance - centre_error
    if budget <= 0:
        raise GraphError(
            f"tolerance {cfg.tolerance:g} is below the λmax error {centre_error:.2g} of a graph "
            f"of {lg.num_nodes} nodes; pass a larger tolerance or exact=True"
        )
    margin = ext.error + 1e-12 * max(1.0, abs(ext.hi), abs(ext.lo))
    series = spectral.chebyshev_series(
        bands, ext.lo - margin, ext.hi + margin, tolerance=budget, order=cfg.order
    )
    if small:
        vals = spectral.dense_series(dense, series, rows, cols)
    else:
        adj = lg.sparse_adjacency()
        colours, count = spectral.distance_colouring(adj, series.order + cfg.receptive_field)
        if cfg.exact is None and cfg.order is None and _dense_is_faster(
            lg.num_nodes, series.order, b.nnz, count
        ):
            return _exact_bands(lg, cfg, rows, cols), 0.0, 0
        vals = spectral.masked_series(b, series, rows, cols, colours, count)
    return vals, series.bound + centre_error, series.order


#: Largest graph whose supports the default may take from the eigendecomposition when that
#: is predicted faster (its n × n eigenvectors: 128 MiB at 4096 nodes).
DENSE_FALLBACK_MAX = 4096

#: Eigendecomposition work (n³) worth one unit of expansion work (order × (nnz(B) + n) ×
#: probes): fitted to the count configuration on ER(500, 1000, 2000; degree 5) and the 32 × 32
#: grid, one thread, shared machine (1.6–2.7 between runs; 2.5 puts all four on the faster
#: side: dense on ER 500 and 1000, the expansion on ER 2000 and the grid).
EXPANSION_COST = 2.5


def _dense_is_faster(n: int, order: int, nnz: int, probes: int) -> bool:
    """Whether the dense eigendecomposition is predicted to cost less than the Chebyshev
    expansion of ``order`` with ``probes`` probe vectors on ``B`` of ``nnz`` entries: on small
    or small-diameter graphs (probes ≈ n) with a high order (narrow bands on a wide spectrum,
    as the adjacency basis of the ``count`` configuration asks for), it does."""
    if n > DENSE_FALLBACK_MAX:
        return False
    return float(n) ** 3 < EXPANSION_COST * order * (nnz + n) * probes


#: Below this many nodes the default supports come from the eigendecomposition (measured
#: crossover on ER and grid graphs, one thread: 200–300 nodes).
EXACT_BELOW = 200


def _use_exact(cfg: SupportConfig, n: int) -> bool:
    if cfg.exact is not None:
        return cfg.exact
    return cfg.order is None and n < EXACT_BELOW


def _supports(cfg: SupportConfig) -> Callable[[LocalGraph], Supports]:
    def compute(lg: LocalGraph) -> Supports:
        if lg.num_nodes < spectral.DENSE_BELOW:
            rows, cols = np.nonzero(receptive_field_mask(lg, cfg.receptive_field))
        else:  # row-major sorted like np.nonzero
            m = receptive_field_pattern(lg, cfg.receptive_field)
            rows = np.repeat(np.arange(lg.num_nodes, dtype=np.int64), np.diff(m.indptr))
            cols = m.indices.astype(np.int64)
        cols_out: list[np.ndarray] = []
        bound, order = 0.0, 0
        if cfg.num_bands:
            if _use_exact(cfg, lg.num_nodes):
                bands = _exact_bands(lg, cfg, rows, cols)
            else:
                bands, bound, order = _expanded_bands(lg, cfg, rows, cols)
            cols_out.extend(bands)
        if cfg.all_pass:
            cols_out.append((rows == cols).astype(np.float64))
        if cfg.add_mask:
            cols_out.append(np.ones(rows.size))
        if cfg.add_adjacency:
            if lg.num_nodes < spectral.DENSE_BELOW:
                cols_out.append(lg.adjacency()[rows, cols])
            else:
                a = lg.sparse_adjacency()
                cols_out.append(np.asarray(a[rows, cols]).reshape(-1) if rows.size else np.zeros(0))
        attr = np.stack(cols_out, axis=1) if cols_out else np.zeros((rows.size, 0))
        ei = torch.from_numpy(np.stack([rows, cols]).astype(np.int64))
        return Supports(ei, torch.from_numpy(np.ascontiguousarray(attr)), cfg.names, bound, order)

    return compute


def batch_supports(
    batch: Batch,
    config: SupportConfig | None = None,
    *,
    cache: PreprocessCache | None = None,
    dtype: torch.dtype | None = None,
) -> Supports:
    """GNNML3 supports of every graph of a batch, with global node ids."""
    cfg = SupportConfig() if config is None else config
    dt = dtype or torch.get_default_dtype()
    device = batch.edge_index.device

    def assemble() -> Supports:
        parts = _per_graph(cache, "gnnml3_supports", batch, cfg.key(), _supports(cfg))
        sup = Supports.concat(parts, batch.ptr.detach().cpu()[:-1].tolist(), cfg.names)
        return dataclasses.replace(
            sup,
            edge_index=sup.edge_index.to(device),
            edge_attr=sup.edge_attr.to(device=device, dtype=dt),
        )

    if cache is None:
        return assemble()
    return cache.get_or_compute_batch(batch, ("gnnml3_supports", cfg.key(), dt, device), assemble)


__all__ = [
    "BASES",
    "Basis",
    "CacheKey",
    "LocalGraph",
    "MISSING",
    "PreprocessCache",
    "Spectrum",
    "SupportConfig",
    "Supports",
    "as_local_graph",
    "basis_matrix",
    "batch_lambda_max",
    "batch_supports",
    "gnnml3_supports",
    "graph_fingerprint",
    "graph_fingerprints",
    "lambda_max",
    "receptive_field_mask",
    "receptive_field_pattern",
    "sparse_basis",
    "spectrum",
    "split_batch",
]
