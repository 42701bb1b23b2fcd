"""Contestants from the field's libraries (GraphBLAS, scipy, PyG) and matlang's matching calls.

The speed targets of the graph constants (feature channels, a fresh batch, the scaling of the
graph-constant stage) and of ``SentenceConv`` (against PyG's convolutions) are
ratios against these peers, timed interleaved in one process on one thread
(:func:`benchmarks.perf.cases.run_case`). Every peer below is written plainly from the
libraries' documented calls, the way a user of that library would write it.

**Graph constants** (``kind`` ``"constants"``, ``"graphblas"``, ``"scipy"``): each call starts
from the batch's ``edge_index`` tensor and nothing prepared. matlang's side is the compiled
module on a batch whose memo is emptied first, so that it computes its graph constants (the
GraphBLAS stage) on every call, as for a new batch; its validation is off (measured on its own
by the ``fresh`` group).

**Propagation** (``"channels"``, ``"pyg-spmm"``, ``"ts-matmul"``): forward (+ backward) on
``(N, d)`` features, the adjacency prebuilt on both sides: matlang reuses one validated batch
(its graph constants and operators are remembered), PyG is handed a prebuilt ``SparseTensor``
(and a prebuilt CSR tensor, whichever PyG path is faster counts).

**Layers** (``"layer"``, ``"pyg-conv"``): ``SentenceConv`` against ``GCNConv`` (cached
normalisation) and ``GINConv`` on a prebuilt ``adj_t``; forward + backward into the weights and
``x`` (a layer in the middle of a model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from benchmarks.perf import cases
from benchmarks.perf.cases import Prepared
from matlang.graphs import Graph
from matlang.runtime.batch import Batch

#: The graph-constant sentences of those targets.
CONSTANT_SENTENCES = ("A ⊙ A²", "tr(A³)", "(A ⊙ A²)² 𝟏")

#: The propagation sentences: L1 and an L3 node sentence, with an (N, d) input.
CHANNEL_SENTENCES = ("input h; A h", "input h; relu(A h) ⊙ ((A ⊙ A²) h)")

SHORT_PEER = {
    "A ⊙ A²": "A ⊙ A² on E",
    "tr(A³)": "tr(A³)",
    "(A ⊙ A²)² 𝟏": "(A ⊙ A²)² 𝟏",
    "input h; A h": "A h",
    "input h; relu(A h) ⊙ ((A ⊙ A²) h)": "relu(A h) ⊙ ((A ⊙ A²) h)",
}


#: A batch as a new one (nothing remembered): see :func:`benchmarks.perf.cases.fresh_batch`.
fresh = cases.fresh_batch


def _numpy_edges(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    ei = batch.edge_index.numpy()
    return ei[0], ei[1]


def _per_graph(batch: Batch, nodes: np.ndarray, values: np.ndarray) -> Tensor:
    """Per-graph sums of node values given at node ids ``nodes``."""
    graph = batch.batch.numpy()[nodes]
    return torch.from_numpy(np.bincount(graph, values, minlength=batch.num_graphs))


# --------------------------------------------------------------------------- graph constants


def _constants(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    import matlang

    s = c["sentence"]
    # cache=False: computed on every call like the peers' (a new graph, not an epoch's repeat)
    model = matlang.compile(s, validate=False, dtype=c.get("dtype", "float32"), cache=False)

    def call() -> Tensor:
        with torch.no_grad():
            b = fresh(batch)
            if model.plan.level == "matrix":  # the values on the mask (E entries for A ⊙ A²)
                return model.edge_values(b)[0][1]
            return model(b)

    return Prepared(call, info={"implementation": f"matlang.compile({s!r}) on a new batch"})


def _gb_adjacency(batch: Batch) -> Any:
    import graphblas as gb

    r, c = _numpy_edges(batch)
    n = batch.num_nodes
    return gb.Matrix.from_coo(r, c, 1, nrows=n, ncols=n, dtype=gb.dtypes.INT64)


def _gb_triangle_weights(a: Any) -> Any:
    """``A ⊙ A²`` on A's edges: the masked product, never the full A² (0/1 A: plus_pair)."""
    import graphblas as gb

    t = gb.Matrix(gb.dtypes.INT64, a.nrows, a.ncols)
    t(a.S) << a.mxm(a, gb.semiring.plus_pair)
    return t


def gb_triangle_weights(batch: Batch) -> Tensor:
    _, _, v = _gb_triangle_weights(_gb_adjacency(batch)).to_coo()
    return torch.from_numpy(v)


def gb_trace_a3(batch: Batch) -> Tensor:
    """``tr(A³)`` per graph = the sum of ``A ⊙ A²`` over each graph's rows."""
    import graphblas as gb

    per_node = _gb_triangle_weights(_gb_adjacency(batch)).reduce_rowwise(gb.monoid.plus).new()
    idx, vals = per_node.to_coo()
    return _per_graph(batch, idx, vals)


