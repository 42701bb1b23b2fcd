"""PPGN (Maron et al., 2019), as the paper's appendix implements it: graphs of any sizes in one
batch, padded to the batch's largest graph with validity masks so padding never changes a
result."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import torch
from torch import Tensor, nn

from runtime.batch import Batch, as_batch
from runtime.models.base import GraphModel, ModelConfig, Task, input_features
from runtime.preprocess import PreprocessCache


def dense_batch(batch: Batch, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""PPGN's input tensor ``H^{(0)} = [A | diag(X_1) | … | diag(X_d)]``, padded to ``n_max``.

    Returns ``h`` ``(G, n_max, n_max, 1 + d)`` (zero outside each graph), ``valid``
    ``(G, n_max, n_max)`` (``M_0 + M_1``: both indices inside the graph) and ``diagonal``
    ``(G, n_max, n_max)`` (``M_0``: valid and on the diagonal).
    """
    g = batch.num_graphs
    device = x.device
    sizes = batch.nodes_per_graph.to(device)
    n_max = int(sizes.max()) if g else 0
    local = torch.arange(batch.num_nodes, device=device) - batch.ptr.to(device)[batch.batch]
    h = x.new_zeros(g, n_max, n_max, 1 + x.shape[1])
    ei = batch.edge_index.to(device)
    w = (
        x.new_ones(ei.shape[1])
        if batch.edge_weight is None
        else batch.edge_weight.to(device=device, dtype=x.dtype)
    )
    gid = batch.batch.to(device)
    h[gid[ei[0]], local[ei[0]], local[ei[1]], 0] = w
    h[gid, local, local, 1:] = x
    inside = torch.arange(n_max, device=device)[None, :] < sizes[:, None]  # (G, n_max)
    valid = inside[:, :, None] & inside[:, None, :]
    diagonal = valid & torch.eye(n_max, dtype=torch.bool, device=device)[None]
    return h, valid, diagonal


def masked_reduce(h: Tensor, mask: Tensor, kind: str, dims: tuple[int, ...]) -> Tensor:
    """``sum``/``max``/``mean`` of ``h`` over ``dims`` where ``mask`` holds (empty sets give 0).

    Shapes:
        h: ``(G, n, n, C)``; mask: ``(G, n, n)``.
    """
    m = mask.unsqueeze(-1)
    if kind == "sum":
        return (h * m).sum(dims)
    count = m.sum(dims).to(h.dtype)
    if kind == "mean":
        return (h * m).sum(dims) / count.clamp(min=1)
    top = h.masked_fill(~m, float("-inf")).amax(dims)
    return torch.where(count > 0, top, torch.zeros_like(top))


