"""The project's datasets as PyG data (PyG is imported here, on use, and only here).

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
from typing import Any

import numpy as np
import torch

from matlang.errors import DataError, MatlangError
from matlang.graphs import Graph


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


__all__ = ["graph_to_data", "pyg_dataset", "to_pyg"]