def gb_trace_a3_lagraph(batch: Batch) -> Tensor:
    """``tr(A³) = 6 · triangles``, triangles by LAGraph's dot-product method on the strictly
    lower triangle ``L``: ``C⟨L⟩ = L Lᵀ`` (plus_pair), each triangle counted once."""
    import graphblas as gb

    a = _gb_adjacency(batch)
    low = gb.select.tril(a, -1).new()
    t = gb.Matrix(gb.dtypes.INT64, a.nrows, a.ncols)
    t(low.S) << low.mxm(low.T, gb.semiring.plus_pair)
    idx, vals = t.reduce_rowwise(gb.monoid.plus).new().to_coo()
    return _per_graph(batch, idx, 6 * vals)


def gb_masked_l3(batch: Batch) -> Tensor:
    """``(A ⊙ A²)² 𝟏 = T (T 𝟏)`` with ``T = A ⊙ A²``."""
    import graphblas as gb

    t = _gb_triangle_weights(_gb_adjacency(batch))
    d = t.reduce_rowwise(gb.monoid.plus).new()
    y = t.mxv(d, gb.semiring.plus_times).new()
    return torch.from_numpy(y.to_dense(fill_value=0))


def _scipy_adjacency(batch: Batch) -> Any:
    """CSR straight from the sorted edges (row pointers by counting, no sort)."""
    from scipy import sparse as sp

    r, c = _numpy_edges(batch)
    n = batch.num_nodes
    rowptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=rowptr[1:])
    return sp.csr_array((np.ones(r.size, dtype=np.int64), c, rowptr), shape=(n, n))


def scipy_triangle_weights(batch: Batch) -> Tensor:
    a = _scipy_adjacency(batch)
    return torch.from_numpy((a @ a).multiply(a).tocsr().data)


def scipy_trace_a3(batch: Batch) -> Tensor:
    a = _scipy_adjacency(batch)
    per_node = np.asarray((a @ a).multiply(a).sum(axis=1)).reshape(-1)
    return _per_graph(batch, np.arange(batch.num_nodes), per_node)


def scipy_masked_l3(batch: Batch) -> Tensor:
    a = _scipy_adjacency(batch)
    t = (a @ a).multiply(a).tocsr()
    return torch.from_numpy(t @ (t @ np.ones(batch.num_nodes, dtype=np.int64)))


PEER_CONSTANTS: dict[str, dict[str, Callable[[Batch], Tensor]]] = {
    "graphblas": {
        "A ⊙ A²": gb_triangle_weights,
        "tr(A³)": gb_trace_a3,
        "(A ⊙ A²)² 𝟏": gb_masked_l3,
    },
    "graphblas-lagraph": {"tr(A³)": gb_trace_a3_lagraph},
    "scipy": {
        "A ⊙ A²": scipy_triangle_weights,
        "tr(A³)": scipy_trace_a3,
        "(A ⊙ A²)² 𝟏": scipy_masked_l3,
    },
}


