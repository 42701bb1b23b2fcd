"""Hand-written torch-sparse implementations of the benchmarked sentences.

What an engineer would write with ``torch_sparse`` for one sentence, taking the batch's
``edge_index`` as it comes (an adjacency ``SparseTensor`` is built once per call, as a PyG layer
does) and nothing else: no validation, no interpreter, no generality. Each returns the same
value the compiled module returns, in ``float32``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from matlang.runtime.batch import Batch


def _adjacency(batch: Batch, weighted: bool) -> object:
    from torch_sparse import SparseTensor

    n = batch.num_nodes
    row, col = batch.edge_index[0], batch.edge_index[1]
    value = torch.ones(row.numel()) if weighted else None
    return SparseTensor(row=row, col=col, value=value, sparse_sizes=(n, n))


def _triangle_weights(a: object, n: int) -> Tensor:
    """``(A ⊙ A²)`` on A's entries: ``A²`` by torch_sparse, read at A's (sorted) entries."""
    a2 = a @ a  # type: ignore[operator]
    r2, c2, v2 = a2.coo()
    ra, ca, _ = a.coo()  # type: ignore[attr-defined]
    k2, ka = r2 * n + c2, ra * n + ca  # both sorted row-major
    if k2.numel() == 0:
        return torch.zeros(ka.numel())
    pos = torch.searchsorted(k2, ka).clamp(max=k2.numel() - 1)
    return torch.where(k2[pos] == ka, v2[pos], torch.zeros(()))


def custom_l1(batch: Batch) -> Tensor:
    """``𝟏ᵀ A diag(exp(−A²𝟏)) A 𝟏`` per graph: ``d = A𝟏``, ``w = exp(−A d) ⊙ d``, ``𝟏ᵀ A w``."""
    from torch_scatter import scatter

    a = _adjacency(batch, weighted=False)
    d = a @ torch.ones(batch.num_nodes, 1)  # type: ignore[operator]
    w = torch.exp(-(a @ d)) * d  # type: ignore[operator]
    out = (a @ w).squeeze(-1)  # type: ignore[operator]
    return scatter(out, batch.batch, dim=0, dim_size=batch.num_graphs, reduce="sum")


def masked_l3(batch: Batch) -> Tensor:
    """``(A ⊙ A²)² 𝟏`` per node: ``B = A ⊙ A²`` on A's edges, then ``B (B 𝟏)``."""
    n = batch.num_nodes
    a = _adjacency(batch, weighted=True)
    b = a.set_value(_triangle_weights(a, n), layout="coo")  # type: ignore[attr-defined]
    return (b @ (b @ torch.ones(n, 1))).squeeze(-1)


def trace_a3(batch: Batch) -> Tensor:
    """``tr(A³)`` per graph: ``Σ_ij A_ij (A²)_ji`` = the sum of ``A ⊙ A²`` (A is symmetric)."""
    from torch_scatter import scatter

    n = batch.num_nodes
    a = _adjacency(batch, weighted=True)
    t = _triangle_weights(a, n)
    row = a.storage.row()  # type: ignore[attr-defined]
    return scatter(t, batch.batch[row], dim=0, dim_size=batch.num_graphs, reduce="sum")


#: The benchmarked sentences, each with its hand-written implementation.
HANDWRITTEN: dict[str, Callable[[Batch], Tensor]] = {
    "𝟏ᵀ A diag(exp(−A²𝟏)) A 𝟏": custom_l1,
    "(A ⊙ A²)² 𝟏": masked_l3,
    "tr(A³)": trace_a3,
}

#: A short name for each sentence (file names, table rows).
SHORT: dict[str, str] = {
    "𝟏ᵀ A diag(exp(−A²𝟏)) A 𝟏": "L1 custom",
    "(A ⊙ A²)² 𝟏": "L3 masked",
    "tr(A³)": "tr(A³)",
}

#: The fragment of each sentence (paper, Remarks 1–4).
LEVEL: dict[str, str] = {
    "𝟏ᵀ A diag(exp(−A²𝟏)) A 𝟏": "L1+",
    "(A ⊙ A²)² 𝟏": "L3",
    "tr(A³)": "L2",
}

__all__ = ["HANDWRITTEN", "LEVEL", "SHORT", "custom_l1", "masked_l3", "trace_a3"]
