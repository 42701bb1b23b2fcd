"""PyG on both sides: a PyG ``Data``/``Batch`` read as the tensors of a batch (duck-typed: PyG
need not be installed; :func:`read_pyg`, what :func:`~runtime.batch.as_batch` and
:meth:`~runtime.batch.Batch.from_edge_index` build on), and the project's datasets as PyG data
(PyG is imported here, on use, and only here).

>>> from matlang.runtime.datasets import load_tu
>>> from matlang.runtime.pyg import to_pyg, pyg_dataset
>>> data_list = to_pyg(load_tu("mutag"))          # list of torch_geometric.data.Data
>>> dataset = pyg_dataset(load_tu("mutag"))       # an InMemoryDataset (transforms, slicing)

Every graph becomes a ``Data`` with ``edge_index`` (both directions, row-major, as
:attr:`~matlang.graphs.Graph.edge_index`), ``num_nodes``, ``x`` (float32, or one constant
feature when the graph has none) and ``y`` when labels are known: one class or value per graph
(TU, EXP), or one row of the named targets (counting data: ``y`` is ``(1, T)`` float32, one target
too, so a batch's ``y`` is ``(G, T)`` like a model's output).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import torch

from matlang.errors import DataError, GraphError, MatlangError
from matlang.graphs import Graph
from matlang.pyg_rule import attr as _attr
from matlang.pyg_rule import pyg_view

T = TypeVar("T")

# --------------------------------------------------------------------------- reading PyG data

_LAYOUT_ATTRIBUTE = "_matlang_pyg_layout"


def _identity(t: Any) -> Any:
    """What tells a tensor (or value) of a PyG object apart from call to call without reading
    it: identity and in-place-modification counter (a tensor), the value itself (a number)."""
    if t is None or isinstance(t, (int, np.integer)):
        return t
    if isinstance(t, torch.Tensor):
        if t.is_inference():
            raise _NoMemo
        return (id(t), t._version)
    raise _NoMemo  # a list, a numpy array: no counter to trust


class _NoMemo(Exception):
    """A PyG object whose layout cannot be remembered (inference tensors, non-tensors)."""


def _layout_key(data: Any, ei: torch.Tensor) -> tuple[Any, ...] | None:
    """The key of a PyG object's layout memo (see :func:`read_pyg`), ``None`` when it cannot
    be remembered. Nothing here reads a tensor's values: no device synchronisation."""
    if not isinstance(data.edge_index, torch.Tensor) or ei.is_inference():
        return None
    try:
        mapping = _pyg_mapping(data)
        if mapping is not None:
            return (ei._version, tuple(ei.shape), *_store_parts(data, mapping))
        parts = tuple(
            _identity(_attr(data, name))
            for name in ("ptr", "batch", "num_nodes", "num_graphs", "edge_weight")
        )
    except _NoMemo:
        return None
    return (ei._version, tuple(ei.shape), *parts)


def _pyg_mapping(data: Any) -> dict[str, Any] | None:
    """The attribute dict of a PyG ``Data``/``Batch`` (``_store._mapping``), or ``None``: a dict
    look-up costs far less than PyG's ``__getattr__`` (µs each, more for an absent key)."""
    try:
        store = vars(data).get("_store")
        mapping = None if store is None else vars(store).get("_mapping")
    except TypeError:  # no __dict__
        return None
    return mapping if isinstance(mapping, dict) else None


def _store_parts(data: Any, mapping: dict[str, Any]) -> tuple[Any, ...]:
    """The layout key's parts read from a PyG attribute dict: the identities and versions of
    ``ptr``, ``batch`` and ``edge_weight``, an explicit ``num_nodes``, the graph count of a
    ``Batch``, whether ``edge_attr`` is there, and the shapes of the other tensors (what PyG
    infers ``num_nodes`` from when it is not given)."""
    layout = ("ptr", "batch", "edge_weight", "num_nodes")
    shapes = tuple(
        (k, tuple(v.shape))
        for k, v in mapping.items()
        if k not in layout and isinstance(v, torch.Tensor)
    )
    return (
        *(_identity(mapping.get(name)) for name in layout),
        _identity(vars(data).get("_num_graphs")),
        "edge_attr" in mapping,
        shapes,
    )


