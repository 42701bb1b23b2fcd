"""Seeds of MLP, GCN, ChebNet and GAT trained at once, as one stacked dense model.

The same idea as :mod:`benchmarks.paper.stacked` (GNNML3): on Table 2's 10-node graphs a
training step is a few hundred tiny tensor operations whose cost is the interpreter's, so
``K`` seeds stacked along a leading axis cost about what one does. Each of these models' layers
is ``Σ_s C_s H W_s + b`` with supports ``C_s`` fixed by the graph — ``I`` (MLP), GCN's
``(D + I)^{-1/2} (A + I) (D + I)^{-1/2}``, ChebNet's Chebyshev polynomials ``T_k(L̂)`` of its
scaled Laplacian with each graph's own ``λmax`` — or, for GAT, attention weights over
``A + I`` that the layer computes from ``H``. Here the supports are dense ``n × n`` per graph
(padded to the largest graph, zero on padding), computed once for the whole set from the
model's own functions (:func:`~runtime.models.gcn.gcn_norm`,
:func:`~runtime.models.chebnet.scaled_laplacian` with the model's ``λmax``), and every seed
keeps its own initial weights, batches, Adam, selection and early stop
(:func:`~benchmarks.paper.stacked.run_seeds_stacked`). The sums run in another order than the
sparse forward (ChebNet's ``T_k(L̂) H`` as a matrix polynomial times ``H``, not the recurrence
on ``H``), so runs agree to float rounding, not bit for bit (tests/benchmarks/test_stacked.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from benchmarks.paper.stacked_base import (
    MAX_NODES,
    DenseBatch,
    DenseGraphs,
    StackedModel,
    check_needs,
)
from benchmarks.paper.train import GraphSet
from matlang.errors import MatlangError
from matlang.runtime.batch import Batch
from matlang.runtime.models.base import GraphModel, input_features
from matlang.runtime.models.chebnet import ChebNet, scaled_laplacian
from matlang.runtime.models.gat import GAT, GATConv
from matlang.runtime.models.gcn import GCN, gcn_norm
from matlang.runtime.models.mlp import MLP

#: The model classes this module stacks (exactly these: a subclass may compute otherwise).
STACKABLE: tuple[type[GraphModel], ...] = (MLP, GCN, ChebNet, GAT)


def check_support_model(model: nn.Module) -> GraphModel:
    """``model`` if the stacked forward computes exactly what its own does, else an error
    naming what it needs."""
    if type(model) not in STACKABLE:
        raise MatlangError(f"{type(model).__name__} is not a model this module stacks")
    assert isinstance(model, GraphModel)
    check_needs(
        model,
        (
            (model.config.activation != "relu", "ReLU layers"),
            (
                isinstance(model, GAT) and any(not c.concat for c in model.convs),
                "GAT heads concatenated",
            ),
        ),
    )
    return model


def dense_supports(model: GraphModel, batch: Batch, n: int) -> Tensor:
    """The supports of every graph of ``batch`` as ``(G, n, n, S)``, zero on padding: ``I``
    (MLP), GCN's normalised ``A + I``, ChebNet's ``T_0 … T_{K−1}`` of ``L̂``, GAT's pattern
    ``A + I`` (1 where a node may attend, the padding attending to itself only)."""
    dtype = model.dtype
    g = batch.num_graphs
    local = torch.arange(batch.num_nodes) - batch.ptr[batch.batch]
    real = torch.zeros(g, n, dtype=dtype)
    real[batch.batch, local] = 1.0
    eye = torch.diag_embed(real)  # I on real nodes

    def dense(index: Tensor, weight: Tensor) -> Tensor:
        out = torch.zeros(g, n, n, dtype=dtype)
        row, col = index
        out.index_put_(
            (batch.batch[row], local[row], local[col]), weight.to(dtype), accumulate=True
        )
        return out

    if isinstance(model, MLP):
        return eye.unsqueeze(-1)
    if isinstance(model, GCN):
        ei, w = gcn_norm(batch.edge_index, batch.edge_weight, batch.num_nodes, dtype)
        return dense(ei, w).unsqueeze(-1)
    if isinstance(model, GAT):
        a = dense(batch.edge_index, torch.ones(batch.edge_index.shape[1]))
        return (a + torch.eye(n, dtype=dtype)).clamp(max=1.0).unsqueeze(-1)
    assert isinstance(model, ChebNet)
    cfg = model.config
    ei, w = scaled_laplacian(batch, model.lambda_max(batch), cfg.basis, cfg.shift, dtype=dtype)
    lap = dense(ei, w)
    terms = [eye, lap][: cfg.K]
    while len(terms) < cfg.K:
        terms.append(2.0 * torch.bmm(lap, terms[-1]) - terms[-2])
    return torch.stack(terms, -1)


def densify_support(model: GraphModel, data: GraphSet) -> DenseGraphs:
    """``data``'s graphs for ``model``'s stacked form: features, dense supports
    (:func:`dense_supports`), real-node marks and targets, padded to the largest graph."""
    if data.level != "graph":
        raise MatlangError("stacked training is for graph-level targets")
    graphs = list(data.graphs)
    n = max((gr.num_nodes for gr in graphs), default=0)
    if n > MAX_NODES:
        raise MatlangError(
            f"stacked training is for small graphs (at most {MAX_NODES} nodes); this set has "
            f"one of {n}"
        )
    dtype = model.dtype
    count = len(graphs)
    batch = Batch.from_graphs(graphs, dtype=dtype)
    local = torch.arange(batch.num_nodes) - batch.ptr[batch.batch]
    x = torch.zeros(count, n, model.in_dim, dtype=dtype)
    x[batch.batch, local] = input_features(batch, model.in_dim, dtype)
    node = torch.zeros(count, n, dtype=dtype)
    node[batch.batch, local] = 1.0
    c = dense_supports(model, batch, n)
    none = torch.zeros(count, 0, dtype=torch.int64)
    dense = DenseBatch(
        x, c, node, data.y.to(dtype), none, none.to(dtype).unsqueeze(-1), none.to(dtype)
    )
    return DenseGraphs(dense, torch.zeros(count, dtype=torch.int64))


class StackedSupport(StackedModel):
    """``K`` models of one class of :data:`STACKABLE` as one
    :class:`~benchmarks.paper.stacked.StackedModel`: every layer ``ReLU(Σ_s C_s H W_s + b)``
    on the dense supports (GAT's ``C_s`` its heads' attention over them), then the sum readout
    and the head."""

    model: GraphModel

    def __init__(self, models: Sequence[nn.Module]) -> None:
        super().__init__(models, check_support_model)

    def densify(self, data: GraphSet) -> DenseGraphs:
        return densify_support(self.model, data)

    def _weight(self, i: int) -> Tensor:
        """Layer ``i``'s weights as ``(K, S, in, out)``."""
        w = self.params[f"convs.{i}.weight"]
        if isinstance(self.model, MLP):  # nn.Linear: (K, out, in)
            return w.transpose(1, 2).unsqueeze(1)
        if isinstance(self.model, ChebNet):  # (K, S, in, out) already
            return w
        return w.unsqueeze(1)  # GCN: (K, in, out)

    def _attention(self, i: int, hw: Tensor, pattern: Tensor) -> Tensor:
        """GAT layer ``i``: each head's softmax over the pattern's entries of each row,
        applied to its channels of ``hw`` ``(K, B, n, H·C)``."""
        conv = self.model.convs[i]
        assert isinstance(conv, GATConv)
        heads, width = conv.heads, conv.out_channels
        k, b, n, _ = hw.shape
        z = hw.reshape(k, b, n, heads, width)
        src = (z * self.params[f"convs.{i}.att_src"][:, None, None]).sum(-1)  # (K, B, n, H)
        dst = (z * self.params[f"convs.{i}.att_dst"][:, None, None]).sum(-1)
        logits = F.leaky_relu(dst.unsqueeze(3) + src.unsqueeze(2), conv.negative_slope)
        logits = logits.masked_fill(pattern.unsqueeze(-1) == 0, float("-inf"))  # (K,B,n,n,H)
        alpha = torch.softmax(logits, dim=3)
        out = torch.einsum("kbijh,kbjhc->kbihc", alpha, z)
        return out.reshape(k, b * n, heads * width)

    def forward(self, batch: DenseBatch) -> Tensor:
        x, node, sup = batch.x, batch.node, batch.c
        k, b, n = x.shape[0], x.shape[1], x.shape[2]
        s = sup.shape[-1]
        h = x.reshape(k, b * n, -1)
        for i in range(len(self.model.convs)):
            weight = self._weight(i)
            out_c = weight.shape[-1]
            # H W_s for every s: (K, B·n, in) @ (K, in, S·out), read as (K, B, n·S, out)
            hw = torch.bmm(h, weight.permute(0, 2, 1, 3).reshape(k, -1, s * out_c))
            if isinstance(self.model, MLP):
                conv = hw  # the support is I
            elif isinstance(self.model, GAT):
                conv = self._attention(i, hw.reshape(k, b, n, out_c), sup[..., 0])
            else:
                conv = torch.matmul(sup.reshape(k, b, n, n * s), hw.reshape(k, b, n * s, out_c))
                conv = conv.reshape(k, b * n, out_c)
            bias = self._get(f"convs.{i}.bias")
            h = torch.relu(conv if bias is None else conv + bias.unsqueeze(1))
        return self.sum_readout_and_head(h, node)


__all__ = ["STACKABLE", "StackedSupport", "check_support_model", "dense_supports"]
