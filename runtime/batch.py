"""Batches of sparse graphs, in the layout PyG uses: one block-diagonal graph.

A :class:`Batch` holds ``edge_index`` (2, E) with global node ids, ``batch`` (N,) giving each
node's graph, ``ptr`` (G+1,) node offsets, optional node features ``x`` and optional
``edge_weight``. :func:`as_batch` accepts a Batch, a Graph, a list of graph-like objects, or a
PyG ``Data``/``Batch`` as it is (duck-typed: PyG need not be installed).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from matlang.errors import GraphError
from matlang.graphs import (
    Graph,
    as_graphs,
    is_pyg_like,
    node_features,
)
from matlang.runtime.pyg import GraphFields, read_pyg
from matlang.runtime.sparse import is_coalesced
from matlang.runtime.validate import check

_MEMO_ATTRIBUTE = "_matlang_batch_memo"


def _shared_memo(
    edge_index: Any, batch: Any, ptr: Any, weight: Any
) -> dict[str, tuple[Any, Any]] | None:
    """One memo for every :class:`Batch` over the same (live) index tensors: a model called on
    a PyG ``Data`` each epoch, or on a new Batch wrapping the same tensors, validates them and
    builds their graph constants once. The memo lives on ``edge_index`` (it dies with it); the
    other tensors are told apart by weak references, in-place changes by the fingerprint that
    :meth:`Batch.cached` checks."""
    if not isinstance(edge_index, torch.Tensor) or edge_index.is_inference():
        return None
    others = (batch, ptr, weight)
    try:
        table = getattr(edge_index, _MEMO_ATTRIBUTE, None)
        if table is None:
            table = {}
            setattr(edge_index, _MEMO_ATTRIBUTE, table)
    except (AttributeError, RuntimeError):  # a tensor subclass without attributes
        return None
    key = tuple(id(t) for t in others)
    hit = table.get(key)
    if hit is not None and all(
        (r is None and t is None) or (r is not None and r() is t) for r, t in zip(hit[0], others)
    ):
        return hit[1]
    for k in [k for k, (rs, _) in table.items() if any(r is not None and r() is None for r in rs)]:
        del table[k]  # memos of tensors that died
    memo: dict[str, tuple[Any, Any]] = {}
    refs = tuple(None if t is None else weakref.ref(t) for t in others)
    table[key] = (refs, memo)
    return memo


@dataclass(frozen=True, eq=False)
class Batch:
    """A block-diagonal batch of graphs (see module docstring)."""

    edge_index: torch.Tensor  # (2, E) int64, global ids
    batch: torch.Tensor  # (N,) int64
    ptr: torch.Tensor  # (G+1,) int64
    x: torch.Tensor | None = None  # (N, d)
    edge_weight: torch.Tensor | None = None  # (E,)
    names: tuple[str | None, ...] = ()
    # what cached() remembers, by name: (fingerprint of the index tensors, value); shared by
    # every Batch over the same index tensors (see _shared_memo)
    _memo: dict[str, tuple[Any, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        memo = _shared_memo(self.edge_index, self.batch, self.ptr, self.edge_weight)
        if memo is not None:
            object.__setattr__(self, "_memo", memo)

    @property
    def num_nodes(self) -> int:
        return int(self.batch.numel())

    @property
    def num_graphs(self) -> int:
        return int(self.ptr.numel() - 1)

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[1])

    @property
    def nodes_per_graph(self) -> torch.Tensor:
        return self.ptr[1:] - self.ptr[:-1]

    def to(self, device: torch.device | str) -> Batch:
        """This batch on ``device``: itself where every tensor is there already (as
        ``Tensor.to``), so training loops may call it on every batch at no cost on the CPU."""
        dev = torch.device(device)
        tensors = (self.edge_index, self.batch, self.ptr, self.x, self.edge_weight)
        if all(t is None or t.device == dev for t in tensors):
            return self

        def mv(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(dev)

        return Batch(
            self.edge_index.to(dev),
            self.batch.to(dev),
            self.ptr.to(dev),
            mv(self.x),
            mv(self.edge_weight),
            self.names,
        )

    def graph_label(self, i: int) -> str:
        nm = self.names[i] if i < len(self.names) else None
        return nm if nm else f"#{i}"

    # -- per-batch memo ---------------------------------------------------------------------
    def fingerprint(self) -> tuple[Any, ...] | None:
        """What :meth:`cached` compares: identity and in-place-modification counters of the
        index tensors (``None`` for inference-mode tensors, which keep no counter, and for edge
        weights that require grad, which ``torch.autograd.gradcheck`` perturbs through
        ``.data``, bypassing the counter: nothing is remembered for them)."""
        parts: list[Any] = []
        for t in (self.edge_index, self.batch, self.ptr, self.edge_weight):
            if t is None:
                parts.append(None)
                continue
            if t.is_inference() or (t is self.edge_weight and t.requires_grad):
                return None  # differentiable weights: gradcheck writes them through .data
            parts.append((t.data_ptr(), t._version, tuple(t.shape), tuple(t.stride())))
        return tuple(parts)

    def cached(
        self, name: str, compute: Callable[[], Any], *, fingerprint: tuple[Any, ...] | None = None
    ) -> Any:
        """``compute()``, remembered on this batch under ``name``: a value derived from its
        edges (validation, coalesced edges) is computed once per batch. An in-place change of
        ``edge_index``, ``batch``, ``ptr`` or ``edge_weight`` invalidates it. ``fingerprint``:
        :meth:`fingerprint` as the caller just took it (one per forward pass, not one per look).

        Which writes are seen: those that bump torch's version counter — indexing assignment
        (``ei[0, 3] = 5``), ``copy_``, ``add_`` and every other in-place torch op — and any new
        tensor. Writes that bypass the counter are not seen, as torch documents for ``.data``:
        through ``ei.data``, through a numpy view (``ei.numpy()[...] = ...``) or other shared
        memory (DLPack, ``from_numpy`` of a written array). After such a write, call
        ``torch.autograd.graph.increment_version(ei)`` (or pass a new tensor); the values are
        then computed again. Compiled modules and sentence layers follow the same rule.
        """
        fp = self.fingerprint() if fingerprint is None else fingerprint
        if self._remembers(name, fp):
            return self._memo[name][1]
        value = compute()
        if fp is not None:
            self._memo[name] = (fp, value)
        return value

    def remember(self, name: str, value: Any, fp: tuple[Any, ...] | None) -> None:
        """Remember ``value`` under ``name`` for the tensors fingerprinted ``fp`` (nothing for
        ``None``: see :meth:`fingerprint`), as :meth:`cached` does."""
        if fp is not None:
            self._memo[name] = (fp, value)

    def recall(self, name: str, fp: tuple[Any, ...] | None) -> Any:
        """What was remembered under ``name`` for the tensors fingerprinted ``fp``, else
        ``None``."""
        return self._memo[name][1] if self._remembers(name, fp) else None

    def _remembers(self, name: str, fp: tuple[Any, ...] | None) -> bool:
        """Whether ``name`` was remembered for the tensors fingerprinted ``fp``."""
        hit = self._memo.get(name)
        return fp is not None and hit is not None and hit[0] == fp

    # -- validation ---------------------------------------------------------------------------
    def validate(self, *, allow_directed: bool = False, allow_self_loops: bool = False) -> Batch:
        """Check ids in range, edges within one graph, no self-loops, symmetric edges.

        A batch that passed is remembered (see :meth:`cached`): validating it again, e.g. on
        every forward pass of a model over the same batch, costs O(1). Passing the strict checks
        also vouches for the lax ones."""
        fp = self.fingerprint()
        if any(
            self._remembers(f"valid{key}", fp)
            for key in ((allow_directed, allow_self_loops), (False, False))
        ):
            return self
        check(self, allow_directed, allow_self_loops, fp)
        self.remember(f"valid{(allow_directed, allow_self_loops)}", True, fp)
        return self

    def known_symmetric(self, *, fingerprint: tuple[Any, ...] | None = None) -> bool:
        """Whether this batch passed a validation that checks symmetry (edges and weights),
        remembered for its current tensors: ``A = Aᵀ`` without looking again.
        ``fingerprint``: as :meth:`cached` takes it."""
        fp = self.fingerprint() if fingerprint is None else fingerprint
        return any(self._remembers(f"valid{(False, loops)}", fp) for loops in (False, True))

    def check_range(self, *, fingerprint: tuple[Any, ...] | None = None) -> None:
        """Raise :class:`GraphError` unless every node id of ``edge_index`` is in ``0..N-1``
        (remembered, see :meth:`cached`, whose ``fingerprint`` it takes): the one check a
        kernel cannot do without."""

        def check() -> bool:
            n = self.num_nodes
            if self.edge_index.numel():
                lo, hi = (int(t) for t in torch.aminmax(self.edge_index))
                if lo < 0 or hi >= n:
                    bad = hi if hi >= n else lo
                    raise GraphError(
                        f"edge_index refers to node {bad} but the batch has {n} nodes", "batch"
                    )
            return True

        self.cached("in_range", check, fingerprint=fingerprint)

    def row_pointers(self, *, fingerprint: tuple[Any, ...] | None = None) -> np.ndarray | None:
        """The CSR row pointers ``(N + 1,)`` of the coalesced edges where validation counted
        them for the current tensors (on the host), else ``None``. ``fingerprint``: as
        :meth:`cached` takes it."""
        fp = self.fingerprint() if fingerprint is None else fingerprint
        return self._memo["row_pointers"][1] if self._remembers("row_pointers", fp) else None

    def row_major(
        self, *, fingerprint: tuple[Any, ...] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(edges, order)`` where validation sorted unsorted edges for the current tensors:
        the edges row-major (int64, no repeats: the coalesced edges) and the position of each
        in ``edge_index`` (``edge_index[:, order]`` are those edges, ``edge_weight[order]``
        their weights); else ``None``. ``fingerprint``: as :meth:`cached` takes it."""
        fp = self.fingerprint() if fingerprint is None else fingerprint
        return self._memo["row_major"][1] if self._remembers("row_major", fp) else None

    def is_coalesced(self, *, fingerprint: tuple[Any, ...] | None = None) -> bool:
        """Whether the edges are sorted row-major without repeats (keys ``i·N + j`` strictly
        increasing), as :meth:`from_graphs` and PyG give them (remembered, see :meth:`cached`,
        whose ``fingerprint`` it takes)."""

        def check() -> bool:
            ei = self.edge_index
            if ei.device.type == "cpu" and not ei.requires_grad:
                # numpy on the same memory: ~4× fewer µs than four small torch ops
                e = ei.numpy()
                key = e[0].astype(np.int64) * self.num_nodes + e[1]
                return key.size < 2 or bool((key[1:] > key[:-1]).all())
            ei = ei.to(torch.int64)
            return is_coalesced(ei[0] * self.num_nodes + ei[1])

        return bool(self.cached("coalesced", check, fingerprint=fingerprint))

    @staticmethod
    def from_graphs(graphs: Sequence[Graph], *, dtype: torch.dtype | None = None) -> Batch:
        """Stack graphs block-diagonally (features kept when every graph has them)."""
        sizes = [g.num_nodes for g in graphs]
        ptr = torch.zeros(len(graphs) + 1, dtype=torch.int64)
        if sizes:
            ptr[1:] = torch.cumsum(torch.tensor(sizes, dtype=torch.int64), 0)
        parts, weights = [], []
        weighted = any(not g.is_binary for g in graphs)
        for g, off in zip(graphs, ptr[:-1].tolist()):
            ei, w = g._edges
            parts.append(ei + off)
            if weighted:
                weights.append(torch.from_numpy(np.array(w, dtype=np.float64)))
        # one numpy concatenation and one tensor (a torch call per graph cost ~20 µs of ~100)
        edge_index = (
            torch.from_numpy(np.concatenate(parts, 1))
            if parts
            else torch.zeros(2, 0, dtype=torch.int64)
        )
        batch = torch.repeat_interleave(
            torch.arange(len(graphs), dtype=torch.int64), torch.tensor(sizes, dtype=torch.int64)
        )
        x = None
        if graphs and all(g.x is not None for g in graphs):
            feats = [node_features(np.asarray(g.x)) for g in graphs]
            if len({f.dtype for f in feats}) == 1 and feats[0].dtype.kind in "biuf":
                x = torch.from_numpy(np.concatenate(feats))
            else:  # mixed dtypes: torch's promotion, as before
                x = torch.cat([torch.as_tensor(f) for f in feats])
            if dtype is not None:
                x = x.to(dtype)
        ew = torch.cat(weights) if weighted else None
        if ew is not None and dtype is not None:
            ew = ew.to(dtype)
        out = Batch(edge_index, batch, ptr, x, ew, tuple(g.name for g in graphs))
        # Each graph's edges are row-major without repeats (np.nonzero of its adjacency), and
        # the offsets grow with the graphs: the stacked edges are coalesced too.
        out.cached("coalesced", lambda: True)
        return out

    @staticmethod
    def from_edge_index(
        edge_index: Any,
        batch: Any = None,
        *,
        num_nodes: int,
        edge_weight: Any = None,
        ptr: Any = None,
        x: Any = None,
    ) -> Batch:
        """The one constructor for tensor input: PyG's ``edge_index`` (2, E), its batch vector
        (``None``: one graph), node count, edge weights, node offsets ``ptr`` and features
        ``x``, laid out and checked by the rule of a PyG object (:func:`as_batch`; ``batch``
        and ``ptr`` agree, weights one finite number per edge) but not validated (call
        :meth:`validate`). Called again on the same tensors it gives the same index tensors
        back without reading them (the layout memo of :func:`_from_pyg`), so what a batch
        remembers (:meth:`cached`) is found again."""
        fields = GraphFields(
            edge_index=edge_index,
            batch=batch,
            num_nodes=num_nodes,
            edge_weight=edge_weight,
            ptr=ptr,
            x=x,
        )
        return _from_pyg(fields)

    def to_graphs(self) -> list[Graph]:
        """Split back into dense graphs (for the dense evaluator and tests)."""
        out = []
        ei = self.edge_index
        for g in range(self.num_graphs):
            lo, hi = int(self.ptr[g]), int(self.ptr[g + 1])
            sel = (ei[0] >= lo) & (ei[0] < hi)
            w = None if self.edge_weight is None else self.edge_weight[sel]
            x = None if self.x is None else self.x[lo:hi].numpy()
            gr = _graph_from_local(ei[:, sel] - lo, hi - lo, w, self.graph_label(g), x)
            out.append(gr)
        return out


