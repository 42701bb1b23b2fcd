"""``SentenceConv``: a graph convolution whose supports and features are MATLANG sentences."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from matlang import ast
from matlang.compiler.layers.explain import (
    MessagePassingBase,
    explain_weight,
    nonlinear_reason,
    refuse_tracing,
)
from matlang.compiler.layers.sentences import SentenceInfo, by_kind, describe_sentences
from matlang.compiler.layers.stage import (
    apply_channels,
    graph_values,
    make_batch,
    nonfinite_option,
    propagate,
    sentence_stage,
    support_mix,
)
from matlang.errors import GraphError, MatlangError
from matlang.runtime.layer_inputs import (
    adjacency_edges,
    layer_inputs,
    no_x,
    unpack,
    without_weight,
)

#: dtypes computed in float32 and returned in their own dtype (torch has no half-precision
#: sparse CSR product on the CPU; float32 accumulation everywhere keeps results comparable)
HALF_DTYPES = (torch.float16, torch.bfloat16)
#: what ``normalize=`` may be (see :class:`SentenceConv`)
NORMALIZATIONS = (None, "max_row_sum")

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


class SentenceConv(MessagePassingBase):  # type: ignore[misc,valid-type]
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
      (:func:`compiler.api.materialise`) and remembered on the batch; it is also filed per
      graph (:mod:`compiler.layers.support_cache`), so a new batch of graphs seen before (a
      shuffled loader's next epoch) is assembled from the cache, not recomputed;
    * a **node sentence of one free input** (``input h; relu(A h) ⊙ (A² h)``) is applied to each
      channel of :math:`\mathbf{X}` (:math:`f_k(\mathbf{X})`, ``(N, d)``), then mixed by
      :math:`\mathbf{V}_k`;
    * a **node sentence without input** (``(A³ ⊙ I) 𝟏``, triangles × 2 per node) is a column of
      :math:`\mathbf{U}`, a structural feature computed once per batch.

    Graph-level sentences belong in :class:`~compiler.layers.readout.SentenceReadout`. A sentence
    whose support is full (``exp(A)``) is refused here with the error of
    :func:`compiler.api.compile` (``dense=True`` allows it).

    With ``init="identity"`` and ``activation=None``, the layer computes
    ``[C_1 X ‖ … ‖ C_S X ‖ f_1(X) ‖ … ‖ U]`` exactly: the sentences' values, the starting
    point for training (``out_channels`` must then be ``(S + K)·in_channels + #U``). The
    product term starts at zero with ``W_b = 0`` and a Glorot ``W_a``, so it still learns.

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
        nonfinite: ``"error"`` raises, naming the sentence and the graph, where a sentence's
            value is inf/nan (an input too); ``"keep"`` lets them through, as ``compile`` does.
        normalize: ``None`` (the supports as they are) or ``"max_row_sum"``: each support
            divided, graph by graph, by its largest absolute row sum (at least 1), which bounds
            its spectral radius by 1, so stacked layers do not multiply entries in the tens.
            A per-graph scalar: the value never depends on the rest of the batch.
        self_loops: ``"error"`` (graphs with self-loops are refused: A has no diagonal in the
            compiler; write ``A + I`` in a sentence instead) or ``"remove"`` (they are dropped).

    **Weights.** One rule everywhere (``matlang.evaluate``, ``matlang.compile``,
    :class:`~compiler.layers.transforms.SentenceFeatures` and this layer): a weighted graph's
    ``A`` holds the weights. ``edge_weight`` (or a data object's, or a sparse adjacency's values)
    makes every sentence read the weighted ``A``; a weight that requires grad gets gradients
    (PyG explainers' edge masks). A weighted call computes its supports on every call (no batch
    memo: the weights may change between calls).

    **PyG call forms.** ``conv(x, edge_index)``, ``conv(x, edge_index, batch)``,
    ``conv(x, edge_index, edge_weight=w)``, ``conv(x, adj_t)`` with a torch sparse adjacency or
    a ``torch_sparse.SparseTensor`` (``adj_t[i, j]``: the edge ``j → i``), ``conv(data)``.
    ``in_channels=-1`` is inferred from the first call (as PyG's lazy layers: run one batch
    before building the optimizer). ``float16``/``bfloat16`` are computed in float32 and returned
    in their dtype. ``torch.jit.script`` and ``torch.fx.symbolic_trace`` are refused: use
    ``torch.compile``.

    **PyG's explainers and** ``to_hetero``. With PyG installed the layer is a
    ``MessagePassing`` (no ``propagate``: the sentences compute the messages), so
    ``torch_geometric.explain.Explainer`` (``GNNExplainer``, ``edge_mask_type="object"``) finds
    it: its edge mask (``sigmoid`` applied as PyG does) is a per-edge weight on ``A``, the rule
    of ``edge_weight=`` (multiplied with it when both are given), averaged over each edge's two
    directions (A is symmetric), and gets gradients. Only a layer whose sentences are all linear
    in ``A`` (``A``, ``L``, ``A + I``, ``input h; A h``) scales each edge's message by its mask
    as PyG's explainers assume; any other (``A ⊙ A²``) refuses the mask, naming the sentence.
    ``to_hetero`` and ``HeteroConv`` work for edge types whose source and destination node
    types are the same; a bipartite edge type (a rectangular A) is refused.

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
        normalize: str | None = None,
        self_loops: str = "error",
        nonfinite: str = "error",
    ) -> None:
        if MessagePassingBase is nn.Module:
            super().__init__()
        else:  # PyG's MessagePassing: no aggregation module of its own (print(conv) unchanged)
            super().__init__(aggr=None)
        if (in_channels < 1 and in_channels != -1) or out_channels < 1:
            raise MatlangError(
                f"in_channels and out_channels must be positive (in_channels -1: inferred), got "
                f"{in_channels}, {out_channels}"
            )
        if normalize not in NORMALIZATIONS:
            raise MatlangError(f"normalize must be None or 'max_row_sum', got {normalize!r}")
        if self_loops not in ("error", "remove"):
            raise MatlangError(f"self_loops must be 'error' or 'remove', got {self_loops!r}")
        self.normalize, self.self_loops = normalize, self_loops
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
        self.dense, self.nonfinite = dense, nonfinite
        nonfinite_option(nonfinite)  # checked before any stage is built
        self._build_stages()
        s, k, u = len(self.supports), len(self.channel_sentences), len(self.node_sentences)
        # a kind of sentence the layer lacks has no parameter (every parameter gets gradients)
        #: ``W_s`` of support ``s``: ``weight[s]`` is ``(in_channels, out_channels)``.
        # in_channels=-1: uninitialised until the first call (see _materialise)
        p = nn.Parameter if in_channels > 0 else (lambda t: nn.UninitializedParameter())
        d = max(in_channels, 0)
        self.weight = p(torch.empty(s, d, out_channels)) if s else None
        #: ``V_k`` of channel-wise sentence ``k``.
        self.channel_weight = p(torch.empty(k, d, out_channels)) if k else None
        #: ``W_u``: one row per input-free node sentence.
        self.node_weight = nn.Parameter(torch.empty(u, out_channels)) if u else None
        self.product = product
        if product:
            self.product_weight_a = p(torch.empty(d, out_channels))
            self.product_weight_b = p(torch.empty(d, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        if isinstance(activation, str) and activation not in ACTIVATIONS:
            raise MatlangError(
                f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}"
            )
        self.activation = activation
        if init not in ("glorot", "identity"):
            raise MatlangError(f"init must be 'glorot' or 'identity', got {init!r}")
        self.init = init
        if in_channels > 0:
            self.reset_parameters()
        elif self.node_weight is not None:
            self.node_weight.data.zero_()  # initialised with the rest on the first call

    def _build_stages(self) -> None:
        """The layer's three stages, from its sentences' Plans (see :mod:`.stage`)."""
        infos = self.sentences
        options: dict[str, Any] = {"dense": self.dense, "nonfinite": self.nonfinite}
        self._support_stage = sentence_stage(
            "supports", by_kind(infos, "support"), level="matrix", **options
        )
        self._channel_stage = sentence_stage(
            "apply", by_kind(infos, "channel"), level="node", **options
        )
        self._node_stage = sentence_stage("values", by_kind(infos, "node"), level="node", **options)
        self._support_key = self._support_stage.key
        self._channel_key = self._channel_stage.key
        self._node_key = self._node_stage.key

    _STAGE_ATTRS = ("_support_stage", "_channel_stage", "_node_stage")

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its sentences' Plans, without its stages (their compiled modules and
        caches): :meth:`__setstate__` builds them again."""
        state = super().__getstate__()
        return {k: v for k, v in state.items() if k not in self._STAGE_ATTRS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._build_stages()

    def _materialise(self, d: int, like: Tensor) -> None:
        """``in_channels=-1``: the weights' shapes from the first ``x`` (PyG's lazy layers)."""
        self.in_channels = d
        s, k, out = len(self.supports), len(self.channel_sentences), self.out_channels
        dtype = self.bias.dtype if self.bias is not None else like.dtype
        shapes = {
            "weight": (s, d, out),
            "channel_weight": (k, d, out),
            "product_weight_a": (d, out),
            "product_weight_b": (d, out),
        }
        with torch.no_grad():
            for name, shape in shapes.items():
                p = getattr(self, name, None)
                if isinstance(p, nn.UninitializedParameter):
                    p.materialize(shape, device=like.device, dtype=dtype)
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any) -> None:
        """A lazy layer (``in_channels=-1``) not yet called takes its width from the state."""
        w = state_dict.get(prefix + "weight", state_dict.get(prefix + "channel_weight"))
        if w is None:
            w = state_dict.get(prefix + "product_weight_a")
        if self.in_channels < 0 and w is not None:
            self._materialise(int(w.shape[-2]), w)
        super()._load_from_state_dict(state_dict, prefix, *args)

    #: ``print(conv)`` shows the sentences (``MessagePassing`` would print only the widths)
    __repr__ = nn.Module.__repr__

    def __prepare_scriptable__(self) -> nn.Module:
        raise MatlangError(
            "SentenceConv cannot be scripted with torch.jit.script (its graph constants are "
            "computed by MATLANG sentences at run time, outside TorchScript): use "
            "torch.compile(conv) instead"
        )

    # -- parameters -------------------------------------------------------------------------
    def reset_parameters(self) -> None:
        """Glorot weights and a zero bias, or the identity solution (see the class doc). A lazy
        layer (``in_channels=-1``) not yet called is initialised on its first call."""
        if self.in_channels < 0:
            return
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
                # zero, and trainable: W_b = 0 beside a Glorot W_a (both zero is a saddle point,
                # each factor's gradient being the other factor)
                _glorot(self.product_weight_a)
                with torch.no_grad():
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
        self,
        x: Any,
        edge_index: Any = None,
        batch: Tensor | None = None,
        edge_weight: Tensor | None = None,
    ) -> Tensor:
        """``(x, edge_index[, batch][, edge_weight])`` or one data object (see the class doc);
        ``batch`` stays the third argument (PyG's ``GraphConv`` takes ``edge_weight`` third:
        pass it by name here). Without ``batch`` every node is one graph (PyG's rule): a
        sentence with a whole-graph sum (``input h; 𝟏 (𝟏ᵀ h)``) then sums over the whole
        mini-batch — pass ``batch`` for graphs batched together."""
        refuse_tracing("SentenceConv", x, edge_index, batch, edge_weight)
        if isinstance(x, (tuple, list)):
            raise GraphError(
                "SentenceConv takes one node set (x of shape (N, d)), got a pair (x_src, x_dst): "
                "a bipartite edge type has a rectangular A, on which sentences such as A² or "
                "A ⊙ A² are not defined. to_hetero works where every edge type joins a node "
                "type to itself; otherwise build a HeteroConv with SentenceConv for those edge "
                "types and a PyG conv (SAGEConv, GraphConv) for the bipartite ones",
                "x",
            )
        if isinstance(x, Tensor) and edge_index is not None:
            edge_index, given = adjacency_edges(edge_index, int(x.shape[0]))
            if given is not None and edge_weight is not None:
                raise GraphError("edge_weight is given twice: by the sparse adjacency and by name")
            edge_weight = given if edge_weight is None else edge_weight
        if isinstance(batch, Tensor) and batch.is_floating_point():
            raise GraphError(
                f"batch (the third argument) must be an integer vector, got {batch.dtype}: "
                "pass edge weights as edge_weight=...",
                "batch",
            )
        x, edge_index, batch = layer_inputs(x, edge_index, batch)
        if not isinstance(x, Tensor) and edge_weight is None:
            edge_weight = getattr(x, "edge_weight", None)
            if edge_weight is not None:
                x = without_weight(x)
        dtype = self._param_dtype()
        given = x
        x, edge_index, batch = unpack(x, edge_index, batch, dtype)
        if self.in_channels < 0:
            self._materialise(int(x.shape[1]), x)
        if x.shape[1] != self.in_channels:
            raise MatlangError(
                f"x has {x.shape[1]} channels, the layer expects {self.in_channels}{no_x(given)}"
            )
        if edge_weight is not None:
            edge_weight = torch.as_tensor(edge_weight, device=edge_index.device)
        mask = explain_weight(self, edge_index, int(x.shape[0]))
        if mask is not None:
            self._check_explainable()
            edge_weight = mask if edge_weight is None else edge_weight * mask
        if self.self_loops == "remove":
            edge_index, edge_weight = _drop_loops(edge_index, edge_weight)
        work = torch.float32 if dtype in HALF_DTYPES else dtype
        x = x.to(work)
        try:
            if edge_weight is None:
                out = self._terms(x, edge_index, batch)
            else:
                out = self._weighted_terms(x, edge_index, batch, edge_weight)
        except GraphError as e:
            if "self-loop" not in str(e):
                raise
            raise GraphError(
                f"{e}: SentenceConv(..., self_loops='remove') drops self-loops (A has no "
                "diagonal here; write A + I in a sentence to use it)",
                "batch",
            ) from None
        if self.bias is not None:  # out is the layer's own new tensor: no backward reads it
            out = out.add_(self._p(self.bias, work))
        act = self.activation
        if act is not None:
            out = ACTIVATIONS[act](out) if isinstance(act, str) else act(out)
        return out.to(dtype)

    def _check_explainable(self) -> None:
        """An explainer's edge mask scales each edge's message only where every sentence is
        linear in ``A`` (see :mod:`compiler.layers.explain`)."""
        for info in self.sentences:
            why = nonlinear_reason(info.text)
            if why is not None:
                raise MatlangError(
                    f"SentenceConv cannot take an explainer's edge mask: the {info.kind} "
                    f"sentence {why}. PyG's explainers scale each edge's message by its mask; "
                    "here the mask would enter as a product of several edges' masks and the "
                    "explanation would mean nothing. Explain a layer whose sentences are "
                    "linear in A (A, L, A + I, input h; A h)"
                )

    def _param_dtype(self) -> torch.dtype:
        for p in self._parameters.values():  # its own, in order (cheaper than parameters())
            if p is not None and not isinstance(p, nn.parameter.UninitializedParameter):
                return p.dtype
        for p in self.parameters():
            if not isinstance(p, nn.parameter.UninitializedParameter):
                return p.dtype
        return torch.get_default_dtype()

    @staticmethod
    def _p(p: Tensor, work: torch.dtype) -> Tensor:
        return p if p.dtype == work else p.to(work)

    def _mixed(self, x: Tensor) -> Tensor | None:
        """``x W_s`` for every ``s`` at once: ``(N, S, out)``."""
        if self.weight is None:
            return None
        n, s = x.shape[0], self.weight.shape[0]
        w = self._p(self.weight, x.dtype).permute(1, 0, 2)
        return (x @ w.reshape(self.in_channels, s * self.out_channels)).reshape(
            n, s, self.out_channels
        )

    def _rest(self, x: Tensor, out: Tensor, f: Tensor | None, u: Tensor | None) -> Tensor:
        """The channel-wise, input-free and product terms, added to ``out`` in place (a new
        tensor of the caller's that no backward reads)."""
        if f is not None:
            cw = self.channel_weight
            assert isinstance(cw, Tensor)
            out = out.addmm_(f, self._p(cw, x.dtype).reshape(-1, self.out_channels))
        if u is not None:
            out = out.addmm_(u.to(x.dtype), self._p(self.node_weight, x.dtype))  # type: ignore[arg-type]
        if self.product:
            a = self._p(self.product_weight_a, x.dtype)
            out = out.addcmul_(x @ a, x @ self._p(self.product_weight_b, x.dtype))
        return out

    def _terms(self, x: Tensor, edge_index: Tensor, batch: Tensor | None) -> Tensor:
        n = x.shape[0]
        if self.weight is None:
            out = x.new_zeros(n, self.out_channels)
        elif x.shape[1] <= self.out_channels and not torch.compiler.is_compiling():
            out = self._supports_first(x, edge_index, batch)
        else:
            y = self._mixed(x)
            assert y is not None
            if self.normalize is not None:
                y = y * self._support_scale(edge_index, batch, n).to(y.dtype).unsqueeze(-1)
            out = propagate(y, edge_index, batch, self._support_key)
        f = u = None
        if self.channel_weight is not None:
            f = apply_channels(x, edge_index, batch, self._channel_key)
        if self.node_weight is not None:
            u = graph_values(edge_index, batch, n, self._node_key)
        return self._rest(x, out, f, u)

    def _supports_first(self, x: Tensor, edge_index: Tensor, batch: Tensor | None) -> Tensor:
        """``Σ_s C_s x W_s`` as ``Σ_s (C_s x) W_s`` for ``d ≤ out``: the sparse products on
        the ``d`` input channels (no more than on ``x W_s``'s ``out``), none at all in the
        backward of a first layer (its ``x`` needs no gradient), no product for ``I`` (``I x``
        is ``x``); the dense products accumulate in one output (``addmm_``: no ``(N, S, out)``
        intermediate, no transposed copy, no sum of ``S`` terms). ``normalize``'s scale is a
        constant per graph, so it commutes with ``C_s`` (one block per graph)."""
        w = self.weight
        assert isinstance(w, Tensor)
        scale = None
        if self.normalize is not None:
            scale = self._support_scale(edge_index, batch, x.shape[0]).to(x.dtype)
        return support_mix(x, self._p(w, x.dtype), edge_index, batch, self._support_key, scale)

    def _support_scale(self, edge_index: Tensor, batch: Tensor | None, n: int) -> Tensor:
        """``(N, S)``: 1 / (the largest absolute row sum of support ``s`` in node ``i``'s graph,
        at least 1), remembered on the batch with its supports."""
        st = self._support_stage

        def compute() -> Tensor:
            sup = st.supports(edge_index, batch, n)
            rows, which, vals = sup.entries()
            return _scale(rows, which, vals, n, sup.s, batch)

        return st.remembered(edge_index, batch, n, compute, "normalize")  # type: ignore[no-any-return]

    def _weighted_terms(
        self, x: Tensor, edge_index: Tensor, batch: Tensor | None, edge_weight: Tensor
    ) -> Tensor:
        """Every term on the weighted ``A``, differentiable in ``edge_weight``: the sentences'
        compiled modules on a weighted batch (no memo), the supports as sparse products."""
        n = x.shape[0]
        b = make_batch(edge_index, batch, n, edge_weight)
        out = x.new_zeros(n, self.out_channels)
        y = self._mixed(x)
        if y is not None:
            st = self._support_stage
            parts = [st.module(k, torch.float64).edge_values(b)[0] for k in range(len(st.plans))]
            if self.normalize is not None:
                rows = torch.cat([i[0] for i, _ in parts])
                which = torch.cat([torch.full_like(i[0], s) for s, (i, _) in enumerate(parts)])
                vals = torch.cat([v for _, v in parts])  # the scale depends on the weights too
                y = y * _scale(rows, which, vals, n, len(parts), batch).to(y.dtype).unsqueeze(-1)
            for s, (index, values) in enumerate(parts):
                # the plan's own index (in range, no duplicates): said explicitly, torch's
                # "Sparse invariant checks are implicitly disabled" warning is not printed
                c = torch.sparse_coo_tensor(
                    index, values.to(x.dtype), (n, n), check_invariants=False
                )
                out = out + torch.sparse.mm(c, y[:, s])
        f = u = None
        if self.channel_weight is not None:
            f = self._channel_stage.channels(b, x, n)
        if self.node_weight is not None:
            st = self._node_stage
            u = torch.stack(
                [st.module(k, torch.float64)(b).reshape(n) for k in range(len(st.plans))], 1
            )
        return self._rest(x, out, f, u)

    # -- introspection ----------------------------------------------------------------------
    def graph_constants_computed(self) -> int:
        """How often this layer's supports were computed (not served from a batch's memo)."""
        return self._support_stage.computed

    def num_parameters(self) -> int:
        """Trainable parameters (those of a lazy layer's weights count after its first call)."""
        return sum(
            p.numel()
            for p in self.parameters()
            if p.requires_grad and not isinstance(p, nn.parameter.UninitializedParameter)
        )

    def extra_repr(self) -> str:
        act = (
            self.activation
            if self.activation is None or isinstance(self.activation, str)
            else (getattr(self.activation, "__name__", "callable"))
        )
        head = (
            f"{self.in_channels}, {self.out_channels}, product={self.product}, "
            f"activation={act}, bias={self.bias is not None}, normalize={self.normalize}, "
            f"parameters={self.num_parameters()}"
        )
        return "\n".join([head] + [f"  {i.summary()}" for i in self.sentences])


