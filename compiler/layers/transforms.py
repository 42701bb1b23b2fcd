"""``SentenceFeatures``: exact sentence values added to a graph's features (PyG's transform
convention ``data -> data``, without requiring PyG)."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from matlang import ast
from matlang.compiler.layers.sentences import SentenceInfo, by_kind, describe_sentences
from matlang.compiler.layers.stage import make_batch
from matlang.errors import GraphError, MatlangError
from matlang.graphs import Graph, _attr
from matlang.inputs import check_edge_index, check_num_nodes, check_x
from matlang.runtime.batch import Batch
from matlang.runtime.cache import CacheKey, GraphCache, LocalGraph, as_local_graph
from matlang.runtime.layer_inputs import adjacency_edges, as_index_tensor, check_ptr

#: The transform's name in cache keys.
TRANSFORM = "SentenceFeatures"


class SentenceFeatures:
    r"""Adds the exact values of MATLANG sentences to each graph (Balcilar et al., ICML 2021,
    Sec. 3: counting sentences), the way PyG's ``BaseTransform`` adds positional encodings.

    Node-level sentences (``(A³ ⊙ I) 𝟏 / 2``: triangles at each node; ``(A⁴ ⊙ I) 𝟏``: closed
    4-walks) become new columns of ``data.x`` (or of ``data[node_attr]``); graph-level sentences
    (``tr(A³) / 6``: triangles) become a ``(1, K)`` row of ``data[graph_attr]``, which PyG's
    DataLoader stacks to ``(G, K)``. Values are computed by the compiled sentences in float64
    (exact for counts below 2⁵³), one graph at a time, and cached under the graph's
    fingerprint, the sentences and every option: a changed option never reads a stale entry.

    Args:
        sentences: node- and/or graph-level sentences without free inputs (a program or list).
        node_attr: where node values go: ``"x"`` appends columns to ``x`` (``x`` is created when
            missing), any other name sets that attribute to ``(N, K)``.
        graph_attr: the attribute that receives graph values ``(1, K)``.
        dtype: the dtype of new attributes (appended columns follow ``x``'s dtype).
        log1p: add :math:`\operatorname{sign}(v) \log(1 + |v|)` instead of each value
            :math:`v`. Walk counts grow geometrically with the walk's length (closed 5-walks
            reach the hundreds on ENZYMES' nodes): beside one-hot labels, raw counts swamp a
            sum-aggregating GNN, their logarithms do not. :meth:`values` stays exact.
        cache: a :class:`~runtime.cache.GraphCache` to share (one is created otherwise).

    Accepts a PyG ``Data`` (copied, never changed in place), the project's
    :class:`~matlang.graphs.Graph` (a new Graph with the columns appended to ``x``; graph-level
    values are refused there: a Graph has no attributes) or :class:`~runtime.batch.Batch`, and a
    list of any of these. A ``Data`` after PyG's ``ToSparseTensor`` (``adj_t``, no
    ``edge_index``) is read through its ``adj_t``.

    Weights: a weighted graph's ``A`` holds its weights (``edge_weight``, or ``adj_t``'s values),
    as in ``matlang.evaluate``, ``matlang.compile`` and ``SentenceConv``: triangles per node on a
    triangle with every weight 2 are ``(A³ ⊙ I) 𝟏 / 2 = 8``, not 1.
    """

    def __init__(
        self,
        sentences: str | ast.Expr | Sequence[str | ast.Expr],
        *,
        node_attr: str = "x",
        graph_attr: str = "graph_features",
        dtype: torch.dtype = torch.float32,
        log1p: bool = False,
        cache: GraphCache | None = None,
    ) -> None:
        infos = describe_sentences(sentences)
        free = [i for i in infos if i.inputs or i.kind == "support"]
        if free:
            what = "reads a free input" if free[0].inputs else "is a matrix"
            raise MatlangError(
                f"{free[0].text!r} {what}: SentenceFeatures takes node- and graph-level sentences "
                "of the graph alone (use matlang.nn.SentenceConv for the others)"
            )
        self.sentences: tuple[SentenceInfo, ...] = tuple(infos)
        self.node_sentences = tuple(i.text for i in by_kind(infos, "node"))
        self.graph_sentences = tuple(i.text for i in by_kind(infos, "graph"))
        self.node_attr, self.graph_attr, self.dtype = node_attr, graph_attr, dtype
        self.log1p = log1p
        self.cache = GraphCache() if cache is None else cache
        self._modules: dict[tuple[str, ...], Any] = {}

    # -- values -----------------------------------------------------------------------------
    def _params(self) -> tuple[tuple[str, Any], ...]:
        return (("node", self.node_sentences), ("graph", self.graph_sentences))

    def _module(self, texts: tuple[str, ...]) -> Any:
        from matlang.compiler.api import compile as compile_sentences

        if texts not in self._modules:
            # values are cached per graph here: the module keeps no constants of its own
            self._modules[texts] = compile_sentences(list(texts), dtype=torch.float64, cache=False)
        return self._modules[texts]

    def _compute(self, graph: LocalGraph) -> tuple[np.ndarray, np.ndarray]:
        """``(N, K_node)`` and ``(K_graph,)`` float64 values of one graph."""
        n = graph.num_nodes
        batch = make_batch(graph.edge_index, None, n, graph.edge_weight)
        node = np.zeros((n, 0))
        if self.node_sentences:
            with torch.no_grad():
                v = self._module(self.node_sentences)(batch)
            node = v.reshape(n, len(self.node_sentences)).numpy()
        glob = np.zeros(0)
        if self.graph_sentences:
            with torch.no_grad():
                g = self._module(self.graph_sentences)(batch)
            glob = g.reshape(len(self.graph_sentences)).numpy()
        return node, glob

    def values(self, graph: Any) -> tuple[np.ndarray, np.ndarray]:
        """Node values ``(N, K_node)`` and graph values ``(K_graph,)`` of one graph, through
        the cache."""
        local = as_local_graph(graph) if not isinstance(graph, (Graph, LocalGraph)) else graph
        key = CacheKey(TRANSFORM, self.cache.fingerprint(local), self._params())
        return self.cache.get_or_compute(key, lambda: self._compute(as_local_graph(local)))  # type: ignore[no-any-return]

    def features(self, graph: Any) -> tuple[np.ndarray, np.ndarray]:
        """What the transform adds to one graph: :meth:`values`, through ``log1p`` if set."""
        node, glob = self.values(graph)
        if self.log1p:
            node, glob = (np.sign(v) * np.log1p(np.abs(v)) for v in (node, glob))
        return node, glob

    # -- the transform ----------------------------------------------------------------------
    def __call__(self, data: Any) -> Any:
        if isinstance(data, (list, tuple)):
            return [self(d) for d in data]
        if isinstance(data, Graph):
            return self._graph(data)
        if isinstance(data, Batch):
            return self._batch(data)
        if hasattr(data, "edge_index"):
            return self._pyg(data)
        raise GraphError(
            f"SentenceFeatures takes a PyG Data, a Graph or a Batch, got {type(data).__name__}"
        )

    def forward(self, data: Any) -> Any:  # PyG's BaseTransform spelling
        return self(data)

    def _append(self, x: Tensor | None, cols: np.ndarray, n: int) -> Tensor:
        if x is None:
            return torch.as_tensor(cols, dtype=self.dtype)
        check_x(x, n)
        # one row per node, further axes flattened (reshape(n, -1) is ambiguous for n = 0)
        x2 = x.unsqueeze(-1) if x.dim() == 1 else x.reshape(n, math.prod(x.shape[1:]))
        dtype = x2.dtype if x2.is_floating_point() else self.dtype
        new = torch.as_tensor(cols, dtype=dtype, device=x2.device)
        return torch.cat([x2.to(dtype), new], 1)

    def _pyg(self, data: Any) -> Any:
        if getattr(data, "batch", None) is not None and getattr(data, "num_graphs", 1) != 1:
            raise GraphError(
                "SentenceFeatures transforms one graph at a time (a dataset's transform): "
                "apply it before batching"
            )
        # the checks of every entry point (matlang.inputs): integer (2, E) ids in range, a
        # node count that is a count, x with one row per node
        ew = _attr(data, "edge_weight")
        if _attr(data, "edge_index") is None and _attr(data, "adj_t") is not None:
            # after PyG's ToSparseTensor: adj_t's pattern and values (the weights)
            n_adj = _attr(data, "num_nodes")
            ei, ew = adjacency_edges(data.adj_t, None if n_adj is None else int(n_adj), "adj_t")
        else:
            ei = as_index_tensor(data.edge_index, "edge_index")
        x, n_given = _attr(data, "x"), _attr(data, "num_nodes")
        if x is not None:
            x = torch.as_tensor(x)
        n = None if n_given is None else check_num_nodes(n_given)
        if n is None and x is not None:
            n = int(x.shape[0]) if x.dim() else 0
        n = check_edge_index(ei, n)
        ptr = _attr(data, "ptr")
        if ptr is not None:  # the batch rule of every entry point (matlang.graphs.pyg_layout)
            vec = _attr(data, "batch")
            ptr = as_index_tensor(ptr, "ptr")
            ng = _attr(data, "num_graphs")
            check_ptr(
                ptr,
                None if vec is None else as_index_tensor(vec, "batch"),
                n,
                None if ng is None else int(ng),
            )
            if ptr.numel() != 2:
                raise GraphError(
                    "SentenceFeatures transforms one graph at a time (a dataset's transform): "
                    "apply it before batching"
                )
        node, glob = self.features(LocalGraph(ei.to(torch.int64), n, ew))
        out = copy.copy(data)
        # attributes are set as attributes: a PyG Data and a duck-typed object alike
        if self.node_sentences:
            current = x if self.node_attr == "x" else None
            setattr(out, self.node_attr, self._append(current, node, n))
        if self.graph_sentences:
            glob_row = torch.as_tensor(glob, dtype=self.dtype).reshape(1, -1)
            setattr(out, self.graph_attr, glob_row)
        return out

    def _graph(self, g: Graph) -> Graph:
        if self.graph_sentences:
            raise GraphError(
                "graph-level sentences need somewhere to go: a Graph has only x; use a Batch or a "
                "PyG Data",
                g.label(),
            )
        if self.node_attr != "x":
            raise GraphError(f"a Graph has no attribute {self.node_attr!r}, only x", g.label())
        node, _ = self.features(g)
        x = (
            node
            if g.x is None
            else np.concatenate([np.asarray(g.x).reshape(g.num_nodes, -1), node], 1)
        )
        return Graph(g.adjacency, g.name, x)

    def _batch(self, b: Batch) -> Batch:
        graphs = b.to_graphs()
        if self.graph_sentences or self.node_attr != "x":
            raise GraphError(
                "a Batch has only x: graph-level sentences and other attributes need PyG Data"
            )
        cols = (
            np.concatenate([self.features(g)[0] for g in graphs], 0)
            if graphs
            else np.zeros((0, len(self.node_sentences)))
        )
        return dataclasses.replace(b, x=self._append(b.x, cols, b.num_nodes))

    def __repr__(self) -> str:
        texts = ", ".join(repr(i.text) for i in self.sentences)
        attrs = f"node_attr={self.node_attr!r}, graph_attr={self.graph_attr!r}"
        attrs += ", log1p=True" if self.log1p else ""
        return f"{type(self).__name__}([{texts}], {attrs})"


__all__ = ["SentenceFeatures", "TRANSFORM"]
