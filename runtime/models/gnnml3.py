"""GNNML3 (paper Eq. 6–8, Algorithms 1–2): learned spectral supports on a receptive field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from matlang.errors import GraphError, MatlangError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.models.base import (
    Activation,
    GraphModel,
    ModelConfig,
    glorot,
    resolve_activation,
)
from matlang.runtime.preprocess import SupportConfig, Supports, batch_supports


class SupportOperator:
    r"""The pattern of ``M`` (its edges), prepared once for ``Σ_s C^{(s)} H_s`` with any values.

    All supports live on the same pattern, so they are one matrix:

    .. math::
        \sum_s C^{(s)} H_s = \big[C^{(0)} \cdots C^{(S-1)}\big]
            \begin{bmatrix} H_0 \\ \vdots \\ H_{S-1} \end{bmatrix}

    an ``N × N·S`` CSR matrix whose column ``j·S + s`` holds ``C^{(s)}[:, j]`` (so its values
    are the ``(E_M, S)`` edge features read row by row), times ``H`` ``(N, S, C)`` read as
    ``(N·S, C)``: one sparse product per layer instead of one per support. The pattern (row
    pointers, the transposed pattern for gradients) is built once per forward pass and shared
    by every layer, whose supports ``C`` differ only in their values.

    Args:
        edge_index: ``(2, E_M)`` the edges of ``M`` (row ``i`` receives from column ``j``), in
            any order; an entry stored twice adds up.
        num_nodes: ``N``.
        num_supports: ``S``.
    """

    def __init__(self, edge_index: Tensor, num_nodes: int, num_supports: int) -> None:
        ei = sparse._index(edge_index)
        n, s = int(num_nodes), int(num_supports)
        self.num_nodes, self.num_supports, self.num_edges = n, s, int(ei.shape[1])
        #: edge → entry of the coalesced pattern, when the edges are not already sorted
        #: row-major without repeats (GNNML3's supports are).
        self._inverse: Tensor | None = None
        row, col = ei[0], ei[1]
        key = row * n + col
        if not sparse.is_coalesced(key):
            key, self._inverse = torch.unique(key, sorted=True, return_inverse=True)
            row, col = key // max(n, 1), key % max(n, 1)
        self.num_entries = int(key.numel())
        self._row, self._pattern_col = row, col
        self._supports = torch.arange(s, device=ei.device)
        # entry (i, j) of C^(s) is entry (i, j·S + s) of [C^(0) … C^(S-1)]: each entry of M
        # becomes S consecutive entries of the same row, so the rows stay sorted
        self._crow = sparse.row_pointers(row, n) * s
        self._col = (col.unsqueeze(1) * s + self._supports).reshape(-1)
        self._transpose: tuple[Tensor, Tensor, Tensor] | None = None

    def _transposed_pattern(self) -> tuple[Tensor, Tensor, Tensor]:
        """Row pointers and columns of ``[C^{(0)ᵀ}; …; C^{(S-1)ᵀ}]`` (S·N × N: the supports
        transposed, stacked) and M's entries column by column; built on the first backward
        pass. Every block has the pattern of Mᵀ, so one block is built and repeated."""
        if self._transpose is None:
            n, s, e = self.num_nodes, self.num_supports, self.num_entries
            row, col = self._row, self._pattern_col
            by_col = torch.argsort(col * n + row)  # M's entries column by column, rows ascending
            block = sparse.row_pointers(col, n)
            offsets = torch.arange(s, device=col.device).unsqueeze(1) * e
            crow = torch.cat([(block[:-1] + offsets).reshape(-1), block.new_tensor([s * e])])
            self._transpose = (crow, row[by_col].repeat(s), by_col)
        return self._transpose

    def matrix(self, values: Tensor) -> Tensor:
        """``[C^{(0)} … C^{(S-1)}]`` with ``values`` ``(E·S,)`` in entry order."""
        size = (self.num_nodes, self.num_nodes * self.num_supports)
        return sparse.csr_matrix(self._crow, self._col, values, size)

    def transposed_product(self, values: Tensor, grad: Tensor) -> Tensor:
        """``[C^{(0)} … C^{(S-1)}]ᵀ grad``, ``(N·S, C)`` with row ``j·S + s``."""
        n, s, e = self.num_nodes, self.num_supports, self.num_entries
        crow, col, by_col = self._transposed_pattern()
        # block s holds C^(s)ᵀ: the values of support s, column by column
        v = values.reshape(e, s)[by_col].t().reshape(-1)
        out = sparse.csr_matrix(crow, col, v, (s * n, n)) @ grad
        return out.reshape(s, n, -1).transpose(0, 1).reshape(n * s, -1)

    def propagate(self, h: Tensor, support: Tensor) -> Tensor:
        """``Σ_s C^{(s)} h[:, s]``, ``C^{(s)}[i, j] = support[e, s]`` on the edges ``e = (i, j)``.

        Shapes:
            h: ``(N, S, C)``; support: ``(E_M, S)``; out: ``(N, C)``.
        """
        n, s = self.num_nodes, self.num_supports
        if tuple(h.shape[:2]) != (n, s) or tuple(support.shape) != (self.num_edges, s):
            raise GraphError(
                f"the support operator is for {n} nodes, {self.num_edges} edges and {s} "
                f"supports, got h {tuple(h.shape)} and supports {tuple(support.shape)}"
            )
        c = support.to(h.dtype)
        if h.shape[2] == 0 or self.num_entries == 0:
            return h.new_zeros((n, h.shape[2]))
        if self._inverse is not None:  # repeated entries add up: C = Σ over stored entries
            c = c.new_zeros((self.num_entries, s)).index_add_(0, self._inverse, c)
        out: Tensor = _SupportProduct.apply(c.reshape(-1), h.reshape(n * s, -1), self)
        return out


class _SupportProduct(torch.autograd.Function):
    """``out = C H`` for the CSR matrix ``C`` of :class:`SupportOperator`, differentiable in its
    values and in ``H``: ``∂L/∂H = Cᵀ G`` and ``∂L/∂C[i, k] = G[i] · H[k]`` on the pattern (a
    sampled product), with ``G = ∂L/∂out``."""

    @staticmethod
    def forward(ctx: Any, values: Tensor, h: Tensor, op: SupportOperator) -> Tensor:
        ctx.save_for_backward(values, h)
        ctx.op = op
        return op.matrix(values) @ h

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        values, h = ctx.saved_tensors
        op: SupportOperator = ctx.op
        grad = grad.contiguous()
        grad_values = grad_h = None
        if ctx.needs_input_grad[0]:
            pattern = op.matrix(torch.zeros_like(values))
            grad_values = torch.sparse.sampled_addmm(pattern, grad, h.t(), beta=0.0).values()
        if ctx.needs_input_grad[1]:
            grad_h = op.transposed_product(values, grad)
        return grad_values, grad_h, None


#: The forms of Eq. 7's MLPs (:class:`GNNML3Conv`'s ``support_mlp``).
SUPPORT_MLPS = ("sigmoid", "authors")


def support_features(form: str, z1: Tensor, z2: Tensor, z3: Tensor) -> Tensor:
    """``mlp_1 ‖ mlp_2 ⊙ mlp_3`` from the three linear maps' outputs, in ``form``
    (:data:`SUPPORT_MLPS`): sigmoids, or the authors' ReLU and tanh · tanh."""
    if form == "authors":
        return torch.cat([torch.relu(z1), torch.tanh(z2) * torch.tanh(z3)], dim=-1)
    return torch.cat([torch.sigmoid(z1), torch.sigmoid(z2) * torch.sigmoid(z3)], dim=-1)


