"""``SentenceReadout``: graph-level sentences as graph features for a model's readout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from matlang.compiler.layers.inputs import unpack
from matlang.compiler.layers.sentences import SentenceInfo, by_kind, describe_sentences
from matlang.compiler.layers.stage import apply_channels, graph_values, stage_key
from torch import Tensor, nn

from matlang import ast
from matlang.errors import MatlangError


class SentenceReadout(nn.Module):
    r"""Graph features from graph-level MATLANG sentences (Balcilar et al., ICML 2021): exact
    invariants such as ``tr(A³) / 6`` (triangles) or ``1ᵀ (A ⊙ A²) 1``, and readouts of one
    free input applied to every channel, such as ``input h; 𝟏ᵀ (A ⊙ A²) h``.

    .. math::
        \mathbf{r}_g = \big[\, s_1(G_g) \,\Vert\, \dots \,\Vert\, t_1(G_g, \mathbf{X}_g)
        \,\Vert\, \dots \big]

    The input-free sentences are graph constants, computed once per batch in float64; the
    channel-wise ones are differentiable in ``x``. Concatenate the result with a pooled
    representation before a model's head.

    Args:
        sentences: graph-level sentences (a program or a list).
        in_channels: width ``d`` of ``x`` (needed when a sentence reads a free input).

    Shapes:
        - **input:** node features :math:`(N, d)`, edge indices :math:`(2, E)`, batch vector
          :math:`(N,)` (optional), number of graphs ``G`` (optional; give it under
          ``torch.compile``) — or one data object
        - **output:** :math:`(G, \text{out\_channels})` with ``out_channels = #constant
          sentences + d · #channel-wise sentences``
    """

    def __init__(
        self,
        sentences: str | ast.Expr | Sequence[str | ast.Expr],
        in_channels: int = 0,
        *,
        dense: bool = False,
    ) -> None:
        super().__init__()
        infos = describe_sentences(sentences, dense=dense)
        wrong = [i for i in infos if i.kind not in ("graph", "graph-channel")]
        if wrong:
            raise MatlangError(
                f"{wrong[0].text!r} is {wrong[0].kind}-level, not a graph-level sentence: use it "
                "in matlang.nn.SentenceConv"
            )
        self.sentences: tuple[SentenceInfo, ...] = tuple(infos)
        self.constant_sentences = tuple(i.text for i in by_kind(infos, "graph"))
        self.channel_sentences = tuple(i.text for i in by_kind(infos, "graph-channel"))
        if self.channel_sentences and in_channels < 1:
            raise MatlangError(
                f"{self.channel_sentences[0]!r} reads a free input: give in_channels (the width "
                "of x)"
            )
        self.in_channels = in_channels
        self.out_channels = len(self.constant_sentences) + in_channels * len(self.channel_sentences)
        self._constant_key = stage_key(
            "values", self.constant_sentences, dense=dense, level="graph"
        )
        self._channel_key = stage_key("apply", self.channel_sentences, dense=dense, level="graph")

    def forward(
        self,
        x: Any,
        edge_index: Tensor | None = None,
        batch: Tensor | None = None,
        num_graphs: int | None = None,
    ) -> Tensor:
        """``num_graphs`` (a data object's own, when given one) is the number of rows; without
        it, the rows are counted from the batch vector, a graph break under ``torch.compile``."""
        if num_graphs is None and not isinstance(x, Tensor):
            num_graphs = getattr(x, "num_graphs", None)
        x, edge_index, batch = unpack(x, edge_index, batch, torch.get_default_dtype())
        if batch is None and num_graphs is None:
            num_graphs = 1
        g = -1 if num_graphs is None else num_graphs
        parts = []
        if self.constant_sentences:
            parts.append(
                graph_values(edge_index, batch, x.shape[0], self._constant_key, g).to(x.dtype)
            )
        if self.channel_sentences:
            if x.shape[1] != self.in_channels:
                raise MatlangError(
                    f"x has {x.shape[1]} channels, the readout expects {self.in_channels}"
                )
            parts.append(apply_channels(x, edge_index, batch, self._channel_key, num_graphs))
        return parts[0] if len(parts) == 1 else torch.cat(parts, 1)

    def extra_repr(self) -> str:
        head = f"in_channels={self.in_channels}, out_channels={self.out_channels}"
        return "\n".join([head] + [f"  {i.summary()}" for i in self.sentences])


__all__ = ["SentenceReadout"]
