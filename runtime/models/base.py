"""What every reference model shares: configurations, activations, readouts and the head.

A model turns a batch into node representations (its layers), then either applies the head to
every node (``task="node"``) or reads each graph out (``sum``/``max``/``mean``, concatenated)
and applies the head to every graph (``task="graph"``). The head is an MLP with ReLU between
its layers; ``head=()`` is a single linear layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from matlang.errors import GraphError, MatlangError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.last_built import LastBuilt
from matlang.runtime.preprocess import PreprocessCache

Task = Literal["graph", "node"]
TASKS: tuple[str, ...] = ("graph", "node")
READOUTS: tuple[str, ...] = ("sum", "max", "mean")

Activation = str | Callable[[Tensor], Tensor]


def glorot(p: Tensor) -> None:
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))`` over the last two dimensions."""
    bound = math.sqrt(6.0 / (p.shape[-2] + p.shape[-1]))
    with torch.no_grad():
        p.uniform_(-bound, bound)


def _identity(x: Tensor) -> Tensor:
    return x


#: Activations by name (``"identity"`` lets a layer compute a sentence exactly).
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "identity": _identity,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "leaky_relu": F.leaky_relu,
}


def resolve_activation(activation: Activation) -> Callable[[Tensor], Tensor]:
    """A callable from a name in :data:`ACTIVATIONS` or a callable."""
    if callable(activation):
        return activation
    if activation not in ACTIVATIONS:
        raise MatlangError(f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[activation]


@dataclass(frozen=True)
class ModelConfig:
    """Hyperparameters shared by the reference models.

    Args:
        hidden: width of every layer's output.
        layers: number of graph layers.
        readout: graph readouts, concatenated (``"sum"``, ``"max"``, ``"mean"``).
        head: hidden widths of the MLP head (``()``: one linear layer).
        dropout: dropout before every graph layer (paper: 0, 0.1 or 0.2).
        activation: after every graph layer, for models whose layers apply none (the
            authors' isomorphism scripts use ``tanh``).
        output_activation: applied to the head's output (``None``: none; the authors'
            isomorphism scripts end in ``tanh``).
        readout_norm: batch normalisation of the graph readouts before the head (the
            authors' ENZYMES GNNML3).
    """

    hidden: int = 64
    layers: int = 4
    readout: tuple[str, ...] = ("sum",)
    head: tuple[int, ...] = (32,)
    dropout: float = 0.0
    activation: str = "relu"
    output_activation: str | None = None
    readout_norm: bool = False

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.layers < 1:
            raise MatlangError(
                f"hidden and layers must be positive, got {self.hidden} and {self.layers}"
            )
        bad = [r for r in self.readout if r not in READOUTS]
        if bad or not self.readout:
            raise MatlangError(
                f"readout must be a non-empty subset of {', '.join(READOUTS)}, got {self.readout}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise MatlangError(f"dropout must be in [0, 1), got {self.dropout}")
        for act in (self.activation, self.output_activation):
            if act is not None:
                resolve_activation(act)  # an unknown name is an error here, not mid-run


def readout(
    h: Tensor,
    batch: Tensor,
    num_graphs: int,
    kinds: Sequence[str] = ("sum",),
    backend: str | None = None,
) -> Tensor:
    r"""Graph readouts of node representations, concatenated.

    .. math::
        \mathbf{r}_g = \big\Vert_{\rho \in \text{kinds}} \rho_{v \in g}\, \mathbf{h}_v

    Shapes:
        h: ``(N, C)``; batch: ``(N,)``; out: ``(G, C · len(kinds))``.
    """
    outs = []
    for kind in kinds:
        if kind == "sum":
            outs.append(sparse.scatter_sum(h, batch, num_graphs, backend=backend))
        elif kind == "max":
            outs.append(sparse.scatter_max(h, batch, num_graphs, backend=backend))
        elif kind == "mean":
            outs.append(sparse.scatter_mean(h, batch, num_graphs, backend=backend))
        else:
            raise MatlangError(f"unknown readout {kind!r}; known: {', '.join(READOUTS)}")
    return torch.cat(outs, dim=-1)


class MLPHead(nn.Module):
    """Linear layers ``in → hidden[0] → … → out`` with ReLU (and dropout) between them."""

    def __init__(
        self, in_dim: int, out_dim: int, hidden: Sequence[int] = (), dropout: float = 0.0
    ) -> None:
        super().__init__()
        dims = [in_dim, *hidden, out_dim]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(dims))
        self.dropout = dropout

    def forward(self, x: Tensor) -> Tensor:
        for k, lin in enumerate(self.linears):
            if k:
                x = F.dropout(torch.relu(x), self.dropout, self.training)
            x = lin(x)
        return x


def input_features(batch: Batch, in_dim: int, dtype: torch.dtype) -> Tensor:
    """The batch's node features (ones, i.e. monochromatic nodes, when it has none)."""
    if batch.x is None:
        x = torch.ones(batch.num_nodes, 1, dtype=dtype, device=batch.edge_index.device)
    else:
        # (N, d); flatten(1) rather than reshape(N, -1), ambiguous for a batch of no nodes
        x = (batch.x.unsqueeze(-1) if batch.x.dim() == 1 else batch.x.flatten(1)).to(dtype)
    if x.shape[1] != in_dim:
        raise GraphError(
            f"the model expects {in_dim} node feature(s) but the batch has {x.shape[1]}"
            + (" (no features: one constant feature)" if batch.x is None else "")
        )
    return x


class GraphModel(nn.Module):
    """Base of the reference models: graph layers, then readout and head (PyG's ``BasicGNN``).

    A model names its layer in :meth:`layer` (``in → out``, built for ``config.layers``
    widths ``[input_width, width, …, width]``) and what every layer reads from the graph in
    :meth:`graph_inputs` (computed once per forward pass); :meth:`embed` runs the layers, with
    dropout before each and ReLU after each unless the layer applies its own activation
    (``activation_in_layer``).
    """

    config_class: ClassVar[type[ModelConfig]] = ModelConfig
    #: The layers apply their own activation (GNNML1, GNNML3): no ReLU after them.
    activation_in_layer: ClassVar[bool] = False

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        config: ModelConfig | None = None,
        task: Task = "graph",
        backend: str | None = None,
        cache: PreprocessCache | None = None,
    ) -> None:
        super().__init__()
        if task not in TASKS:
            raise MatlangError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
        cfg = self.config_class() if config is None else config
        if not isinstance(cfg, self.config_class):
            raise MatlangError(
                f"{type(self).__name__} needs a {self.config_class.__name__}, "
                f"got {type(cfg).__name__}"
            )
        own_layers = self.activation_in_layer or type(self).embed is not GraphModel.embed
        if cfg.activation != "relu" and own_layers:
            raise MatlangError(
                f"{type(self).__name__}'s layers apply their own activation: "
                f"activation={cfg.activation!r} would be ignored"
            )
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.config = cfg
        self.task: Task = task
        self.backend = backend
        #: Preprocessing results (spectra, supports) of the graphs this model has seen.
        self.cache = PreprocessCache() if cache is None else cache
        dims = [self.input_width] + [self.width] * cfg.layers
        self.convs = nn.ModuleList(self.layer(a, b) for a, b in pairwise(dims))
        self._share_memos()
        self.build_head()

    def _share_memos(self) -> None:
        """One memo of each kind (:class:`~runtime.last_built.LastBuilt`: the last graph
        operator built) for all the layers: they read the same graph, so it is built once a
        forward. The model owns them (PyG's ``cached=True`` pattern), nothing module-level."""
        shared: dict[str, LastBuilt] = {}
        for conv in self.convs:
            for name, value in list(vars(conv).items()):
                if isinstance(value, LastBuilt):
                    setattr(conv, name, shared.setdefault(name, value))

    @property
    def input_width(self) -> int:
        """Width of the first layer's input."""
        return self.in_dim

    @property
    def width(self) -> int:
        """Width of every layer's output."""
        return self.config.hidden

    @property
    def embed_dim(self) -> int:
        """Width of a node representation (what the readout and the head read)."""
        return self.width

    def layer(self, in_channels: int, out_channels: int) -> nn.Module:
        """One graph layer ``in_channels → out_channels`` (as PyG's ``BasicGNN.init_conv``)."""
        raise NotImplementedError

    def graph_inputs(self, batch: Batch, x: Tensor, **inputs: Any) -> tuple[Any, ...]:
        """What every layer reads after ``x``: ``layer(x, *graph_inputs)``."""
        return (batch.edge_index, batch.edge_weight, self.backend)

    def build_head(self) -> None:
        """The head on ``embed_dim`` per node, or on the readout of each graph."""
        cfg = self.config
        readout_dim = self.embed_dim * (1 if self.task == "node" else len(cfg.readout))
        if cfg.readout_norm and self.task == "graph":
            self.readout_norm = nn.BatchNorm1d(readout_dim)
        self.head = MLPHead(readout_dim, self.out_dim, cfg.head, cfg.dropout)

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def dropout(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.config.dropout, self.training)

    def embed(self, batch: Batch, x: Tensor, **inputs: Any) -> Tensor:
        """Node representations ``(N, embed_dim)``."""
        graph = self.graph_inputs(batch, x, **inputs)
        act = resolve_activation(self.config.activation)
        for conv in self.convs:
            x = conv(self.dropout(x), *graph)
            if not self.activation_in_layer:
                x = act(x)
        return x

    def graph_representation(self, batch: Batch, h: Tensor) -> Tensor:
        """The readouts of each graph, ``(G, embed_dim · len(readout))`` (batch-normalised
        with ``readout_norm``)."""
        r = readout(h, batch.batch, batch.num_graphs, self.config.readout, self.backend)
        return self.readout_norm(r) if self.config.readout_norm else r

    def forward(self, data: Any, **inputs: Any) -> Tensor:
        """``(G, out_dim)`` for ``task="graph"``, ``(N, out_dim)`` for ``task="node"``."""
        batch = as_batch(data)
        x = input_features(batch, self.in_dim, self.dtype)
        h = self.embed(batch, x, **inputs)
        out = self.head(h if self.task == "node" else self.graph_representation(batch, h))
        if self.config.output_activation is not None:
            out = resolve_activation(self.config.output_activation)(out)
        return out

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
