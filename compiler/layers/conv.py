"""``SentenceConv``: a graph convolution whose supports and features are MATLANG sentences."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from matlang.compiler.layers.inputs import unpack
from matlang.compiler.layers.sentences import SentenceInfo, by_kind, describe_sentences
from matlang.compiler.layers.stage import (
    apply_channels,
    graph_values,
    propagate_supports,
    stage,
    stage_key,
)
from matlang.runtime.inputs import layer_inputs
from torch import Tensor, nn

from matlang import ast
from matlang.errors import MatlangError

#: Nonlinearities by name.
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "identity": lambda t: t,
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
}


def _glorot(p: Tensor) -> None:
    bound = math.sqrt(6.0 / (p.shape[-2] + p.shape[-1]))
    with torch.no_grad():
        p.uniform_(-bound, bound)


class SentenceConv(nn.Module):
    r"""A graph convolution built from MATLANG sentences, the pattern of GNNML1 and GNNML3 in
    Balcilar et al., `"Breaking the Limits of Message Passing Graph Neural Networks"
    <https://arxiv.org/abs/2106.04319>`_ (ICML 2021), Eq. 3 and Eq. 8.

    .. math::
        \mathbf{X}' = \sigma\Big(\sum_{s} C_s \mathbf{X} \mathbf{W}_s
        + \sum_{k} f_k(\mathbf{X}) \mathbf{V}_k + \mathbf{U} \mathbf{W}_u
        + (\mathbf{X} \mathbf{W}_a) \odot (\mathbf{X} \mathbf{W}_b) + \mathbf{b}\Big)

    Each sentence is sorted by the shape of its value:

    * an **operator** (a matrix sentence: ``A``, ``I``, ``A ⊙ A²``, ``A³ ⊙ I``, ``L``,
      ``(A + I) ⊙ A²``, ``let C = …; C``) is a support :math:`C_s`, computed once per batch on
      its inferred mask (``A ⊙ A²`` on the edges) by the graph-constant stage
      (:func:`compiler.api.materialise`) and remembered on the batch;
    * a **node sentence of one free input** (``input h; relu(A h) ⊙ (A² h)``) is applied to each
      channel of :math:`\mathbf{X}` (:math:`f_k(\mathbf{X})`, ``(N, d)``), then mixed by
      :math:`\mathbf{V}_k`;
    * a **node sentence without input** (``(A³ ⊙ I) 𝟏``, triangles × 2 per node) is a column of
      :math:`\mathbf{U}`, a structural feature computed once per batch.

    Graph-level sentences belong in :class:`~compiler.layers.readout.SentenceReadout`. A sentence
    whose support is full (``exp(A)``) is refused here with the error of
    :func:`compiler.api.compile` (``dense=True`` allows it).

    With ``init="identity"``, ``activation=None`` and ``product=False``, the layer computes
    ``[C_1 X ‖ … ‖ C_S X ‖ f_1(X) ‖ … ‖ U]`` exactly: the sentences' values, the starting
    point for training (``out_channels`` must then be ``(S + K)·in_channels + #U``).

    Args:
        in_channels: width ``d`` of ``x``.
        out_channels: width of the output.
        sentences: a sentence, a program (several sentences separated by ``;``), or a list.
        bias: add a learnable bias.
        product: add the node-wise product term :math:`(\mathbf{X}\mathbf{W}_a) \odot
            (\mathbf{X}\mathbf{W}_b)` of GNNML1/GNNML3.
        activation: :math:`\sigma`: ``None``/``"identity"``, ``"relu"``, ``"tanh"``,
            ``"sigmoid"`` or a callable.
        init: ``"glorot"`` or ``"identity"`` (see above).
        dense: allow full supports, materialised on all ``n²`` entries of each graph.

    Shapes:
        - **input:** node features :math:`(N, d)`, edge indices :math:`(2, E)`, batch vector
          :math:`(N,)` (optional) — or one PyG ``Data``/``Batch`` or project ``Batch``
        - **output:** node features :math:`(N, \text{out\_channels})`
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        sentences: str | ast.Expr | Sequence[str | ast.Expr],
        *,
        bias: bool = True,
        product: bool = False,
        activation: str | Callable[[Tensor], Tensor] | None = None,
        init: str = "glorot",
        dense: bool = False,
    ) -> None:
        super().__init__()
        if in_channels < 1 or out_channels < 1:
            raise MatlangError(
                f"in_channels and out_channels must be positive, got {in_channels}, {out_channels}"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        infos = describe_sentences(sentences, dense=dense)
        graph_level = by_kind(infos, "graph", "graph-channel")
        if graph_level:
            raise MatlangError(
                f"{graph_level[0].text!r} is graph-level (a scalar per graph): use it in "
                "matlang.nn.SentenceReadout, a convolution takes matrix and node sentences"
            )
        self.sentences: tuple[SentenceInfo, ...] = tuple(infos)
        self.supports = tuple(i.text for i in by_kind(infos, "support"))
        self.channel_sentences = tuple(i.text for i in by_kind(infos, "channel"))
        self.node_sentences = tuple(i.text for i in by_kind(infos, "node"))
        self.dense = dense
        self._support_key = stage_key("supports", self.supports, dense=dense, level="matrix")
        self._channel_key = stage_key("apply", self.channel_sentences, dense=dense, level="node")
        self._node_key = stage_key("values", self.node_sentences, dense=dense, level="node")
        s, k, u = len(self.supports), len(self.channel_sentences), len(self.node_sentences)
        # a kind of sentence the layer lacks has no parameter (every parameter gets gradients)
        #: ``W_s`` of support ``s``: ``weight[s]`` is ``(in_channels, out_channels)``.
        self.weight = nn.Parameter(torch.empty(s, in_channels, out_channels)) if s else None
        #: ``V_k`` of channel-wise sentence ``k``.
        self.channel_weight = nn.Parameter(torch.empty(k, in_channels, out_channels)) if k else None
        #: ``W_u``: one row per input-free node sentence.
        self.node_weight = nn.Parameter(torch.empty(u, out_channels)) if u else None
        self.product = product
        if product:
            self.product_weight_a = nn.Parameter(torch.empty(in_channels, out_channels))
            self.product_weight_b = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        if isinstance(activation, str) and activation not in ACTIVATIONS:
            raise MatlangError(
                f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}"
            )
        self.activation = activation
        if init not in ("glorot", "identity"):
            raise MatlangError(f"init must be 'glorot' or 'identity', got {init!r}")
        self.init = init
        self.reset_parameters()

    # -- parameters -------------------------------------------------------------------------
    def reset_parameters(self) -> None:
        """Glorot weights and a zero bias, or the identity solution (see the class doc)."""
        d, out = self.in_channels, self.out_channels
        s, k, u = len(self.supports), len(self.channel_sentences), len(self.node_sentences)
        if self.init == "identity":
            want = (s + k) * d + u
            if out != want:
                raise MatlangError(
                    f"init='identity' needs out_channels = (supports + channel sentences) × "
                    f"in_channels + node sentences = ({s} + {k}) × {d} + {u} = {want}, got {out}"
                )
            eye = torch.eye(d)
            with torch.no_grad():
                for p in (self.weight, self.channel_weight, self.node_weight):
                    if p is not None:
                        p.zero_()
                for t in range(s):
                    self.weight[t, :, t * d : (t + 1) * d] = eye  # type: ignore[index]
                for t in range(k):
                    self.channel_weight[t, :, (s + t) * d : (s + t + 1) * d] = eye  # type: ignore[index]
                for t in range(u):
                    self.node_weight[t, (s + k) * d + t] = 1.0  # type: ignore[index]
                if self.product:
                    self.product_weight_a.zero_()
                    self.product_weight_b.zero_()
        else:
            for p in (self.weight, self.channel_weight):
                for t in range(0 if p is None else p.shape[0]):
                    _glorot(p[t])  # type: ignore[index]
            if self.node_weight is not None:
                _glorot(self.node_weight)
            if self.product:
                _glorot(self.product_weight_a)
                _glorot(self.product_weight_b)
        if self.bias is not None:
            with torch.no_grad():
                self.bias.zero_()

    # -- forward ----------------------------------------------------------------------------
    def forward(
        self, x: Any, edge_index: Tensor | None = None, batch: Tensor | None = None
    ) -> Tensor:
        dtype = next(self.parameters()).dtype  # every layer has a weight per kind it uses
        x, edge_index, batch = unpack(*layer_inputs(x, edge_index, batch), dtype)
        x = x.to(dtype)
        n = x.shape[0]
        if x.shape[1] != self.in_channels:
            raise MatlangError(f"x has {x.shape[1]} channels, the layer expects {self.in_channels}")
        out = x.new_zeros(n, self.out_channels)
        if self.weight is not None:
            # x W_s for every s at once: (N, S, out), then Σ_s C_s (x W_s) in one pass
            s = self.weight.shape[0]
            w = self.weight.permute(1, 0, 2).reshape(self.in_channels, s * self.out_channels)
            y = (x @ w).reshape(n, s, self.out_channels)
            out = out + propagate_supports(y, edge_index, batch, self._support_key)
        if self.channel_weight is not None:
            f = apply_channels(x, edge_index, batch, self._channel_key)
            v = self.channel_weight.reshape(-1, self.out_channels)
            out = out + f @ v
        if self.node_weight is not None:
            u = graph_values(edge_index, batch, n, self._node_key)
            out = out + u.to(x.dtype) @ self.node_weight
        if self.product:
            out = out + (x @ self.product_weight_a) * (x @ self.product_weight_b)
        if self.bias is not None:
            out = out + self.bias
        act = self.activation
        if act is None:
            return out
        return ACTIVATIONS[act](out) if isinstance(act, str) else act(out)

    # -- introspection ----------------------------------------------------------------------
    def graph_constants_computed(self) -> int:
        """How often this layer's supports were computed (not served from a batch's memo)."""
        return stage(self._support_key).computed

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def extra_repr(self) -> str:
        act = (
            self.activation
            if self.activation is None or isinstance(self.activation, str)
            else (getattr(self.activation, "__name__", "callable"))
        )
        head = (
            f"{self.in_channels}, {self.out_channels}, product={self.product}, "
            f"activation={act}, bias={self.bias is not None}, parameters={self.num_parameters()}"
        )
        return "\n".join([head] + [f"  {i.summary()}" for i in self.sentences])


__all__ = ["ACTIVATIONS", "SentenceConv"]
