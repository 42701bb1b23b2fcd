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
    edge_weights,
    is_pyg_like,
    node_features,
    pyg_layout,
)
from matlang.runtime.sparse import is_coalesced

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
        self._check(allow_directed, allow_self_loops, fp)
        if fp is not None:
            self._memo[f"valid{(allow_directed, allow_self_loops)}"] = (fp, True)
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

    def _check(
        self, allow_directed: bool, allow_self_loops: bool, fp: tuple[Any, ...] | None = None
    ) -> None:
        ei = self.edge_index
        if ei.dim() != 2 or ei.shape[0] != 2:
            raise GraphError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}", "batch")
        if ei.dtype not in (torch.int64, torch.int32):
            raise GraphError(f"edge_index must hold integers, got {ei.dtype}", "batch")
        if not ei.numel():
            return
        # One pass over the edge keys decides a valid batch; only a batch that fails takes
        # the slow path below, which finds the first bad edge and names it.
        if self._valid_in_one_pass(allow_directed, allow_self_loops, fp):
            return
        self._check_slowly(allow_directed, allow_self_loops)

    def _valid_in_one_pass(
        self, allow_directed: bool, allow_self_loops: bool, fp: tuple[Any, ...] | None = None
    ) -> bool:
        """Whether the batch is valid, decided from the row-major keys ``i·N + j`` in one
        pass: ids in range, no self-loop, no edge between graphs, and (unless directed is
        allowed) keys strictly increasing (coalesced) with ``Aᵀ = A``. The transpose of a
        coalesced edge list is its column-major order: on the host a counting sort (O(N + E),
        about a third of a comparison sort of the keys), on a device one sort of the reversed
        keys. ``False`` leaves the verdict, and the message, to :meth:`_check_slowly`;
        the range and coalescing it saw are remembered either way (``fp``: the fingerprint
        the caller took, else taken here)."""
        n = self.num_nodes
        ei = self.edge_index
        host = ei.device.type == "cpu"
        e: Any
        if host:
            e = ei.numpy()
            e = e if e.dtype == np.int64 else e.astype(np.int64)
            # one reduction for both ends: read as uint64, a negative id is past 2⁶³ > n
            if e.size and int(e.view(np.uint64).max()) >= n:
                return False
        else:
            e = ei.to(torch.int64)
            lo, hi = (int(t) for t in torch.aminmax(e))
            if lo < 0 or hi >= n:
                return False
        fp = self.fingerprint() if fp is None else fp
        if fp is not None:
            self._memo["in_range"] = (fp, True)
        row, col = e[0], e[1]
        b = self.batch if self.num_graphs > 1 else None
        if host:  # in chunks: a few MB of temporaries, not E-long keys (80 MB at E = 10⁷)
            coalesced, loops, crossing = _scan_edges(row, col, n, None if b is None else b.numpy())
        else:
            key = row * n + col
            coalesced = bool((key[1:] > key[:-1]).all()) if key.shape[0] > 1 else True
            loops = bool((row == col).any())
            crossing = b is not None and bool((b[row] != b[col]).any())
        if fp is not None:
            self._memo["coalesced"] = (fp, coalesced)
        if (not allow_self_loops and loops) or crossing:
            return False
        if allow_directed:
            return True
        if not coalesced:
            return False  # the sort-based check decides (weighted repeats, a missing reverse)
        w = self.edge_weight
        if host:
            indptr = _row_pointers(row, n)
            if fp is not None:  # the stage's edge mask has the same rows: not counted again
                self._memo["row_pointers"] = (fp, indptr)
            return _symmetric_sorted(e, None if w is None else w.detach().numpy(), n, indptr)
        return _symmetric_by_sort(row * n + col, row, col, w, n)

    def _check_slowly(self, allow_directed: bool, allow_self_loops: bool) -> None:
        n = self.num_nodes
        self.check_range()
        ei = self.edge_index.to(torch.int64)
        # One graph (a constant batch vector, O(N) to see) has no edge between graphs.
        b_lo, b_hi = torch.aminmax(self.batch)
        if int(b_lo) != int(b_hi):
            cross = self.batch[ei[0]] != self.batch[ei[1]]
            if bool(cross.any()):
                k = int(torch.nonzero(cross)[0])
                u, v = int(ei[0, k]), int(ei[1, k])
                raise GraphError(
                    f"edge ({u}, {v}) joins graph {self.graph_label(int(self.batch[u]))} "
                    f"to graph {self.graph_label(int(self.batch[v]))}",
                    "batch",
                )
        if not allow_self_loops:
            loops = ei[0] == ei[1]
            if bool(loops.any()):
                u = int(ei[0, torch.nonzero(loops)[0]])
                g = int(self.batch[u])
                raise GraphError(f"self-loop at node {u - int(self.ptr[g])}", self.graph_label(g))
        if not allow_directed:
            self._check_symmetric(ei, ei[0] * n + ei[1])

    def _check_symmetric(self, ei: torch.Tensor, key: torch.Tensor) -> None:
        """No edge stored twice (unweighted), and each edge's reverse stored (of equal weight)."""
        n = self.num_nodes
        rkey = ei[1] * n + ei[0]
        # One sort serves the duplicate check and the reverse-edge lookup.
        order = torch.argsort(key)
        skey = key[order]
        if self.edge_weight is None:
            if skey.numel() > 1 and bool((skey[1:] == skey[:-1]).any()):
                k = int(torch.nonzero(skey[1:] == skey[:-1])[0])
                u, v = int(skey[k] // n), int(skey[k] % n)
                g = int(self.batch[u])
                o = int(self.ptr[g])
                raise GraphError(f"edge ({u - o}, {v - o}) is stored twice", self.graph_label(g))
        pos = torch.searchsorted(skey, rkey).clamp(max=max(key.numel() - 1, 0))
        found = skey[pos] == rkey
        if self.edge_weight is not None:
            found &= self.edge_weight[order][pos] == self.edge_weight
        missing = ~found
        if bool(missing.any()):
            k = int(torch.nonzero(missing)[0])
            u, v = int(ei[0, k]), int(ei[1, k])
            g = int(self.batch[u])
            o = int(self.ptr[g])
            weight = " of the same weight" if self.edge_weight is not None else ""
            raise GraphError(
                f"edge ({u - o}, {v - o}) has no reverse edge ({v - o}, {u - o}){weight}: "
                "store both directions of each undirected edge",
                self.graph_label(g),
            )

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


#: Edges per chunk of the host's validation scan (:func:`_scan_edges`): 2 MB per temporary.
SCAN_CHUNK = 1 << 18


def _scan_edges(
    row: np.ndarray, col: np.ndarray, n: int, batch: np.ndarray | None
) -> tuple[bool, bool, bool]:
    """``(coalesced, any self-loop, any edge between graphs)`` of int64 edges, in chunks of
    :data:`SCAN_CHUNK` (keys ``i·n + j`` strictly increasing across chunks too)."""
    coalesced, loops, crossing = True, False, False
    last = -1
    for a in range(0, row.size, SCAN_CHUNK):
        r, c = row[a : a + SCAN_CHUNK], col[a : a + SCAN_CHUNK]
        key = r * n + c
        if coalesced:
            coalesced = int(key[0]) > last and bool((key[1:] > key[:-1]).all())
            last = int(key[-1])
        loops = loops or bool((r == c).any())
        if batch is not None and not crossing:
            crossing = bool((batch[r] != batch[c]).any())
    return coalesced, loops, crossing


def _row_pointers(row: np.ndarray, n: int) -> np.ndarray:
    """CSR row pointers of sorted rows: int32 where every index fits (see
    :func:`_symmetric_sorted`), else int64."""
    itype = np.int32 if max(n, row.size) < 2**31 - 1 else np.int64
    indptr = np.zeros(n + 1, dtype=itype)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    return indptr


def _symmetric_sorted(
    e: np.ndarray, weight: np.ndarray | None, n: int, indptr: np.ndarray | None = None
) -> bool:
    """Whether a row-major sorted int64 edge list ``e`` (2, E) without repeats equals its
    transpose (weights too): the CSC form of A, read as CSR, is Aᵀ with sorted rows, built by
    scipy's counting sort (O(n + E)); A = Aᵀ iff the arrays agree. With int32 indices where
    they fit (half the memory of the transposed copy: 40 MB, not 80, at E = 10⁷). ``indptr``:
    the rows' pointers (:func:`_row_pointers`) where the caller counted them."""
    row, col = e[0], e[1]
    if indptr is None:
        indptr = _row_pointers(row, n)
    itype = indptr.dtype
    col = np.ascontiguousarray(col, dtype=itype)
    data = np.zeros(col.size, dtype=np.int8) if weight is None else np.ascontiguousarray(weight)
    t_ptr = np.empty(n + 1, dtype=itype)
    t_idx = np.empty(col.size, dtype=itype)
    t_data = np.empty_like(data)
    try:  # the kernel itself: the public constructor's checks cost as much as it at n = 10³
        from scipy.sparse._sparsetools import csr_tocsc

        csr_tocsc(n, n, indptr, col, data, t_ptr, t_idx, t_data)
    except (ImportError, TypeError, ValueError):  # no private module, or an unusual dtype
        import scipy.sparse as sps

        t = sps.csr_matrix((data, col, indptr), shape=(n, n)).tocsc()
        t_ptr, t_idx, t_data = t.indptr, t.indices, t.data
    same = np.array_equal(t_ptr, indptr) and np.array_equal(t_idx, col)
    return same and (weight is None or np.array_equal(t_data, data))


def _symmetric_by_sort(
    key: torch.Tensor, row: torch.Tensor, col: torch.Tensor, weight: torch.Tensor | None, n: int
) -> bool:
    """Whether coalesced edges (``key = row·n + col`` strictly increasing) equal their
    transpose, weights too: the reversed keys, sorted, are the keys (one sort, on the edges'
    device), and the weight of each edge is that of its reverse."""
    rkey, perm = torch.sort(col * n + row)
    if not torch.equal(rkey, key):
        return False
    return weight is None or bool(torch.equal(weight[perm], weight))


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
    """The key of a PyG object's layout memo (see :func:`_from_pyg`), ``None`` when it cannot
    be remembered. Nothing here reads a tensor's values: no device synchronisation."""
    from matlang.graphs import _attr

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


def _from_pyg(data: Any) -> Batch:
    """A PyG ``Data`` or ``Batch`` (duck-typed) as a :class:`Batch`: its graphs are those of
    :func:`~matlang.graphs.pyg_layout` (its own ``ptr``, empty graphs anywhere).

    The layout (int64 edges, batch vector, ``ptr``, checked weights) is remembered on the
    caller's ``edge_index`` tensor, keyed by the identities and modification counters of the
    object's ``ptr``, ``batch``, ``edge_weight`` and its ``num_nodes``/``num_graphs``: the same
    ``Data`` called again gets the same tensors back without a look at their values (no host
    copy), so the batch memo (:func:`_shared_memo`) finds its validation and graph constants;
    with the same ``x`` tensor too, the same :class:`Batch` object comes back. The memo holds
    the tensors it was keyed by (their ids stay theirs) and dies with ``edge_index``."""
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
            if last and last[0].x is x:  # the same features too: the same Batch object
                return last[0]  # type: ignore[no-any-return]
            out = Batch(ei64, b, ptr, x, w, ())
            last[:] = [out]
            return out
    ei64, b, ptr, w = _pyg_layout_tensors(src, ei)
    out = Batch(ei64, b, ptr, _features(src, int(b.numel())), w, ())
    if key is not None:
        from matlang.graphs import _attr

        held = tuple(_attr(src, name) for name in ("ptr", "batch", "edge_weight"))
        try:
            setattr(ei, _LAYOUT_ATTRIBUTE, (key, (ei64, b, ptr, w), held, [out]))
        except (AttributeError, RuntimeError):  # a tensor subclass without attributes
            pass
    return out


#: What :func:`_from_pyg` reads of a PyG object.
_FIELDS = ("edge_index", "ptr", "batch", "num_graphs", "num_nodes", "x", "edge_attr", "edge_weight")


class _Fields:
    """The attributes :func:`_from_pyg` reads of a PyG ``Data``, taken from its attribute dict:
    PyG's accessors cost µs each, and an absent key (``ptr``, ``num_graphs``) more, by an
    exception. The same values: ``Data``'s properties (``x``, ``edge_index``, ``batch``, ...)
    read the same dict, and a key it lacks reads as ``None``."""

    __slots__ = _FIELDS

    def __init__(self, mapping: dict[str, Any]) -> None:
        for name in _FIELDS:
            setattr(self, name, mapping.get(name))


def _plain_fields(data: Any) -> _Fields | None:
    """:class:`_Fields` of a PyG ``Data`` itself (not a subclass, whose properties may differ)
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
    return _Fields(mapping)


def _features(data: Any, n: int) -> torch.Tensor | None:
    """A PyG object's ``x`` as ``(N, d)`` (one row per node, checked by shape)."""
    x = getattr(data, "x", None)
    x = None if x is None else torch.as_tensor(x)
    if x is not None and x.dim() == 1:  # one feature per node
        x = x.unsqueeze(-1)
    if x is not None and (x.dim() == 0 or x.shape[0] != n):
        raise GraphError(f"x of shape {tuple(x.shape)} has not one row per node ({n})", "batch")
    return x


class _LayoutView:
    """What :func:`~matlang.graphs.pyg_layout` reads of a PyG object whose node count it knows:
    its layout and no edges (it reads them only to infer the node count), so a batch on a GPU
    does not copy its (2, E) edges to the host to be laid out."""

    def __init__(self, data: Any, num_nodes: Any) -> None:
        from matlang.graphs import _attr

        self.edge_index = np.zeros((2, 0), dtype=np.int64)
        self.num_nodes = num_nodes
        self.ptr, self.batch, self.num_graphs = (
            _attr(data, name) for name in ("ptr", "batch", "num_graphs")
        )

    @staticmethod
    def of(data: Any) -> Any:
        from matlang.graphs import _attr

        n = _attr(data, "num_nodes")
        return data if n is None else _LayoutView(data, n)


def _pyg_layout_tensors(
    data: Any, ei: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """int64 edges, batch vector, ``ptr`` and checked weights of a PyG object (read and
    checked on the host: once per object, see :func:`_from_pyg`)."""
    if ei.is_floating_point() or ei.is_complex() or ei.dtype == torch.bool:
        # a cast would silently truncate node ids such as 0.5
        raise GraphError(f"edge_index must hold integers, got {ei.dtype}", "batch")
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}", "batch")
    ei = ei.to(torch.int64)
    n, offsets = pyg_layout(_LayoutView.of(data))
    if offsets is None:  # one graph
        offsets = np.array([0, n], dtype=np.int64)
    ptr = torch.from_numpy(offsets).to(ei.device)
    if offsets.size == 2:  # one graph
        b = torch.zeros(n, dtype=torch.int64, device=ei.device)
    elif ei.device.type == "cpu":  # numpy's repeat: a tenth of torch's at small sizes
        graph_ids = np.arange(offsets.size - 1, dtype=np.int64)
        b = torch.from_numpy(np.repeat(graph_ids, np.diff(offsets)))
    else:
        b = torch.repeat_interleave(
            torch.arange(ptr.numel() - 1, device=ei.device), ptr[1:] - ptr[:-1], output_size=n
        )
    _features(data, n)  # x is checked before the weights, as always
    w = None
    if edge_weights(data, int(ei.shape[1])) is not None:  # checked: one finite number per edge
        # the caller's tensor itself (a learned weight keeps its gradient)
        w = torch.as_tensor(data.edge_weight).reshape(int(ei.shape[1]))
    return ei, b, ptr, w
