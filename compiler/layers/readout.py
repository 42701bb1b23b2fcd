"""``SentenceReadout``: graph-level sentences as graph features for a model's readout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from matlang import ast
from matlang.compiler.layers.sentences import SentenceInfo, by_kind, describe_sentences
from matlang.compiler.layers.stage import (
    apply_channels,
    graph_values,
    make_batch,
    nonfinite_option,
    sentence_stage,
)
from matlang.errors import GraphError, MatlangError
from matlang.runtime.layer_inputs import (
    adjacency_edges,
    layer_inputs,
    no_x,
    unpack,
    without_weight,
)


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
        dense: allow full supports, materialised on all ``n²`` entries of each graph.
        nonfinite: ``"error"`` raises, naming the sentence and the graph, where a sentence's
            value is inf/nan (an input too); ``"keep"`` lets them through, as ``compile`` does.

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
        nonfinite: str = "error",
    ) -> None:
        super().__init__()
        infos = describe_sentences(sentences, dense=dense)
        nonfinite_option(nonfinite)  # checked before any stage is built
        self.nonfinite, self.dense = nonfinite, dense
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
        self._build_stages()

    def _build_stages(self) -> None:
        """The readout's two stages, from its sentences' Plans (see :mod:`.stage`)."""
        infos = self.sentences
        options: dict[str, Any] = {"dense": self.dense, "nonfinite": self.nonfinite}
        self._constant_stage = sentence_stage(
            "values", by_kind(infos, "graph"), level="graph", **options
        )
        self._channel_stage = sentence_stage(
            "apply", by_kind(infos, "graph-channel"), level="graph", **options
        )
        self._constant_key = self._constant_stage.key
        self._channel_key = self._channel_stage.key

    _STAGE_ATTRS = ("_constant_stage", "_channel_stage")

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its sentences' Plans, without its stages: :meth:`__setstate__` builds
        them again."""
        state = super().__getstate__()
        return {k: v for k, v in state.items() if k not in self._STAGE_ATTRS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._build_stages()

    def forward(
        self,
        x: Any,
        edge_index: Tensor | None = None,
        batch: Tensor | None = None,
        num_graphs: int | None = None,
        edge_weight: Tensor | None = None,
    ) -> Tensor:
        """``num_graphs`` (a data object's own, when given one) is the number of rows; without
        it, the rows are counted from the batch vector, a graph break under ``torch.compile``.
        Graphs after the batch vector's last one (graphs without nodes, which the vector cannot
        show) get rows only when ``num_graphs`` says they are there: the sentences' values on a
        graph without nodes (in eager mode; under ``torch.compile`` they are refused).
        ``edge_weight`` (or a data object's): ``A`` holds the weights, as in ``SentenceConv``
        and ``matlang.evaluate``; computed on every call, differentiable in the weights."""
        if isinstance(x, Tensor) and edge_index is not None:
            # the adjacency forms SentenceConv takes: a torch sparse (COO/CSR/CSC) matrix or a
            # SparseTensor, its values the weights (none for a pattern of ones)
            edge_index, given = adjacency_edges(edge_index, int(x.shape[0]))
            if given is not None and edge_weight is not None:
                raise GraphError("edge_weight is given twice: by the sparse adjacency and by name")
            edge_weight = given if edge_weight is None else edge_weight
        x, edge_index, batch = layer_inputs(x, edge_index, batch)
        if num_graphs is None and not isinstance(x, Tensor):
            num_graphs = getattr(x, "num_graphs", None)
        if not isinstance(x, Tensor) and getattr(x, "edge_weight", None) is not None:
            edge_weight = x.edge_weight if edge_weight is None else edge_weight
            x = without_weight(x)
        given = x
        x, edge_index, batch = unpack(x, edge_index, batch, torch.get_default_dtype())
        if self.channel_sentences and x.shape[1] != self.in_channels:
            raise MatlangError(
                f"x has {x.shape[1]} channels, the readout expects {self.in_channels}"
                f"{no_x(given)}"
            )
        if batch is None and num_graphs is None:
            num_graphs = 1
        if num_graphs is not None:
            num_graphs = int(num_graphs)
            if num_graphs < 0:
                raise GraphError(f"num_graphs must be at least 0, got {num_graphs}", "batch")
        # graphs after the batch vector's last one have no nodes: the vector cannot show them
        # (PyG's pooling has the same rule), so they are counted only when num_graphs is given;
        # their rows are the sentences' values on a graph without nodes
        trailing = self._trailing(batch, num_graphs)
        seen = None if num_graphs is None else num_graphs - trailing
        parts = []
        if edge_weight is not None:
            ew = torch.as_tensor(edge_weight, device=edge_index.device)
            parts = self._weighted(x, edge_index, batch, ew, seen)
        elif self.constant_sentences:
            g = -1 if seen is None else seen
            parts.append(
                graph_values(edge_index, batch, x.shape[0], self._constant_key, g).to(x.dtype)
            )
        if self.channel_sentences and edge_weight is None:
            parts.append(apply_channels(x, edge_index, batch, self._channel_key, seen))
        out = parts[0] if len(parts) == 1 else torch.cat(parts, 1)
        if trailing:
            out = torch.cat([out, self._empty_rows(x, trailing)], 0)
        return out

    def _weighted(
        self, x: Tensor, edge_index: Tensor, batch: Tensor | None, w: Tensor, seen: int | None
    ) -> list[Tensor]:
        """The sentences on the weighted ``A`` (no batch memo: weights may change)."""
        b = make_batch(edge_index, batch, x.shape[0], w)
        g = b.num_graphs
        if seen is not None and g != seen:
            raise GraphError(
                f"num_graphs={seen}, but the batch vector holds {g} graphs", "num_graphs"
            )
        parts = []
        if self.constant_sentences:
            st = self._constant_stage
            vals = [st.module(k, torch.float64)(b).reshape(g) for k in range(len(st.plans))]
            parts.append(torch.stack(vals, 1).to(x.dtype))
        if self.channel_sentences:
            parts.append(self._channel_stage.channels(b, x, g))
        return parts

    @staticmethod
    def _trailing(batch: Tensor | None, num_graphs: int | None) -> int:
        """How many of ``num_graphs`` come after the last graph of the batch vector."""
        if num_graphs is None or batch is None or torch.compiler.is_compiling():
            return 0  # under torch.compile the stage checks the rows (no data-dependent branch)
        held = int(batch.max()) + 1 if batch.numel() else 0
        if held > num_graphs:
            raise GraphError(
                f"batch vector names graph {held - 1} but num_graphs is {num_graphs}", "batch"
            )
        return num_graphs - held

    def _empty_rows(self, x: Tensor, count: int) -> Tensor:
        """``count`` rows of the sentences' values on a graph without nodes."""
        none = torch.zeros(2, 0, dtype=torch.int64, device=x.device)
        parts = []
        if self.constant_sentences:
            parts.append(graph_values(none, None, 0, self._constant_key, 1).to(x.dtype))
        if self.channel_sentences:
            parts.append(apply_channels(x[:0], none, None, self._channel_key, 1))
        row = parts[0] if len(parts) == 1 else torch.cat(parts, 1)
        return row.expand(count, row.shape[1])

    def extra_repr(self) -> str:
        head = f"in_channels={self.in_channels}, out_channels={self.out_channels}"
        return "\n".join([head] + [f"  {i.summary()}" for i in self.sentences])


__all__ = ["SentenceReadout"]
