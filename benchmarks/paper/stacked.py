"""Several seeds of one small-graph model trained at once, as one stacked dense model.

GNNML3 here; the models whose layers are fixed supports times weights (MLP, GCN, ChebNet) and
GAT in :mod:`benchmarks.paper.stacked_support`. :func:`stack_models` picks the stacked form of
a list of models, :func:`run_seeds_stacked` trains it.

At the authors' counting protocol (batch 10 of 10-node graphs) a GNNML3 step is ~100 nodes:
its cost is the ~300 small tensor operations of a forward and backward pass, not arithmetic.
Training ``K`` seeds together turns each of those operations into one on ``K`` times the data
(every parameter gets a leading seed axis, every batch is ``(K, B, n, …)``), so ten seeds cost
about what two do one at a time.

Each seed is exactly the run :func:`~benchmarks.paper.train.run_seeds` would make: the same
initial weights (``seed_everything(seed)`` then the model's constructor), the same shuffled
batches (a generator seeded with the seed), its own Adam (Adam is elementwise, so one Adam
over stacked parameters is ``K`` independent ones), its own validation selection and early
stop. What differs is the arithmetic's order: graphs are dense ``n × n`` (padded to the
largest graph) instead of sparse, so trajectories agree to float rounding, not bit for bit
(tests/benchmarks/test_stacked.py compares the two).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from benchmarks.paper.stacked_base import (
    EVAL_CHUNK,
    MAX_NODES,
    DenseBatch,
    DenseGraphs,
    StackedModel,
    check_needs,
    seed_linear,
)
from benchmarks.paper.stacked_support import STACKABLE, StackedSupport
from benchmarks.paper.train import (
    EpochBar,
    GraphSet,
    SeedRun,
    TrainConfig,
    adam,
    seed_everything,
)
from matlang.errors import MatlangError
from matlang.runtime.batch import Batch
from matlang.runtime.models.base import input_features
from matlang.runtime.models.gnnml3 import GNNML3, support_features


def check_stackable(model: nn.Module) -> GNNML3:
    """``model`` if the stacked path computes exactly what its forward does, else an error."""
    if not isinstance(model, GNNML3):
        raise MatlangError(
            f"seeds can be stacked for GNNML3 only, not {type(model).__name__}; "
            "train the seeds one at a time"
        )
    check_needs(
        model,
        (
            (any(c.activation != "relu" for c in model.convs), "ReLU layers"),
            (
                any(c.product_activation != "identity" for c in model.convs),
                "an identity product activation",
            ),
            (
                any(not c.activate_product for c in model.convs),
                "the layer's ReLU over the product part too",
            ),
        ),
    )
    return model


def densify(model: GNNML3, data: GraphSet) -> DenseGraphs:
    """``data``'s graphs as :class:`DenseGraphs` for ``model`` (its inputs and supports ``C'``,
    the latter from the model's cache): padded to the largest graph's ``n`` nodes and the most
    entries of ``M`` any graph has."""
    if data.level != "graph":
        raise MatlangError("stacked training is for graph-level targets")
    graphs = list(data.graphs)
    dtype = model.dtype
    s = model.config.support.num_supports
    n = max((g.num_nodes for g in graphs), default=0)
    if n > MAX_NODES:
        raise MatlangError(
            f"stacked training is for small graphs (at most {MAX_NODES} nodes); this set has "
            f"one of {n}"
        )
    g_count = len(graphs)
    x_out = torch.zeros(g_count, n, model.in_dim, dtype=dtype)
    c_out = torch.zeros(g_count, n, n, s, dtype=dtype)
    node = torch.zeros(g_count, n, dtype=dtype)
    counts = torch.zeros(g_count, dtype=torch.int64)
    entries = torch.zeros(g_count, 0, dtype=torch.int64)
    entry_c = torch.zeros(g_count, 0, s, dtype=dtype)
    entry_mask = torch.zeros(g_count, 0, dtype=dtype)
    if g_count:
        batch = Batch.from_graphs(graphs, dtype=dtype)
        x = input_features(batch, model.in_dim, dtype)
        sup = model.supports(batch, dtype)
        local = torch.arange(batch.num_nodes) - batch.ptr[batch.batch]
        x_out[batch.batch, local] = x
        node[batch.batch, local] = 1.0
        # entries grouped by graph (Supports.concat keeps graph order; sorting keeps it sure)
        order = torch.argsort(batch.batch[sup.edge_index[0]], stable=True)
        row, col = sup.edge_index[:, order]
        attr = sup.edge_attr[order].to(dtype)
        g = batch.batch[row]
        flat = local[row] * n + local[col]
        key = g * n * n + flat
        if torch.unique(key).numel() != key.numel():
            raise MatlangError("a graph's supports store an entry twice; stacking needs one each")
        c_out[g, local[row], local[col]] = attr
        # M's entries of each graph as a padded list: slot = rank among its graph's entries
        counts = torch.bincount(g, minlength=g_count)
        starts = torch.cumsum(counts, 0) - counts
        slot = torch.arange(g.numel()) - starts[g]
        width = int(counts.max())
        entries = torch.zeros(g_count, width, dtype=torch.int64)
        entry_c = torch.zeros(g_count, width, s, dtype=dtype)
        entry_mask = torch.zeros(g_count, width, dtype=dtype)
        entries[g, slot] = flat
        entry_c[g, slot] = attr
        entry_mask[g, slot] = 1.0
    graphs_out = DenseBatch(x_out, c_out, node, data.y.to(dtype), entries, entry_c, entry_mask)
    return DenseGraphs(graphs_out, counts)


class StackedGNNML3(StackedModel):
    """``K`` GNNML3 models (:func:`check_stackable`) as one :class:`StackedModel`."""

    model: GNNML3

    def __init__(self, models: Sequence[nn.Module]) -> None:
        super().__init__(models, check_stackable)

    def densify(self, data: GraphSet) -> DenseGraphs:
        return densify(self.model, data)

    def _support_features(self, c: Tensor, pre: str, form: str) -> Tensor:
        """``mlp_1(C') ‖ mlp_2(C') ⊙ mlp_3(C')`` of layer ``pre`` (Eq. 7) in ``form`` (the
        layer's ``support_mlp``), ``(K, R, 4S)``."""
        z1, z2, z3 = (
            seed_linear(
                c,
                self.params[f"{pre}support_mlp{j}.weight"],
                self._get(f"{pre}support_mlp{j}.bias"),
            )
            for j in (1, 2, 3)
        )
        return support_features(form, z1, z2, z3)

    def forward(self, batch: DenseBatch) -> Tensor:
        """Outputs ``(K, B, out)`` of a ``(K, B, …)`` :class:`DenseBatch`."""
        x, node = batch.x, batch.node
        k, b, n = x.shape[0], x.shape[1], x.shape[2]
        s = batch.c.shape[-1]
        e = batch.entries.shape[-1]
        h = x.reshape(k, b * n, -1)
        c_list = batch.entry_c.reshape(k, b * e, s)
        # where each entry's learned support goes in the (K, B, n·n, S) supports
        slots = batch.entries.unsqueeze(-1).expand(k, b, e, s)
        mask = batch.entry_mask.unsqueeze(-1)
        p = self._get
        for i, conv in enumerate(self.model.convs):
            pre = f"convs.{i}."
            if conv.learn_supports:
                form = str(conv.support_mlp)  # the layer's Eq. 7 form
                z = self._support_features(c_list, pre, form)
                w4 = p(f"{pre}support_mlp4.weight")
                assert w4 is not None
                if conv.local_supports:
                    # mlp_4(z(C')) − mlp_4(z(0)): exactly 0 where every C'^(s) is 0
                    z0 = self._support_features(c_list.new_zeros((k, 1, s)), pre, form)
                    learned = torch.relu(seed_linear(z - z0, w4, None))
                else:
                    learned = torch.relu(seed_linear(z, w4, p(f"{pre}support_mlp4.bias")))
                learned = learned.reshape(k, b, e, s) * mask  # padding slots add 0
                sup = learned.new_zeros((k, b, n * n, s)).scatter_add(2, slots, learned)
            else:
                sup = batch.c
            weight = p(f"{pre}weight")  # (K, S, in, out)
            assert weight is not None
            out_c = weight.shape[-1]
            # H_s = h W_s for every s: (K, B·n, in) @ (K, in, S·out), read as (K, B, n·S, out)
            hw = torch.bmm(h, weight.permute(0, 2, 1, 3).reshape(k, -1, s * out_c))
            conv_out = torch.matmul(sup.reshape(k, b, n, n * s), hw.reshape(k, b, n * s, out_c))
            conv_out = conv_out.reshape(k, b * n, out_c)
            bias = p(f"{pre}bias")
            if bias is not None:
                conv_out = conv_out + bias.unsqueeze(1)
            w5, w6 = p(f"{pre}weight5"), p(f"{pre}weight6")
            if w5 is None or w6 is None:
                h = torch.relu(conv_out)
                continue
            left, right = torch.bmm(h, w5), torch.bmm(h, w6)
            b5, b6 = p(f"{pre}bias5"), p(f"{pre}bias6")
            if b5 is not None and b6 is not None:
                left, right = left + b5.unsqueeze(1), right + b6.unsqueeze(1)
            h = torch.relu(torch.cat([conv_out, left * right], dim=-1))
        return self.sum_readout_and_head(h, node)


def stack_models(models: Sequence[nn.Module]) -> StackedModel:
    """The stacked form of ``models`` (one per seed, built alike): GNNML3, or a model of
    :data:`benchmarks.paper.stacked_support.STACKABLE`; else an error naming what stacks."""
    if not models:
        raise MatlangError("no models to stack")
    if isinstance(models[0], GNNML3):
        return StackedGNNML3(models)
    if type(models[0]) in STACKABLE:
        return StackedSupport(models)
    known = ", ".join(["GNNML3", *(c.__name__ for c in STACKABLE)])
    raise MatlangError(
        f"seeds can be stacked for {known} only, not {type(models[0]).__name__}; "
        "train the seeds one at a time"
    )


def run_seeds_stacked(
    seeds: Sequence[int],
    build: Callable[[], nn.Module],
    train: GraphSet,
    val: GraphSet,
    test: GraphSet,
    config: TrainConfig,
    *,
    stack: int | None = None,
    desc: str = "train",
    on_seed: Callable[[list[SeedRun], dict[str, Any]], None] | None = None,
) -> tuple[list[SeedRun], dict[str, Any]]:
    """:func:`~benchmarks.paper.train.run_seeds` with a squared-error loss and the test MSE as
    the score, ``stack`` seeds at a time (default: all of them at once; see the module's
    docstring); ``on_seed(runs, description)`` after every group. Each run's ``seconds`` is
    its share (``1/K``) of its group's time."""
    from benchmarks.paper.models import describe_model

    seeds = list(seeds)
    size = max(1, len(seeds)) if stack is None else stack
    if size < 1:
        raise MatlangError(f"stack must be at least 1, got {stack}")
    runs: list[SeedRun] = []
    info: dict[str, Any] = {}
    sets: tuple[DenseGraphs, DenseGraphs, DenseGraphs] | None = None
    for lo in range(0, len(seeds), size):
        start = time.perf_counter()
        group = seeds[lo : lo + size]
        models = []
        for seed in group:
            seed_everything(seed)
            models.append(build())
        stacked = stack_models(models)
        info = info or describe_model(stacked.model)
        # the graphs depend on the architecture only: densified once for every group
        if sets is None:
            sets = (stacked.densify(train), stacked.densify(val), stacked.densify(test))
        tr, va, te = sets
        runs += _fit_stacked(stacked, group, tr, va, te, config, desc, start)
        if on_seed is not None:
            on_seed(list(runs), info)
    return runs, info


def _fit_stacked(
    stack: StackedModel,
    seeds: list[int],
    tr: DenseGraphs,
    va: DenseGraphs,
    te: DenseGraphs,
    cfg: TrainConfig,
    desc: str,
    start: float,
) -> list[SeedRun]:
    """Train ``stack`` (one model per seed of ``seeds``) as :func:`~benchmarks.paper.train.fit`
    trains each, and score the selected weights on ``te``."""
    k = len(seeds)
    if cfg.lr_schedule != "constant":
        raise MatlangError(
            "--stack-seeds trains with a constant learning rate: run the seeds apart for "
            f"--lr-schedule {cfg.lr_schedule}"
        )
    opt = adam(stack.params.values(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gens = [torch.Generator().manual_seed(seed) for seed in seeds]
    best = (stack.squared_errors(va) / max(1, len(va))).tolist()
    best_state = stack.state()
    best_epoch = [0] * k
    history: list[list[float]] = [[] for _ in seeds]
    val_history: list[list[float]] = [[] for _ in seeds]
    active = [True] * k
    stopped = [False] * k
    n_train = len(tr)
    bar = EpochBar(cfg.epochs, f"{desc} ×{k}", cfg.progress)
    for epoch in bar:
        orders = torch.stack([torch.randperm(n_train, generator=g) for g in gens])
        total = torch.zeros(k, dtype=torch.float64)
        for lo in range(0, n_train, cfg.batch_size):
            idx = orders[:, lo : lo + cfg.batch_size]
            batch = tr.take(idx)
            err = torch.square(stack.forward(batch) - batch.y).sum(dim=(1, 2))
            step = err / idx.shape[1] if cfg.reduction == "mean" else err
            opt.zero_grad()
            step.sum().backward()
            opt.step()
            total += err.detach().double()
        v = (stack.squared_errors(va) / max(1, len(va))).tolist()
        for i in range(k):
            if not active[i]:
                continue  # stopped earlier: its later updates are never read
            history[i].append(float(total[i]) / max(1, n_train))
            val_history[i].append(v[i])
            if v[i] < best[i]:
                best[i], best_epoch[i] = v[i], epoch
                with torch.no_grad():
                    for n, t in best_state.items():
                        t[i].copy_(stack.params[n][i])
            if history[i][-1] < cfg.stop_below:
                active[i], stopped[i] = False, True
        bar.set_postfix(val=f"{min(v):.2e}")
        if not any(active):
            break
    stack.load(best_state)
    test_mse = (stack.squared_errors(te) / max(1, len(te))).tolist()
    share = (time.perf_counter() - start) / k
    return [
        SeedRun(
            seed,
            test_mse[i],
            best_epoch[i],
            len(history[i]),
            stopped[i],
            share,
            history[i][-1] if history[i] else None,
            val_history[i],
            stacked=k,
        )
        for i, seed in enumerate(seeds)
    ]


__all__ = [
    "EVAL_CHUNK",
    "MAX_NODES",
    "DenseBatch",
    "DenseGraphs",
    "StackedGNNML3",
    "StackedModel",
    "check_needs",
    "check_stackable",
    "densify",
    "run_seeds_stacked",
    "stack_models",
]
