"""``PatternCounts``: exact pattern counts as features, in PyG's ``BaseTransform`` style.

>>> from matlang.transforms import PatternCounts
>>> t = PatternCounts(["C3", "C4", "C5", "C6"], per="node")   # 4 columns appended to data.x
>>> data = t(data)               # a Data, a Batch, a list of Data (counted all at once)

Per node the columns go to ``x``, per edge to ``edge_attr``, per graph to a ``(1, K)`` graph
attribute (``pattern_counts``; PyG's DataLoader stacks it to ``(G, K)``). ``basis="hom"``: the
homomorphism counts of every graph of each pattern's spasm (rooted per node, two-rooted per
edge) instead of the subgraph counts they combine into — the basis of Jin et al. (ICML 2024).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from matlang.errors import GraphError, MatlangError
from matlang.runtime.subgraph_counts import (
    PER,
    Term,
    count_arrays,
    read_count_pattern,
    read_graphs,
    terms,
)

BASES = ("subgraph", "hom")


def _root_text(roots: tuple[int, ...]) -> str:
    return "root " + str(roots[0]) if len(roots) == 1 else f"roots {roots[0]},{roots[1]}"


class PatternCounts:
    r"""Exact counts of small patterns appended to each graph's features.

    Args:
        patterns: names (``C3``…``C8``, ``K4``, ``house``…), edge lists, graph6 or graphs, as
            :func:`matlang.count` reads them (connected, at most 8 nodes).
        per: ``"node"`` (columns of ``x``), ``"edge"`` (columns of ``edge_attr``, in
            ``edge_index`` order) or ``"graph"`` (a ``(1, K)`` attribute, ``graph_attr``).
        basis: ``"subgraph"`` (one column per pattern: its copies) or ``"hom"`` (one column per
            graph of its spasm: homomorphism counts, roots fixed per node / per edge;
            duplicates across patterns appear once).
        induced: induced copies (``basis="subgraph"``).
        attr: where the columns go (default ``x``, ``edge_attr`` or ``pattern_counts``).
        dtype: the torch dtype of new attributes (appended columns follow the attribute's own
            floating dtype); counts are exact integers, cast at the end.
        log1p: :math:`\log(1 + c)` instead of each count ``c`` (counts grow fast with size).

    Works as a ``transform`` or ``pre_transform`` (one ``Data`` at a time), on a PyG ``Batch``
    (counted as one block-diagonal graph), on a list of ``Data`` (counted all at once, then
    split: the fast way to precompute a dataset) and on the project's ``Graph`` / ``Batch``
    (per node). :attr:`feature_names` names the columns.
    """

    def __init__(
        self,
        patterns: Any,
        per: str = "node",
        basis: str = "subgraph",
        *,
        induced: bool = False,
        attr: str | None = None,
        dtype: Any = None,
        log1p: bool = False,
    ) -> None:
        if per not in PER:
            raise MatlangError(f"per must be one of {', '.join(PER)}, got {per!r}")
        if basis not in BASES:
            raise MatlangError(f"basis must be 'subgraph' or 'hom', got {basis!r}")
        if induced and basis == "hom":
            raise MatlangError("induced=True counts subgraphs: it takes basis='subgraph'")
        if isinstance(patterns, str) or not isinstance(patterns, Sequence):
            patterns = [patterns]
        if not patterns:
            raise MatlangError("PatternCounts needs at least one pattern")
        self.patterns = [read_count_pattern(p) for p in patterns]
        self.per, self.basis, self.induced, self.log1p = per, basis, induced, log1p
        self.attr = attr or {"node": "x", "edge": "edge_attr", "graph": "pattern_counts"}[per]
        self.dtype = dtype
        names: list[str] = []
        self._columns: list[Any] = []
        if basis == "subgraph":
            for p, name in self.patterns:
                self._columns.append(p)
                names.append(f"{'induced ' if induced else ''}{name}")
        else:
            from matlang.patterns import graph6
            from matlang.runtime.subgraph_counts import _canonical_rooted

            seen: set[Any] = set()
            for p, name in self.patterns:
                for t in terms(p, per):
                    key = _canonical_rooted(t.graph, t.roots if per != "graph" else ())
                    if key in seen:
                        continue
                    seen.add(key)
                    self._columns.append(t)
                    text = f"hom({graph6(t.graph)})"
                    if per != "graph":
                        text = f"hom({graph6(t.graph)}, {_root_text(t.roots)})"
                    names.append(f"{name}: {text}")
        self.feature_names: list[str] = names

    # -- values -----------------------------------------------------------------------------
    def counts(self, graphs: Any) -> tuple[np.ndarray, Any]:
        """The columns as an exact int64 array ``(rows, K)`` (rows: nodes, edge_index entries
        or graphs of ``graphs``, in order) and the graphs' layout."""
        gs = read_graphs(graphs)
        try:
            cols = [self._column(c, gs) for c in self._columns]
        finally:
            gs.host.clear()
        return np.stack(cols, 1) if cols else np.zeros((0, 0), dtype=np.int64), gs

    def _column(self, c: Any, gs: Any) -> np.ndarray:
        if not isinstance(c, Term):
            return np.asarray(count_arrays(c, gs, self.per, self.induced), dtype=np.int64)
        from matlang.runtime.homcount import check_bound, hom_rooted

        check_bound(gs.host, c.graph)
        v = hom_rooted(gs.host, c.graph, c.roots)
        if self.per == "graph":
            cs = np.concatenate([[0], np.cumsum(v)])
            return cs[gs.ptr[1:]] - cs[gs.ptr[:-1]]  # type: ignore[no-any-return]
        return v

    def _rows(self, values: np.ndarray, gs: Any) -> np.ndarray:
        """Per edge: the host's CSR entries reordered to edge_index order."""
        if self.per != "edge":
            return values
        pos = np.concatenate(gs.edge_pos) if gs.edge_pos else np.zeros(0, dtype=np.int64)
        return values[pos]

    def _tensor(self, values: np.ndarray, like: Any = None) -> Any:
        import torch

        v = values.astype(np.float64)
        if self.log1p:
            v = np.log1p(v)
        dtype = self.dtype or torch.float32
        if like is not None and like.is_floating_point():
            dtype = like.dtype
        return torch.as_tensor(v, dtype=dtype)

    # -- the transform ----------------------------------------------------------------------
    def __call__(self, data: Any) -> Any:
        from matlang.graphs import Graph
        from matlang.runtime.batch import Batch

        if isinstance(data, (list, tuple)):
            return self._many(list(data))
        if isinstance(data, Graph):
            return self._graph(data)
        if isinstance(data, Batch):
            return self._batch(data)
        if hasattr(data, "edge_index"):
            return self._pyg(data)
        raise GraphError(
            f"PatternCounts takes a PyG Data or Batch, a Graph, a Batch or a list of them, got "
            f"{type(data).__name__}"
        )

    def forward(self, data: Any) -> Any:  # PyG's BaseTransform spelling
        return self(data)

    def _append(self, current: Any, new: np.ndarray, rows: int) -> Any:
        import torch

        if current is None:
            return self._tensor(new)
        cur = torch.as_tensor(current)
        cur2 = cur.unsqueeze(-1) if cur.dim() == 1 else cur.reshape(rows, math.prod(cur.shape[1:]))
        t = self._tensor(new, cur2)
        return torch.cat([cur2.to(t.dtype), t.to(cur2.device)], 1)

    def _set(self, out: Any, values: np.ndarray) -> None:
        from matlang.graphs import _attr

        if self.per == "graph":
            setattr(out, self.attr, self._tensor(values))
            return
        setattr(out, self.attr, self._append(_attr(out, self.attr), values, values.shape[0]))

    def _pyg(self, data: Any) -> Any:
        values, gs = self.counts(data)
        out = copy.copy(data)
        self._set(out, self._rows(values, gs))
        return out

    def _many(self, items: list[Any]) -> list[Any]:
        """Every graph counted at once (one block-diagonal graph), then split."""
        from matlang.graphs import Graph, is_pyg_like

        if not items:
            return []
        if not all(is_pyg_like(d) or isinstance(d, Graph) for d in items):
            return [self(d) for d in items]
        values, gs = self.counts(items)
        out = []
        for i, d in enumerate(items):
            if self.per == "graph":
                part = values[i : i + 1]
            elif self.per == "node":
                part = values[gs.ptr[i] : gs.ptr[i + 1]]
            else:
                part = values[gs.edge_pos[i]]
            if isinstance(d, Graph):
                out.append(self._graph(d, part))
                continue
            new = copy.copy(d)
            self._set(new, part)
            out.append(new)
        return out

    def _graph(self, g: Any, values: np.ndarray | None = None) -> Any:
        from matlang.graphs import Graph

        if self.per != "node" or self.attr != "x":
            raise GraphError(
                "a Graph has only x: per='edge' and per='graph' need a PyG Data", g.label()
            )
        if values is None:
            values, _ = self.counts(g)
        new = values.astype(np.float64)
        if self.log1p:
            new = np.log1p(new)
        x = (
            new
            if g.x is None
            else np.concatenate([np.asarray(g.x).reshape(g.num_nodes, -1), new], 1)
        )
        return Graph(g.adjacency, g.name, x)

    def _batch(self, b: Any) -> Any:
        if self.per != "node" or self.attr != "x":
            raise GraphError("a Batch has only x: per='edge' and per='graph' need PyG Data")

        class _View:  # the batch's edges as a PyG-like object
            edge_index = np.asarray(b.edge_index.cpu())
            num_nodes = b.num_nodes
            ptr = np.asarray(b.ptr.cpu()) if getattr(b, "ptr", None) is not None else None

        values, _ = self.counts(_View())
        return dataclasses.replace(b, x=self._append(b.x, values, b.num_nodes))

    def __repr__(self) -> str:
        names = ", ".join(n for _, n in self.patterns)
        return f"{type(self).__name__}([{names}], per={self.per!r}, basis={self.basis!r})"


__all__ = ["PatternCounts"]
