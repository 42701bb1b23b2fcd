"""The call forms of compiled modules, sentence layers and transforms (``SentenceConv``,
``SentenceReadout``, ``SentenceFeatures``): PyG's ``(x, edge_index[, batch][, edge_weight])``
(:func:`pyg_call`), a sparse adjacency (:func:`adjacency_edges`), or one data object — a PyG
``Data``/``Batch`` or the project's :class:`~runtime.batch.Batch`, duck-typed
(:func:`layer_inputs`, :func:`unpack`). Checked on torch tensors where the batch lives: the
checks of :mod:`matlang.inputs` (node counts, ``edge_index``, ``x``) and the batch rule of
:func:`matlang.pyg_rule.pyg_layout` (``ptr`` against the batch vector and ``num_graphs``), with
the same messages, without copying a batch to the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from matlang.errors import GraphError
from matlang.graphs import _attr
from matlang.inputs import check_edge_index, check_num_nodes, check_x, is_integer_array
from matlang.runtime.batch import Batch
from matlang.runtime.pyg import GraphFields


def as_index_tensor(v: Any, name: str, device: torch.device | None = None) -> Tensor:
    """An index array (``edge_index``, ``batch``, ``ptr``) as a tensor: numpy arrays and lists
    are taken as they are (a tensor is returned unchanged); floats are refused, not cast."""
    if isinstance(v, Tensor):
        return v
    arr = np.asarray(v)
    if arr.size and not is_integer_array(arr):
        raise GraphError(f"{name} must hold integers, got dtype {arr.dtype}", "batch")
    return torch.as_tensor(arr.astype(np.int64, copy=False), device=device)


def layer_inputs(x: Any, edge_index: Any, batch: Any) -> tuple[Any, Tensor | None, Any]:
    """What a layer's ``forward`` was given, checked, in the form ``unpack`` reads: a data
    object is replaced by a plain view of its checked fields (the caller's object is never
    changed); ``(x, edge_index, batch)`` come back as tensors."""
    if isinstance(x, Tensor):
        if edge_index is not None and not isinstance(edge_index, Tensor):
            # tensors are checked by the stage, once per batch (and traced without a break
            # under torch.compile); a numpy array is checked here, as it becomes one
            edge_index = as_index_tensor(edge_index, "edge_index", x.device)
            check_edge_index(edge_index, x.shape[0] if x.dim() else None)
        if batch is not None:
            batch = as_index_tensor(batch, "batch", x.device)
        return x, edge_index, batch
    data = x
    no_edges = edge_index is None and _attr(data, "edge_index") is None
    if no_edges and _attr(data, "adj_t") is not None:
        data = _adj_t_view(data)  # after PyG's ToSparseTensor
    if (
        isinstance(data, Batch)
        or edge_index is not None
        or _attr(data, "edge_index") is None
        or torch.compiler.is_compiling()  # checked in eager mode; no data-dependent branch here
    ):
        return data, edge_index, batch  # a project Batch is built checked; unpack refuses the rest
    ei = as_index_tensor(data.edge_index, "edge_index")
    feats, n_given = _attr(data, "x"), _attr(data, "num_nodes")
    n = None if n_given is None else check_num_nodes(n_given)
    if feats is not None:
        feats = torch.as_tensor(feats)
        if n is None:
            n = int(feats.shape[0]) if feats.dim() else 0
        check_x(feats, n)
    n = check_edge_index(ei, n)
    vec = batch if batch is not None else _attr(data, "batch")
    vec = None if vec is None else as_index_tensor(vec, "batch", ei.device)
    ptr, ng = _attr(data, "ptr"), _attr(data, "num_graphs")
    if ptr is not None:
        ptr = as_index_tensor(ptr, "ptr", ei.device)
        check_ptr(ptr, vec, n, None if ng is None else int(ng))
    view = GraphFields(
        edge_index=ei,
        batch=vec,
        x=feats,
        num_nodes=n,
        edge_weight=_attr(data, "edge_weight"),
        ptr=ptr,
        num_graphs=ng,
    )
    return view, None, None


def adjacency_edges(
    adj: Any, num_nodes: int | None, name: str = "edge_index"
) -> tuple[Any, Tensor | None]:
    """PyG's other ways to give the edges, as ``(edge_index, edge_weight)``: a torch sparse
    adjacency (COO/CSR/CSC) or a ``torch_sparse.SparseTensor`` (duck-typed: ``coo()`` and
    ``sparse_sizes()``), read as PyG's convs read them, ``adj_t[i, j]`` the edge ``j → i``; its
    values are the edge weights (``None`` for a pattern of ones that needs no gradient). Anything
    else comes back unchanged, with no weight."""
    if isinstance(adj, Tensor) and adj.layout != torch.strided:
        if adj.dim() != 2 or adj.shape[0] != adj.shape[1]:
            raise GraphError(
                f"{name}: a sparse adjacency must be a square (N, N) matrix, got "
                f"{tuple(adj.shape)}",
                "batch",
            )
        coo = adj.to_sparse_coo().coalesce()
        index, value = coo.indices(), coo.values()
        size = int(adj.shape[0])
    elif callable(getattr(adj, "coo", None)) and callable(getattr(adj, "sparse_sizes", None)):
        sizes = tuple(int(v) for v in adj.sparse_sizes())
        if len(sizes) != 2 or sizes[0] != sizes[1]:
            raise GraphError(
                f"{name}: a SparseTensor adjacency must be square (N, N), got {sizes}", "batch"
            )
        row, col, value = adj.coo()
        index, size = torch.stack([row, col]), sizes[0]
    else:
        return adj, None
    if num_nodes is not None and size != num_nodes:
        raise GraphError(
            f"{name}: the sparse adjacency is {size} × {size} but x has {num_nodes} rows", "batch"
        )
    if value is not None and value.dim() != 1:
        raise GraphError(
            f"{name}: the sparse adjacency holds values of shape {tuple(value.shape[1:])} per "
            "edge; sentences read one weight per edge",
            "batch",
        )
    edge_index = torch.stack([index[1], index[0]]).to(torch.int64)  # adj_t: column → row
    if value is not None and not value.requires_grad and bool((value == 1).all()):
        value = None  # the 0/1 pattern: an unweighted graph
    return edge_index, value


def pyg_call(x: Tensor, edge_index: Any, batch: Any, edge_weight: Any) -> Batch:
    """PyG's call form ``(x, edge_index[, batch][, edge_weight])`` (``edge_index`` may be a
    sparse adjacency, :func:`adjacency_edges`) as a :class:`~runtime.batch.Batch`, not yet
    validated (:func:`~runtime.batch.as_batch` does): ``x`` gives the node count and the
    features."""
    if x.dim() not in (1, 2):
        raise GraphError(f"x must have shape (N,) or (N, d), got {tuple(x.shape)}", "batch")
    n = int(x.shape[0])
    edge_index, weight = adjacency_edges(edge_index, n)
    if weight is not None and edge_weight is not None:
        raise GraphError(
            "edge_weight is given twice: by the sparse adjacency's values and by edge_weight",
            "batch",
        )
    if isinstance(batch, Tensor) and batch.is_floating_point():
        raise GraphError(
            f"batch must be an integer vector, got {batch.dtype}: pass edge weights as "
            "edge_weight=...",
            "batch",
        )
    return Batch.from_edge_index(
        edge_index,
        batch,
        num_nodes=n,
        edge_weight=weight if edge_weight is None else edge_weight,
        x=x,
    )


def _adj_t_view(data: Any) -> GraphFields:
    """A data object holding ``adj_t`` (PyG's ``ToSparseTensor``) as one with ``edge_index``
    and ``edge_weight`` (:func:`adjacency_edges`)."""
    x, n = _attr(data, "x"), _attr(data, "num_nodes")
    n = int(n) if n is not None else (None if x is None else int(x.shape[0]))
    ei, w = adjacency_edges(_attr(data, "adj_t"), n, "adj_t")
    fields = ("x", "batch", "ptr", "num_graphs", "num_nodes")
    return GraphFields(edge_index=ei, edge_weight=w, **{f: _attr(data, f) for f in fields})


def check_ptr(ptr: Tensor, batch: Tensor | None, n: int, num_graphs: int | None) -> None:
    """``ptr`` as :func:`matlang.graphs.pyg_layout` reads it: node offsets from 0 to ``n``,
    ``num_graphs + 1`` of them, agreeing with the batch vector (on the batch's device)."""
    if ptr.dim() != 1 or ptr.numel() < 1:
        raise GraphError(
            f"ptr must be a 1-D integer vector, got {ptr.dtype} {tuple(ptr.shape)}", "batch"
        )
    ptr = ptr.to(torch.int64)
    sizes = ptr[1:] - ptr[:-1]
    if int(ptr[0]) != 0 or int(ptr[-1]) != n or bool((sizes < 0).any()):
        raise GraphError(
            f"ptr {_short(ptr)} is not a list of node offsets from 0 to the {n} nodes", "batch"
        )
    if num_graphs is not None and num_graphs != ptr.numel() - 1:
        raise GraphError(
            f"ptr has {ptr.numel() - 1} graphs but num_graphs is {num_graphs}", "batch"
        )
    if batch is None:
        return
    if batch.dim() != 1 or batch.numel() != n:
        raise GraphError(
            f"batch vector has {batch.numel()} entries but there are {n} nodes", "batch"
        )
    want = torch.repeat_interleave(
        torch.arange(ptr.numel() - 1, device=ptr.device), sizes, output_size=n
    )
    wrong = want != batch.to(torch.int64)
    if bool(wrong.any()):
        i = int(torch.nonzero(wrong)[0])
        raise GraphError(
            f"ptr {_short(ptr)} contradicts the batch vector: node {i} is in graph "
            f"{int(batch[i])} by the batch vector but in graph {int(want[i])} by ptr",
            "batch",
        )


def channels_of(given: dict[str, Tensor]) -> int | None:
    """The channel count the ``(N, d)`` inputs share (``(N,)`` and ``(N, 1)`` ones broadcast
    against any), ``None`` without channels; two counts that differ are refused by name, not
    left to a shape error deep in an entrywise product."""
    counts = {name: int(t.shape[1]) for name, t in given.items() if t.dim() == 2}
    wide = {name: d for name, d in counts.items() if d != 1}
    if len(set(wide.values())) > 1:
        a, *_, b = sorted(wide, key=wide.__getitem__)  # the fewest channels, the most
        raise GraphError(
            f"inputs '{a}' ({wide[a]} channels) and '{b}' ({wide[b]} channels) differ: every "
            "(N, d) input of one sentence has the same d (an (N,) or (N, 1) input is broadcast)",
            "inputs",
        )
    return max(counts.values(), default=None)


def _short(v: Tensor) -> str:
    items = v.tolist()
    return str(items) if len(items) <= 8 else f"[{', '.join(map(str, items[:6]))}, ...]"


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


__all__ = [
    "NO_X",
    "adjacency_edges",
    "as_index_tensor",
    "channels_of",
    "check_ptr",
    "layer_inputs",
    "no_x",
    "pyg_call",
    "unpack",
    "without_weight",
]
