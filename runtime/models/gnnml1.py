"""GNNML1 (paper Eq. 3): exactly as powerful as 1-WL, with node-wise products."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from matlang.errors import MatlangError
from matlang.runtime import sparse
from matlang.runtime.last_built import LastBuilt
from matlang.runtime.models.base import (
    Activation,
    GraphModel,
    ModelConfig,
    glorot,
    resolve_activation,
)


class GNNML1Conv(nn.Module):
    r"""The GNNML1 layer of Balcilar et al., "Breaking the Limits of Message Passing Graph
    Neural Networks" (ICML 2021), Eq. 3.

    .. math::
        H^{(l+1)} = \sigma\big(H^{(l)} W^{(l,1)} + A H^{(l)} W^{(l,2)}
        + (H^{(l)} W^{(l,3)}) \odot (H^{(l)} W^{(l,4)}) + \mathbf 1 b^\top\big)

    The weights are plain ``(in, out)`` matrices in the paper's orientation (``H W``), exposed
    as :attr:`weight1` … :attr:`weight4` (and :attr:`weights`, in that order); with
    ``activation="identity"`` and no bias the layer is exactly Eq. 3's linear part, so
    :meth:`from_weights` can reproduce a sentence of ``ML(L1)`` (Theorem 6).

    Args:
        in_channels: input width.
        out_channels: output width.
        bias: add ``b`` (not in Eq. 3; off by default).
        activation: ``σ``, a name (``"relu"``, ``"identity"``, ...) or a callable.

    Shapes:
        x: ``(N, in_channels)``; edge_index: ``(2, E)`` (the support ``A``); edge_weight:
        ``(E,)`` or ``None`` (ones); out: ``(N, out_channels)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        bias: bool = False,
        activation: Activation = "relu",
    ) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        #: the last sparse operator built (shared by a model's layers: see GraphModel)
        self.operators = LastBuilt()
        #: ``W^{(l,1)}``: the node's own representation.
        self.weight1 = nn.Parameter(torch.empty(in_channels, out_channels))
        #: ``W^{(l,2)}``: the sum over neighbours, ``A H``.
        self.weight2 = nn.Parameter(torch.empty(in_channels, out_channels))
        #: ``W^{(l,3)}``: left factor of the node-wise product.
        self.weight3 = nn.Parameter(torch.empty(in_channels, out_channels))
        #: ``W^{(l,4)}``: right factor of the node-wise product.
        self.weight4 = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.activation = activation
        self._act = resolve_activation(activation)
        for w in self.weights:
            glorot(w)

    @property
    def weights(self) -> tuple[nn.Parameter, nn.Parameter, nn.Parameter, nn.Parameter]:
        """``(W1, W2, W3, W4)`` of Eq. 3, each ``(in_channels, out_channels)``."""
        return (self.weight1, self.weight2, self.weight3, self.weight4)

    @classmethod
    def from_weights(
        cls,
        w1: Tensor,
        w2: Tensor,
        w3: Tensor,
        w4: Tensor,
        bias: Tensor | None = None,
        activation: Activation = "identity",
    ) -> GNNML1Conv:
        """A layer holding the given weights (copied; dtype of ``w1``), trainable from there."""
        shape = tuple(w1.shape)
        for w in (w2, w3, w4):
            if tuple(w.shape) != shape:
                raise MatlangError(
                    f"all four weights must have shape {shape}, got {tuple(w.shape)}"
                )
        layer = cls(shape[0], shape[1], bias=bias is not None, activation=activation)
        layer.to(w1.dtype)
        with torch.no_grad():
            for p, w in zip(layer.weights, (w1, w2, w3, w4), strict=True):
                p.copy_(w)
            if bias is not None and layer.bias is not None:
                layer.bias.copy_(bias)
        return layer

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        backend: str | None = None,
    ) -> Tensor:
        out = x @ self.weight1
        out = out + sparse.propagate(
            edge_index, x @ self.weight2, edge_weight, backend=backend, operators=self.operators
        )
        out = out + (x @ self.weight3) * (x @ self.weight4)
        if self.bias is not None:
            out = out + self.bias
        return self._act(out)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, activation={self.activation!r}"


class GNNML1(GraphModel):
    r"""GNNML1 layers (Eq. 3, ReLU), then readout and head.

    .. math::
        H^{(l+1)} = \mathrm{ReLU}\big(H^{(l)} W^{(l,1)} + A H^{(l)} W^{(l,2)}
        + H^{(l)} W^{(l,3)} \odot H^{(l)} W^{(l,4)} + \mathbf 1 b^{(l)\top}\big)

    Args:
        in_dim, out_dim, config, task, backend, cache: see :class:`~runtime.models.mlp.MLP`.

    Shapes:
        output ``(G, out_dim)`` or ``(N, out_dim)``.
    """

    config_class = ModelConfig
    activation_in_layer = True

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        return GNNML1Conv(in_channels, out_channels, bias=True)
