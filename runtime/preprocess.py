r"""Preprocessing: per-graph spectra, ChebNet's λmax and GNNML3's initial supports, cached.

Everything here is computed once per graph (numpy, float64) and kept in an explicit
:class:`PreprocessCache` that the caller owns. A cache entry is filed under a :class:`CacheKey`
made of the transform's name, a fingerprint of the graph (sha256 of ``n``, the bytes of its
local ``edge_index`` and of its edge weights) and *every* parameter of the transform, so a changed
parameter can never read a stale entry.

GNNML3 supports (paper Algorithm 1, Appendix "Datasets and Application Details"): on the
receptive field ``M = (A + I)^r > 0`` (``r = 1``: ``M = A + I``), with ``B = U diag(λ) Uᵀ`` the
normalised Laplacian (or the adjacency),

.. math::
    C'^{(s)} = M \odot U\,\mathrm{diag}(\Phi_s(\lambda))\,U^\top, \qquad
    \Phi_s(\lambda) = e^{-b(\lambda - f_s)^2},

``f_s`` spread uniformly over ``[λmin, λmax]`` of the graph, plus the all-pass support
``Φ_0(λ) = 1``, i.e. ``M ⊙ U Uᵀ = M ⊙ I = I``. The supports are edge features on the edges of
``M`` (self-loops included).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import torch
from torch import Tensor

from matlang.errors import GraphError, MatlangError
from runtime.batch import Batch
from runtime.graphs import Graph, as_graph

#: The matrix whose spectrum is taken: ``I - D^{-1/2} A D^{-1/2}`` (isolated nodes: 1 on the
#: diagonal), ``D - A``, or ``A``.
Basis = Literal["normalized_laplacian", "laplacian", "adjacency"]
BASES: tuple[str, ...] = ("normalized_laplacian", "laplacian", "adjacency")

T = TypeVar("T")


# --------------------------------------------------------------------------- graphs


@dataclass(frozen=True, eq=False)
class LocalGraph:
    """One graph of a batch with local node ids ``0..n-1`` (CPU tensors)."""

    edge_index: Tensor  # (2, E) int64
    num_nodes: int
    edge_weight: Tensor | None = None  # (E,)

    def adjacency(self) -> np.ndarray:
        """The dense n×n adjacency (float64, entries stored twice add up)."""
        a = np.zeros((self.num_nodes, self.num_nodes), dtype=np.float64)
        ei = self.edge_index.detach().cpu().numpy()
        if self.edge_weight is None:
            w = np.ones(ei.shape[1], dtype=np.float64)
        else:
            w = self.edge_weight.detach().cpu().to(torch.float64).numpy()
        np.add.at(a, (ei[0], ei[1]), w)
        return a

    def fingerprint(self) -> str:
        """sha256 of ``n``, the edge_index bytes and the edge weights' bytes."""
        h = hashlib.sha256()
        h.update(f"n={self.num_nodes};E={self.edge_index.shape[1]};".encode())
        h.update(self.edge_index.detach().cpu().to(torch.int64).contiguous().numpy().tobytes())
        if self.edge_weight is None:
            h.update(b";unweighted")
        else:
            w = self.edge_weight.detach().cpu().to(torch.float64).contiguous().numpy()
            h.update(b";weights=" + w.tobytes())
        return h.hexdigest()


def as_local_graph(obj: Any) -> LocalGraph:
    """A :class:`LocalGraph` from a LocalGraph, a :class:`~runtime.graphs.Graph` or anything
    :func:`~runtime.graphs.as_graph` accepts."""
    if isinstance(obj, LocalGraph):
        return obj
    g = obj if isinstance(obj, Graph) else as_graph(obj)
    ei = torch.from_numpy(np.array(g.edge_index))
    w = None if g.is_binary else torch.from_numpy(np.array(g.edge_weight, dtype=np.float64))
    return LocalGraph(ei, g.num_nodes, w)


