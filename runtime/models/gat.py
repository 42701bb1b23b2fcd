"""GAT (Veličković et al., 2018): attention-weighted supports, heads concatenated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from matlang.errors import MatlangError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.models.base import GraphModel, ModelConfig, glorot


class GATConv(nn.Module):
    r"""Graph attention layer (paper Appendix Eq. "gat"), heads concatenated.

    .. math::
        C^{(s)}_{vu} = \frac{e_{vu}}{\sum_{k \in \tilde{\mathcal N}(v)} e_{vk}}, \qquad
        e_{vu} = \exp\big(\mathrm{LeakyReLU}(\mathbf a_{\mathrm{dst}}^{(s)\top} W^{(s)} h_v
        + \mathbf a_{\mathrm{src}}^{(s)\top} W^{(s)} h_u)\big),
        \qquad H' = \big\Vert_s C^{(s)} H W^{(s)} + \mathbf 1 b^\top

    over the neighbourhood with self-loops ``Ñ(v)``.

    Args:
        in_channels: input width.
        out_channels: width of each head.
        heads: number of supports ``s`` (attention heads).
        concat: concatenate the heads (else average them).
        negative_slope: slope of the LeakyReLU.
        bias: add ``b``.

    Shapes:
        x: ``(N, in_channels)``; edge_index: ``(2, E)`` without self-loops;
        out: ``(N, heads · out_channels)`` (``concat``) or ``(N, out_channels)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        heads: int = 1,
        concat: bool = True,
        negative_slope: float = 0.2,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.heads, self.out_channels = heads, out_channels
        self.concat, self.negative_slope = concat, negative_slope
        self.weight = nn.Parameter(torch.empty(in_channels, heads * out_channels))
        self.att_src = nn.Parameter(torch.empty(heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(heads, out_channels))
        width = heads * out_channels if concat else out_channels
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None
        glorot(self.weight)
        glorot(self.att_src)
        glorot(self.att_dst)

    def forward(self, x: Tensor, edge_index: Tensor, backend: str | None = None) -> Tensor:
        n, h, c = x.shape[0], self.heads, self.out_channels
        loops = torch.arange(n, device=edge_index.device).repeat(2, 1)
        ei = torch.cat([edge_index, loops], 1)
        row, col = ei[0], ei[1]
        z = (x @ self.weight).view(n, h, c)
        a_src = (z * self.att_src).sum(-1)  # (N, H)
        a_dst = (z * self.att_dst).sum(-1)
        logits = F.leaky_relu(a_dst[row] + a_src[col], self.negative_slope)  # (E, H)
        # softmax over each row; shifting by the row maximum changes nothing but the rounding
        top = sparse.scatter_max(logits.detach(), row, n, backend=backend)
        e = torch.exp(logits - top[row])
        alpha = e / sparse.scatter_sum(e, row, n, backend=backend)[row]
        w = alpha.repeat_interleave(c, dim=1)  # (E, H·C): one support per head
        out = sparse.propagate(ei, z.reshape(n, h * c), w, backend=backend)
        if not self.concat:
            out = out.view(n, h, c).mean(1)
        return out if self.bias is None else out + self.bias


@dataclass(frozen=True)
class GATConfig(ModelConfig):
    """:class:`~runtime.models.base.ModelConfig` plus ``heads``; ``hidden`` is the width of the
    concatenated heads (a multiple of ``heads``)."""

    heads: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.heads < 1 or self.hidden % self.heads:
            raise MatlangError(
                f"hidden ({self.hidden}) must be a positive multiple of heads ({self.heads})"
            )


class GAT(GraphModel):
    r"""GAT layers (heads concatenated, ReLU), then readout and head.

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\Big(\big\Vert_s C^{(l,s)} H^{(l)} W^{(l,s)}\Big)

    Args:
        in_dim, out_dim, task, backend: see :class:`~runtime.models.mlp.MLP`.
        config: a :class:`GATConfig`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = GATConfig
    config: GATConfig

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        heads = self.config.heads  # out_channels: the heads concatenated
        return GATConv(in_channels, out_channels // heads, heads=heads)

    def graph_inputs(self, batch: Batch, x: Tensor, **inputs: Any) -> tuple[Any, ...]:
        return (batch.edge_index, self.backend)  # attention weighs the edges itself
