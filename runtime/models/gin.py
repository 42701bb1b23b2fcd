"""GIN (Xu et al., 2019) with a trainable ε."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from matlang.runtime import sparse
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
        x: ``(N, in_channels)``; edge_index: ``(2, E)``; out: ``(N, out_channels)``.
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
    ) -> Tensor:
        agg = sparse.propagate(
            edge_index, x, edge_weight, backend=backend, operators=self.operators
        )
        return self.mlp(agg + (1 + self.eps.to(x.dtype)) * x)


@dataclass(frozen=True)
class GINConfig(ModelConfig):
    """:class:`~runtime.models.base.ModelConfig` plus ``train_eps``."""

    train_eps: bool = True


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
        return GINConv(in_channels, out_channels, train_eps=self.config.train_eps)
