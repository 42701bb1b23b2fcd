"""The graphs the benchmarks run on: Erdős–Rényi graphs, one large graph or a batch of small ones.

Two samplers of the same distribution G(n, p) with ``p = avg_degree / (n - 1)``:

- ``"generators"``: :func:`runtime.generators.erdos_renyi`, one dense n×n draw per graph. It gives
  :class:`~matlang.graphs.Graph` objects, which the dense evaluator needs, but takes O(n²) memory,
  so it is used up to n = 10⁴.
- ``"sparse"``: :func:`sparse_erdos_renyi` below, O(E) memory: the number of edges is drawn from
  its binomial law, then that many distinct pairs uniformly. Used for the scaling runs (up to
  10⁶ nodes), where a dense draw would need terabytes.

Every batch's ``edge_index`` holds both directions of each edge, sorted row-major without
repeats (the order :attr:`matlang.graphs.Graph.edge_index` gives).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from matlang.graphs import Graph
from matlang.runtime.batch import Batch

SAMPLERS = ("generators", "sparse")


def sparse_erdos_renyi(n: int, avg_degree: float, seed: int = 0) -> torch.Tensor:
    """``edge_index`` (2, E) of one G(n, p) graph, ``p = avg_degree / (n - 1)``, in O(E) memory.

    G(n, p) given its edge count m is uniform over the m-subsets of the ``N = n(n-1)/2`` pairs, so
    drawing ``m ~ Binomial(N, p)`` and then m distinct pairs uniformly is an exact G(n, p) draw.
    Pairs are drawn as ordered pairs ``u ≠ v`` (each unordered pair equally likely) until m
    distinct ones are found, then m of them are kept at random.
    """
    rng = np.random.default_rng(seed)
    pairs = n * (n - 1) // 2
    p = avg_degree / (n - 1) if n > 1 else 0.0
    if not 0.0 <= p <= 0.5:
        raise ValueError(f"sparse_erdos_renyi needs 0 <= p <= 1/2, got p = {p:.3g}")
    m = int(rng.binomial(pairs, p)) if pairs else 0
    keys = np.zeros(0, dtype=np.int64)
    while keys.size < m:
        want = 2 * (m - keys.size) + 16
        u = rng.integers(0, n, want, dtype=np.int64)
        v = rng.integers(0, n, want, dtype=np.int64)
        keep = u != v
        lo, hi = np.minimum(u, v)[keep], np.maximum(u, v)[keep]
        keys = np.unique(np.concatenate([keys, lo * n + hi]))
    if keys.size > m:
        keys = rng.choice(keys, m, replace=False)
    i, j = keys // n, keys % n
    both = np.sort(np.concatenate([i * n + j, j * n + i]))  # row-major, both directions
    return torch.from_numpy(np.stack([both // n, both % n]))


@dataclass(frozen=True)
class Workload:
    """``graphs`` Erdős–Rényi graphs of ``n`` nodes each (one batch), drawn by ``sampler``."""

    n: int
    avg_degree: float = 10.0
    graphs: int = 1
    sampler: str = "sparse"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {self.sampler!r}; known: {', '.join(SAMPLERS)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Workload:
        return cls(**d)

    def label(self) -> str:
        many = f"{self.graphs}× " if self.graphs > 1 else ""
        return f"{many}ER(n={self.n:,}, d={self.avg_degree:g})"

    def build(self) -> tuple[Batch, list[Graph] | None]:
        """The batch, and the dense graphs when the sampler made them (``"generators"``)."""
        if self.sampler == "generators":
            from matlang.runtime.generators import erdos_renyi

            gs = [
                erdos_renyi(self.n, avg_degree=self.avg_degree, seed=self.seed + k)
                for k in range(self.graphs)
            ]
            return Batch.from_graphs(gs), gs
        parts = [
            sparse_erdos_renyi(self.n, self.avg_degree, self.seed + k) + k * self.n
            for k in range(self.graphs)
        ]
        edge_index = torch.cat(parts, 1)
        batch = torch.arange(self.graphs).repeat_interleave(self.n)
        ptr = torch.arange(self.graphs + 1) * self.n
        return Batch(edge_index, batch, ptr), None


__all__ = ["SAMPLERS", "Workload", "sparse_erdos_renyi"]