def _peer_constants(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    fn = PEER_CONSTANTS[c["kind"]][c["sentence"]]
    return Prepared(lambda: fn(batch), info={"implementation": f"{__name__}.{fn.__name__}"})


# --------------------------------------------------------------------------- propagation


def _features(batch: Batch, d: int, dtype: torch.dtype = torch.float32) -> Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn(batch.num_nodes, d, generator=g, dtype=dtype)


def _step(
    fn: Callable[[Tensor], Tensor], x: Tensor, backward: bool, params: list[Tensor]
) -> Callable[[], Tensor]:
    """One forward (+ backward of the sum) of ``fn`` on ``x``; returns the detached output."""
    leaves = [x, *params]

    def call() -> Tensor:
        if not backward:
            with torch.no_grad():
                return fn(x)
        for p in leaves:
            p.grad = None
        out = fn(x)
        out.sum().backward()
        return out.detach()

    return call


def _channels(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    import matlang

    s, d, backward = c["sentence"], int(c["d"]), bool(c.get("backward"))
    # c["cache"]: graph constants kept per graph, as a dataset's next epoch sees them
    model = matlang.compile(s, validate=True, cache=bool(c.get("cache", False)))
    x = _features(batch, d).requires_grad_(backward)
    if c.get("fresh"):  # a new batch every call (validated when the module validates)
        model.validate = bool(c.get("validate", True))
        fn = _step(lambda h: model(fresh(batch), inputs={"h": h}), x, backward, [])
    else:  # one batch reused: validated once, its graph constants and operators remembered
        fn = _step(lambda h: model(batch, inputs={"h": h}), x, backward, [])
    return Prepared(fn, info={"implementation": f"matlang.compile({s!r})"})


def _sparse_tensor(batch: Batch, value: Tensor | None = None) -> Any:
    from torch_sparse import SparseTensor

    n = batch.num_nodes
    ei = batch.edge_index
    return SparseTensor(row=ei[0], col=ei[1], value=value, sparse_sizes=(n, n))


def _support_values(batch: Batch) -> Tensor:
    """``A ⊙ A²`` on A's edges, in edge order (computed once, before timing: a prebuilt support)."""
    a = _scipy_adjacency(batch)
    t = (a @ a).multiply(a).tocsr()
    r, c = _numpy_edges(batch)
    return torch.from_numpy(np.asarray(t[r, c]).reshape(-1).astype(np.float32))


def _pyg_propagation(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    """The sentence by hand on prebuilt adjacencies: ``torch_geometric.utils.spmm`` on a
    ``SparseTensor`` (``"pyg-spmm"``) or a torch CSR tensor (``"pyg-spmm-csr"``), or
    ``torch_sparse.matmul`` (``"ts-matmul"``)."""
    from torch_geometric.utils import spmm
    from torch_sparse import matmul

    s, d, backward, kind = c["sentence"], int(c["d"]), bool(c.get("backward")), c["kind"]
    x = _features(batch, d).requires_grad_(backward)
    adjs = [_sparse_tensor(batch)]
    if s != CHANNEL_SENTENCES[0]:
        adjs.append(_sparse_tensor(batch, _support_values(batch)))
    if kind == "pyg-spmm-csr":
        adjs = [a.to_torch_sparse_csr_tensor() for a in adjs]
    for a in adjs:  # what PyG keeps on a prebuilt adj_t after the first backward
        if not isinstance(a, Tensor):
            a.storage.rowptr()
            a.storage.csr2csc()
            a.storage.colptr()

    def mm(a: Any, h: Tensor) -> Tensor:
        return matmul(a, h) if kind == "ts-matmul" else spmm(a, h, reduce="sum")

    if s == CHANNEL_SENTENCES[0]:
        fn = _step(lambda h: mm(adjs[0], h), x, backward, [])
    else:
        fn = _step(lambda h: torch.relu(mm(adjs[0], h)) * mm(adjs[1], h), x, backward, [])
    return Prepared(fn, info={"implementation": f"{__name__}._pyg_propagation ({kind})"})


# --------------------------------------------------------------------------- layers


def _layer(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    from matlang.compiler.layers import SentenceConv

    d = int(c["d"])
    torch.manual_seed(0)
    conv = SentenceConv(d, d, list(c["supports"]))
    x = _features(batch, d).requires_grad_(True)
    ei, b = batch.edge_index, batch.batch
    fn = _step(lambda h: conv(h, ei, b), x, True, list(conv.parameters()))
    return Prepared(fn, info={"implementation": f"SentenceConv({d}, {d}, {c['supports']})"})


def _pyg_conv(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    from torch_geometric.nn import GCNConv, GINConv

    d = int(c["d"])
    torch.manual_seed(0)
    if c["conv"] == "gcn":
        conv: Any = GCNConv(d, d, cached=True)
    else:
        conv = GINConv(torch.nn.Linear(d, d))
    adj_t = _sparse_tensor(batch)
    x = _features(batch, d).requires_grad_(True)
    fn = _step(lambda h: conv(h, adj_t), x, True, list(conv.parameters()))
    return Prepared(fn, info={"implementation": f"{type(conv).__name__}({d}, {d}) on adj_t"})


BUILDERS: dict[str, Callable[[dict[str, Any], Batch, list[Graph] | None], Prepared]] = {
    "constants": _constants,
    "graphblas": _peer_constants,
    "graphblas-lagraph": _peer_constants,
    "scipy": _peer_constants,
    "channels": _channels,
    "pyg-spmm": _pyg_propagation,
    "pyg-spmm-csr": _pyg_propagation,
    "ts-matmul": _pyg_propagation,
    "layer": _layer,
    "pyg-conv": _pyg_conv,
}

#: The modules a kind needs beyond the project's core.
NEEDS: dict[str, tuple[str, ...]] = {
    "pyg-spmm": ("torch_geometric", "torch_sparse"),
    "pyg-spmm-csr": ("torch_geometric", "torch_sparse"),
    "ts-matmul": ("torch_geometric", "torch_sparse"),
    "pyg-conv": ("torch_geometric", "torch_sparse"),
}

# the peers' kinds become contestant kinds of every case run after this import
cases.BUILDERS.update(BUILDERS)
cases.NEEDS.update(NEEDS)

__all__ = ["BUILDERS", "CHANNEL_SENTENCES", "CONSTANT_SENTENCES", "NEEDS", "SHORT_PEER", "fresh"]
