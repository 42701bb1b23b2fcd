"""MLP: the graph-agnostic baseline (each node on its own, then readout)."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from matlang.runtime.batch import Batch
from matlang.runtime.models.base import GraphModel, ModelConfig


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

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        return nn.Linear(in_channels, out_channels)

    def graph_inputs(self, batch: Batch, x: Tensor, **inputs: Any) -> tuple[Any, ...]:
        return ()  # each node on its own