def read_pyg(data: Any, make: Callable[..., T]) -> T:
    """A PyG ``Data`` or ``Batch`` (duck-typed) as ``make(edge_index, batch, ptr, x,
    edge_weight, names)`` (a :class:`~runtime.batch.Batch`: that module imports this one): its
    graphs are those of :func:`~matlang.pyg_rule.pyg_layout` (its own ``ptr``, empty graphs
    anywhere).

    The layout (int64 edges, batch vector, ``ptr``, checked weights) is remembered on the
    caller's ``edge_index`` tensor, keyed by the identities and modification counters of the
    object's ``ptr``, ``batch``, ``edge_weight`` and its ``num_nodes``/``num_graphs``: the same
    ``Data`` called again gets the same tensors back without a look at their values (no host
    copy), so the batch memo (``runtime.batch._shared_memo``) finds its validation and graph
    constants; with the same ``x`` tensor too, the same object comes back. The memo holds the
    tensors it was keyed by (their ids stay theirs) and dies with ``edge_index``."""
    ei = torch.as_tensor(data.edge_index)
    key = _layout_key(data, ei)
    fields = _plain_fields(data)
    src = data if fields is None else fields
    if key is not None:
        hit = getattr(ei, _LAYOUT_ATTRIBUTE, None)
        if hit is not None and hit[0] == key:
            ei64, b, ptr, w = hit[1]
            x = _features(src, int(b.numel()))
            last = hit[3]
            if last and last[0].x is x:  # the same features too: the same object
                return last[0]  # type: ignore[no-any-return]
            out = make(ei64, b, ptr, x, w, ())
            last[:] = [out]
            return out
    ei64, b, ptr, w = _pyg_layout_tensors(src, ei)
    out = make(ei64, b, ptr, _features(src, int(b.numel())), w, ())
    if key is not None:
        held = tuple(_attr(src, name) for name in ("ptr", "batch", "edge_weight"))
        try:
            setattr(ei, _LAYOUT_ATTRIBUTE, (key, (ei64, b, ptr, w), held, [out]))
        except (AttributeError, RuntimeError):  # a tensor subclass without attributes
            pass
    return out


#: What :func:`read_pyg` reads of a PyG object.
_FIELDS = ("edge_index", "ptr", "batch", "num_graphs", "num_nodes", "x", "edge_attr", "edge_weight")


class GraphFields:
    """The fields of a graph data object that :func:`read_pyg` reads (``None``: not given),
    one record for every view of one: the fields of a PyG ``Data`` taken from its attribute
    dict (:func:`_plain_fields`: PyG's accessors cost µs each, and an absent key more, by an
    exception; ``Data``'s properties read the same dict), a layer's checked view of its data
    object, and the tensors given to :meth:`~runtime.batch.Batch.from_edge_index`."""

    __slots__ = _FIELDS

    def __init__(
        self,
        edge_index: Any = None,
        ptr: Any = None,
        batch: Any = None,
        num_graphs: Any = None,
        num_nodes: Any = None,
        x: Any = None,
        edge_attr: Any = None,
        edge_weight: Any = None,
    ) -> None:
        self.edge_index, self.ptr, self.batch = edge_index, ptr, batch
        self.num_graphs, self.num_nodes, self.x = num_graphs, num_nodes, x
        self.edge_attr, self.edge_weight = edge_attr, edge_weight

    @classmethod
    def of(cls, mapping: dict[str, Any]) -> GraphFields:
        """The fields held in an attribute dict (a key it lacks reads as ``None``)."""
        return cls(*(mapping.get(name) for name in _FIELDS))

    def replace(self, **changes: Any) -> GraphFields:
        """These fields with ``changes``."""
        values = {name: getattr(self, name) for name in _FIELDS}
        values.update(changes)
        return GraphFields(**values)


