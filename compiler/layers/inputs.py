"""What a layer's ``forward`` accepts: PyG's ``(x, edge_index, batch)``, or one data object
(a PyG ``Data``/``Batch`` or the project's :class:`~runtime.batch.Batch`, duck-typed)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from matlang.errors import GraphError
from matlang.runtime.batch import GraphFields

#: Said where a data object without ``x`` meets a layer that wants more than one channel.
NO_X = " (the data object has no x: one constant feature per node stands in for it)"


def no_x(obj: Any) -> str:
    """:data:`NO_X` for a data object without node features, else nothing."""
    return NO_X if not isinstance(obj, Tensor) and getattr(obj, "x", None) is None else ""


def unpack(
    x: Any, edge_index: Tensor | None, batch: Tensor | None, dtype: torch.dtype
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(x, edge_index, batch)`` from either calling convention. A data object without node
    features gets one constant feature (monochromatic nodes, as the paper's counting data)."""
    if not isinstance(x, Tensor):
        data = x
        if not hasattr(data, "edge_index"):
            raise GraphError(
                "a layer takes (x, edge_index[, batch]) or a data object with edge_index, got "
                f"{type(data).__name__}"
            )
        if edge_index is not None:
            raise GraphError("pass either a data object or (x, edge_index), not both")
        if getattr(data, "edge_weight", None) is not None:
            # the layers take the weights off first (without_weight): never ignore them
            raise GraphError(
                "the data object has edge_weight: pass it as edge_weight=... (A holds the "
                "weights in every sentence layer)"
            )
        edge_index = data.edge_index
        batch = getattr(data, "batch", None) if batch is None else batch
        x = getattr(data, "x", None)
        if x is None:
            n = getattr(data, "num_nodes", None)
            if n is None:
                raise GraphError("the data object has neither x nor num_nodes")
            x = torch.ones(int(n), 1, dtype=dtype, device=edge_index.device)
    if edge_index is None:
        raise GraphError("edge_index is missing: call layer(x, edge_index[, batch])")
    if x.dim() == 1:
        x = x.unsqueeze(-1)
    if x.dim() != 2:
        raise GraphError(f"x must have shape (N, d), got {tuple(x.shape)}")
    if not x.is_floating_point():
        x = x.to(dtype)
    return x, edge_index, batch


def without_weight(data: Any) -> GraphFields:
    """A data object's view without its ``edge_weight`` (a layer that reads the weights takes
    them off first; :func:`unpack` refuses a data object that still has them)."""
    fields = ("x", "edge_index", "batch", "num_nodes", "ptr", "num_graphs")
    return GraphFields(**{f: getattr(data, f, None) for f in fields})


__all__ = ["unpack", "without_weight"]