def split_batch(batch: Batch) -> list[LocalGraph]:
    """The graphs of a batch, each with local ids (edges keep their order within a graph)."""
    ei = batch.edge_index.detach().cpu()
    ptr = batch.ptr.detach().cpu()
    g = batch.num_graphs
    gid = batch.batch.detach().cpu()[ei[0]] if ei.numel() else ei[0]
    order = torch.argsort(gid, stable=True)
    counts = torch.bincount(gid, minlength=g).tolist() if ei.numel() else [0] * g
    parts = torch.split(order, counts)
    ew = None if batch.edge_weight is None else batch.edge_weight.detach().cpu()
    out = []
    for k in range(g):
        sel = parts[k]
        off = int(ptr[k])
        local = ei[:, sel] - off
        out.append(
            LocalGraph(local, int(ptr[k + 1]) - off, None if ew is None else ew[sel].reshape(-1))
        )
    return out


# --------------------------------------------------------------------------- cache


@dataclass(frozen=True)
class CacheKey:
    """What a cache entry is: a transform, a graph fingerprint, and every parameter."""

    transform: str
    graph: str
    params: tuple[tuple[str, Any], ...]


class PreprocessCache:
    """An explicit, bounded store of preprocessing results, owned by whoever passes it.

    Args:
        max_entries: least recently used entries are dropped beyond this (``None``: no bound).
    """

    def __init__(self, max_entries: int | None = 100_000) -> None:
        if max_entries is not None and max_entries < 1:
            raise MatlangError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._store: OrderedDict[CacheKey, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: CacheKey, compute: Callable[[], T]) -> T:
        """The entry under ``key``, computing and storing it first when absent."""
        if key in self._store:
            self.hits += 1
            self._store.move_to_end(key)
            return self._store[key]  # type: ignore[no-any-return]
        self.misses += 1
        value = compute()
        self._store[key] = value
        if self.max_entries is not None and len(self._store) > self.max_entries:
            self._store.popitem(last=False)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __len__(self) -> int:
        return len(self._store)

    def keys(self) -> list[CacheKey]:
        return list(self._store)

    def clear(self) -> None:
        self._store.clear()
        self.hits = self.misses = 0

    def __repr__(self) -> str:
        return f"PreprocessCache(entries={len(self)}, hits={self.hits}, misses={self.misses})"


def _cached(
    cache: PreprocessCache | None,
    transform: str,
    graph: LocalGraph,
    params: tuple[tuple[str, Any], ...],
    compute: Callable[[], T],
) -> T:
    if cache is None:
        return compute()
    return cache.get_or_compute(CacheKey(transform, graph.fingerprint(), params), compute)


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
    lg = as_local_graph(graph)

    def compute() -> Spectrum:
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

    return _cached(cache, "spectrum", lg, (("basis", basis),), compute)


def lambda_max(
    graph: Any, basis: Basis = "normalized_laplacian", *, cache: PreprocessCache | None = None
) -> float:
    """The largest eigenvalue of ``basis`` for this graph (0.0 for a graph without nodes)."""
    _check_basis(basis)
    lg = as_local_graph(graph)

    def compute() -> float:
        b = basis_matrix(lg, basis)
        if b.shape[0] == 0:
            return 0.0
        if not np.allclose(b, b.T):
            raise GraphError("a spectrum needs a symmetric adjacency (undirected graph)")
        return float(np.linalg.eigvalsh(b)[-1])

    return _cached(cache, "lambda_max", lg, (("basis", basis),), compute)


