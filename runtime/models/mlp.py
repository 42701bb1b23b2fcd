"""MLP: the graph-agnostic baseline (each node on its own, then readout)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from torch import Tensor, nn

from runtime.batch import Batch
from runtime.models.base import GraphModel, ModelConfig, Task
from runtime.preprocess import PreprocessCache


class MLP(GraphModel):
    r"""A graph-agnostic baseline: the same MLP on every node, then readout and head.

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\big(H^{(l)} W^{(l)} + \mathbf{1} b^{(l)\top}\big)

    (Eq. 1 with the single support ``C = I``; it sees node features only.)

    Args:
        in_dim: node feature width.
        out_dim: output width.
        config: a :class:`~runtime.models.base.ModelConfig`.
        task: ``"graph"`` (readout, then head: one output per graph) or ``"node"`` (head on
            every node).
        backend: sparse backend (``None``: :func:`runtime.sparse.default_backend`).
        cache: the :class:`~runtime.preprocess.PreprocessCache` for spectra and supports
            (default: a new one owned by the model, ``model.cache``).

    Shapes:
        input: a batch with ``N`` nodes in ``G`` graphs; output ``(G, out_dim)`` or
        ``(N, out_dim)``.
    """

    config_class = ModelConfig

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        config: ModelConfig | None = None,
        task: Task = "graph",
        backend: str | None = None,
        cache: PreprocessCache | None = None,
    ) -> None:
        super().__init__(in_dim, out_dim, config, task, backend, cache)
        cfg = self.config
        dims = [in_dim] + [cfg.hidden] * cfg.layers
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(dims))
        self.build_head()

    def embed(self, batch: Batch, x: Tensor, **inputs: Any) -> Tensor:
        for lin in self.layers:
            x = lin(self.dropout(x)).relu()
        return x