class GNNML3Conv(nn.Module):
    r"""The GNNML3 layer of Balcilar et al., "Breaking the Limits of Message Passing Graph
    Neural Networks" (ICML 2021), Eq. 7–8 (Algorithm 2, one layer).

    .. math::
        C = M \odot \mathrm{mlp}_4\big(\mathrm{mlp}_1(C') \,\Vert\,
            \mathrm{mlp}_2(C') \odot \mathrm{mlp}_3(C')\big)

        H^{(l+1)} = \sigma\Big(\sum_s C^{(s)} H^{(l)} W^{(l,s)} + \mathbf 1 b^\top
            \,\Big\Vert\, \mathrm{mlp}_5(H^{(l)}) \odot \mathrm{mlp}_6(H^{(l)})\Big)

    with ``mlp_1, mlp_2, mlp_3: S → 2S`` (sigmoid), ``mlp_4: 4S → S`` (ReLU), all acting on the
    support axis of each entry of ``M`` (the supports are edge features on M's edges, so the
    ``M ⊙`` is implicit), and ``mlp_5, mlp_6: in → P`` single linear layers followed by
    ``product_activation`` (identity by default, which makes the product term exactly GNNML1's).

    Exposed weights: :attr:`weight` ``(S, in, out)`` is ``W^{(l,s)}``; :attr:`weight5`,
    :attr:`weight6` ``(in, P)`` and :attr:`bias5`, :attr:`bias6` are ``mlp_5``/``mlp_6``;
    :attr:`support_mlp1` … :attr:`support_mlp4` are ``mlp_1`` … ``mlp_4`` (``None`` when
    ``learn_supports=False``: then ``C = C'``, the given supports are used as they are).
    :meth:`from_weights` builds a layer from explicit tensors.

    Args:
        in_channels: input width.
        out_channels: width of the convolution part.
        num_supports: ``S``, columns of the supports.
        product_channels: ``P``, width of the product part (default ``out_channels``; 0: none).
        learn_supports: learn ``C`` from ``C'`` (Eq. 7) or use ``C'`` directly.
        bias: add ``b`` to the convolution part.
        product_bias: biases in ``mlp_5`` and ``mlp_6``.
        activation: ``σ`` (name or callable).
        product_activation: the activation inside ``mlp_5`` and ``mlp_6``.
        activate_product: apply ``σ`` to the product part too (default: Eq. 8 as the paper
            writes it, ``σ`` over the concatenation); ``False``: ``σ`` on the convolution part
            only, the product part as it is (the authors' ``ML3Layer``: ``relu(conv) ‖
            tanh(·) ⊙ tanh(·)``, whose products may be negative).
        support_mlp: the form of Eq. 7's MLPs. ``"sigmoid"``: ``mlp_1 … mlp_3`` are linear
            layers with biases and sigmoids, ``mlp_4`` a linear layer with a bias and a ReLU.
            ``"authors"`` (the authors' ``ML3Layer``): bias-free layers, ``mlp_1`` a ReLU,
            ``mlp_2``/``mlp_3`` tanh, ``mlp_4`` a ReLU — so that ``C`` is 0 where ``C'`` is
            and keeps the spread of ``C'``; with sigmoids every entry of ``M`` starts near
            ``relu(mlp_4(½, …))``, the same for every edge, and the learned supports begin as
            a multiple of ``M`` (1-WL: GNNML3 in that form stays at 50 % on EXP-classify).
        local_supports: learn ``C = ReLU(mlp_4(z(C')) − mlp_4(z(0)))`` with
            ``z = mlp_1 ‖ mlp_2 ⊙ mlp_3``, so that ``C`` vanishes where every ``C'^{(s)}`` does.
            Eq. 7 as written (``False``) gives every entry of ``M`` a positive weight whatever
            ``C'`` is there (``sigmoid(0) = ½``); on a receptive field of r hops that makes
            ``C`` a sum over the whole r-hop ball, whose row sums grow with the ball (on the
            30×30 grid, r = 5: ~54 entries per row, activations ×20 per layer, 1e7 after 4
            layers). The authors' code keeps ``C'`` as it is for filtering, and its learned
            variant uses bias-free layers with ``f(0) = 0``.

    Shapes:
        x: ``(N, in_channels)``; edge_index: ``(2, E_M)`` the edges of ``M``; support:
        ``(E_M, S)``; out: ``(N, out_channels + P)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        num_supports: int,
        product_channels: int | None = None,
        learn_supports: bool = True,
        bias: bool = True,
        product_bias: bool = True,
        activation: Activation = "relu",
        product_activation: Activation = "identity",
        activate_product: bool = True,
        local_supports: bool = False,
        support_mlp: str = "authors",
    ) -> None:
        super().__init__()
        s = num_supports
        if support_mlp not in SUPPORT_MLPS:
            raise MatlangError(
                f"support_mlp must be one of {', '.join(SUPPORT_MLPS)}, got {support_mlp!r}"
            )
        self.support_mlp = support_mlp
        p = out_channels if product_channels is None else product_channels
        if s < 1 or p < 0:
            raise MatlangError(f"need num_supports ≥ 1 and product_channels ≥ 0, got {s}, {p}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_supports, self.product_channels = s, p
        self.support_mlp1: nn.Linear | None = None
        self.support_mlp2: nn.Linear | None = None
        self.support_mlp3: nn.Linear | None = None
        self.support_mlp4: nn.Linear | None = None
        if learn_supports:
            biased = support_mlp == "sigmoid"
            self.support_mlp1 = nn.Linear(s, 2 * s, bias=biased)
            self.support_mlp2 = nn.Linear(s, 2 * s, bias=biased)
            self.support_mlp3 = nn.Linear(s, 2 * s, bias=biased)
            self.support_mlp4 = nn.Linear(4 * s, s, bias=biased)
        #: ``W^{(l,s)}`` for each support ``s``.
        self.weight = nn.Parameter(torch.empty(s, in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.weight5: nn.Parameter | None = None
        self.weight6: nn.Parameter | None = None
        self.bias5: nn.Parameter | None = None
        self.bias6: nn.Parameter | None = None
        if p:
            self.weight5 = nn.Parameter(torch.empty(in_channels, p))
            self.weight6 = nn.Parameter(torch.empty(in_channels, p))
            glorot(self.weight5)
            glorot(self.weight6)
            if product_bias:
                self.bias5 = nn.Parameter(torch.zeros(p))
                self.bias6 = nn.Parameter(torch.zeros(p))
        glorot(self.weight)
        self.activation, self.product_activation = activation, product_activation
        self.activate_product = activate_product
        self.local_supports = local_supports
        self._act = resolve_activation(activation)
        self._prod_act = resolve_activation(product_activation)

    @property
    def learn_supports(self) -> bool:
        return self.support_mlp1 is not None

    @classmethod
    def from_weights(
        cls,
        weight: Tensor,
        weight5: Tensor | None = None,
        weight6: Tensor | None = None,
        *,
        bias: Tensor | None = None,
        bias5: Tensor | None = None,
        bias6: Tensor | None = None,
        activation: Activation = "identity",
        product_activation: Activation = "identity",
    ) -> GNNML3Conv:
        """A layer with ``C = C'`` (no support MLPs) holding the given weights (copied).

        ``weight``: ``(S, in, out)``; ``weight5``/``weight6``: ``(in, P)`` or both ``None``.
        """
        if weight.dim() != 3:
            raise MatlangError(f"weight must have shape (S, in, out), got {tuple(weight.shape)}")
        s, i, o = weight.shape
        if (weight5 is None) != (weight6 is None):
            raise MatlangError("give both weight5 and weight6, or neither")
        p = 0 if weight5 is None else int(weight5.shape[1])
        for w in (weight5, weight6):
            if w is not None and tuple(w.shape) != (i, p):
                raise MatlangError(f"weight5/weight6 must have shape ({i}, {p})")
        layer = cls(
            i,
            o,
            s,
            product_channels=p,
            learn_supports=False,
            bias=bias is not None,
            product_bias=bias5 is not None or bias6 is not None,
            activation=activation,
            product_activation=product_activation,
        ).to(weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(weight)
            if layer.bias is not None and bias is not None:
                layer.bias.copy_(bias)
            if layer.weight5 is not None and layer.weight6 is not None:
                assert weight5 is not None and weight6 is not None
                layer.weight5.copy_(weight5)
                layer.weight6.copy_(weight6)
            if layer.bias5 is not None and layer.bias6 is not None:
                layer.bias5.copy_(torch.zeros(p) if bias5 is None else bias5)
                layer.bias6.copy_(torch.zeros(p) if bias6 is None else bias6)
        return layer

    def learned_supports(self, support: Tensor) -> Tensor:
        """``C`` on the edges of ``M`` from ``C'`` (Eq. 7), ``(E_M, S) → (E_M, S)``."""
        if not self.learn_supports:
            return support
        assert self.support_mlp4 is not None
        z = self._support_features(support)
        if not self.local_supports:
            return torch.relu(self.support_mlp4(z))
        # mlp_4(z(C')) − mlp_4(z(0)) = W_4 (z(C') − z(0)): exactly 0 where every C'^(s) is 0
        z0 = self._support_features(support.new_zeros((1, support.shape[1])))
        return torch.relu(nn.functional.linear(z - z0, self.support_mlp4.weight))

    def _support_features(self, support: Tensor) -> Tensor:
        """``mlp_1(C') ‖ mlp_2(C') ⊙ mlp_3(C')``, ``(E, S) → (E, 4S)`` (see ``support_mlp``)."""
        assert self.support_mlp1 and self.support_mlp2 and self.support_mlp3
        return support_features(
            self.support_mlp,
            self.support_mlp1(support),
            self.support_mlp2(support),
            self.support_mlp3(support),
        )

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        support: Tensor,
        operator: SupportOperator | None = None,
    ) -> Tensor:
        """``operator``: ``M``'s pattern prepared once for several layers (built from
        ``edge_index`` when not given)."""
        if support.dim() != 2 or support.shape[1] != self.num_supports:
            raise GraphError(
                f"the layer has {self.num_supports} supports but got edge features of shape "
                f"{tuple(support.shape)}"
            )
        if support.shape[0] != edge_index.shape[1]:
            raise GraphError(
                f"{support.shape[0]} support rows for {edge_index.shape[1]} edges of M"
            )
        n, s = x.shape[0], self.num_supports
        op = SupportOperator(edge_index, n, s) if operator is None else operator
        c = self.learned_supports(support.to(x.dtype))
        # H_s = x W_s for every s at once: (N, in) @ (in, S·out), read as (N, S, out)
        h = x @ self.weight.permute(1, 0, 2).reshape(self.in_channels, s * self.out_channels)
        conv = op.propagate(h.reshape(n, s, self.out_channels), c)
        if self.bias is not None:
            conv = conv + self.bias
        if self.weight5 is None or self.weight6 is None:
            return self._act(conv)
        left, right = x @ self.weight5, x @ self.weight6
        if self.bias5 is not None and self.bias6 is not None:
            left, right = left + self.bias5, right + self.bias6
        prod = self._prod_act(left) * self._prod_act(right)
        if not self.activate_product:
            return torch.cat([self._act(conv), prod], dim=-1)
        return self._act(torch.cat([conv, prod], dim=-1))

    def extra_repr(self) -> str:
        local = f"local_supports={self.local_supports}, " if self.local_supports else ""
        if self.learn_supports and self.support_mlp != "authors":
            local += f"support_mlp={self.support_mlp!r}, "
        return (
            f"{self.in_channels}, {self.out_channels} + {self.product_channels}, "
            f"supports={self.num_supports}, learn_supports={self.learn_supports}, {local}"
            f"activation={self.activation!r}"
        )


