"""GIN (Xu et al., 2019) with a trainable ε."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from matlang.errors import GraphError, MatlangError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.last_built import LastBuilt
from matlang.runtime.models.base import GraphModel, ModelConfig


class GINConv(nn.Module):
    r"""The Graph Isomorphism Network layer, paper Eq. 1 with ``C = A + (1 + ε) I``.

    .. math::
        H' = \mathrm{MLP}\big((A + (1 + \epsilon) I)\, H\big), \qquad
        \mathrm{MLP}(Z) = \mathrm{ReLU}(Z W_1 + b_1) W_2 + b_2

    Args:
        in_channels: input width.
        out_channels: output width (also the MLP's hidden width).
        train_eps: learn ``ε`` (GIN-ε) or keep it fixed (GIN-0 with ``eps=0``).
        eps: initial ``ε``.

    Shapes:
        x: ``(N, in_channels)``; edge_index: ``(2, E)``; out: ``(N, out_channels)``. With
        ``identifiers`` ``(N, k)`` given, the layer reads ``[x, identifiers]``, and
        ``in_channels`` counts both.
    """

    def __init__(
        self, in_channels: int, out_channels: int, train_eps: bool = True, eps: float = 0.0
    ) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(in_channels, out_channels), nn.ReLU(), nn.Linear(out_channels, out_channels)
        )
        if train_eps:
            self.eps = nn.Parameter(torch.tensor([eps]))
        else:
            self.register_buffer("eps", torch.tensor([eps]))
        #: the last sparse operator built (shared by a model's layers: see GraphModel)
        self.operators = LastBuilt()

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        backend: str | None = None,
        identifiers: Tensor | None = None,
    ) -> Tensor:
        if identifiers is not None:  # GSN-style: [x, s] (GINConfig.identifiers)
            x = torch.cat([x, identifiers.to(x.dtype)], 1)
        agg = sparse.propagate(
            edge_index, x, edge_weight, backend=backend, operators=self.operators
        )
        return self.mlp(agg + (1 + self.eps.to(x.dtype)) * x)


@dataclass(frozen=True)
class GINConfig(ModelConfig):
    """:class:`~runtime.models.base.ModelConfig` plus ``train_eps`` and ``identifiers``.

    Args:
        train_eps: learn each layer's ``ε``.
        identifiers: GSN-style structural identifiers (Bouritsas et al., 2022): the last
            ``identifiers`` input columns (say, :class:`~runtime.pattern_features.PatternCounts`
            per node) are concatenated to every layer's input ``h``, so that every layer
            aggregates ``[h_u, s_u]`` over each node's neighbours and itself, not only the first
            (whose ``h`` is the whole input, ``s`` included). ``0`` (default): plain GIN.
    """

    train_eps: bool = True
    identifiers: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.identifiers < 0:
            raise MatlangError(f"identifiers must be at least 0, got {self.identifiers}")


class GIN(GraphModel):
    r"""GIN layers (each followed by ReLU), then readout and head.

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\Big(
            \mathrm{MLP}^{(l)}\big((A + (1+\epsilon^{(l)}) I) H^{(l)}\big)\Big)

    Args:
        in_dim, out_dim, task, backend: see :class:`~runtime.models.mlp.MLP`.
        config: a :class:`GINConfig`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = GINConfig
    config: GINConfig

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        k = self.config.identifiers
        return GINConv(in_channels + k, out_channels, train_eps=self.config.train_eps)

    def graph_inputs(self, batch: Batch, x: Tensor, **inputs: Any) -> tuple[Any, ...]:
        """Every layer's graph inputs; with ``identifiers``, the input's last columns too."""
        base = super().graph_inputs(batch, x, **inputs)
        k = self.config.identifiers
        if not k:
            return base
        if x.shape[1] < k:
            raise GraphError(
                f"GIN with identifiers={k} reads its last {k} input columns as identifiers, "
                f"but the nodes have {x.shape[1]} feature(s)"
            )
        return (*base, x[:, x.shape[1] - k :])