def _plain_fields(data: Any) -> GraphFields | None:
    """:class:`GraphFields` of a PyG ``Data`` itself (not a subclass, whose properties may differ)
    whose ``num_nodes`` is given as an integer (else PyG infers it: the object is read as it
    is); ``None`` otherwise."""
    cls = type(data)
    if cls.__name__ != "Data" or cls.__module__ != "torch_geometric.data.data":
        return None
    mapping = _pyg_mapping(data)
    if mapping is None:
        return None
    n = mapping.get("num_nodes")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        return None
    return GraphFields.of(mapping)


def _features(data: Any, n: int) -> torch.Tensor | None:
    """A PyG object's ``x`` as ``(N, d)`` (one row per node, checked by shape)."""
    x = getattr(data, "x", None)
    x = None if x is None else torch.as_tensor(x)
    if x is not None and x.dim() == 1:  # one feature per node
        x = x.unsqueeze(-1)
    if x is not None and (x.dim() == 0 or x.shape[0] != n):
        raise GraphError(f"x of shape {tuple(x.shape)} has not one row per node ({n})", "batch")
    return x


def _pyg_layout_tensors(
    data: Any, ei: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """int64 edges, batch vector, ``ptr`` and checked weights of a PyG object (read and
    checked on the host: once per object, see :func:`read_pyg`)."""
    if ei.is_floating_point() or ei.is_complex() or ei.dtype == torch.bool:
        # a cast would silently truncate node ids such as 0.5
        raise GraphError(f"edge_index must hold integers, got {ei.dtype}", "batch")
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}", "batch")
    ei = ei.to(torch.int64)
    view = pyg_view(data, int(ei.shape[1]))  # the rule, in one call
    n, offsets = view.num_nodes, view.offsets
    if offsets is None:  # one graph
        offsets = np.array([0, n], dtype=np.int64)
    ptr = torch.from_numpy(offsets).to(ei.device)
    if offsets.size == 2:  # one graph
        b = torch.zeros(n, dtype=torch.int64, device=ei.device)
    elif _is_batch_vector(given := _attr(data, "batch"), n, ei.device):
        # the caller's own vector: the rule checked it sorted and in range, and ptr counts
        # its graphs (or agrees with it), so it equals the vector ptr gives; not made again
        b = given
    elif ei.device.type == "cpu":  # numpy's repeat: a tenth of torch's at small sizes
        graph_ids = np.arange(offsets.size - 1, dtype=np.int64)
        b = torch.from_numpy(np.repeat(graph_ids, np.diff(offsets)))
    else:
        b = torch.repeat_interleave(
            torch.arange(ptr.numel() - 1, device=ei.device), ptr[1:] - ptr[:-1], output_size=n
        )
    w = None
    if view.edge_weight is not None:  # checked: one finite number per edge
        # the caller's tensor itself (a learned weight keeps its gradient)
        w = torch.as_tensor(data.edge_weight).reshape(int(ei.shape[1]))
    return ei, b, ptr, w


def _is_batch_vector(v: Any, n: int, device: torch.device) -> bool:
    """Whether ``v`` (a given batch vector, checked by the rule) can serve as the batch's own:
    an int64 tensor of ``n`` entries on ``device``, laid out plainly."""
    return (
        type(v) is torch.Tensor  # (not a subclass: it is kept as the batch's own)
        and v.dtype == torch.int64
        and v.device == device
        and v.dim() == 1
        and int(v.shape[0]) == n
        and v.is_contiguous()
        and not v.requires_grad
    )


# --------------------------------------------------------------------------- writing PyG data


def _pyg() -> Any:
    try:
        import torch_geometric.data as pyg_data
    except ImportError as e:  # pragma: no cover - PyG is a dev extra
        raise MatlangError("to_pyg needs PyTorch Geometric: pip install torch_geometric") from e
    return pyg_data


def _labels(obj: Any, targets: Sequence[str] | None) -> np.ndarray | None:
    labels = getattr(obj, "labels", None)
    if isinstance(labels, dict) and labels:
        names = list(targets) if targets is not None else sorted(labels)
        missing = [t for t in names if t not in labels]
        if missing:
            raise DataError(f"no target(s) {', '.join(missing)}; known: {', '.join(labels)}")
        # float32 as x (and PyG's own regression targets): a float32 model's loss takes it
        return np.stack([np.asarray(labels[t], dtype=np.float32).reshape(-1) for t in names], 1)
    y = getattr(obj, "y", None)
    return None if y is None else np.asarray(y)