class PPGNBlock(nn.Module):
    r"""One PPGN layer (paper Appendix Eq. "prov1"), masked to each graph's valid entries.

    .. math::
        H^{(l+1)} = m_3\big(\big[\, m_1(H^{(l)}) \circ m_2(H^{(l)}) \,\big|\, H^{(l)} \big]\big)
        \odot (M_0 + M_1)

    ``m_1, m_2, m_3`` are one linear layer and ReLU on the channel axis (outputs multiplied by the
    validity mask, so padding stays 0 and never enters the products); ``∘`` multiplies the
    n×n slices channel by channel.

    Args:
        in_channels: ``d_inp``.
        mid_channels: ``d_mid``.
        out_channels: ``d_out``.
        bias: biases in ``m_1, m_2, m_3``.

    Shapes:
        h: ``(G, n, n, in_channels)``; valid: ``(G, n, n)``; out: ``(G, n, n, out_channels)``.
    """

    def __init__(
        self, in_channels: int, mid_channels: int, out_channels: int, bias: bool = True
    ) -> None:
        super().__init__()
        self.m1 = nn.Linear(in_channels, mid_channels, bias=bias)
        self.m2 = nn.Linear(in_channels, mid_channels, bias=bias)
        self.m3 = nn.Linear(mid_channels + in_channels, out_channels, bias=bias)

    def forward(self, h: Tensor, valid: Tensor) -> Tensor:
        m = valid.unsqueeze(-1).to(h.dtype)
        a = torch.relu(self.m1(h)) * m
        b = torch.relu(self.m2(h)) * m
        prod = torch.matmul(a.permute(0, 3, 1, 2), b.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return torch.relu(self.m3(torch.cat([prod, h], dim=-1))) * m


class PPGN(GraphModel):
    r"""PPGN blocks, the appendix's diagonal / off-diagonal readout of every layer, and the head.

    .. math::
        Y = \mathrm{head}\Big(\big\Vert_{l} \big[\textstyle\sum \mathrm{diag}(H^{(l)})
            \,\big|\, \sum \mathrm{offdiag}(H^{(l)})\big]\Big)

    (Eq. "prov2" sums a per-layer ``mlp_l``; with a linear first head layer that is the same map,
    ``Σ_l W_l r_l = [W_1 … W_L] [r_1; …; r_L]``.) ``sum`` may be joined by ``max``/``mean``
    through ``config.readout``. Node level: node ``v`` gets ``[H_vv | Σ_{u≠v} H_vu]`` of every
    layer. Memory O(G n_max²), time O(G n_max³).

    Args:
        in_dim, out_dim, config, task, backend, cache: see :class:`~runtime.models.mlp.MLP`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
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
        dims = [1 + in_dim] + [cfg.hidden] * cfg.layers
        self.blocks = nn.ModuleList(PPGNBlock(a, b, b) for a, b in pairwise(dims))
        kinds = 1 if self.task == "node" else len(cfg.readout)
        self.embed_dim = 2 * cfg.hidden * cfg.layers
        self.build_head(self.embed_dim * kinds)

    def layer_outputs(self, batch: Batch, x: Tensor) -> tuple[list[Tensor], Tensor, Tensor]:
        """``[H^{(1)}, …, H^{(L)}]`` and the masks ``valid`` (``M_0 + M_1``), ``diagonal``."""
        h, valid, diagonal = dense_batch(batch, x)
        outs = []
        for block in self.blocks:
            h = block(self.dropout(h), valid)
            outs.append(h)
        return outs, valid, diagonal

    def _graph_readout(self, outs: Sequence[Tensor], valid: Tensor, diagonal: Tensor) -> Tensor:
        off = valid & ~diagonal
        parts = []
        for kind in self.config.readout:
            for h in outs:
                parts.append(masked_reduce(h, diagonal, kind, (1, 2)))
                parts.append(masked_reduce(h, off, kind, (1, 2)))
        return torch.cat(parts, dim=-1)

    def _node_readout(
        self, batch: Batch, outs: Sequence[Tensor], valid: Tensor, diagonal: Tensor
    ) -> Tensor:
        off = (valid & ~diagonal).unsqueeze(-1)
        parts = []
        for h in outs:
            parts.append(torch.diagonal(h, dim1=1, dim2=2).transpose(1, 2))  # (G, n, C)
            parts.append((h * off).sum(2))
        per_slot = torch.cat(parts, dim=-1)  # (G, n_max, 2·C·L)
        device = per_slot.device
        local = torch.arange(batch.num_nodes, device=device) - batch.ptr.to(device)[batch.batch]
        return per_slot[batch.batch.to(device), local]

    def embed(self, batch: Batch, x: Tensor, **inputs: Any) -> Tensor:
        """Node representations ``(N, 2 · hidden · layers)``."""
        outs, valid, diagonal = self.layer_outputs(batch, x)
        return self._node_readout(batch, outs, valid, diagonal)

    def forward(self, data: Any, **inputs: Any) -> Tensor:
        batch = as_batch(data)
        x = input_features(batch, self.in_dim, self.dtype)
        outs, valid, diagonal = self.layer_outputs(batch, x)
        if self.task == "node":
            return self.head(self._node_readout(batch, outs, valid, diagonal))
        return self.head(self._graph_readout(outs, valid, diagonal))