def _graph_from_local(ei: torch.Tensor, n: int, w: torch.Tensor | None, name: str, x: Any) -> Graph:
    from matlang.graphs import from_edge_index

    return from_edge_index(ei, n, edge_weight=w, name=name, x=x, allow_weights=w is not None)


def as_batch(obj: Any, *, validate: bool = True) -> Batch:
    """Coerce ``obj`` to a :class:`Batch` (see module docstring).

    What is a batch follows the one rule of :mod:`matlang.graphs` (shared with the exact
    evaluator): a PyG-like object by its own ``ptr`` (:func:`~matlang.graphs.pyg_layout`),
    a list, a 3-D array or a ``.g6`` file as several graphs, anything else as one graph.
    Compiled modules and models read A as a simple undirected graph, possibly weighted: a
    directed graph or one with self-loops is refused (the exact evaluator takes them)."""
    if isinstance(obj, Batch):
        return obj.validate() if validate else obj
    if is_pyg_like(obj):
        b = _from_pyg(obj)
        return b.validate() if validate else b
    graphs = as_graphs(obj)
    for g in graphs:
        _check_simple(g)
    return Batch.from_graphs(graphs)


def _check_simple(g: Graph) -> None:
    """A Graph built with ``allow_directed``/``allow_self_loops`` is refused: the compiler's
    lowering reads A as symmetric (Aᵀ = A) without loops."""
    a = g.adjacency
    loops = np.flatnonzero(np.diagonal(a))
    if loops.size:
        raise GraphError(
            f"self-loop at node {int(loops[0])}: compiled modules and models take graphs "
            "without self-loops (matlang.evaluate takes them)",
            g.label(),
        )
    if not np.array_equal(a, a.T):
        i, j = (int(v) for v in np.argwhere(a != a.T)[0])
        raise GraphError(
            f"the graph is directed (entry ({i}, {j}) is {a[i, j].item()!r} but ({j}, {i}) is "
            f"{a[j, i].item()!r}): compiled modules and models read A as symmetric "
            "(matlang.evaluate takes directed graphs)",
            g.label(),
        )


def _from_pyg(data: Any) -> Batch:
    """A PyG ``Data`` or ``Batch`` (duck-typed) as a :class:`Batch`
    (:func:`~runtime.pyg.read_pyg`)."""
    return read_pyg(data, Batch)
