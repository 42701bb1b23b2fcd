"""Training: seeded Adam over shuffled mini-batches, model selection on validation, early stop.

A :class:`GraphSet` holds graphs and their targets, either one row per graph (``level="graph"``)
or one row per node (``level="node"``, with an optional 0/1 node mask that selects the nodes the
loss and the metrics see). :func:`fit` trains a model on one set, keeps the state of the epoch
with the best validation loss, stops once the mean training loss falls below a threshold, and
returns a :class:`TrainResult`. :func:`run_seeds` is the seed loop of every trained benchmark
(seed, build a model, fit, score). Everything runs in float32 on the CPU unless told otherwise
(``TrainConfig.device``: the model and every batch move there; :func:`predict` returns its
outputs on the CPU, where the targets and the metrics are).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from benchmarks.paper.distributed import Group, all_sum
from matlang.errors import MatlangError
from matlang.graphs import Graph
from matlang.runtime.batch import Batch

Level = Literal["graph", "node"]
#: ``loss(prediction, target)`` summed over its rows (the rows a node mask keeps).
LossFn = Callable[[Tensor, Tensor], Tensor]


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (weights, dropout) from one integer."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@dataclass(frozen=True, eq=False)
class GraphSet:
    """Graphs with targets: ``y`` is ``(G, k)`` (graph level) or ``(N, k)`` (node level, rows in
    graph order); ``mask`` ``(N,)`` keeps the nodes where it is 1 (node level only)."""

    graphs: Sequence[Graph]
    y: Tensor
    level: Level = "graph"
    mask: Tensor | None = None
    node_ptr: Tensor = field(init=False, repr=False)
    # Evaluation walks the graphs in order every epoch: those batches are collated once.
    _ordered: dict[int, list[tuple[Batch, Tensor, Tensor | None]]] = field(
        init=False, repr=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        sizes = torch.tensor([g.num_nodes for g in self.graphs], dtype=torch.int64)
        ptr = torch.zeros(len(self.graphs) + 1, dtype=torch.int64)
        ptr[1:] = torch.cumsum(sizes, 0) if len(self.graphs) else ptr[1:]
        object.__setattr__(self, "node_ptr", ptr)
        y = self.y if self.y.dim() == 2 else self.y.reshape(-1, 1)
        object.__setattr__(self, "y", y)
        rows = len(self.graphs) if self.level == "graph" else int(ptr[-1])
        if y.shape[0] != rows:
            raise MatlangError(
                f"{self.level}-level targets need {rows} rows, got {tuple(self.y.shape)}"
            )
        if self.mask is not None and (self.level != "node" or self.mask.shape[0] != rows):
            raise MatlangError("a mask needs node-level targets, one entry per node")

    def __len__(self) -> int:
        return len(self.graphs)

    def subset(self, index: Sequence[int] | np.ndarray) -> GraphSet:
        """The graphs at ``index`` with their targets (and mask)."""
        idx = [int(i) for i in index]
        graphs = [self.graphs[i] for i in idx]
        if self.level == "graph":
            return GraphSet(graphs, self.y[idx], "graph")
        rows = torch.cat(
            [torch.arange(int(self.node_ptr[i]), int(self.node_ptr[i + 1])) for i in idx]
        )
        mask = None if self.mask is None else self.mask[rows]
        return GraphSet(graphs, self.y[rows], "node", mask)

    def batches(
        self,
        batch_size: int,
        generator: torch.Generator | None = None,
        group: Group | None = None,
    ) -> Iterator[tuple[Batch, Tensor, Tensor | None]]:
        """``(batch, target, mask)`` of consecutive (or, given a generator, shuffled) graphs;
        with a process ``group``, this process's shard of each (shuffled) global batch.

        Consecutive batches are collated on the first pass and reused after that.
        """
        if generator is None:
            if batch_size not in self._ordered:
                self._ordered[batch_size] = list(self._collate(batch_size, None))
            yield from self._ordered[batch_size]
            return
        yield from self._collate(batch_size, generator, group)

    def _collate(
        self,
        batch_size: int,
        generator: torch.Generator | None,
        group: Group | None = None,
    ) -> Iterator[tuple[Batch, Tensor, Tensor | None]]:
        n = len(self.graphs)
        order = torch.randperm(n, generator=generator) if generator is not None else None
        for lo in range(0, n, batch_size):
            idx = (
                list(range(lo, min(n, lo + batch_size)))
                if order is None
                else order[lo : lo + batch_size].tolist()
            )
            if group is not None and group.world > 1:
                idx = group.shard(idx)  # may be empty: the caller still takes part
            part = self.subset(idx) if order is not None or batch_size < n else self
            batch = Batch.from_graphs(list(part.graphs), dtype=torch.float32)
            yield batch, part.y, part.mask


#: Learning-rate schedules of :class:`TrainConfig`.
LR_SCHEDULES = ("constant", "plateau")
#: ``plateau``: epochs without a better validation loss before the rate is halved, and the
#: smallest rate.
PLATEAU_PATIENCE = 10
PLATEAU_MIN_LR = 1e-5


@dataclass(frozen=True)
class TrainConfig:
    """How :func:`fit` trains.

    Args:
        epochs: at most this many passes over the training set (paper: 200 for counting).
        lr: Adam's learning rate (paper: 1e-3).
        weight_decay: Adam's weight decay.
        batch_size: graphs per step (the authors' counting script: 10).
        eval_batch_size: graphs per forward pass when evaluating.
        stop_below: stop once an epoch's mean training loss is below this (paper: 1e-4).
        reduction: each Adam step on the batch's ``sum`` of the loss over its rows (the
            authors' counting script) or on its ``mean``.
        seed: seeds the weights (by the caller, see :func:`seed_everything`) and the shuffling.
        progress: show a tqdm bar over epochs (on stderr).
        device: where the model trains (``cpu``, ``cuda:K``; checked by the caller with
            :func:`benchmarks.paper.distributed.check_device`). The shuffling's generator
            stays on the CPU, so the batches are the same on every device.
        lr_schedule: ``constant`` (the paper's) or ``plateau``: the learning rate halved when
            the validation loss has not improved for :data:`PLATEAU_PATIENCE` epochs, down to
            :data:`PLATEAU_MIN_LR` (torch's ``ReduceLROnPlateau``; needs a validation set).
    """

    epochs: int = 200
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 10
    eval_batch_size: int = 500
    stop_below: float = 1e-4
    reduction: Literal["sum", "mean"] = "sum"
    seed: int = 0
    progress: bool = True
    device: str = "cpu"
    lr_schedule: Literal["constant", "plateau"] = "constant"

    def __post_init__(self) -> None:
        if self.lr_schedule not in LR_SCHEDULES:
            raise MatlangError(
                f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}"
            )
        if self.reduction not in ("sum", "mean"):
            raise MatlangError(f"reduction must be 'sum' or 'mean', got {self.reduction!r}")
        if self.epochs < 0 or self.batch_size < 1 or self.eval_batch_size < 1:
            raise MatlangError("epochs must be ≥ 0 and batch sizes ≥ 1")
        if not self.lr > 0:
            raise MatlangError(f"learning rate must be positive, got {self.lr}")


@dataclass
class TrainResult:
    """What :func:`fit` did: losses per epoch, the selected epoch, and why it stopped."""

    train_loss: list[float]
    val_loss: list[float]
    best_epoch: int  # 1-based; 0: the initial weights (no epoch run, or none improved on them)
    epochs_run: int
    stopped_early: bool
    seconds: float
    #: the learning rate of every epoch (constant unless ``lr_schedule="plateau"``)
    lr_by_epoch: list[float] = field(default_factory=list)


#: Environment variable: every this many seconds (a float > 0) a training loop writes one line
#: to stderr — how far it got and the seconds an epoch — also where no progress bar is shown
#: (``--no-progress``). ``.ci/gpu-runs`` sets it, so that a run stopped at a lease's deadline
#: leaves in its log how far it got and how long it would have needed.
HEARTBEAT_ENV = "MATLANG_HEARTBEAT"


def heartbeat_seconds() -> float | None:
    """:data:`HEARTBEAT_ENV` as seconds, ``None`` where unset or empty (an error naming the
    variable for anything but a number > 0)."""
    raw = os.environ.get(HEARTBEAT_ENV, "").strip()
    if not raw:
        return None
    try:
        every = float(raw)
    except ValueError:
        every = math.nan
    if not every > 0 or math.isinf(every):
        raise MatlangError(f"{HEARTBEAT_ENV}={raw!r}: give seconds between lines, a number > 0")
    return every


class EpochBar:
    """The epochs ``1 … epochs`` of a training loop: a tqdm bar where ``progress`` (on
    stderr), and where :data:`HEARTBEAT_ENV` is set a line on stderr every that many seconds, e.g.
    ``filter band ppgn: epoch 140 of 2000, 0.61 s an epoch, 85 s in (train=1.2e-03 val=…)``,
    written after the epoch's body ran. ``set_postfix`` feeds both."""

    def __init__(self, epochs: int, desc: str, progress: bool) -> None:
        self.epochs = epochs
        self.desc = desc
        self.bar = tqdm(range(1, epochs + 1), desc=desc, disable=not progress, leave=False)
        self.every = heartbeat_seconds()
        self.postfix = ""

    def __iter__(self) -> Iterator[int]:
        start = last = time.perf_counter()
        for done, epoch in enumerate(self.bar, 1):
            yield epoch
            now = time.perf_counter()
            if self.every is not None and now - last >= self.every:
                last = now
                tail = f" ({self.postfix})" if self.postfix else ""
                print(
                    f"{self.desc}: epoch {epoch} of {self.epochs}, "
                    f"{(now - start) / done:.3g} s an epoch, {now - start:.0f} s in{tail}",
                    file=sys.stderr,
                    flush=True,
                )

    def set_postfix(self, **values: Any) -> None:
        self.bar.set_postfix(**values)
        self.postfix = " ".join(f"{k}={v}" for k, v in values.items())


def adam(params: Iterable[Tensor], lr: float, weight_decay: float = 0.0) -> torch.optim.Adam:
    """Adam with torch's fused kernel where every parameter allows it (floating, on CPU or
    CUDA): the same update rule in one kernel over all tensors instead of six per tensor. The
    reference models have 30–60 small parameter tensors, so the per-tensor loop was the largest
    share of a small-batch step (GNNML3 at batch 10: 20 ms of ~45 ms, 4 ms fused)."""
    params = list(params)
    fused = bool(params) and all(
        p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params
    )
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=fused or None)


def masked(pred: Tensor, y: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """The rows of ``pred`` and ``y`` a node mask keeps (all rows without a mask)."""
    if mask is None:
        return pred, y
    keep = mask.reshape(-1) > 0
    return pred[keep], y[keep]


def squared_error(pred: Tensor, y: Tensor) -> Tensor:
    """Sum of squared errors (the authors' loss; divided by the row count for the mean)."""
    return torch.square(pred - y.to(pred.dtype)).sum()


def bce_with_logits(pred: Tensor, y: Tensor) -> Tensor:
    """Binary cross-entropy of logits against 0/1 targets, summed."""
    return nn.functional.binary_cross_entropy_with_logits(pred, y.to(pred.dtype), reduction="sum")


def model_device(model: nn.Module) -> torch.device:
    """Where ``model``'s first parameter (or buffer) lives; the CPU for a model without any."""
    for t in (*model.parameters(), *model.buffers()):
        return t.device
    return torch.device("cpu")


@torch.no_grad()
def predict(model: nn.Module, data: GraphSet, batch_size: int = 500) -> Tensor:
    """The model's outputs on every graph (or node) of ``data``, in order, evaluation mode;
    each batch runs where the model is, the outputs come back to the CPU (the targets')."""
    was = model.training
    model.eval()
    dev = model_device(model)
    outs = [model(batch.to(dev)).cpu() for batch, _, _ in data.batches(batch_size)]
    model.train(was)
    if not outs:
        return torch.zeros(0, data.y.shape[1])
    return torch.cat(outs, 0)


def mean_loss(model: nn.Module, data: GraphSet, loss: LossFn, batch_size: int = 500) -> float:
    """``loss`` over every (kept) row of ``data``, divided by the number of rows."""
    pred, y = masked(predict(model, data, batch_size), data.y, data.mask)
    return float(loss(pred, y)) / max(1, y.shape[0])


def fit(
    model: nn.Module,
    train: GraphSet,
    val: GraphSet | None,
    loss: LossFn = squared_error,
    config: TrainConfig | None = None,
    *,
    desc: str = "train",
    group: Group | None = None,
) -> TrainResult:
    """Train ``model`` in place with Adam; on return it holds the weights of the best epoch.

    The best epoch is the one with the lowest validation loss (the initial weights count as
    epoch 0); without a validation set it is the last one. Training stops after
    ``config.epochs`` epochs or once an epoch's mean training loss is below
    ``config.stop_below``.

    With a process ``group`` (:mod:`benchmarks.paper.distributed`) every process trains on its
    shard of each global batch under DistributedDataParallel; the summed loss is scaled by the
    number of processes, so the averaged gradient is the one-process gradient, and the epoch's
    loss is summed over the processes, so all of them stop at the same epoch.
    """
    group = group or Group()
    cfg = TrainConfig() if config is None else config
    if cfg.reduction == "mean" and group.world > 1:
        # a shard's mean is not the global batch's: its weight would depend on the split
        raise MatlangError("a mean loss per batch is for one process; data-parallel runs sum")
    start = time.perf_counter()
    dev = torch.device(cfg.device)
    model.to(dev)
    gen = torch.Generator().manual_seed(cfg.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay) if params else None
    schedule = None
    if cfg.lr_schedule == "plateau" and opt is not None:
        if val is None:
            raise MatlangError("lr_schedule='plateau' follows the validation loss: give a val set")
        schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="min", factor=0.5, patience=PLATEAU_PATIENCE, min_lr=PLATEAU_MIN_LR
        )
    lrs: list[float] = []
    net = group.wrap(model) if params else model
    best = math.inf
    best_state = copy.deepcopy(model.state_dict())
    best_epoch = 0
    if val is not None:
        best = mean_loss(model, val, loss, cfg.eval_batch_size)
    history: list[float] = []
    val_history: list[float] = []
    stopped = False
    bar = EpochBar(cfg.epochs, desc, cfg.progress)
    for epoch in bar:
        model.train()
        lrs.append(cfg.lr if opt is None else float(opt.param_groups[0]["lr"]))
        total, rows = 0.0, 0
        for batch, y, mask in train.batches(cfg.batch_size, gen, group):
            y, mask = y.to(dev), None if mask is None else mask.to(dev)
            if batch.num_graphs == 0:  # an empty shard: a zero loss that reaches every weight
                lss = sum((p.sum() * 0.0 for p in params), torch.zeros((), device=dev))
                target = y[:0]
            else:
                pred, target = masked(net(batch.to(dev)), y, mask)
                lss = loss(pred, target)
            if opt is not None and lss.requires_grad:
                opt.zero_grad()
                step = lss / max(1, target.shape[0]) if cfg.reduction == "mean" else lss
                (step * group.world).backward()
                opt.step()
            total += float(lss.detach())
            rows += int(target.shape[0])
        if group.world > 1:
            summed = all_sum(torch.tensor([total, float(rows)]), group)
            total, rows = float(summed[0]), int(summed[1])
        history.append(total / max(1, rows))
        if val is not None:
            v = mean_loss(model, val, loss, cfg.eval_batch_size)
            val_history.append(v)
            if schedule is not None:
                schedule.step(v)
            if v < best:
                best, best_epoch = v, epoch
                best_state = copy.deepcopy(model.state_dict())
        else:
            best_epoch = epoch
        bar.set_postfix(train=f"{history[-1]:.2e}", val=f"{val_history[-1]:.2e}" if val else "-")
        if history[-1] < cfg.stop_below:
            stopped = True
            break
    if val is not None:
        model.load_state_dict(best_state)
    return TrainResult(
        history,
        val_history,
        best_epoch,
        len(history),
        stopped,
        time.perf_counter() - start,
        lrs,
    )


@dataclass
class SeedRun:
    """One seed of a trained benchmark: its score and how its training went."""

    seed: int
    metric: float
    best_epoch: int
    epochs_run: int
    stopped_early: bool
    seconds: float
    final_train_loss: float | None
    #: the validation loss after every epoch (the selection's curve)
    val_loss: list[float] = field(default_factory=list)
    #: seeds trained together with this one (:mod:`benchmarks.paper.stacked`); 1: alone
    stacked: int = 1
    #: a readout fitted by least squares after training (:func:`fit_readout`'s record)
    readout: dict[str, Any] | None = None


#: Ridge strengths :func:`fit_readout` tries, per training row (the features standardised
#: first); the validation loss picks one. 0 is plain least squares (minimum norm).
READOUT_RIDGES = (0.0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0)


def readout_layer(model: nn.Module) -> nn.Linear:
    """The ``nn.Linear`` that computes ``model``'s outputs: its ``head``, or the head's last
    Linear when the head is a Sequential."""
    head = getattr(model, "head", None)
    if isinstance(head, nn.Linear):
        return head
    if isinstance(head, nn.Sequential):
        last = [m for m in head if isinstance(m, nn.Linear)]
        if last and head[len(head) - 1] is last[-1]:
            return last[-1]
    raise MatlangError(
        f"{type(model).__name__} has no linear readout to fit (a head that is, or ends in, "
        "an nn.Linear)"
    )


def readout_features(model: nn.Module, data: GraphSet, batch_size: int = 500) -> Tensor:
    """What :func:`readout_layer` receives on every graph of ``data``, float64, in order."""
    layer = readout_layer(model)
    got: list[Tensor] = []
    hook = layer.register_forward_hook(
        lambda m, i, o: got.append(i[0].detach().to(torch.float64).cpu())
    )
    try:
        predict(model, data, batch_size)
    finally:
        hook.remove()
    return torch.cat(got, 0) if got else torch.zeros(0, layer.in_features, dtype=torch.float64)


def fit_readout(
    model: nn.Module,
    train: GraphSet,
    val: GraphSet,
    ridges: Sequence[float] = READOUT_RIDGES,
    batch_size: int = 500,
) -> dict[str, Any]:
    """Fit ``model``'s readout layer (:func:`readout_layer`) by least squares, in place.

    The features the layer receives on ``train`` are standardised per column (constant
    columns left as they are), then for every ridge ``λ`` in ``ridges`` the weights solve
    ``min ‖X w + b − y‖² + λ·n‖w‖²`` in float64 (SVD-based, minimum norm where ``X`` is rank
    deficient); the one with the lowest validation mean squared error is written into the
    layer (weights and bias, in the layer's dtype). Graph-level targets only. Returns
    ``{"method", "ridge", "val_mse", "train_mse", "features"}``.
    """
    if train.level != "graph" or val.level != "graph":
        raise MatlangError("fit_readout fits graph-level targets")
    if len(train) == 0 or len(val) == 0:
        raise MatlangError("fit_readout needs training and validation graphs")
    layer = readout_layer(model)
    xt, xv = readout_features(model, train, batch_size), readout_features(model, val, batch_size)
    for what, x in (("training", xt), ("validation", xv)):
        if not torch.isfinite(x).all():
            raise MatlangError(f"the readout's features are not finite on the {what} graphs")
    yt, yv = train.y.to(torch.float64), val.y.to(torch.float64)
    mean, std = xt.mean(0), xt.std(0, correction=0)
    std = torch.where(std > 0, std, torch.ones_like(std))
    zt, zv = (xt - mean) / std, (xv - mean) / std
    y_mean = yt.mean(0)
    n, d = zt.shape
    best: tuple[float, float, Tensor] | None = None
    for lam in ridges:
        lhs, rhs = zt, yt - y_mean
        if lam:  # the ridge as d extra rows: ‖X w − y‖² + λ·n‖w‖²
            lhs = torch.cat([lhs, math.sqrt(lam * n) * torch.eye(d, dtype=zt.dtype)])
            rhs = torch.cat([rhs, torch.zeros(d, yt.shape[1], dtype=yt.dtype)])
        w = torch.linalg.lstsq(lhs, rhs, driver="gelsd").solution
        err = float(((zv @ w + y_mean - yv) ** 2).mean())
        if best is None or err < best[0]:
            best = (err, float(lam), w)
    assert best is not None
    err, lam, w = best
    weight = (w / std.unsqueeze(1)).T  # (out, d) on the raw features
    bias = y_mean - (mean.unsqueeze(0) @ (w / std.unsqueeze(1))).reshape(-1)
    with torch.no_grad():
        layer.weight.copy_(weight.to(layer.weight.dtype))
        if layer.bias is None:
            raise MatlangError("fit_readout needs a readout layer with a bias")
        layer.bias.copy_(bias.to(layer.bias.dtype))
    train_mse = float(((zt @ w + y_mean - yt) ** 2).mean())
    return {
        "method": "least squares on the readout's input (standardised), ridge by validation",
        "ridge": lam,
        "val_mse": err,
        "train_mse": train_mse,
        "features": d,
    }


def median_metric(runs: Sequence[SeedRun]) -> float:
    """The median score over seeds (NaN without any)."""
    return statistics.median(r.metric for r in runs) if runs else math.nan


def run_seeds(
    seeds: Sequence[int],
    build: Callable[[], nn.Module],
    train: GraphSet,
    val: GraphSet | None,
    loss: LossFn,
    score: Callable[[nn.Module], float],
    config: TrainConfig,
    *,
    desc: str = "train",
    on_seed: Callable[[list[SeedRun], dict[str, Any]], None] | None = None,
    group: Group | None = None,
    refit: Callable[[nn.Module], dict[str, Any]] | None = None,
) -> tuple[list[SeedRun], dict[str, Any]]:
    """For each seed: seed everything, ``build()`` a model, :func:`fit` it (``config`` with that
    seed), ``refit`` it when given (say, :func:`fit_readout`), ``score`` the selected weights.
    Returns the runs and the first model's description; ``on_seed(runs, description)`` is
    called after every finished seed (to save it).
    """
    from benchmarks.paper.models import describe_model

    runs: list[SeedRun] = []
    info: dict[str, Any] = {}
    for seed in seeds:
        seed_everything(seed)
        net = build()
        info = info or describe_model(net)
        res = fit(
            net,
            train,
            val,
            loss,
            dataclasses.replace(config, seed=seed),
            desc=f"{desc} seed {seed}",
            group=group,
        )
        readout = None if refit is None else refit(net)
        runs.append(
            SeedRun(
                seed,
                score(net),
                res.best_epoch,
                res.epochs_run,
                res.stopped_early,
                res.seconds,
                res.train_loss[-1] if res.train_loss else None,
                res.val_loss,
                readout=readout,
            )
        )
        if on_seed is not None:
            on_seed(list(runs), info)
    return runs, info


__all__ = [
    "adam",
    "GraphSet",
    "LossFn",
    "SeedRun",
    "TrainConfig",
    "TrainResult",
    "bce_with_logits",
    "READOUT_RIDGES",
    "fit",
    "fit_readout",
    "masked",
    "mean_loss",
    "median_metric",
    "model_device",
    "predict",
    "readout_features",
    "readout_layer",
    "run_seeds",
    "seed_everything",
    "squared_error",
]