@dataclass(frozen=True)
class GNNML3Config(ModelConfig):
    """:class:`~runtime.models.base.ModelConfig` plus GNNML3's parameters; the layer width is
    ``hidden + product_channels``.

    Args:
        product_channels: ``P``, width of each layer's product part.
        learn_supports: learn ``C`` from ``C'`` (Eq. 7), or use ``C'`` as it is.
        local_supports: see :class:`GNNML3Conv`.
        support_mlp: the form of Eq. 7's MLPs, see :class:`GNNML3Conv` (``"authors"``, the
            default, is what the authors' scripts run; ``"sigmoid"`` what this project ran
            before it followed the authors' form).
        product_activation: the activation inside ``mlp_5`` and ``mlp_6`` (see
            :class:`GNNML3Conv`): ``"identity"`` (default: the product term is GNNML1's) or
            ``"tanh"`` (the authors' ``ML3Layer``: ``tanh(x W₅ + b₅) ⊙ tanh(x W₆ + b₆)``).
        activate_product: the layer's ReLU over the product part too (default, Eq. 8 as
            written), or over the convolution part only (``False``: the authors' ``ML3Layer``).
        support: the initial supports ``C'`` (Algorithm 1; paper: normalised Laplacian,
            b = 5, 3/5/10 bands, ``M = A + I``). A mapping given to
            :func:`~runtime.models.resolve_config` may name its fields directly.
    """

    product_channels: int = 16
    learn_supports: bool = True
    local_supports: bool = False
    support_mlp: str = "authors"
    product_activation: str = "identity"
    activate_product: bool = True
    support: SupportConfig = field(default_factory=SupportConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.product_channels < 0:
            raise MatlangError(f"product_channels must be ≥ 0, got {self.product_channels}")
        resolve_activation(self.product_activation)  # an unknown name: an error naming them
        if not isinstance(self.support, SupportConfig):
            raise MatlangError(
                f"support must be a SupportConfig, got {type(self.support).__name__}"
            )


class GNNML3(GraphModel):
    r"""GNNML3 layers (Eq. 8, ReLU), then readout and head.

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\Big(\sum_s C^{(l,s)} H^{(l)} W^{(l,s)}
            \,\Big\Vert\, \mathrm{mlp}_{l,5}(H^{(l)}) \odot \mathrm{mlp}_{l,6}(H^{(l)})\Big)

    The initial supports ``C'`` (Algorithm 1) are computed per graph and cached in
    ``self.cache``, or given as ``forward(..., supports=...)``.

    Args:
        in_dim, out_dim, task, backend, cache: see :class:`~runtime.models.mlp.MLP`.
        config: a :class:`GNNML3Config`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = GNNML3Config
    config: GNNML3Config
    activation_in_layer = True

    @property
    def width(self) -> int:
        return self.config.hidden + self.config.product_channels

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        cfg = self.config  # out_channels = hidden (the convolution) + product_channels
        return GNNML3Conv(
            in_channels,
            cfg.hidden,
            cfg.support.num_supports,
            product_channels=cfg.product_channels,
            learn_supports=cfg.learn_supports,
            local_supports=cfg.local_supports,
            support_mlp=cfg.support_mlp,
            product_activation=cfg.product_activation,
            activate_product=cfg.activate_product,
        )

    def supports(self, batch: Batch, dtype: torch.dtype | None = None) -> Supports:
        """The initial supports ``C'`` of every graph of the batch (cached per graph)."""
        return batch_supports(
            batch, self.config.support, cache=self.cache, dtype=dtype or self.dtype
        )

    def graph_inputs(
        self, batch: Batch, x: Tensor, supports: Supports | None = None, **inputs: Any
    ) -> tuple[Any, ...]:
        sup = self.supports(batch, x.dtype) if supports is None else supports
        # M's pattern, prepared once for every layer
        op = SupportOperator(sup.edge_index, x.shape[0], sup.num_supports)
        return (sup.edge_index, sup.edge_attr.to(x.dtype), op)
