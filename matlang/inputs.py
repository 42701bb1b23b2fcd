"""The checks every entry point applies to what a user hands it as a graph: the number of
nodes, an ``edge_index``, node features ``x``. Compiled modules, layers, transforms and both
evaluators call these, so the same bad input gives the same :class:`~matlang.errors.GraphError`
everywhere, never a foreign exception from numpy or torch (a negative dimension, a cast of float
node ids, an allocation of hundreds of gigabytes).

The checks read shapes, dtypes and at most a minimum and a maximum: numpy arrays and torch
tensors alike (duck-typed, torch is not imported here).
"""

from __future__ import annotations

import numbers
from typing import Any

from matlang import limits
from matlang.errors import GraphError


def check_num_nodes(n: Any, where: str | None = "batch", *, dense: bool = False) -> int:
    """``n`` as a node count: an integer (a 0-d integer tensor or array too), at least 0, at
    most :data:`~matlang.limits.MAX_NODES` (:data:`~matlang.limits.MAX_DENSE_NODES` for a graph
    held as an ``n × n`` array, ``dense``)."""
    value = n.item() if hasattr(n, "item") and getattr(n, "ndim", 0) == 0 else n
    whole = isinstance(value, numbers.Real) and float(value).is_integer()
    if isinstance(value, bool) or not whole:  # 3 and 3.0 are counts; True, 2.5 and "3" not
        raise GraphError(f"num_nodes must be an integer, got {n!r}", where)
    value = int(float(value)) if not isinstance(value, numbers.Integral) else int(value)
    if value < 0:
        raise GraphError(f"num_nodes must be at least 0, got {value}", where)
    _check_size(value, where, dense=dense)
    return value


def _check_size(n: int, where: str | None, *, dense: bool, what: str = "nodes") -> None:
    bound = "MAX_DENSE_NODES" if dense else "MAX_NODES"
    if n > getattr(limits, bound):
        hint = (
            ": give it as a sparse graph (an edge_index, scipy sparse) to compiled modules or "
            "evaluate(..., sparse=True)"
            if dense
            else ""
        )
        raise GraphError(f"{n} {what} is beyond {limits.named(bound)}{hint}", where)


def is_integer_array(a: Any) -> bool:
    """Whether ``a`` (numpy array or torch tensor) holds integers (not bool, float, complex)."""
    dtype = getattr(a, "dtype", None)
    if hasattr(a, "is_floating_point"):  # a torch tensor
        return not (a.is_floating_point() or a.is_complex() or str(dtype) == "torch.bool")
    import numpy as np

    return dtype is not None and np.issubdtype(dtype, np.integer)


def check_edge_index(
    ei: Any,
    num_nodes: int | None,
    where: str | None = "batch",
    *,
    dense: bool = False,
    noun: str = "batch",
) -> int:
    """Refuse an ``edge_index`` that is not a ``(2, E)`` integer array with node ids in
    ``0 … num_nodes - 1`` (any id below :data:`~matlang.limits.MAX_NODES` when ``num_nodes``
    is ``None``). Returns the number of nodes: ``num_nodes``, or the largest id + 1."""
    shape = tuple(getattr(ei, "shape", ()))
    if len(shape) != 2 or shape[0] != 2:
        hint = " (transpose an (E, 2) list of pairs)" if len(shape) == 2 and shape[1] == 2 else ""
        raise GraphError(f"edge_index must have shape (2, E), got {shape}{hint}", where)
    size = shape[1]
    if size and not is_integer_array(ei):
        # a cast would silently truncate node ids such as 0.5
        shown = str(ei.dtype) if str(ei.dtype).startswith("torch.") else f"dtype {ei.dtype}"
        raise GraphError(f"edge_index must hold integers, got {shown}", where)
    if num_nodes is not None:
        num_nodes = check_num_nodes(num_nodes, where, dense=dense)
    if not size:
        return 0 if num_nodes is None else num_nodes
    lo, hi = int(ei.min()), int(ei.max())
    if num_nodes is None:
        if lo < 0:
            raise GraphError(f"edge_index refers to node {lo}, node ids start at 0", where)
        _check_size(hi + 1, where, dense=dense, what=f"nodes (edge_index refers to node {hi})")
        return hi + 1
    if lo < 0 or hi >= num_nodes:
        bad = hi if hi >= num_nodes else lo
        raise GraphError(
            f"edge_index refers to node {bad} but the {noun} has {num_nodes} nodes", where
        )
    return num_nodes


def check_x(x: Any, num_nodes: int, where: str | None = "batch") -> None:
    """Node features with one row per node."""
    shape = tuple(getattr(x, "shape", ()))
    if not shape or shape[0] != num_nodes:
        raise GraphError(f"x of shape {shape} has not one row per node ({num_nodes})", where)


__all__ = ["check_edge_index", "check_num_nodes", "check_x", "is_integer_array"]