def _scale(
    rows: Tensor, which: Tensor, vals: Tensor, n: int, s: int, batch: Tensor | None
) -> Tensor:
    """``(N, S)``: 1 / max(1, the largest absolute row sum of support ``which`` over the nodes
    of each node's graph) from the supports' entries ``(rows, which, vals)``."""
    sums = vals.new_zeros(n * s).index_add_(0, rows * s + which, vals.abs()).reshape(n, s)
    if batch is None:
        top = sums.amax(0, keepdim=True) if n else sums.new_ones(1, s)
        per_node = top.expand(n, s)
    else:
        g = int(batch.max()) + 1 if batch.numel() else 0
        top = sums.new_zeros(g, s).index_reduce_(
            0, batch.to(torch.int64), sums, "amax", include_self=True
        )
        per_node = top.index_select(0, batch.to(torch.int64))
    return 1.0 / per_node.clamp(min=1.0)


def _drop_loops(edge_index: Tensor, edge_weight: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """``self_loops="remove"``: the edges without their self-loops, remembered on the given
    ``edge_index`` tensor (the same tensor again gives the same tensor back, so the batch
    memo of the supports finds it)."""
    key = (edge_index._version, None if edge_weight is None else id(edge_weight))
    hit = getattr(edge_index, "_matlang_loopless", None)
    if hit is not None and hit[0] == key and edge_weight is None:
        return hit[1], None
    keep = edge_index[0] != edge_index[1]
    ei = edge_index[:, keep]
    if edge_weight is None:
        try:
            edge_index._matlang_loopless = (key, ei)  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError):
            pass
        return ei, None
    return ei, edge_weight[keep]


__all__ = ["ACTIVATIONS", "HALF_DTYPES", "SentenceConv"]
