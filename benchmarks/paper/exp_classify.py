"""Table 1's last column: SAT/UNSAT classification on EXP, test accuracy at the epoch of lowest
validation loss. ``matlang bench exp-classify`` runs :func:`bench`.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from benchmarks.paper.common import check_limit
from benchmarks.paper.distributed import (
    Group,
    device_label,
    follow_torchrun,
    from_environment,
    launch,
    one_process_device,
)
from benchmarks.paper.models import degree_features, make_model
from benchmarks.paper.train import (
    GraphSet,
    SeedRun,
    TrainConfig,
    bce_with_logits,
    median_metric,
    predict,
    run_seeds,
)
from matlang.graphs import Graph
from matlang.runtime.preprocess import PreprocessCache


@dataclass
class ClassifyResult:
    """Test accuracy per seed (the epoch of best validation loss) and their median."""

    median_accuracy: float
    runs: list[SeedRun]
    model: dict[str, Any]
    sizes: dict[str, int]


def exp_classify(
    graphs: Sequence[Graph],
    y: np.ndarray,
    split: tuple[np.ndarray, np.ndarray, np.ndarray],
    model: str,
    *,
    seeds: Sequence[int] = range(1),
    train: TrainConfig | None = None,
    sentences: Sequence[str] = (),
    limit: int | None = None,
    progress: bool = False,
    on_seed: Callable[[ClassifyResult], None] | None = None,
    group: Group | None = None,
) -> ClassifyResult:
    """Binary classification (BCE on a logit), features ``[x, degree]``; accuracy on test.

    ``split`` is ``(train, val, test)`` indices (EXP: 400:1200, 0:200, 200:400); ``limit``
    keeps the first ``limit`` graphs of each; ``on_seed`` gets the result of the seeds
    finished so far, after each one.
    """
    check_limit(limit)
    feats = degree_features(graphs)
    full = GraphSet(feats, torch.tensor(np.asarray(y), dtype=torch.float32).reshape(-1, 1))
    tr, va, te = (full.subset(np.asarray(s)[:limit]) for s in split)
    cfg = replace(TrainConfig(batch_size=50) if train is None else train, progress=progress)
    in_dim = int(np.asarray(feats[0].x).shape[1])
    cache = PreprocessCache(max_entries=None)
    sizes = {"train": len(tr), "val": len(va), "test": len(te)}

    def accuracy(net: torch.nn.Module) -> float:
        logits = predict(net, te, cfg.eval_batch_size)
        return float(((logits > 0).float() == te.y).float().mean())

    def result(runs: list[SeedRun], info: dict[str, Any]) -> ClassifyResult:
        return ClassifyResult(median_metric(runs), runs, info, sizes)

    runs, info = run_seeds(
        seeds,
        lambda: make_model(model, in_dim, 1, protocol="classify", sentences=sentences, cache=cache),
        tr,
        va,
        bce_with_logits,
        accuracy,
        cfg,
        desc=f"exp {model}",
        on_seed=None if on_seed is None else lambda r, i: on_seed(result(r, i)),
        group=group,
    )
    return result(runs, info)


def _in_group(group: Group, **kwargs: Any) -> Any:
    """:func:`exp_classify` in one process of a data-parallel run (no per-seed saving: callbacks do
    not cross processes)."""
    return exp_classify(group=group, **kwargs)


# --------------------------------------------------------------------------- matlang bench


def bench(args: argparse.Namespace) -> int:
    """``matlang bench exp-classify``: train every seed, save each as it finishes."""
    from benchmarks.paper.common import runs_record, start, train_config, train_record, variant
    from benchmarks.records import ResultFile, result_name
    from matlang.runtime import datasets

    follow_torchrun(args)  # under torchrun: process 0 saves and prints
    seeds = start(args)
    # before any data is read or file written: a device that cannot train here is refused
    nproc = getattr(args, "nproc", 1)
    device = one_process_device(getattr(args, "device", "cpu"), "exp-classify", nproc)
    ran_on = device_label(device)
    config = {
        "protocol": "binary cross-entropy on one logit; test accuracy at the epoch of "
        "lowest validation loss (split val 0:200, test 200:400, train 400:1200)",
        "node_features": "[x, degree]",
        **train_record(args),
        "limit": args.limit,
        # recorded only when data-parallel, so earlier files still take --append
        **({"nproc": args.nproc} if getattr(args, "nproc", 1) > 1 else {}),
    }
    name = result_name("exp-classify", "exp", None, args.model, variant(args.limit, args.sentence))
    out = ResultFile(args, name, config, seeds)
    exp = datasets.load_exp()

    def record(res: ClassifyResult) -> dict[str, Any]:
        return {
            "bench": "exp-classify",
            "dataset": "exp",
            "model": args.model,
            "median_accuracy": res.median_accuracy,
            "per_seed": [r.metric for r in res.runs],
            "seeds": [r.seed for r in res.runs],
            # each seed's device (runs written before --device trained on the CPU, say none)
            "runs": [{**r, "device": ran_on} for r in runs_record(res.runs, "test_accuracy")],
            "data": {"sizes": res.sizes},
            "config": config,
            "model_info": res.model,
        }

    def run(save: Callable[[dict[str, Any]], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        if nproc > 1 or from_environment() is not None:  # data-parallel (or torchrun)
            res = launch(
                functools.partial(
                    _in_group,
                    graphs=exp.graphs,
                    y=exp.y,
                    split=(exp.train_idx, exp.val_idx, exp.test_idx),
                    model=args.model,
                    seeds=seeds,
                    train=train_config(args),
                    sentences=args.sentence,
                    limit=args.limit,
                    progress=not args.no_progress,
                ),
                nproc,
            )
        else:
            res = exp_classify(
                exp.graphs,
                exp.y,
                (exp.train_idx, exp.val_idx, exp.test_idx),
                args.model,
                seeds=seeds,
                train=replace(train_config(args), device=device),
                sentences=args.sentence,
                limit=args.limit,
                progress=not args.no_progress,
                on_seed=lambda partial: save(record(partial)),
            )
        # printed in %, as bench tu prints its accuracies (the file keeps fractions)
        return record(res), {
            "median_accuracy_percent": lambda saved: percent(saved["median_accuracy"]),
            "per_seed_percent": lambda saved: [percent(a) for a in saved["per_seed"]],
        }

    return out.run(run)


def percent(fraction: float) -> float:
    """An accuracy in [0, 1] as a percentage, to 0.01."""
    return round(100 * fraction, 2)


__all__ = ["ClassifyResult", "bench", "exp_classify", "percent"]