def graph_to_data(graph: Graph, y: Any = None) -> Any:
    """One :class:`~matlang.graphs.Graph` as a PyG ``Data``."""
    pyg = _pyg()
    n = graph.num_nodes
    if graph.x is None:
        x = torch.ones(n, 1)
    else:
        x = torch.as_tensor(np.asarray(graph.x, dtype=np.float32).reshape(n, -1))
    kwargs: dict[str, Any] = {}
    if not graph.is_binary:
        kwargs["edge_weight"] = torch.as_tensor(graph.edge_weight, dtype=torch.float32)
    if y is not None:
        t = torch.as_tensor(np.asarray(y))
        # a row of targets stays a row, one target too: (1, T) batches to (G, T); a class (0-d)
        # is (1,) and batches to (G,)
        kwargs["y"] = t.reshape(1, -1) if t.dim() >= 1 else t.reshape(1)
    return pyg.Data(x=x, edge_index=torch.as_tensor(graph.edge_index), num_nodes=n, **kwargs)


def to_pyg(obj: Any, *, targets: Sequence[str] | None = None) -> list[Any]:
    """A dataset of the project (``TUData``, ``ExpData``, ``CountingData``, anything with
    ``graphs`` and ``y``/``labels``) or a list of graphs, as a list of PyG ``Data``."""
    graphs = getattr(obj, "graphs", obj)
    if not isinstance(graphs, Sequence) or not all(isinstance(g, Graph) for g in graphs):
        raise DataError(f"to_pyg takes a dataset or a list of Graphs, got {type(obj).__name__}")
    y = None if graphs is obj else _labels(obj, targets)
    if y is not None and len(y) != len(graphs):
        raise DataError(f"{len(y)} labels for {len(graphs)} graphs")
    return [graph_to_data(g, None if y is None else y[i]) for i, g in enumerate(graphs)]


def pyg_dataset(
    obj: Any,
    *,
    transform: Callable[[Any], Any] | None = None,
    pre_transform: Callable[[Any], Any] | None = None,
    targets: Sequence[str] | None = None,
) -> Any:
    """:func:`to_pyg` as an ``InMemoryDataset`` (collated once; ``transform`` runs on access,
    ``pre_transform`` once, e.g. :class:`~matlang.compiler.layers.transforms.SentenceFeatures`)."""
    data_list = to_pyg(obj, targets=targets)
    if pre_transform is not None:
        data_list = [pre_transform(d) for d in data_list]
    return _dataset_class()(data_list, transform=transform)


def _dataset_class() -> type:
    """``MatlangDataset``, an ``InMemoryDataset`` over a list of ``Data``, made on first use
    (PyG loads only then) and kept as this module's attribute, so that datasets pickle
    (``torch.save``, DataLoader workers under ``spawn``) by the name
    ``matlang.runtime.pyg.MatlangDataset``."""
    cls = globals().get("MatlangDataset")
    if cls is not None:
        return cls
    from torch_geometric.data import InMemoryDataset

    class MatlangDataset(InMemoryDataset):  # type: ignore[misc]
        """A dataset of the project as PyG data, collated once (see :func:`pyg_dataset`)."""

        def __init__(
            self,
            data_list: Sequence[Any] = (),
            transform: Callable[[Any], Any] | None = None,
        ) -> None:
            super().__init__(None, transform=transform)
            self._data, self.slices = self.collate(list(data_list))

    MatlangDataset.__module__ = __name__
    MatlangDataset.__qualname__ = "MatlangDataset"
    globals()["MatlangDataset"] = MatlangDataset
    return MatlangDataset


def __getattr__(name: str) -> Any:
    if name == "MatlangDataset":  # unpickling a dataset before any was made in this process
        return _dataset_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GraphFields", "graph_to_data", "pyg_dataset", "read_pyg", "to_pyg"]