def batch_lambda_max(
    batch: Batch,
    basis: Basis = "normalized_laplacian",
    *,
    cache: PreprocessCache | None = None,
    dtype: torch.dtype = torch.float64,
) -> Tensor:
    """λmax of every graph of the batch, shape ``(G,)``."""
    vals = [lambda_max(g, basis, cache=cache) for g in split_batch(batch)]
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
    """

    basis: Basis = "normalized_laplacian"
    num_bands: int = 5
    bandwidth: float = 5.0
    receptive_field: int = 1
    all_pass: bool = True
    add_mask: bool = False
    add_adjacency: bool = False

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
    """Supports as edge features on the edges of the receptive field ``M``."""

    edge_index: Tensor  # (2, E_M), row-major sorted per graph, self-loops included
    edge_attr: Tensor  # (E_M, S)
    names: tuple[str, ...]

    @property
    def num_supports(self) -> int:
        return len(self.names)


def receptive_field_mask(graph: Any, receptive_field: int = 1) -> np.ndarray:
    """``(A + I)^r > 0`` as a boolean n×n matrix."""
    a = as_local_graph(graph).adjacency() != 0
    step = a | np.eye(a.shape[0], dtype=bool)
    m = step.copy()
    for _ in range(receptive_field - 1):
        m = (m.astype(np.int64) @ step.astype(np.int64)) > 0
    return m


def gnnml3_supports(
    graph: Any,
    config: SupportConfig | None = None,
    *,
    cache: PreprocessCache | None = None,
) -> Supports:
    """GNNML3's initial supports ``C'`` of one graph (local ids, float64; Algorithm 1)."""
    cfg = SupportConfig() if config is None else config
    lg = as_local_graph(graph)

    def compute() -> Supports:
        m = receptive_field_mask(lg, cfg.receptive_field)
        rows, cols = np.nonzero(m)
        cols_out: list[np.ndarray] = []
        if cfg.num_bands:
            # not cached: n×n eigenvectors per graph would dwarf the supports we keep
            spec = spectrum(lg, cfg.basis)
            lam, u = spec.eigenvalues, spec.eigenvectors
            lo, hi = (float(lam.min()), float(lam.max())) if lam.size else (0.0, 0.0)
            centres = np.linspace(lo, hi, cfg.num_bands)
            phi = np.exp(-cfg.bandwidth * (lam[:, None] - centres[None, :]) ** 2)  # (n, S)
            # (U diag(φ) Uᵀ)[i, j] = Σ_k U[i,k] U[j,k] φ_k, evaluated only on M's entries
            bands = (u[rows] * u[cols]) @ phi if rows.size else np.zeros((0, cfg.num_bands))
            cols_out.extend(bands.T)
        if cfg.all_pass:
            cols_out.append((rows == cols).astype(np.float64))
        if cfg.add_mask:
            cols_out.append(np.ones(rows.size))
        if cfg.add_adjacency:
            cols_out.append(lg.adjacency()[rows, cols])
        attr = np.stack(cols_out, axis=1) if cols_out else np.zeros((rows.size, 0))
        ei = torch.from_numpy(np.stack([rows, cols]).astype(np.int64))
        return Supports(ei, torch.from_numpy(np.ascontiguousarray(attr)), cfg.names)

    return _cached(cache, "gnnml3_supports", lg, cfg.key(), compute)


def batch_supports(
    batch: Batch,
    config: SupportConfig | None = None,
    *,
    cache: PreprocessCache | None = None,
    dtype: torch.dtype | None = None,
) -> Supports:
    """GNNML3 supports of every graph of a batch, with global node ids."""
    cfg = SupportConfig() if config is None else config
    parts = [gnnml3_supports(g, cfg, cache=cache) for g in split_batch(batch)]
    offsets = batch.ptr.detach().cpu()[:-1].tolist()
    device = batch.edge_index.device
    if parts:
        ei = torch.cat([p.edge_index + off for p, off in zip(parts, offsets, strict=True)], 1)
        attr = torch.cat([p.edge_attr for p in parts], 0)
    else:
        ei = torch.zeros(2, 0, dtype=torch.int64)
        attr = torch.zeros(0, cfg.num_supports, dtype=torch.float64)
    attr = attr.to(device=device, dtype=dtype or torch.get_default_dtype())
    return Supports(ei.to(device), attr, cfg.names)


__all__ = [
    "BASES",
    "Basis",
    "CacheKey",
    "LocalGraph",
    "PreprocessCache",
    "Spectrum",
    "SupportConfig",
    "Supports",
    "as_local_graph",
    "basis_matrix",
    "batch_lambda_max",
    "batch_supports",
    "gnnml3_supports",
    "lambda_max",
    "receptive_field_mask",
    "spectrum",
    "split_batch",
]
