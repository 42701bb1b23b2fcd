"""PPGN (Maron et al., 2019), as the paper's appendix implements it: graphs of any sizes in one
batch, padded, padding never changing a result.

A batch is padded per *size bucket* rather than to its largest graph (:func:`size_buckets`):
a layer costs O(n³) per graph, so one graph of 109 nodes among graphs of 25 (PTC) would make
every graph of the batch cost 80× its own. Graphs do not interact in PPGN, so buckets give
the padded batch's numbers; see ``benchmarks/`` for the speed.

The n×n tensors are stored channels first, ``(C, G, n, n)``: a 1×1 channel map is then one
matrix product ``W · H`` on ``(C, G·n·n)`` and the per-channel n×n products batch over
``(C, G)``, both without a layout copy (the authors' scripts keep channels first too, as the
channel axis of a ``Conv2d``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from matlang.errors import MatlangError
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.models.base import GraphModel, ModelConfig, input_features, resolve_activation

#: :func:`size_buckets`: a bucket may cost up to this factor of its graphs' own Σ n³ ...
BUCKET_WASTE = 1.5
#: ... and graphs up to this many nodes always share one (their products cost less than the
#: per-bucket overhead of a dozen small tensor operations per layer).
BUCKET_SMALL = 16


def size_buckets(sizes: Sequence[int]) -> list[list[int]]:
    """The graphs (indices into ``sizes``) grouped for padding: in order of size, a graph
    joins the current bucket while padding every graph to its size costs at most
    :data:`BUCKET_WASTE` × their own ``Σ n³``, or while it has at most :data:`BUCKET_SMALL`
    nodes; otherwise it starts the next bucket. One bucket when all graphs have one size."""
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    buckets: list[list[int]] = []
    own = 0.0
    for i in order:
        n = sizes[i]
        if buckets:
            cost = (len(buckets[-1]) + 1) * float(n) ** 3
            if n <= BUCKET_SMALL or cost <= BUCKET_WASTE * (own + float(n) ** 3):
                buckets[-1].append(i)
                own += float(n) ** 3
                continue
        buckets.append([i])
        own = float(n) ** 3
    return buckets


def dense_batch(
    batch: Batch, x: Tensor, graphs: Sequence[int] | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    r"""PPGN's input tensor ``H^{(0)} = [A | diag(X_1) | … | diag(X_d)]``, padded to ``n_max``.

    Returns ``h`` ``(1 + d, G, n_max, n_max)`` (channels first, zero outside each graph),
    ``valid`` ``(G, n_max, n_max)`` (``M_0 + M_1``: both indices inside the graph) and
    ``diagonal`` ``(G, n_max, n_max)`` (``M_0``: valid and on the diagonal). With ``graphs``
    (indices of graphs of the batch), only those, in that order, padded to their largest.
    """
    device = x.device
    gid = batch.batch.to(device)
    local = torch.arange(batch.num_nodes, device=device) - batch.ptr.to(device)[gid]
    ei = batch.edge_index.to(device)
    w = (
        x.new_ones(ei.shape[1])
        if batch.edge_weight is None
        else batch.edge_weight.to(device=device, dtype=x.dtype)
    )
    sizes = batch.nodes_per_graph.to(device)
    slot = gid  # each node's position on h's graph axis
    if graphs is not None:
        chosen = torch.as_tensor(list(graphs), dtype=torch.long, device=device)
        pos = torch.full((batch.num_graphs,), -1, dtype=torch.long, device=device)
        pos[chosen] = torch.arange(len(chosen), device=device)
        slot, sizes = pos[gid], sizes[chosen]
        kept = slot[ei[0]] >= 0
        ei, w = ei[:, kept], w[kept]
        nodes = slot >= 0
        x, node_slot, node_local = x[nodes], slot[nodes], local[nodes]
    else:
        node_slot, node_local = slot, local
    g = len(sizes)
    n_max = int(sizes.max()) if g else 0
    h = x.new_zeros(1 + x.shape[1], g, n_max, n_max)
    h[0, slot[ei[0]], local[ei[0]], local[ei[1]]] = w
    h[1:, node_slot, node_local, node_local] = x.T
    inside = torch.arange(n_max, device=device)[None, :] < sizes[:, None]  # (G, n_max)
    valid = inside[:, :, None] & inside[:, None, :]
    diagonal = valid & torch.eye(n_max, dtype=torch.bool, device=device)[None]
    return h, valid, diagonal


def channel_map(linear: nn.Linear, h: Tensor) -> Tensor:
    """``linear`` applied to the channel axis of a channels-first ``h`` ``(C, …)``."""
    flat = h.reshape(h.shape[0], -1)
    out = (
        torch.mm(linear.weight, flat)
        if linear.bias is None
        else torch.addmm(linear.bias[:, None], linear.weight, flat)
    )
    return out.view(linear.out_features, *h.shape[1:])  # not -1: h may have no entries


def masked_reduce(h: Tensor, mask: Tensor, kind: str) -> Tensor:
    """``sum``/``max``/``mean`` of every n×n slice of ``h`` where ``mask`` holds (empty sets
    give 0), as ``(G, C)``.

    Shapes:
        h: ``(C, G, n, n)``; mask: ``(G, n, n)``; out: ``(G, C)``.
    """
    m = mask.unsqueeze(0)
    if kind == "sum":
        return (h * m).sum((2, 3)).T
    count = m.sum((2, 3)).to(h.dtype)  # (1, G)
    if kind == "mean":
        return ((h * m).sum((2, 3)) / count.clamp(min=1)).T
    top = h.masked_fill(~m, float("-inf")).amax((2, 3))
    return torch.where(count > 0, top, torch.zeros_like(top)).T


class PPGNBlock(nn.Module):
    r"""One PPGN layer (paper Appendix Eq. "prov1").

    .. math::
        H^{(l+1)} = m_3\big(\big[\, m_1(H^{(l)}) \circ m_2(H^{(l)}) \,\big|\, H^{(l)} \big]\big)

    ``m_1, m_2, m_3`` are one linear map and ReLU on the channel axis (``m_3`` without the ReLU
    when ``m3_relu`` is False, as in Maron et al.'s code); ``∘`` multiplies the n×n slices
    channel by channel. With no bias (the default, as in the authors' EXP, counting and
    filtering scripts) padding stays exactly zero: ``W·0 = 0``, ``relu(0) = 0`` and zero rows
    and columns give zero products. With biases, ``relu(b)`` would fill the padding, so the
    outputs of ``m_1, m_2, m_3`` are multiplied by the validity mask ``M_0 + M_1``.

    Args:
        in_channels: ``d_inp``.
        mid_channels: ``d_mid``.
        out_channels: ``d_out``.
        bias: biases in ``m_1, m_2, m_3``.
        m3_relu: ReLU after ``m_3``.

    Shapes:
        h: ``(in_channels, G, n, n)``; valid: ``(G, n, n)``;
        out: ``(out_channels, G, n, n)``.
    """

    def __init__(
        self,
        in_channels: int,
        mid_channels: int,
        out_channels: int,
        bias: bool = False,
        m3_relu: bool = True,
    ) -> None:
        super().__init__()
        self.m3_relu = m3_relu
        self.m1 = nn.Linear(in_channels, mid_channels, bias=bias)
        self.m2 = nn.Linear(in_channels, mid_channels, bias=bias)
        self.m3 = nn.Linear(mid_channels + in_channels, out_channels, bias=bias)

    def forward(self, h: Tensor, valid: Tensor) -> Tensor:
        m = valid.unsqueeze(0).to(h.dtype) if self.m1.bias is not None else None
        a = torch.relu(channel_map(self.m1, h))
        b = torch.relu(channel_map(self.m2, h))
        if m is not None:
            a, b = a * m, b * m
        prod = torch.matmul(a, b)  # (C, G, n, n) @ (C, G, n, n): n×n products per channel
        out = channel_map(self.m3, torch.cat([prod, h], 0))
        if self.m3_relu:
            out = torch.relu(out)
        return out if m is None else out * m


class MaskedBatchNorm(nn.Module):
    r"""Batch normalisation of every channel of PPGN's n×n tensors over the entries inside
    the graphs, without affine parameters; padding stays zero.

    In training, every channel is centred and scaled by the mean and (biased) variance of its
    valid entries over all the given tensors (the size buckets of one batch), so the result
    does not depend on how a batch is bucketed; the running estimates are updated as
    :class:`torch.nn.BatchNorm2d` updates them (unbiased variance, ``momentum``). In
    evaluation, the running estimates are used. On a batch of graphs of one size this is
    ``BatchNorm2d(channels, affine=False, momentum=momentum)``.

    Args:
        channels: ``C``.
        momentum: weight of the newest batch in the running estimates (BREC's PPGN: 1.0).
        eps: added to the variance.

    Shapes:
        hs: tensors ``(C, G_i, n_i, n_i)``; valids: ``(G_i, n_i, n_i)``; out: as ``hs``.
    """

    running_mean: Tensor
    running_var: Tensor

    def __init__(self, channels: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))

    def forward(self, hs: Sequence[Tensor], valids: Sequence[Tensor]) -> list[Tensor]:
        masks = [v.unsqueeze(0).to(h.dtype) for h, v in zip(hs, valids)]
        if self.training:
            count = sum(float(v.sum()) for v in valids)
            if count < 2:
                raise MatlangError(
                    "PPGN's batch norm (norm=True) needs at least two node pairs in a "
                    "training batch"
                )
            mean = torch.stack([(h * m).sum((1, 2, 3)) for h, m in zip(hs, masks)]).sum(0) / count
            centred = [(h - mean.view(-1, 1, 1, 1)) * m for h, m in zip(hs, masks)]
            var = torch.stack([c.square().sum((1, 2, 3)) for c in centred]).sum(0) / count
            with torch.no_grad():
                mom = self.momentum
                self.running_mean.mul_(1 - mom).add_(mom * mean.detach())
                self.running_var.mul_(1 - mom).add_(mom * var.detach() * count / (count - 1))
        else:
            mean, var = self.running_mean.to(hs[0].dtype), self.running_var.to(hs[0].dtype)
        scale = torch.rsqrt(var + self.eps).view(-1, 1, 1, 1)
        shift = mean.view(-1, 1, 1, 1)
        return [(h - shift) * scale * m for h, m in zip(hs, masks)]


@dataclass(frozen=True)
class PPGNConfig(ModelConfig):
    """:class:`~runtime.models.base.ModelConfig` and the blocks' biases.

    Args:
        bias: biases in every block's ``m_1, m_2, m_3``. The authors' scripts have none for
            EXP (isomorphism and classification), counting and filtering, and have them for
            graph8c and sr25 (graphs of 8 and 25 nodes).
        buckets: pad a batch per size bucket (:func:`size_buckets`); ``False``: every graph
            to the batch's largest (the same numbers up to rounding, ~8-10× slower on TU
            batches; ``results/perf/ppgn-buckets.md``).
        m3_relu: ReLU after every block's ``m_3`` (the appendix); Maron et al.'s code, and
            BREC's PPGN with it, has none there.
        norm: :class:`MaskedBatchNorm` (no affine parameters) after every block, as BREC's
            PPGN has.
        norm_momentum: momentum of those batch norms and of ``output_norm``'s.
        output_norm: batch normalisation without affine parameters of the head's output
            (BREC's PPGN: on its 16 outputs, before the cosine loss).
        init: ``"torch"`` (every linear map as torch initialises it) or ``"xavier"``
            (Xavier-normal weights and zero biases in the blocks and the head, as Maron et
            al.'s code and BREC's PPGN initialise them).
        node_sum: the off-diagonal part of node ``v``'s readout: ``"row"``, ``Σ_{u≠v} H_vu``
            (default), or ``"column"``, ``Σ_{u≠v} H_uv`` (the authors' ``filtering.py`` sums
            its tensors over axis 2). They differ once a block's products make ``H``
            asymmetric.
    """

    bias: bool = False
    buckets: bool = True
    m3_relu: bool = True
    norm: bool = False
    norm_momentum: float = 0.1
    output_norm: bool = False
    init: str = "torch"
    node_sum: str = "row"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init not in ("torch", "xavier"):
            raise MatlangError(f"init must be 'torch' or 'xavier', got {self.init!r}")
        if self.node_sum not in ("row", "column"):
            raise MatlangError(f"node_sum must be 'row' or 'column', got {self.node_sum!r}")
        if not 0.0 < self.norm_momentum <= 1.0:
            raise MatlangError(f"norm_momentum must be in (0, 1], got {self.norm_momentum}")


class PPGN(GraphModel):
    r"""PPGN blocks, the appendix's diagonal / off-diagonal readout of every layer, and the head.

    .. math::
        Y = \mathrm{head}\Big(\big\Vert_{l} \big[\textstyle\sum \mathrm{diag}(H^{(l)})
            \,\big|\, \sum \mathrm{offdiag}(H^{(l)})\big]\Big)

    (Eq. "prov2" sums a per-layer ``mlp_l``; with a linear first head layer that is the same map,
    ``Σ_l W_l r_l = [W_1 … W_L] [r_1; …; r_L]``.) ``sum`` may be joined by ``max``/``mean``
    through ``config.readout``. Node level: node ``v`` gets ``[H_vv | Σ_{u≠v} H_vu]`` of every
    layer (``config.node_sum="column"``: ``Σ_{u≠v} H_uv``). Memory O(G n_max²), time
    O(G n_max³).

    The blocks have no bias unless ``config.bias``: a bias puts ``relu(b)`` on every one of the
    n² entries, and the n×n products then add terms that depend on n only (a sum of n such
    entries per product, n² of them per readout), which swamp the structural signal of sparse
    graphs: on EXP (n ≈ 50) the outputs of a 1-WL-equivalent pair, ~1e4 in size, then differ by
    as little as ~1e-6, far below Table 1's tolerance 1e-3 (without biases: ~1e-2 of ~5).

    Args:
        in_dim, out_dim, config, task, backend, cache: see :class:`~runtime.models.mlp.MLP`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = PPGNConfig
    config: PPGNConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cfg = self.config
        self.norms = (
            nn.ModuleList(MaskedBatchNorm(self.width, cfg.norm_momentum) for _ in range(cfg.layers))
            if cfg.norm
            else None
        )
        self.output_norm = (
            nn.BatchNorm1d(self.out_dim, affine=False, momentum=cfg.norm_momentum)
            if cfg.output_norm
            else None
        )
        if cfg.init == "xavier":
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.init.xavier_normal_(module.weight)
                    if module.bias is not None:
                        nn.init.zeros_(module.bias)

    @property
    def input_width(self) -> int:
        return 1 + self.in_dim  # A, then diag(X_1), …, diag(X_d)

    @property
    def embed_dim(self) -> int:
        return 2 * self.config.hidden * self.config.layers  # [diag | off-diagonal] per layer

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        cfg = self.config
        return PPGNBlock(
            in_channels, out_channels, out_channels, bias=cfg.bias, m3_relu=cfg.m3_relu
        )

    def layer_outputs(
        self, batch: Batch, x: Tensor, buckets: Sequence[Sequence[int] | None] = (None,)
    ) -> list[tuple[list[Tensor], Tensor, Tensor]]:
        """Per bucket (lists of the batch's graphs, or ``None`` for all of them: see
        :func:`dense_batch`), ``[H^{(1)}, …, H^{(L)}]`` (channels first) and the masks
        ``valid``, ``diagonal``. The buckets go through the blocks together, layer by layer,
        so that ``norm`` sees the whole batch."""
        dense = [dense_batch(batch, x, graphs) for graphs in buckets]
        hs = [h for h, _, _ in dense]
        valids = [valid for _, valid, _ in dense]
        outs: list[list[Tensor]] = [[] for _ in dense]
        for i, block in enumerate(self.convs):
            hs = [block(self.dropout(h), valid) for h, valid in zip(hs, valids)]
            if self.norms is not None:
                hs = self.norms[i](hs, valids)
            for out, h in zip(outs, hs):
                out.append(h)
        return [(out, valid, diagonal) for out, (_, valid, diagonal) in zip(outs, dense)]

    def _graph_readout(self, outs: Sequence[Tensor], valid: Tensor, diagonal: Tensor) -> Tensor:
        off = valid & ~diagonal
        parts = []
        for kind in self.config.readout:
            for h in outs:
                parts.append(masked_reduce(h, diagonal, kind))
                parts.append(masked_reduce(h, off, kind))
        return torch.cat(parts, dim=-1)

    def _node_readout(
        self,
        batch: Batch,
        outs: Sequence[Tensor],
        valid: Tensor,
        diagonal: Tensor,
        graphs: Sequence[int] | None = None,
    ) -> tuple[Tensor, Tensor]:
        """The nodes (of ``graphs``, or all) in batch order and their rows."""
        off = (valid & ~diagonal).unsqueeze(0)
        axis = 3 if self.config.node_sum == "row" else 2
        parts = []
        for h in outs:
            parts.append(torch.diagonal(h, dim1=2, dim2=3))  # (C, G, n): H_vv
            parts.append((h * off).sum(axis))  # (C, G, n): Σ_{u≠v} H_vu (row) or H_uv
        per_slot = torch.cat(parts, dim=0)  # (2·C·L, G, n_max)
        device = per_slot.device
        gid = batch.batch.to(device)
        local = torch.arange(batch.num_nodes, device=device) - batch.ptr.to(device)[gid]
        slot = gid
        if graphs is not None:
            pos = torch.full((batch.num_graphs,), -1, dtype=torch.long, device=device)
            pos[torch.as_tensor(list(graphs), dtype=torch.long, device=device)] = torch.arange(
                len(graphs), device=device
            )
            slot = pos[gid]
        nodes = torch.nonzero(slot >= 0).flatten()
        return nodes, per_slot[:, slot[nodes], local[nodes]].T

    def _representation(self, batch: Batch, x: Tensor, node: bool) -> Tensor:
        """Per node (``node``) or per graph, the readout of every layer, computed bucket by
        bucket (:func:`size_buckets`) and put back in batch order."""
        sizes = batch.nodes_per_graph.tolist()
        buckets = size_buckets(sizes) if self.config.buckets else [list(range(len(sizes)))]
        if len(buckets) <= 1:  # one padded tensor, as before buckets
            ((outs, valid, diagonal),) = self.layer_outputs(batch, x)
            if node:
                return self._node_readout(batch, outs, valid, diagonal)[1]
            return self._graph_readout(outs, valid, diagonal)
        ids, rows = [], []
        for graphs, (outs, valid, diagonal) in zip(buckets, self.layer_outputs(batch, x, buckets)):
            if node:
                nodes, r = self._node_readout(batch, outs, valid, diagonal, graphs)
                ids.append(nodes)
            else:
                r = self._graph_readout(outs, valid, diagonal)
                ids.append(torch.as_tensor(graphs, dtype=torch.long, device=r.device))
            rows.append(r)
        order = torch.cat(ids)
        out = torch.cat(rows)
        return out.index_select(0, torch.argsort(order))

    def embed(self, batch: Batch, x: Tensor, **inputs: Any) -> Tensor:
        """Node representations ``(N, 2 · hidden · layers)``."""
        return self._representation(batch, x, node=True)

    def forward(self, data: Any, **inputs: Any) -> Tensor:
        batch = as_batch(data)
        x = input_features(batch, self.in_dim, self.dtype)
        rep = self._representation(batch, x, node=self.task == "node")
        if self.task == "graph" and self.config.readout_norm:
            rep = self.readout_norm(rep)
        out = self.head(rep)
        if self.output_norm is not None:
            out = self.output_norm(out)
        if self.config.output_activation is not None:
            out = resolve_activation(self.config.output_activation)(out)
        return out
