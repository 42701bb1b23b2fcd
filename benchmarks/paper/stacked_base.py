"""What every stacked model shares (:mod:`benchmarks.paper.stacked`: GNNML3 and the training
loop; :mod:`benchmarks.paper.stacked_support`: MLP, GCN, ChebNet, GAT): the dense batches,
the stacked parameters with the sum readout and the head, and the check of what a stacked
forward needs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from benchmarks.paper.train import GraphSet
from matlang.errors import MatlangError
from matlang.runtime.models.base import GraphModel

#: Largest graph the dense stacked path takes (its memory is ``K·B·n²·S`` per step).
MAX_NODES = 64
#: Graphs per evaluation chunk (all seeds at once).
EVAL_CHUNK = 100


@dataclass(frozen=True)
class DenseBatch:
    """Graphs for the stacked forward, ``(K, B, …)`` (or ``(B, …)`` read by every seed):
    features ``x`` ``(…, n, in)``, initial supports ``c`` ``(…, n, n, S)`` (zero off ``M``),
    ``node`` ``(…, n)`` 1 on real nodes, targets ``y`` ``(…, out)``, and ``M``'s entries of
    each graph as a list: ``entries`` ``(…, E)`` flat indices ``i·n + j``, their supports
    ``entry_c`` ``(…, E, S)``, ``entry_mask`` ``(…, E)`` 1 on real entries (E: the most any
    graph here has; Eq. 7's MLPs run on these entries only, ~37% of n² on randomgraph)."""

    x: Tensor
    c: Tensor
    node: Tensor
    y: Tensor
    entries: Tensor
    entry_c: Tensor
    entry_mask: Tensor

    def expand(self, k: int) -> DenseBatch:
        """The same graphs for each of ``k`` seeds (views, no copies)."""
        tensors = (getattr(self, f.name) for f in dataclasses.fields(self))
        return DenseBatch(*(t.unsqueeze(0).expand(k, *t.shape) for t in tensors))


@dataclass(frozen=True)
class DenseGraphs:
    """Every graph of a set padded to ``n`` nodes and ``E`` entries of ``M`` (the fields of
    :class:`DenseBatch`, one row per graph), plus ``counts`` ``(G,)``, each graph's entries."""

    graphs: DenseBatch
    counts: Tensor

    def __len__(self) -> int:
        return int(self.graphs.x.shape[0])

    def take(self, idx: Tensor) -> DenseBatch:
        """The graphs at ``idx`` (any shape), with the entry lists cut to the most any of
        them has."""
        e = int(self.counts[idx].max()) if idx.numel() else 0
        g = self.graphs
        return DenseBatch(
            g.x[idx],
            g.c[idx],
            g.node[idx],
            g.y[idx],
            g.entries[idx][..., :e],
            g.entry_c[idx][..., :e, :],
            g.entry_mask[idx][..., :e],
        )


def check_needs(model: GraphModel, extra: Sequence[tuple[bool, str]] = ()) -> None:
    """An error naming what a stacked forward needs and ``model`` lacks: a graph-level task,
    the sum readout without normalisation, no dropout, no output activation (every stacked
    model's), and what ``extra`` lists as ``(lacking, what)``."""
    cfg = model.config
    shared = (
        (model.task != "graph", "a graph-level task"),
        (tuple(cfg.readout) != ("sum",), "the sum readout"),
        (cfg.readout_norm, "no readout normalisation"),
        (cfg.dropout != 0, "no dropout"),
        (cfg.output_activation is not None, "no output activation"),
    )
    reasons = [why for bad, why in (*shared, *extra) if bad]
    if reasons:
        raise MatlangError(f"stacked {type(model).__name__} training needs {', '.join(reasons)}")


def seed_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``x Wᵀ + b`` per seed: ``x`` ``(K, R, in)``, ``weight`` ``(K, out, in)``."""
    out = torch.bmm(x, weight.transpose(1, 2))
    return out if bias is None else out + bias.unsqueeze(1)


class StackedModel:
    """``K`` models of one architecture as stacked parameters (``(K, …)`` each, named as in
    the model's ``state_dict``), with a dense forward over ``(K, B, n, …)`` batches (each
    subclass's :meth:`forward`, and :meth:`densify` for its inputs).

    Args:
        models: the seeds' models, built alike (``check(model)`` for each, which returns it).
    """

    def __init__(self, models: Sequence[nn.Module], check: Callable[[nn.Module], Any]) -> None:
        if not models:
            raise MatlangError("no models to stack")
        first = check(models[0])
        for m in models[1:]:
            check(m)
        names = [n for n, p in first.named_parameters() if p.requires_grad]
        self.model = first
        self.k = len(models)
        self.params: dict[str, Tensor] = {}
        for name in names:
            parts = [dict(m.named_parameters())[name].detach() for m in models]
            if any(p.shape != parts[0].shape for p in parts):
                raise MatlangError(f"the models differ in the shape of {name}")
            self.params[name] = torch.stack(parts).clone().requires_grad_(True)

    def _get(self, name: str) -> Tensor | None:
        return self.params.get(name)

    def forward(self, batch: DenseBatch) -> Tensor:
        """Outputs ``(K, B, out)`` of a ``(K, B, …)`` :class:`DenseBatch`."""
        raise NotImplementedError

    def densify(self, data: GraphSet) -> DenseGraphs:
        """``data``'s graphs as this model's dense inputs."""
        raise NotImplementedError

    def sum_readout_and_head(self, h: Tensor, node: Tensor) -> Tensor:
        """The sum readout of ``h`` ``(K, B·n, d)`` over real nodes (``node`` ``(K, B, n)``),
        then the model's head (ReLU between its linear layers), ``(K, B, out)``."""
        k, b, n = node.shape
        r = (h.reshape(k, b, n, -1) * node.unsqueeze(-1)).sum(2)
        for j in range(len(self.model.head.linears)):
            if j:
                r = torch.relu(r)
            p = self.params
            r = seed_linear(r, p[f"head.linears.{j}.weight"], self._get(f"head.linears.{j}.bias"))
        return r

    @torch.no_grad()
    def squared_errors(self, data: DenseGraphs, chunk: int = EVAL_CHUNK) -> Tensor:
        """Each seed's sum of squared errors over every graph of ``data``, ``(K,)``."""
        total = torch.zeros(self.k, dtype=torch.float64)
        for lo in range(0, len(data), chunk):
            batch = data.take(torch.arange(lo, min(len(data), lo + chunk))).expand(self.k)
            total += torch.square(self.forward(batch) - batch.y).sum(dim=(1, 2)).double()
        return total

    def state(self) -> dict[str, Tensor]:
        """A copy of the stacked parameters."""
        return {n: t.detach().clone() for n, t in self.params.items()}

    def load(self, state: dict[str, Tensor]) -> None:
        """Every seed's parameters from ``state`` (a :meth:`state`)."""
        with torch.no_grad():
            for n, t in self.params.items():
                t.copy_(state[n])


__all__ = [
    "EVAL_CHUNK",
    "MAX_NODES",
    "DenseBatch",
    "DenseGraphs",
    "StackedModel",
    "check_needs",
    "seed_linear",
]
