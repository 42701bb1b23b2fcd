"""BREC's Reliable Paired Comparison, the pieces both input paths share: the relabellings of a
pair (:func:`draw_members`), the training of a fresh model on them (:func:`train_rpc`) and
Hotelling's T² (:func:`t_squared`). :mod:`benchmarks.paper.brec` feeds the model relabelled
graphs with their precomputed inputs carried along; :mod:`benchmarks.paper.brec_pyg` builds each
relabelling as a PyG ``Data``."""

from __future__ import annotations

from typing import Any

import numpy as np


def relabellings(n: int, count: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``count`` random permutations of ``0..n-1`` (node ``u`` of a copy is node ``p[u]``)."""
    return [rng.permutation(n) for _ in range(count)]


def relabel(adjacency: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``P A Pᵀ``: the graph with node ``u`` the old node ``perm[u]``."""
    return np.ascontiguousarray(adjacency[np.ix_(perm, perm)])


def permuted_copies(
    adjacency: np.ndarray, count: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """``count`` random relabellings ``P A Pᵀ`` of a graph."""
    return [relabel(adjacency, p) for p in relabellings(adjacency.shape[0], count, rng)]


def t_squared(x: np.ndarray, y: np.ndarray) -> float:
    """BREC's statistic ``d̄ᵀ S⁺ d̄`` of the paired differences ``x − y`` (rows: relabellings)."""
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    mean = d.mean(axis=0)
    cov = np.cov(d, rowvar=False)
    return float(mean @ np.linalg.pinv(np.atleast_2d(cov)) @ mean)


def draw_members(
    a: np.ndarray, b: np.ndarray, q: int, rng: np.random.Generator
) -> tuple[list[tuple[int, np.ndarray]], list[tuple[int, np.ndarray]]]:
    """The relabellings of one pair, as ``(base, perm)`` (base 0 is ``a``, 1 is ``b``): the
    pair's 2q graphs interleaved (copy i of ``a``, copy i of ``b``, ...) and the reliability
    check's 2q copies of ``a``. Drawn in this order (a's, b's, then the reliability copies),
    as the seeds always were."""
    perms_a = relabellings(a.shape[0], q, rng)
    perms_b = relabellings(b.shape[0], q, rng)
    perms_rel = relabellings(a.shape[0], 2 * q, rng)
    pair_members = [m for ab in zip(perms_a, perms_b) for m in ((0, ab[0]), (1, ab[1]))]
    return pair_members, [(0, p) for p in perms_rel]


def train_rpc(
    model: Any, train_batches: Any, rel_batches: Any, cfg: Any
) -> tuple[tuple[Any, Any], int, float]:
    """BREC's training of a fresh model on one pair: siamese, cosine embedding loss with
    target −1, Adam and ReduceLROnPlateau, stopping once an epoch's loss is below
    ``cfg.loss_threshold``; then the outputs (eval mode, the model's dtype) on the pair's and
    the reliability check's graphs, the epochs run and the last epoch's loss. The batches are
    ``(batch, inputs)`` pairs, or a callable giving them anew each epoch (a PyG loader)."""
    import torch

    from benchmarks.paper.train import adam

    def each(items: Any) -> Any:
        return items() if callable(items) else items

    opt = adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    loss_fn = torch.nn.CosineEmbeddingLoss(margin=0.0)
    epochs_run, last_loss = 0, float("nan")
    model.train()
    for _ in range(cfg.epochs):
        total = 0.0
        for batch, inputs in each(train_batches):
            opt.zero_grad()
            out = model(batch, **inputs)
            target = -torch.ones(out.shape[0] // 2)
            loss = loss_fn(out[0::2], out[1::2], target)
            loss.backward()
            opt.step()
            total += out.shape[0] / 2 * loss.item()
        epochs_run += 1
        last_loss = total / cfg.relabellings
        if last_loss < cfg.loss_threshold:
            break
        sched.step(last_loss)
    model.eval()
    with torch.no_grad():
        emb = torch.cat([model(bt, **inp) for bt, inp in each(train_batches)])
        rel = torch.cat([model(bt, **inp) for bt, inp in each(rel_batches)])
    return (emb, rel), epochs_run, last_loss


def t_squared_torch(x: Any, y: Any, epsilon: float = 0.0) -> float:
    """The statistic as BREC's evaluator computes it: in torch, in the outputs' dtype, with
    ``torch.cov`` and ``torch.linalg.pinv`` at its default tolerance; ``epsilon`` > 0 is its
    ``S_epsilon`` rule, ``d̄ᵀ (S + εI)⁺ d̄`` (BREC's remedy for outputs that are bit-identical
    across relabellings, where S = 0 and the plain statistic is 0 whatever d̄ is)."""
    import torch

    d = (torch.as_tensor(x) - torch.as_tensor(y)).T  # (outputs, relabellings)
    mean = d.mean(dim=1).reshape(-1, 1)
    cov = torch.atleast_2d(torch.cov(d))
    if epsilon:
        cov = cov + torch.diag(torch.full((cov.shape[0],), epsilon, dtype=cov.dtype))
    return float((mean.T @ torch.linalg.pinv(cov) @ mean).item())
