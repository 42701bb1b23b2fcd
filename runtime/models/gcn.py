"""GCN (Kipf & Welling, 2017): one normalised support with self-loops."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from matlang.runtime import sparse
from matlang.runtime.last_built import LastBuilt
from matlang.runtime.models.base import GraphModel, ModelConfig, glorot


def gcn_norm(
    edge_index: Tensor,
    edge_weight: Tensor | None,
    num_nodes: int,
    dtype: torch.dtype,
    memo: LastBuilt | None = None,
) -> tuple[Tensor, Tensor]:
    r"""The support ``C = (D + I)^{-1/2} (A + I) (D + I)^{-1/2}`` as ``(edge_index, weight)``.

    Self-loops are appended after the edges; ``D`` is the (weighted) degree of ``A``. Every
    layer of a forward asks for the same one: with the caller's ``memo`` (a
    :class:`~runtime.last_built.LastBuilt`, which :class:`GCN` shares among its layers) the
    last built is returned again for the same tensors, and then so is its sparse operator.
    """
    if memo is None:
        return _gcn_norm(edge_index, edge_weight, num_nodes, dtype)
    return memo.get(  # type: ignore[no-any-return]
        (edge_index, edge_weight),
        (num_nodes, dtype),
        lambda: _gcn_norm(edge_index, edge_weight, num_nodes, dtype),
    )


def _gcn_norm(
    edge_index: Tensor, edge_weight: Tensor | None, num_nodes: int, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    loops = torch.arange(num_nodes, device=edge_index.device)
    ei = torch.cat([edge_index, loops.repeat(2, 1)], 1)
    w = (
        torch.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device)
        if edge_weight is None
        else edge_weight.to(dtype)
    )
    w = torch.cat([w, torch.ones(num_nodes, dtype=dtype, device=edge_index.device)])
    deg = torch.zeros(num_nodes, dtype=dtype, device=edge_index.device).index_add_(0, ei[0], w)
    dis = deg.clamp(min=1e-300).rsqrt() * (deg > 0)
    return ei, dis[ei[0]] * w * dis[ei[1]]


class GCNConv(nn.Module):
    r"""The graph convolution of Kipf & Welling (2017), paper Eq. 1 with one support.

    .. math::
        H' = (D + I)^{-1/2} (A + I) (D + I)^{-1/2}\, H W + \mathbf{1} b^\top

    Args:
        in_channels: input width.
        out_channels: output width.
        bias: add ``b``.

    Shapes:
        x: ``(N, in_channels)``; edge_index: ``(2, E)``; edge_weight: ``(E,)`` or ``None``;
        out: ``(N, out_channels)``.
    """

    def __init__(self, in_channels: int, out_channels: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        glorot(self.weight)
        #: the last support and operator built (shared by a model's layers: see GraphModel)
        self.norms, self.operators = LastBuilt(), LastBuilt()

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        backend: str | None = None,
    ) -> Tensor:
        ei, w = gcn_norm(edge_index, edge_weight, x.shape[0], x.dtype, self.norms)
        out = sparse.propagate(ei, x @ self.weight, w, backend=backend, operators=self.operators)
        return out if self.bias is None else out + self.bias


class GCN(GraphModel):
    r"""GCN layers with ReLU, then readout and head (paper Appendix "MPNN Baselines").

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\big(\hat C H^{(l)} W^{(l)}\big), \qquad
        \hat C = (D + I)^{-1/2} (A + I) (D + I)^{-1/2}

    Args:
        in_dim, out_dim, config, task, backend: see :class:`~runtime.models.mlp.MLP`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = ModelConfig

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        return GCNConv(in_channels, out_channels)
