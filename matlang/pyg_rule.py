"""The one rule for what a PyG-like object is (duck-typed: PyG itself is never imported),
shared by the exact evaluator (:mod:`matlang.graphs`), compiled modules and reference models
(:mod:`runtime.pyg` reads a PyG object with one call of :func:`pyg_view`):

* a PyG-like object (anything with ``edge_index``) is a batch of graphs when it carries ``ptr``
  or a ``batch`` vector, else one graph. Its own ``ptr`` decides the graphs (empty graphs
  anywhere, the last ones included); without ``ptr``, its ``num_graphs`` and the ``batch``
  vector do. ``batch.max() + 1`` is the last resort, and the only reading under which trailing
  empty graphs cannot be seen. A ``ptr`` that contradicts the ``batch`` vector, ``num_graphs``
  or ``num_nodes``, and an edge joining two graphs, are refused.
* ``edge_weight`` (E,) holds the entries of A on the edges, for every entry point;
  ``edge_attr`` (edge features) is not part of A and is ignored with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from matlang.errors import GraphError
from matlang.inputs import check_edge_index, check_num_nodes


@dataclass(frozen=True)
class PygView:
    """What the rule reads of a PyG-like object, in one call (:func:`pyg_view`): its node
    count, its node offsets (G+1,) (``None``: one graph, no ``ptr`` and no ``batch`` vector),
    its ``edge_index`` as given, its edge weights checked (one finite number per edge, numpy;
    ``None``: unweighted) and its features ``x`` as given (one row per node, checked)."""

    num_nodes: int
    offsets: np.ndarray | None
    edge_index: Any
    edge_weight: np.ndarray | None
    x: Any


def pyg_view(data: Any, num_edges: int) -> PygView:
    """The layout (:func:`pyg_layout`), then ``x`` (one row per node: ``(N,)`` reads as
    ``(N, 1)``), then the weights (:func:`edge_weights`) of a PyG-like object whose
    ``edge_index`` holds ``num_edges`` edges, in that order of checks."""
    n, offsets = pyg_layout(data)
    x = attr(data, "x")
    if x is not None:
        shape = tuple(int(d) for d in np.shape(x))
        shape = (*shape, 1) if len(shape) == 1 else shape
        if not shape or shape[0] != n:
            raise GraphError(f"x of shape {shape} has not one row per node ({n})", "batch")
    w = edge_weights(data, num_edges)
    return PygView(n, offsets, data.edge_index, w, x)


def _numpy(v: Any) -> np.ndarray:
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    return np.asarray(v)


def attr(obj: Any, name: str) -> Any:
    """``obj.name`` or ``None`` (PyG's ``Data`` raises AttributeError for keys it lacks)."""
    try:
        return getattr(obj, name, None)
    except (AttributeError, KeyError, RuntimeError):
        return None


def pyg_layout(data: Any) -> tuple[int, np.ndarray | None]:
    """The number of nodes and the node offsets ``ptr`` (G+1,) of a PyG-like object, ``None``
    for a single graph (no ``ptr``, no ``batch`` vector). See the rule above. The edges are
    read only where nothing else gives the node count (a batch on a GPU is not copied)."""
    ptr_given, vec_given = attr(data, "ptr"), attr(data, "batch")
    ng = attr(data, "num_graphs")
    ng = int(ng) if isinstance(ng, (int, np.integer)) or hasattr(ng, "item") else None
    n_given = attr(data, "num_nodes")
    ptr = None if ptr_given is None else _numpy(ptr_given)
    vec = None if vec_given is None else _numpy(vec_given)
    if n_given is not None:
        n = check_num_nodes(n_given)
    elif ptr is not None and ptr.size:
        n = check_num_nodes(ptr[-1])
    elif vec is not None:
        n = int(vec.size)
    else:
        n = check_edge_index(_numpy(data.edge_index), None)
    if vec is not None:
        if vec.ndim != 1 or (vec.size and not np.issubdtype(vec.dtype, np.integer)):
            raise GraphError(
                f"batch vector must be 1-D integers, got {vec.dtype} {vec.shape}", "batch"
            )
        if vec.size != n:
            raise GraphError(
                f"batch vector has {vec.size} entries but there are {n} nodes", "batch"
            )
        if vec.size and bool((vec[1:] < vec[:-1]).any()):
            raise GraphError("batch vector must be sorted (nodes grouped by graph)", "batch")
        if vec.size and int(vec[0]) < 0:
            raise GraphError(f"batch vector holds graph {int(vec[0])}", "batch")
    if ptr is None and vec is None:
        return n, None
    if ptr is None:
        assert vec is not None
        g = ng if ng is not None else (int(vec[-1]) + 1 if vec.size else 0)
        if vec.size and int(vec[-1]) >= g:
            raise GraphError(
                f"batch vector names graph {int(vec[-1])} but num_graphs is {g}", "batch"
            )
        ptr = np.zeros(g + 1, dtype=np.int64)
        ptr[1:] = np.cumsum(np.bincount(vec.astype(np.int64), minlength=g))
        return n, ptr
    if ptr.ndim != 1 or ptr.size < 1 or (ptr.size and not np.issubdtype(ptr.dtype, np.integer)):
        raise GraphError(f"ptr must be a 1-D integer vector, got {ptr.dtype} {ptr.shape}", "batch")
    ptr = ptr.astype(np.int64)
    if int(ptr[0]) != 0 or bool((ptr[1:] < ptr[:-1]).any()) or int(ptr[-1]) != n:
        raise GraphError(
            f"ptr {_short(ptr)} is not a list of node offsets from 0 to the {n} nodes", "batch"
        )
    if ng is not None and ng != ptr.size - 1:
        raise GraphError(f"ptr has {ptr.size - 1} graphs but num_graphs is {ng}", "batch")
    if vec is not None:
        want = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
        if not np.array_equal(vec, want):
            i = int(np.flatnonzero(vec != want)[0])
            raise GraphError(
                f"ptr {_short(ptr)} contradicts the batch vector: node {i} is in graph "
                f"{int(vec[i])} by the batch vector but in graph {int(want[i])} by ptr",
                "batch",
            )
    return n, ptr


def _short(v: np.ndarray) -> str:
    items = v.tolist()
    return str(items) if len(items) <= 8 else f"[{', '.join(map(str, items[:6]))}, ...]"


def edge_weights(data: Any, num_edges: int, where: str | None = "batch") -> np.ndarray | None:
    """A PyG-like object's ``edge_weight`` as a numpy vector of A's entries (checked: one finite
    number per edge), or ``None``; warns that ``edge_attr`` is ignored."""
    if attr(data, "edge_attr") is not None:
        import warnings

        warnings.warn(
            "edge_attr is ignored: A is read from edge_index, with edge_weight as its entries",
            stacklevel=3,
        )
    w = attr(data, "edge_weight")
    return None if w is None else check_edge_weight(_numpy(w), num_edges, where)


def check_edge_weight(w: np.ndarray, num_edges: int, where: str | None) -> np.ndarray:
    """``w`` as (E,) numbers; a wrong length, non-numbers, NaN or ±inf are a GraphError."""
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.ndim != 1 or w.shape[0] != num_edges:
        raise GraphError(
            f"edge_weight must have one entry per edge ({num_edges}), got shape {w.shape}", where
        )
    if w.dtype == bool:
        w = w.astype(np.int64)
    if not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
        raise GraphError(f"edge_weight must hold real numbers, got {w.dtype}", where)
    if np.issubdtype(w.dtype, np.floating):
        bad = ~np.isfinite(w)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise GraphError(
                f"edge_weight of edge {k} is {w[k]} (NaN and ±inf are not weights)", where
            )
        if np.array_equal(w, np.round(w)) and (not w.size or np.abs(w).max() < 2**53):
            w = w.astype(np.int64)  # whole-number weights stay exact
    return w


__all__ = ["PygView", "attr", "check_edge_weight", "edge_weights", "pyg_layout", "pyg_view"]
