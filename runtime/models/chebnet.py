"""ChebNet (Defferrard et al., 2016) with each graph's own λmax (paper Theorem 2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from matlang.errors import GraphError, MatlangError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.last_built import LastBuilt
from matlang.runtime.models.base import GraphModel, ModelConfig, glorot
from matlang.runtime.preprocess import Basis, batch_lambda_max

LAPLACIANS: tuple[str, ...] = ("normalized_laplacian", "laplacian")


def scaled_laplacian(
    batch: Batch,
    lambda_max: Tensor,
    basis: Basis = "normalized_laplacian",
    shift: float = 0.0,
    dtype: torch.dtype = torch.float64,
) -> tuple[Tensor, Tensor]:
    r"""ChebNet's ``L̂ = 2 (L + εI) / (λmax + ε) − I`` of every graph, as ``(edge_index, weight)``.

    ``λmax`` is the graph's own largest eigenvalue of ``L`` (``λmax + ε`` is that of
    ``L + εI``); a graph whose ``L + εI`` is zero (no edges, ``ε = 0``, combinatorial ``L``) gets
    ``L̂ = −I``. The edges come first, then one diagonal entry per node.

    Shapes:
        lambda_max: ``(G,)``; returns ``(2, E + N)`` and ``(E + N,)``.
    """
    if basis not in LAPLACIANS:
        raise MatlangError(
            f"ChebNet needs a Laplacian basis ({', '.join(LAPLACIANS)}), got {basis!r}"
        )
    n = batch.num_nodes
    ei = batch.edge_index
    device = ei.device
    lam = lambda_max.to(device=device, dtype=dtype).reshape(-1)
    if lam.numel() != batch.num_graphs:
        raise GraphError(
            f"lambda_max has {lam.numel()} entries but the batch has {batch.num_graphs} graphs"
        )
    w = (
        torch.ones(ei.shape[1], dtype=dtype, device=device)
        if batch.edge_weight is None
        else batch.edge_weight.to(dtype)
    )
    deg = torch.zeros(n, dtype=dtype, device=device).index_add_(0, ei[0], w)
    if basis == "normalized_laplacian":
        dis = deg.clamp(min=1e-300).rsqrt() * (deg > 0)
        off = -dis[ei[0]] * w * dis[ei[1]]
        diag = torch.ones(n, dtype=dtype, device=device)  # isolated nodes too
    else:
        off = -w
        diag = deg
    top = lam + shift
    scale = torch.where(top > 0, 2.0 / torch.where(top > 0, top, torch.ones_like(top)), 0.0)
    node_scale = scale[batch.batch]
    loops = torch.arange(n, device=device).repeat(2, 1)
    index = torch.cat([ei, loops], 1)
    weight = torch.cat([node_scale[ei[0]] * off, node_scale * (diag + shift) - 1.0])
    return index, weight


class ChebConv(nn.Module):
    r"""Chebyshev spectral convolution, paper Eq. "chebeq" in Eq. 1.

    .. math::
        H' = \sum_{k=1}^{K} C^{(k)} H W^{(k)} + \mathbf 1 b^\top, \quad C^{(1)} = I,\
        C^{(2)} = \hat L,\ C^{(k)} = 2 \hat L C^{(k-1)} - C^{(k-2)}

    with ``L̂ = 2L/λmax − I`` given as ``(edge_index, edge_weight)`` (see
    :func:`scaled_laplacian`); ``C^{(k)} H`` is computed by the recurrence, never materialised.

    Args:
        in_channels: input width.
        out_channels: output width.
        K: number of supports.
        bias: add ``b``.

    Shapes:
        x: ``(N, in_channels)``; edge_index: ``(2, E')``; edge_weight: ``(E',)``;
        out: ``(N, out_channels)``.
    """

    def __init__(self, in_channels: int, out_channels: int, K: int, bias: bool = True) -> None:
        super().__init__()
        if K < 1:
            raise MatlangError(f"ChebConv needs K ≥ 1 supports, got {K}")
        self.weight = nn.Parameter(torch.empty(K, in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        glorot(self.weight)
        #: the last sparse operator built (shared by a model's layers: see GraphModel)
        self.operators = LastBuilt()

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor,
        backend: str | None = None,
    ) -> Tensor:
        w = edge_weight.to(x.dtype)
        t_prev, out = x, x @ self.weight[0]
        if self.weight.shape[0] > 1:
            t = sparse.propagate(edge_index, x, w, backend=backend, operators=self.operators)
            out = out + t @ self.weight[1]
            for k in range(2, self.weight.shape[0]):
                ops = self.operators
                t, t_prev = (
                    2.0 * sparse.propagate(edge_index, t, w, backend=backend, operators=ops)
                    - t_prev,
                    t,
                )
                out = out + t @ self.weight[k]
        return out if self.bias is None else out + self.bias


@dataclass(frozen=True)
class ChebNetConfig(ModelConfig):
    """:class:`~runtime.models.base.ModelConfig` plus ChebNet's own parameters.

    Args:
        K: number of Chebyshev supports (paper: 3 to 5).
        basis: ``"normalized_laplacian"`` (paper) or ``"laplacian"`` (``D − A``).
        shift: ``ε`` of the appendix's ``L ← L + εI`` variant (0: plain ChebNet; the paper
            tries 0.01), which separates regular 1-WL-equivalent graphs of different λmax.
    """

    K: int = 5
    basis: Basis = "normalized_laplacian"
    shift: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.K < 1:
            raise MatlangError(f"ChebNet needs K ≥ 1 supports, got {self.K}")
        if self.basis not in LAPLACIANS:
            raise MatlangError(f"ChebNet basis must be one of {', '.join(LAPLACIANS)}")
        if self.shift < 0:
            raise MatlangError(f"shift ε must be non-negative, got {self.shift}")


class ChebNet(GraphModel):
    r"""ChebConv layers (ReLU), then readout and head; ``λmax`` per graph, never a fixed 2.

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\Big(\sum_k C^{(k)} H^{(l)} W^{(l,k)}\Big), \qquad
        \hat L_g = \frac{2 (L_g + \epsilon I)}{\lambda_{\max}(L_g) + \epsilon} - I

    ``λmax`` of every graph comes from ``forward(..., lambda_max=...)`` or, by default, from an
    eigendecomposition cached in ``self.cache``.

    Args:
        in_dim, out_dim, task, backend, cache: see :class:`~runtime.models.mlp.MLP`.
        config: a :class:`ChebNetConfig`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = ChebNetConfig
    config: ChebNetConfig

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        return ChebConv(in_channels, out_channels, self.config.K)

    def lambda_max(self, batch: Batch) -> Tensor:
        """``λmax`` of ``L`` (without the shift) for every graph of the batch, ``(G,)``."""
        return batch_lambda_max(batch, self.config.basis, cache=self.cache, dtype=torch.float64)

    def graph_inputs(
        self, batch: Batch, x: Tensor, lambda_max: Tensor | None = None, **inputs: Any
    ) -> tuple[Any, ...]:
        cfg = self.config
        lam = self.lambda_max(batch) if lambda_max is None else torch.as_tensor(lambda_max)
        ei, w = scaled_laplacian(batch, lam, cfg.basis, cfg.shift, dtype=x.dtype)
        return (ei, w, self.backend)
